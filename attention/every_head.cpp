// attention/every_head.cpp — every head of a call: its values checked, then its chain, each head on
// the thread that runs it, its results written in place into the stacks of every head. Query head h
// of batch b reads key/value head h / G (G = H / H_kv query heads per key/value head), borrowed where
// it lies: nothing is copied.
//
// Threads (attention/threads.cpp's schedule): with at least two heads per thread, the heads are
// shared out over a team, one head on one thread (its kernels on that thread alone); otherwise they
// run one after another, each with the kernels' own team. The kernels give the same bits for any
// thread count, so both give the same results. Of several heads that fail their checks, the lowest
// one's error is the call's, whatever the thread count.
//
// Decoding (backends::decodes): every group's rows against its cached head at once, by the decode
// kernel, which reads each cached head once for its whole group and splits the keys over the
// threads; it measures the cache's norms as it reads it, and the guards check every head after, in
// the order the other backends check them (the queries and the mask measured before).
#include "attention/every_head.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <utility>
#include <vector>

#include "attention/chain.hpp"
#include "attention/guards.hpp"
#include "attention/threads.hpp"
#include "matrix/norms.hpp"
#include "matrix/ops.hpp"
#include "matrix/size.hpp"
#include "simd/simd.hpp"

namespace attn {

namespace {

bool materialised(Backend backend) { return backend != Backend::fused; }

bool keeps_log_sum_exp(const AttentionOptions& options) {
    return options.backend == Backend::fused && options.keep_for_backward;
}

// body(0), …, body(count − 1): over a team, one index per thread at a time, or in order. When a body
// throws, the error of the lowest index is the call's, whatever the thread count (the units after
// one that failed are skipped: their errors could not be it), and no result is returned.
template <class Body>
void run_units(std::size_t count, const Schedule& schedule, Body&& body) {
    if (!schedule.units_at_once) {
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

// The options of head (b, h)'s chain: its slice of the mask, and the known norms of its key/value
// head (`unit`, b·H_kv + h / G); when heads run at once (`alone`), its kernels on its own thread (the
// parallel backend's kernels are the simd backend's, rows split).
struct HeadOptions {
    AttentionOptions options;
    ScoreMask mask;
    HeadOptions(const AttentionOptions& run, std::size_t b, std::size_t h, std::size_t unit, bool alone)
        : options(run) {
        if (run.mask) {
            mask = run.mask->for_head(b, h);
            options.mask = &mask;
        }
        if (run.kv_norms) options.kv_norms = run.kv_norms + 2 * unit;
        options.threads = alone ? 1 : 0;
        if (alone && options.backend == Backend::parallel) options.backend = Backend::simd;
    }
    HeadOptions(const HeadOptions&) = delete;
    HeadOptions& operator=(const HeadOptions&) = delete;
};

// A stack of `heads` results of rows × cols each per batch, (B·heads·rows) × cols floats, shaped as
// its operand is; its storage reused when it has room.
void make_stack(Result& stack, const Shapes& s, std::size_t heads, std::size_t rows, std::size_t cols) {
    stack.values.resize_for_overwrite(checked_product(checked_product(s.batch, heads, "heads"), rows, "heads"), cols);
    stack.shape = s.of(heads, rows, cols);
}

void clear(Result& result) {
    result.values.resize_for_overwrite(0, 0);
    result.shape.clear();
}

// Head i of a stack of heads of `rows` rows, as a matrix the chain writes in place.
Matrix window(Result& stack, std::size_t i, std::size_t rows) {
    const std::size_t cols = stack.values.cols();
    return Matrix::window(stack.values.data() + i * rows * cols, rows, cols);
}

HeadsView floats_of(const CacheView& cache) { return {static_cast<const float*>(cache.data), cache.shape}; }

// ---- the forward, one head at a time --------------------------------------------------------------

void forward_heads(const HeadsView& Q, const HeadsView& K, const HeadsView& V, const Shapes& s,
                   const AttentionOptions& run, Results& r) {
    const Schedule schedule = schedule_of(s.count(), run.backend);
    run_units(s.count(), schedule, [&](std::size_t i) {  // every head is this head
        const std::size_t b = i / s.heads, h = i % s.heads;
        const HeadOptions head(run, b, h, b * s.kv_heads + h / s.group, schedule.units_at_once);
        AttentionResult out;  // its matrices are head i of the stacks, written in place
        out.output = window(r.output, i, s.L);
        if (materialised(run.backend)) out.weights = window(r.weights, i, s.L);
        if (keeps_log_sum_exp(run)) out.log_sum_exp = window(r.log_sum_exp, i, s.L);
        const Matrix Q_h = Q.head(b, h), K_h = K.head(b, h / s.group), V_h = V.head(b, h / s.group);
        guards::check_attention_values(Q_h, K_h, V_h, head.options);  // on the thread about to read them
        chain::forward(Q_h, K_h, V_h, head.options, out);
    });
}

// ---- decoding, every group at once ---------------------------------------------------------------

// What each query head's scores are checked against, measured before the decode kernel runs: the
// head's largest query norm, its scale and the largest term its mask adds, or the mask's refusal,
// kept to be raised in its turn. The checks themselves wait for the cache's norms, which the kernel
// measures as it reads the cache (a cache is read once): then every head is checked in order, as
// the other backends check it, so that the first failing head's first error is the call's (a head's
// mask, then Q, K, V, then the bounds on its own queries and terms, not on its whole group's).
struct HeadChecks {
    std::vector<double> queries;
    std::vector<guards::ScaleAndTerms> scores;
    std::vector<std::exception_ptr> mask_refusals;
};

HeadChecks measure_queries(const HeadsView& Q, const Shapes& s, const AttentionOptions& run) {
    HeadChecks checks;
    for (std::size_t i = 0; i < s.count(); ++i) {
        const std::size_t b = i / s.heads, h = i % s.heads;
        guards::ScaleAndTerms scores{score_factor(run, s.E), 0.0f};
        std::exception_ptr refusal;
        if (run.mask) try {
                const ScoreMask head = run.mask->for_head(b, h);
                scores = guards::scale_and_terms(guards::forward_who, run, &head, s.L, s.S, s.E);
            } catch (const std::invalid_argument&) {
                refusal = std::current_exception();
            }
        checks.queries.push_back(max_row_norm(Q.head(b, h)));
        checks.scores.push_back(scores);
        checks.mask_refusals.push_back(refusal);
    }
    return checks;
}

// Every query head against its cached head's norms, in order: those the kernel measured as it read
// the cache (a cache is read once), or those the call was given (run.kv_norms, a KvCache's), against
// the same bounds (a call without query heads has its cache checked before: attention/run.cpp). A
// refused call returns nothing it computed.
void check_heads(const HeadChecks& checks, const double* cache, const Shapes& s, const AttentionOptions& run) {
    for (std::size_t i = 0; i < s.count(); ++i) {
        if (checks.mask_refusals[i]) std::rethrow_exception(checks.mask_refusals[i]);
        const std::size_t unit = i / s.heads * s.kv_heads + i % s.heads / s.group;
        guards::check_row_norms({checks.queries[i], cache[2 * unit], cache[2 * unit + 1]}, s.L, s.S, s.E, s.E_v,
                                checks.scores[i], run.names);
    }
}

// Each query row's terms, as the decode kernel reads them: row r of group (b, kv) is position r mod L
// of query head kv·G + r / L.
std::vector<simd::ScoreTerms> row_terms(const ScoreMask& mask, const Shapes& s) {
    std::vector<simd::ScoreTerms> terms;
    const std::size_t rows = s.group * s.L;
    for (std::size_t unit = 0; unit < s.kv_count(); ++unit)
        for (std::size_t r = 0; r < rows; ++r) {
            const std::size_t b = unit / s.kv_heads, h = unit % s.kv_heads * s.group + r / s.L, i = r % s.L;
            const ScoreMask head = mask.for_head(b, h);
            const std::size_t element = mask.kind == ScoreMask::Kind::boolean ? 1 : sizeof(float);
            const auto* row = static_cast<const unsigned char*>(head.data) +
                              std::ptrdiff_t(i) * head.row_stride * std::ptrdiff_t(element);
            terms.push_back({row, mask.kind == ScoreMask::Kind::boolean, 0, mask.col_stride});
        }
    return terms;
}

void decode_groups(const HeadsView& Q, const CacheView& K, const CacheView& V, const Shapes& s,
                   const AttentionOptions& run, Results& r) {
    const HeadChecks checks = measure_queries(Q, s, run);
    std::vector<double> cache(2 * s.kv_count());
    const std::vector<simd::ScoreTerms> terms = run.mask ? row_terms(*run.mask, s) : std::vector<simd::ScoreTerms>{};
    const simd::DecodeProblem problem{.Q = Q.data,
                                      .K = K.data,
                                      .V = V.data,
                                      .type = K.type,
                                      .groups = s.kv_count(),
                                      .rows = s.group * s.L,
                                      .positions = s.L,
                                      .keys = s.S,
                                      .d_k = s.E,
                                      .d_v = s.E_v,
                                      .scale = score_factor(run, s.E),
                                      .causal = run.causal,
                                      .row_terms = terms.empty() ? nullptr : terms.data(),
                                      .O = r.output.values.data(),
                                      .log_sum_exp = keeps_log_sum_exp(run) ? r.log_sum_exp.values.data() : nullptr,
                                      .largest_norms = run.kv_norms ? nullptr : cache.data()};
    simd::decode_attention_into(problem, run.threads == 1 ? simd::Threads::one : simd::Threads::all);
    check_heads(checks, run.kv_norms ? run.kv_norms : cache.data(), s, run);
}

// ---- the backward, one key/value head and its group at a time ------------------------------------

struct BackwardCall {
    const HeadsView &Q, &K, &V, &O, &weights, &log_sum_exp, &dO;
    const Shapes& s;
    const AttentionOptions& run;
    const Schedule& schedule;
};

// The forward's results of head (b, h), read in place.
AttentionResult forward_of(const BackwardCall& c, std::size_t b, std::size_t h) {
    if (materialised(c.run.backend)) return {c.O.head(b, h), c.weights.head(b, h), Matrix()};
    return {c.O.head(b, h), Matrix(), c.log_sum_exp.head(b, h)};
}

// Key/value head `unit` and its G query heads, one after another: each query head's values checked,
// then its dQ written in place; the first one's dK and dV too, and the others' added to them in order
// (the same bits for any thread count). With no query head at all, dK and dV are 0. The one head of
// a single-head call reuses r.dS for its n×m gradient.
void backward_group(const BackwardCall& c, std::size_t unit, Results& r) {
    const std::size_t b = unit / c.s.kv_heads, kv = unit % c.s.kv_heads;
    AttentionGradients out{Matrix(), window(r.dK, unit, c.s.S), window(r.dV, unit, c.s.S), Matrix()};
    const bool one_head = c.s.count() == 1;
    if (one_head) out.dS = std::move(r.dS);
    if (c.s.group == 0) {
        std::fill(out.dK.data(), out.dK.data() + out.dK.size(), 0.0f);
        std::fill(out.dV.data(), out.dV.data() + out.dV.size(), 0.0f);
    }
    Matrix dK_sum, dV_sum;
    for (std::size_t member = 0; member < c.s.group; ++member) {
        const std::size_t h = kv * c.s.group + member, i = b * c.s.heads + h;
        const HeadOptions head(c.run, b, h, unit, c.schedule.units_at_once);
        out.dQ = window(r.dQ, i, c.s.L);
        const Matrix Q_h = c.Q.head(b, h), K_h = c.K.head(b, kv), V_h = c.V.head(b, kv), dO_h = c.dO.head(b, h);
        guards::check_backward_values(Q_h, K_h, V_h, dO_h, head.options);  // on the thread about to read them
        chain::backward(Q_h, K_h, V_h, forward_of(c, b, h), dO_h, head.options, out);
        if (member == 0) {  // the windows move on: the next heads' dK and dV get storage of their own
            dK_sum = std::move(out.dK);
            dV_sum = std::move(out.dV);
            continue;
        }
        add_in_place(dK_sum, out.dK);  // dK of a shared head: Σ over its query heads, in order
        add_in_place(dV_sum, out.dV);
    }
    if (one_head) r.dS = std::move(out.dS);
}

}  // namespace

void forward_every_head(const HeadsView& Q, const CacheView& K, const CacheView& V, const Shapes& s,
                        const AttentionOptions& run, bool decodes, Results& r) {
    make_stack(r.output, s, s.heads, s.L, s.E_v);
    if (materialised(run.backend)) make_stack(r.weights, s, s.heads, s.L, s.S);
    else clear(r.weights);  // the fused backend never forms α
    if (keeps_log_sum_exp(run)) make_stack(r.log_sum_exp, s, s.heads, s.L, simd::log_sum_exp_floats);
    else clear(r.log_sum_exp);
    if (decodes) return decode_groups(Q, K, V, s, run, r);
    forward_heads(Q, floats_of(K), floats_of(V), s, run, r);
}

void backward_every_head(const HeadsView& Q, const HeadsView& K, const HeadsView& V, const HeadsView& O,
                         const HeadsView& weights, const HeadsView& log_sum_exp, const HeadsView& dO, const Shapes& s,
                         const AttentionOptions& run, Results& r) {
    make_stack(r.dQ, s, s.heads, s.L, s.E);
    make_stack(r.dK, s, s.kv_heads, s.S, s.E);
    make_stack(r.dV, s, s.kv_heads, s.S, s.E_v);
    const Schedule schedule = schedule_of(s.kv_count(), run.backend);  // one unit: a key/value head
    const BackwardCall call{Q, K, V, O, weights, log_sum_exp, dO, s, run, schedule};
    run_units(s.kv_count(), schedule, [&](std::size_t unit) { backward_group(call, unit, r); });
}

void check_unread_values(const CacheView& K, const CacheView& V, const Shapes& s, const AttentionOptions& run) {
    guards::check_row_norms({0.0, guards::largest_row_norm(K), guards::largest_row_norm(V)}, 0, s.S, s.E, s.E_v,
                            {score_factor(run, s.E), 0.0f}, run.names);
}

}  // namespace attn
