// attention/heads.cpp — many heads, each one the single head of attention.cpp on its own slice: the
// shapes checked, everything charged once, then one single-head call per head (which checks its own
// values, on the thread about to read them), its results written in place into the stacks of heads.
// Query head h of batch b reads key/value head h / G (G = H / H_kv query heads per key/value head),
// borrowed where it lies: nothing is copied.
//
// Threads: many heads at once keep every core busy where one small head cannot. When there are at
// least two heads per thread, the heads are shared out over a team, one head on one thread (each
// head's kernels on one thread); otherwise the heads run one after another, each with the kernels'
// own team. The kernels give the same bits for any thread count, so both give the same results.
//
// Caches (CacheView): keys and values stored as floats, bfloat16 or float16. Backend::fused sends
// every 16-bit cache, and a float cache with few query rows per head (backends::fused_decodes),
// to the decode kernel (simd/decode.cpp), which reads each cached head once for its whole group and
// splits the keys over the threads; it measures the cache's norms as it reads it, and the guards
// check them after (the queries and the mask before). Every other backend widens a 16-bit cache to
// floats and runs the float path above, so Backend::naive stays the reference.
#include "attention/heads.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attention/guards.hpp"
#include "attention/plan.hpp"
#include "matrix/norms.hpp"
#include "matrix/ops.hpp"
#include "simd/simd.hpp"

