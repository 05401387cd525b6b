// attention/shapes.cpp — the first step of every call: its shapes, read from its description and
// checked before anything is charged, converted or computed. Each refusal names the call, the
// operands (by options.names: the lesson's symbols, PyTorch's argument names, or attn run's files)
// and their shapes.
#include "attention/shapes.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "matrix/size.hpp"
#include "simd/simd.hpp"

namespace attn {

std::vector<std::size_t> Shapes::of(std::size_t h, std::size_t rows, std::size_t cols) const {
    std::vector<std::size_t> shape = leading;
    if (rank >= 3) shape.push_back(h);
    shape.insert(shape.end(), {rows, cols});
    return shape;
}

std::vector<std::size_t> scores_shape(const Shapes& s) { return s.of(s.heads, s.L, s.S); }

std::vector<std::ptrdiff_t> broadcast(const View& view, std::span<const std::size_t> target) {
    const std::size_t rank = view.shape.size();
    if (rank > target.size()) return {};
    std::vector<std::ptrdiff_t> own(rank), strides(target.size(), 0);
    for (std::size_t k = rank, step = 1; k-- > 0; step *= view.shape[k])  // C order, unless strides are given
        own[k] = view.strides.empty() ? std::ptrdiff_t(step) : view.strides[k];
    for (std::size_t k = 1; k <= rank; ++k) {
        const std::size_t have = view.shape[rank - k], want = target[target.size() - k];
        if (have != 1 && have != want) return {};
        if (have != 1) strides[target.size() - k] = own[rank - k];
    }
    return strides;
}

namespace {

struct Refusal {
    const char* who;
    [[noreturn]] void operator()(const std::string& what) const {
        throw std::invalid_argument(std::string(who) + ": " + what);
    }
};

std::string named(const std::string& name, const View& view) { return name + " (" + shape_string(view.shape) + ")"; }

// What every operand must be, whatever the call: strides for each dimension (or none), data behind
// its elements, and numbers (only a mask may be boolean; only a mask must be floating point).
void check_view(const Refusal& fail, const std::string& name, const View& view, bool mask = false) {
    if (!view.strides.empty() && view.strides.size() != view.shape.size())
        fail(named(name, view) + " has " + std::to_string(view.strides.size()) + " strides for " +
             std::to_string(view.shape.size()) + " dimensions");
    if (!view.data && std::find(view.shape.begin(), view.shape.end(), 0) == view.shape.end())  // elements, but no data
        fail(named(name, view) + " has no data");
    const bool integer = view.element != Element::f32 && view.element != Element::f64 && view.element != Element::f16 &&
                         view.element != Element::bf16 && view.element != Element::boolean;
    if (mask && integer)
        fail(named(name, view) + " holds " + to_string(view.element) + ": a mask must be boolean or floating point");
    if (!mask && view.element == Element::boolean)
        fail(named(name, view) + " holds booleans: it must hold numbers (only a mask may be boolean)");
}

void expect(const Refusal& fail, const std::string& name, const View& view, const std::vector<std::size_t>& want,
            const std::string& why) {
    check_view(fail, name, view);
    if (!std::equal(view.shape.begin(), view.shape.end(), want.begin(), want.end()))
        fail(named(name, view) + " must be " + shape_string(want) + ", " + why);
}

// A 16-bit array's own type as a cache; any other is read as float32.
KvDtype own_type(const View& view) {
    return view.element == Element::f16 ? KvDtype::f16 : view.element == Element::bf16 ? KvDtype::bf16 : KvDtype::f32;
}

// The type the keys and values are read in, and what it allows: a 16-bit cache is read by the forward only.
KvDtype cache_type(const Refusal& fail, const Call& c) {
    const OperandNames& name = c.options.names;
    KvDtype type = c.kv_dtype.value_or(own_type(*c.K));
    if (!c.kv_dtype && own_type(*c.K) != own_type(*c.V))
        fail(named(name.K, *c.K) + " is " + to_string(own_type(*c.K)) + " and " + named(name.V, *c.V) + " is " +
             to_string(own_type(*c.V)) + ": the keys and values of a cache must have the same type");
    if (type != KvDtype::f32 && (c.task != Task::forward || c.options.keep_for_backward))
        fail(std::string(type == KvDtype::f16 ? "an " : "a ") + to_string(type) +
             " cache has no backward: the backward and keep_for_backward need float32 keys and values");
    return type;
}

const char* const score_axes[] = {"(L, S)", "(H, L, S)", "(B, H, L, S)"};

void check_mask(const Refusal& fail, const Call& c, const Shapes& s) {
    const View& mask = *c.mask;
    check_view(fail, c.options.names.mask, mask, true);
    const std::vector<std::size_t> scores = scores_shape(s);
    if (broadcast(mask, scores).empty())
        fail(named(c.options.names.mask, mask) + " does not broadcast to the scores " + shape_string(scores) + " " +
             (s.rank <= 4 ? score_axes[s.rank - 2] : "(N..., H, L, S)") +
             ": aligned from the right, each of its dimensions must be 1 or the scores' own");
}

// The options that constrain what the shapes may be used for.
void check_options(const Refusal& fail, const Call& c) {
    const AttentionOptions& o = c.options;
    if (o.explicit_scale && !(std::isfinite(*o.explicit_scale) && *o.explicit_scale > 0.0f))
        fail("explicit_scale = " + std::to_string(*o.explicit_scale) + ": the scale must be positive and finite");
    if (o.dtype == Dtype::bf16 && o.backend != Backend::fused)
        fail("dtype bf16 runs on the fused backend only, not on the " + to_string(o.backend) + " backend");
    if (o.dtype == Dtype::bf16 && (c.task != Task::forward || o.keep_for_backward))
        fail("dtype bf16 has no backward (the gradients run in dtype f32)");
}

// dO, and for the backward the forward's results: the shapes a forward of these operands gives.
void check_gradient_operands(const Refusal& fail, const Call& c, const Shapes& s) {
    if (c.task != Task::forward_backward && c.task != Task::backward) return;
    const OperandNames& name = c.options.names;
    if (!c.dO) fail(name.dO + " = ∂L/∂O is needed for the backward");
    expect(fail, name.dO, *c.dO, s.of(s.heads, s.L, s.E_v), "the shape of O: one gradient per output entry");
    if (c.task != Task::backward) return;
    const bool fused = c.options.backend == Backend::fused;
    if (!c.O || (fused ? !c.log_sum_exp : !c.weights))
        fail(fused ? "the backward needs the forward's output and log-sum-exp: run the fused forward with "
                     "keep_for_backward"
                   : "the backward needs the forward's output and α");
    expect(fail, "the forward's output", *c.O, s.of(s.heads, s.L, s.E_v), "the forward of these Q, K and V");
    if (fused)
        expect(fail, "the forward's log-sum-exp", *c.log_sum_exp, s.of(s.heads, s.L, simd::log_sum_exp_floats),
               "one per query row: run the fused forward with keep_for_backward");
    else
        expect(fail, "the forward's α", *c.weights, s.of(s.heads, s.L, s.S),
               "the forward of these Q, K and V on a materialised backend");
}

Shapes attention_shapes(const Call& c) {
    Shapes s;
    s.who = c.task == Task::forward ? "scaled_dot_product_attention" : "scaled_dot_product_attention_backward";
    const Refusal fail{s.who};
    const OperandNames& name = c.options.names;
    if (!c.Q || !c.K || !c.V) fail("attention needs queries, keys and values");
    const View &Q = *c.Q, &K = *c.K, &V = *c.V;
    const auto all_three = [&] { return named(name.Q, Q) + ", " + named(name.K, K) + " and " + named(name.V, V); };
    for (const auto& [label, view] : {std::pair{&name.Q, &Q}, {&name.K, &K}, {&name.V, &V}}) {
        if (view->shape.size() < 2) fail(named(*label, *view) + " must have at least 2 dimensions (…, L, E)");
        check_view(fail, *label, *view);
    }
    s.rank = Q.shape.size();
    if (K.shape.size() != s.rank || V.shape.size() != s.rank)
        fail(all_three() + " must have the same number of dimensions");
    const auto dim = [&](const View& v, std::size_t from_end) { return v.shape[s.rank - from_end]; };
    s.leading.assign(Q.shape.begin(), Q.shape.end() - std::min<std::size_t>(s.rank, 3));
    for (std::size_t k = 0; k < s.leading.size(); ++k)
        if (K.shape[k] != s.leading[k] || V.shape[k] != s.leading[k])
            fail(all_three() + " must have the same leading dimensions (the batch B)");
    for (const std::size_t d : s.leading) s.batch = checked_product(s.batch, d, s.who);
    s.heads = s.rank >= 3 ? dim(Q, 3) : 1, s.kv_heads = s.rank >= 3 ? dim(K, 3) : 1;
    s.L = dim(Q, 2), s.E = dim(Q, 1), s.S = dim(K, 2), s.E_v = dim(V, 1);
    const auto pair = [&](const std::string& a, const View& A, const std::string& b, const View& B) {
        return named(a, A) + " and " + named(b, B);
    };
    if (s.kv_heads != (s.rank >= 3 ? dim(V, 3) : 1))
        fail(pair(name.K, K, name.V, V) + " must have the same number of key/value heads H_kv");
    if (s.kv_heads == 0 ? s.heads != 0 : s.heads % s.kv_heads != 0)
        fail(pair(name.Q, Q, name.K, K) + ": the query heads H must be a multiple of the key/value heads H_kv");
    s.group = s.kv_heads == 0 ? 0 : s.heads / s.kv_heads;
    if (dim(K, 1) != s.E) fail(pair(name.Q, Q, name.K, K) + " must have the same width E");
    if (s.E == 0) fail("E = 0: " + pair(name.Q, Q, name.K, K) + " have no columns to compare");
    if (dim(V, 2) != s.S) fail(pair(name.K, K, name.V, V) + " must have the same number of keys S");
    s.cache = cache_type(fail, c);
    return s;
}

}  // namespace

void check_weight_shapes(const View& W_Q, const View& W_K, const View& W_V, const OperandNames& name,
                         bool torch_weights) {
    const Refusal fail{"SingleHeadAttention"};
    // (rows, cols) of a weight as the lesson reads it, d_model × d: nn.Linear's are the other way round
    const auto rows = [&](const View& W) { return W.shape[torch_weights ? 1 : 0]; };
    const auto cols = [&](const View& W) { return W.shape[torch_weights ? 0 : 1]; };
    const std::string weights = "; got " + named(name.W_Q, W_Q) + ", " + named(name.W_K, W_K) + ", " +
                                named(name.W_V, W_V) + (torch_weights ? " (PyTorch's layout, d × d_model)" : "");
    if (rows(W_Q) != rows(W_K) || rows(W_K) != rows(W_V))
        throw DModelMismatch("SingleHeadAttention: all weights need d_model rows" + weights);
    if (cols(W_Q) != cols(W_K)) fail(name.W_Q + " and " + name.W_K + " need the same width d_k" + weights);
    if (cols(W_Q) == 0)
        fail("d_k = 0: " + name.W_Q + " and " + name.W_K + " have no columns, so there is nothing to compare" +
             weights);
}

namespace {

Shapes layer_shapes(const Call& c) {
    Shapes s;
    s.who = "SingleHeadAttention";
    s.layer = true;
    const Refusal fail{s.who};
    const OperandNames& name = c.options.names;
    if (!c.X || !c.W_Q || !c.W_K || !c.W_V) fail("the layer needs X, W_Q, W_K and W_V");
    const View &X = *c.X, &W_Q = *c.W_Q, &W_K = *c.W_K, &W_V = *c.W_V;
    for (const auto& [label, view] :
         {std::pair{&name.X, &X}, {&name.W_Q, &W_Q}, {&name.W_K, &W_K}, {&name.W_V, &W_V}}) {
        if (view->shape.size() != 2)
            fail(named(*label, *view) + ": " + std::to_string(view->shape.size()) + "-D; the layer reads 2-D matrices");
        check_view(fail, *label, *view);
    }
    check_weight_shapes(W_Q, W_K, W_V, name, c.torch_weights);
    // (rows, cols) of a weight as the lesson reads it, d_model × d: nn.Linear's are the other way round
    const auto rows = [&](const View& W) { return W.shape[c.torch_weights ? 1 : 0]; };
    const auto cols = [&](const View& W) { return W.shape[c.torch_weights ? 0 : 1]; };
    s.d_model = rows(W_Q), s.L = s.S = X.shape[0], s.E = cols(W_Q), s.E_v = cols(W_V);
    if (X.shape[1] != s.d_model)
        throw DModelMismatch("SingleHeadAttention::project: " + named(name.X, X) + " needs d_model = " +
                             std::to_string(s.d_model) + " columns to meet " + named(name.W_Q, W_Q));
    if (c.kv_dtype) fail("a kv dtype applies to keys and values given as they are, not to the layer's projections");
    if (c.task == Task::backward) {  // the projections the forward computed
        expect(fail, name.Q, *c.Q, {s.L, s.E}, "X·W_Q");
        expect(fail, name.K, *c.K, {s.L, s.E}, "X·W_K");
        expect(fail, name.V, *c.V, {s.L, s.E_v}, "X·W_V");
    }
    return s;
}

}  // namespace

Shapes shapes_of(const Call& c) {
    Shapes s = c.X ? layer_shapes(c) : attention_shapes(c);
    const Refusal fail{s.who};
    check_options(fail, c);
    if (c.mask) check_mask(fail, c, s);
    check_gradient_operands(fail, c, s);
    return s;
}

}  // namespace attn