namespace attn {

std::string shape_string(const HeadsShape& s) {
    return std::to_string(s.batch) + "×" + std::to_string(s.heads) + "×" + shape_string(s.rows, s.cols);
}

const Matrix HeadsView::head(std::size_t b, std::size_t h) const {
    return Matrix::borrow(data + (b * shape.heads + h) * shape.rows * shape.cols, shape.rows, shape.cols);
}

ScoreMask ScoreMask::for_head(std::size_t b, std::size_t h) const {
    const std::ptrdiff_t offset = std::ptrdiff_t(b) * batch_stride + std::ptrdiff_t(h) * head_stride;
    const std::size_t element = kind == Kind::boolean ? 1 : sizeof(float);
    ScoreMask head = *this;
    head.data = static_cast<const unsigned char*>(data) + offset * std::ptrdiff_t(element);
    return head;
}

namespace {

// The sizes of one call: B, H, H_kv, L, S, E, E_v, and G = H / H_kv.
struct Layout {
    std::size_t batch, heads, kv_heads, group, L, S, E, E_v;
    std::size_t count() const { return batch * heads; }
    std::size_t kv_count() const { return batch * kv_heads; }
};

std::string operand(const std::string& name, const CacheView& view) {
    return name + " (" + shape_string(view.shape) + ")";
}

Layout check_heads_shapes(const std::string& who, const CacheView& Q, const CacheView& K, const CacheView& V,
                          const AttentionOptions& options) {
    const OperandNames& name = options.names;
    const auto fail = [&](const std::string& what) { throw std::invalid_argument(who + ": " + what); };
    const auto pair = [&](const std::string& a, const CacheView& A, const std::string& b, const CacheView& B) {
        return operand(a, A) + " and " + operand(b, B);
    };
    for (const auto& [label, view] : {std::pair{&name.Q, &Q}, {&name.K, &K}, {&name.V, &V}}) {
        const HeadsShape& s = view->shape;
        if (!view->data && s.batch && s.heads && s.rows && s.cols) fail(operand(*label, *view) + " has no data");
    }
    if (options.mask && !options.mask->data) fail("options.mask has no data (pass nullptr for no mask)");
    if (Q.shape.batch != K.shape.batch || K.shape.batch != V.shape.batch)
        fail(pair(name.Q, Q, name.K, K) + " and " + operand(name.V, V) + " must have the same batch B");
    if (K.shape.heads != V.shape.heads)
        fail(pair(name.K, K, name.V, V) + " must have the same number of key/value heads H_kv");
    if (K.shape.heads == 0 || Q.shape.heads % K.shape.heads != 0)
        fail(pair(name.Q, Q, name.K, K) + ": the query heads H must be a multiple of the key/value heads H_kv");
    if (Q.shape.cols != K.shape.cols) fail(pair(name.Q, Q, name.K, K) + " must have the same width E");
    if (Q.shape.cols == 0) fail("E = 0: " + pair(name.Q, Q, name.K, K) + " have no columns to compare");
    if (K.shape.rows != V.shape.rows) fail(pair(name.K, K, name.V, V) + " must have the same number of keys S");
    return {Q.shape.batch, Q.shape.heads, K.shape.heads, Q.shape.heads / K.shape.heads,
            Q.shape.rows,  K.shape.rows,  Q.shape.cols,  V.shape.cols};
}

// Threads for the heads: `heads_at_once` heads on a team of one thread each, or one head at a time.
struct Schedule {
    bool heads_at_once;
    std::size_t workers;  // heads (or groups) running at the same time
};

Schedule schedule_of(std::size_t units, Backend backend) {
    const std::size_t threads = std::size_t(simd::max_threads());
    const bool spread =
        (backend == Backend::parallel || backend == Backend::fused) && threads >= 2 && units >= 2 * threads;
    return {spread, spread ? threads : 1};
}

// body(0), …, body(count − 1): over a team, one index per thread at a time, or in order. When a body
// throws, the error of the lowest index is the call's, whatever the thread count (the units after
// one that failed are skipped: their errors could not be it), and no result is returned.
template <class Body>
void run_units(std::size_t count, const Schedule& schedule, Body&& body) {
    if (!schedule.heads_at_once) {
        for (std::size_t i = 0; i < count; ++i) body(i);
        return;
    }
    std::vector<std::exception_ptr> errors(count);
    std::atomic<std::size_t> first_failed{count};
    std::mutex failing;
    simd::for_each_in_team(count, simd::Threads::all, [&](std::size_t i) {
        if (i > first_failed.load(std::memory_order_relaxed)) return;
        try {
            body(i);
        } catch (...) {
            const std::lock_guard lock(failing);
            errors[i] = std::current_exception();
            first_failed.store(std::min(first_failed.load(), i));
        }
    });
    for (const std::exception_ptr& error : errors)
        if (error) std::rethrow_exception(error);
}

// The options of head (b, h)'s call: its slice of the mask; when heads run at once (`alone`), its
// kernels on its own thread (the parallel backend's kernels are the simd backend's, rows split).
struct HeadOptions {
    AttentionOptions options;
    ScoreMask mask;
    HeadOptions(const AttentionOptions& run, std::size_t b, std::size_t h, bool alone = false) : options(run) {
        if (run.mask) {
            mask = run.mask->for_head(b, h);
            options.mask = &mask;
        }
        options.threads = alone ? 1 : 0;
        if (alone && options.backend == Backend::parallel) options.backend = Backend::simd;
    }
    HeadOptions(const HeadOptions&) = delete;
    HeadOptions& operator=(const HeadOptions&) = delete;
};

Heads heads_of(std::size_t batch, std::size_t heads, std::size_t rows, std::size_t cols) {
    Heads stack;
    stack.shape = {batch, heads, rows, cols};
    stack.values.resize_for_overwrite(checked_product(checked_product(batch, heads, "heads"), rows, "heads"), cols);
    return stack;
}

// Head i of a stack, as a matrix the single-head call writes in place.
Matrix window(Heads& stack, std::size_t i) {
    const std::size_t size = stack.shape.rows * stack.shape.cols;
    return Matrix::window(stack.values.data() + i * size, stack.shape.rows, stack.shape.cols);
}

const Matrix head_of(const Heads& stack, std::size_t i) {
    return stack.view().head(i / stack.shape.heads, i % stack.shape.heads);
}

backends::Buffer stack_buffer(const std::string& name, const HeadsShape& shape, const std::string& of) {
    return {
        name + " (" + shape_string(shape) + ")" + of,
        matrix_bytes(checked_product(checked_product(shape.batch, shape.heads, name), shape.rows, name), shape.cols)};
}

// The buffers the scratch of one head at a time takes: listed with the thread count each head sees.
template <class List>
std::vector<backends::Buffer> scratch_per_head(const Schedule& schedule, List&& list) {
    const ScopedThreads one(schedule.heads_at_once ? 1 : 0);
    return list();
}

bool materialised(Backend backend) { return backend != Backend::fused; }

}  // namespace

namespace {

bool keeps_log_sum_exp(const AttentionOptions& options) {
    return options.backend == Backend::fused && options.keep_for_backward;
}

// The forward's stacks of results: O, and α (materialised backends) or L (fused, kept for the backward).
std::vector<backends::Buffer> forward_results(const Layout& x, const AttentionOptions& options) {
    std::vector<backends::Buffer> results = {stack_buffer("O", {x.batch, x.heads, x.L, x.E_v}, " of step 6")};
    if (materialised(options.backend))
        results.push_back(stack_buffer("S/α", {x.batch, x.heads, x.L, x.S},
                                       " of steps 3–5 on the " + to_string(options.backend) + " backend"));
    if (keeps_log_sum_exp(options))
        results.push_back(stack_buffer("the log-sum-exp L", {x.batch, x.heads, x.L, simd::log_sum_exp_floats},
                                       " kept for the backward"));
    return results;
}

// Every head's shapes, before any head runs. Its values (the float range, the mask's terms) are
// checked by its own call, on the thread that then reads the same rows for its kernels.
void check_every_head(const HeadsView& Q, const HeadsView& K, const HeadsView& V, const Layout& x,
                      const AttentionOptions& run) {
    for (std::size_t i = 0; i < x.count(); ++i) {
        const std::size_t b = i / x.heads, h = i % x.heads;
        const HeadOptions head(run, b, h);
        guards::check_attention_shapes(Q.head(b, h), K.head(b, h / x.group), V.head(b, h / x.group), head.options,
                                       AttentionResult{});
    }
}

}  // namespace

namespace {

// The float forward's plan: its stacks of results, and its kernels' scratch for as many heads as
// run at once.
Plan forward_plan(const Layout& x, const Schedule& schedule, const AttentionOptions& options) {
    const auto scratch = scratch_per_head(schedule, [&] {
        return backends::attention_scratch_buffers(x.L, x.S, x.E, x.E_v, options.backend, options.dtype);
    });
    Plan plan(options);
    plan.add(forward_results(x, options)).add(scratch, schedule.workers);
    return plan;
}

// The float forward, charged already (`run`): every head's shapes checked, then one single-head call
// each.
HeadsResult forward_heads(const HeadsView& Q, const HeadsView& K, const HeadsView& V, const Layout& x,
                          const Schedule& schedule, const AttentionOptions& run) {
    check_every_head(Q, K, V, x, run);
    HeadsResult r;
    r.output = heads_of(x.batch, x.heads, x.L, x.E_v);
    if (materialised(run.backend)) r.weights = heads_of(x.batch, x.heads, x.L, x.S);
    if (keeps_log_sum_exp(run)) r.log_sum_exp = heads_of(x.batch, x.heads, x.L, simd::log_sum_exp_floats);
    run_units(x.count(), schedule, [&](std::size_t i) {  // every head is this head: one single-head call each
        const std::size_t b = i / x.heads, h = i % x.heads;
        const HeadOptions head(run, b, h, schedule.heads_at_once);
        AttentionResult out;  // its matrices are head i of the stacks, written in place
        out.output = window(r.output, i);
        if (materialised(run.backend)) out.weights = window(r.weights, i);
        if (keeps_log_sum_exp(run)) out.log_sum_exp = window(r.log_sum_exp, i);
        scaled_dot_product_attention_into(Q.head(b, h), K.head(b, h / x.group), V.head(b, h / x.group), head.options,
                                          out);
    });
    return r;
}

// K and V of one type; a 16-bit cache keeps nothing for a backward (there is none for it).
void check_cache_types(const CacheView& K, const CacheView& V, const AttentionOptions& options) {
    const OperandNames& name = options.names;
    if (K.type != V.type)
        throw std::invalid_argument("scaled_dot_product_attention: " + operand(name.K, K) + " is " + to_string(K.type) +
                                    " and " + operand(name.V, V) + " is " + to_string(V.type) +
                                    ": the keys and values of a cache must have the same type");
    if (K.type != KvDtype::f32 && options.keep_for_backward)
        throw std::invalid_argument("scaled_dot_product_attention: a " + to_string(K.type) +
                                    " cache has no backward, so keep_for_backward needs an f32 cache");
}

HeadsView floats_of(const CacheView& cache) { return {static_cast<const float*>(cache.data), cache.shape}; }

// Routing: the fused backend decodes every 16-bit cache, and a float one whose query heads have
// few rows (backends::fused_decodes says how few, and why).
bool decodes(const Layout& x, KvDtype type, const AttentionOptions& options) {
    return options.backend == Backend::fused && options.dtype == Dtype::f32 &&
           (type != KvDtype::f32 || backends::fused_decodes(x.L, options.dtype));
}

// The query rows of group (b, kv): its G heads' L rows each, one (G·L)×E matrix in the layout.
Matrix group_rows(const HeadsView& Q, const Layout& x, std::size_t unit) {
    return Matrix::borrow(Q.data + unit * x.group * x.L * x.E, x.group * x.L, x.E);
}

// The float chain's checks before the decode kernel runs: the options (the shapes were checked
// already), every query row and every query head's mask. Returns each group's largest query norm.
std::vector<double> check_queries(const HeadsView& Q, const Layout& x, const AttentionOptions& run) {
    guards::check_attention_shapes(Matrix(0, x.E), Matrix(0, x.E), Matrix(0, x.E_v), run, AttentionResult{});
    std::vector<double> largest(x.kv_count());
    for (std::size_t unit = 0; unit < x.kv_count(); ++unit) {
        largest[unit] = max_row_norm(group_rows(Q, x, unit));
        guards::check_row_norms({largest[unit], 0.0, 0.0}, x.L, x.S, x.E, x.E_v, run.names);
        if (!run.mask || run.mask->kind != ScoreMask::Kind::additive) continue;
        const std::size_t b = unit / x.kv_heads, kv = unit % x.kv_heads;
        for (std::size_t h = kv * x.group; h < (kv + 1) * x.group; ++h)
            guards::check_mask_values("scaled_dot_product_attention", run.mask->for_head(b, h), x.L, x.S);
    }
    return largest;
}

// … and after it, the cache: the norms of its keys and values, which the kernel measured as it read
// them (a cache is read once), against the same bounds. A refused call returns nothing it computed.
void check_cache(const std::vector<double>& queries, const std::vector<double>& cache, const Layout& x,
                 const AttentionOptions& run) {
    for (std::size_t unit = 0; unit < x.kv_count(); ++unit)
        guards::check_row_norms({queries[unit], cache[2 * unit], cache[2 * unit + 1]}, x.L, x.S, x.E, x.E_v, run.names);
}

// Each query row's terms, as the decode kernel reads them: row r of group (b, kv) is position r mod L
// of query head kv·G + r / L.
std::vector<simd::ScoreTerms> row_terms(const ScoreMask& mask, const Layout& x) {
    std::vector<simd::ScoreTerms> terms;
    const std::size_t rows = x.group * x.L;
    for (std::size_t unit = 0; unit < x.kv_count(); ++unit)
        for (std::size_t r = 0; r < rows; ++r) {
            const std::size_t b = unit / x.kv_heads, h = unit % x.kv_heads * x.group + r / x.L, i = r % x.L;
            const ScoreMask head = mask.for_head(b, h);
            const std::size_t element = mask.kind == ScoreMask::Kind::boolean ? 1 : sizeof(float);
            const auto* row = static_cast<const unsigned char*>(head.data) +
                              std::ptrdiff_t(i) * head.row_stride * std::ptrdiff_t(element);
            terms.push_back({row, mask.kind == ScoreMask::Kind::boolean, 0, mask.col_stride});
        }
    return terms;
}

// Backend::fused by the decode kernel: every group's rows against its cached head, all at once.
HeadsResult decode_heads(const HeadsView& Q, const CacheView& K, const CacheView& V, const Layout& x,
                         const AttentionOptions& options) {
    const AttentionOptions run =
        Plan(options)
            .add(forward_results(x, options))
            .add(backends::decode_scratch_buffers(x.kv_count(), x.group * x.L, x.S, x.E, x.E_v, K.type))
            .charge();
    const std::vector<double> queries = check_queries(Q, x, run);
    std::vector<double> cache(2 * x.kv_count());
    HeadsResult r;
    r.output = heads_of(x.batch, x.heads, x.L, x.E_v);
    if (keeps_log_sum_exp(run)) r.log_sum_exp = heads_of(x.batch, x.heads, x.L, simd::log_sum_exp_floats);
    const std::vector<simd::ScoreTerms> terms = run.mask ? row_terms(*run.mask, x) : std::vector<simd::ScoreTerms>{};
    const simd::DecodeProblem problem{.Q = Q.data,
                                      .K = K.data,
                                      .V = V.data,
                                      .type = K.type,
                                      .groups = x.kv_count(),
                                      .rows = x.group * x.L,
                                      .positions = x.L,
                                      .keys = x.S,
                                      .d_k = x.E,
                                      .d_v = x.E_v,
                                      .scale = score_factor(run, x.E),
                                      .causal = run.causal,
                                      .row_terms = terms.empty() ? nullptr : terms.data(),
                                      .O = r.output.values.data(),
                                      .log_sum_exp = keeps_log_sum_exp(run) ? r.log_sum_exp.values.data() : nullptr,
                                      .largest_norms = cache.data()};
    simd::decode_attention_into(problem, run.threads == 1 ? simd::Threads::one : simd::Threads::all);
    check_cache(queries, cache, x, run);
    return r;
}

}  // namespace

HeadsResult scaled_dot_product_attention(const HeadsView& Q, const HeadsView& K, const HeadsView& V,
                                         const AttentionOptions& options) {
    return scaled_dot_product_attention(Q, CacheView(K), CacheView(V), options);
}

HeadsResult scaled_dot_product_attention(const HeadsView& Q, const CacheView& K, const CacheView& V,
                                         const AttentionOptions& options) {
    const ScopedThreads threads(options.threads);
    check_cache_types(K, V, options);
    const Layout x = check_heads_shapes("scaled_dot_product_attention", Q, K, V, options);
    if (decodes(x, K.type, options)) return decode_heads(Q, K, V, x, options);
    const Schedule schedule = schedule_of(x.count(), options.backend);
    Plan plan = forward_plan(x, schedule, options);
    if (K.type == KvDtype::f32) return forward_heads(Q, floats_of(K), floats_of(V), x, schedule, plan.charge());
    // A 16-bit cache: its keys and values widened to floats, then the float chain.
    plan.add({stack_buffer("K", K.shape, " widened from " + to_string(K.type) + " to floats"),
              stack_buffer("V", V.shape, " widened from " + to_string(V.type) + " to floats")});
    const AttentionOptions run = plan.charge();
    const Heads K_floats = to_floats(K), V_floats = to_floats(V);
    return forward_heads(Q, K_floats.view(), V_floats.view(), x, schedule, run);
}

namespace {

void expect_shape(const std::string& name, const HeadsShape& got, const HeadsShape& want, const std::string& why) {
    if (got.batch != want.batch || got.heads != want.heads || got.rows != want.rows || got.cols != want.cols)
        throw std::invalid_argument("scaled_dot_product_attention_backward: " + name + " (" + shape_string(got) +
                                    ") must be " + shape_string(want) + ", " + why);
}

// dO and the forward's results have the shapes the forward of these heads gives them.
void check_forward_stacks(const Layout& x, const HeadsResult& forward, const HeadsView& dO,
                          const AttentionOptions& options) {
    expect_shape(options.names.dO, dO.shape, {x.batch, x.heads, x.L, x.E_v},
                 "the shape of O: one gradient per output entry");
    if (!dO.data && x.count() && x.L && x.E_v)
        throw std::invalid_argument("scaled_dot_product_attention_backward: " + options.names.dO + " (" +
                                    shape_string(dO.shape) + ") has no data");
    expect_shape("the forward's output", forward.output.shape, {x.batch, x.heads, x.L, x.E_v},
                 "the forward of these Q, K and V");
    if (materialised(options.backend))
        expect_shape("the forward's α", forward.weights.shape, {x.batch, x.heads, x.L, x.S},
                     "the forward of these Q, K and V on a materialised backend");
    else
        expect_shape("the forward's log-sum-exp", forward.log_sum_exp.shape,
                     {x.batch, x.heads, x.L, simd::log_sum_exp_floats},
                     "one per query row: run the fused forward with keep_for_backward");
}

// The forward's results of head i, read in place.
AttentionResult forward_of(const HeadsResult& forward, std::size_t i, Backend backend) {
    if (materialised(backend)) return {head_of(forward.output, i), head_of(forward.weights, i), Matrix()};
    return {head_of(forward.output, i), Matrix(), head_of(forward.log_sum_exp, i)};
}

// The backward's scratch for one key/value head at a time: one head's, and with G > 1 the dK and dV
// of the query heads after the first, before they are added.
std::vector<backends::Buffer> backward_scratch(const Layout& x, const Schedule& schedule, Backend backend) {
    std::vector<backends::Buffer> scratch = scratch_per_head(
        schedule, [&] { return backends::attention_gradient_scratch_buffers(x.L, x.S, x.E, x.E_v, backend); });
    if (x.group > 1)
        scratch.push_back({"one query head's dK (" + shape_string(x.S, x.E) + ") and dV (" + shape_string(x.S, x.E_v) +
                               "), added to their key/value head's",
                           checked_sum(matrix_bytes(x.S, x.E), matrix_bytes(x.S, x.E_v), "dK and dV")});
    return scratch;
}

struct BackwardCall {
    const HeadsView &Q, &K, &V;
    const HeadsResult& forward;
    const HeadsView& dO;
    const Layout& x;
    const AttentionOptions& run;
    const Schedule& schedule;
};

// Every head's shapes, before any head runs; its values, by its own call (as the forward's).
void check_every_head(const BackwardCall& c) {
    for (std::size_t i = 0; i < c.x.count(); ++i) {
        const std::size_t b = i / c.x.heads, h = i % c.x.heads;
        const HeadOptions head(c.run, b, h);
        const Matrix Qh = c.Q.head(b, h), Kh = c.K.head(b, h / c.x.group), Vh = c.V.head(b, h / c.x.group),
                     dOh = c.dO.head(b, h);
        guards::check_backward_shapes(Qh, Kh, Vh, forward_of(c.forward, i, c.run.backend), dOh, head.options,
                                      AttentionGradients{});
    }
}

// Key/value head `unit` and its G query heads, one after another: each query head's dQ written in
// place; the first one's dK and dV too, and the others' added to them in order (the same bits for
// any thread count). Its dS (materialised backends) serves every head of the group.
void backward_group(const BackwardCall& c, std::size_t unit, HeadsGradients& g) {
    const std::size_t b = unit / c.x.kv_heads, kv = unit % c.x.kv_heads;
    AttentionGradients out{Matrix(), window(g.dK, unit), window(g.dV, unit), Matrix()};
    Matrix dK_sum, dV_sum;
    for (std::size_t member = 0; member < c.x.group; ++member) {
        const std::size_t h = kv * c.x.group + member, i = b * c.x.heads + h;
        const HeadOptions head(c.run, b, h, c.schedule.heads_at_once);
        out.dQ = window(g.dQ, i);
        scaled_dot_product_attention_backward_into(c.Q.head(b, h), c.K.head(b, kv), c.V.head(b, kv),
                                                   forward_of(c.forward, i, c.run.backend), c.dO.head(b, h),
                                                   head.options, out);
        if (member == 0) {  // the windows move on: the next heads' dK and dV get storage of their own
            dK_sum = std::move(out.dK);
            dV_sum = std::move(out.dV);
            continue;
        }
        add_in_place(dK_sum, out.dK);  // dK of a shared head: Σ over its query heads, in order
        add_in_place(dV_sum, out.dV);
    }
}

}  // namespace

HeadsGradients scaled_dot_product_attention_backward(const HeadsView& Q, const HeadsView& K, const HeadsView& V,
                                                     const HeadsResult& forward, const HeadsView& dO,
                                                     const AttentionOptions& options) {
    const ScopedThreads threads(options.threads);
    const Layout x = check_heads_shapes("scaled_dot_product_attention_backward", Q, K, V, options);
    check_forward_stacks(x, forward, dO, options);
    const Schedule schedule = schedule_of(x.kv_count(), options.backend);  // one unit: a key/value head
    const AttentionOptions run = Plan(options)
                                     .add({stack_buffer("dQ", {x.batch, x.heads, x.L, x.E}, " of grad 3"),
                                           stack_buffer("dK", {x.batch, x.kv_heads, x.S, x.E}, " of grad 3"),
                                           stack_buffer("dV", {x.batch, x.kv_heads, x.S, x.E_v}, " of grad 6")})
                                     .add(backward_scratch(x, schedule, options.backend), schedule.workers)
                                     .charge();
    const BackwardCall call{Q, K, V, forward, dO, x, run, schedule};
    check_every_head(call);
    HeadsGradients g{heads_of(x.batch, x.heads, x.L, x.E), heads_of(x.batch, x.kv_heads, x.S, x.E),
                     heads_of(x.batch, x.kv_heads, x.S, x.E_v)};
    run_units(x.kv_count(), schedule, [&](std::size_t unit) { backward_group(call, unit, g); });
    return g;
}

}  // namespace attn
