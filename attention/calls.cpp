// attention/calls.cpp — the functions a caller calls from C++ (attention/attention.hpp, attention/heads.hpp):
// each describes its call (attention/call.hpp) over the caller's matrices and stacks of heads, hands it
// to the one path (attention/run.cpp) and gives its results back in the types it promised.
#include <optional>
#include <stdexcept>
#include <utility>

#include "attention/attention.hpp"
#include "attention/guards.hpp"
#include "attention/heads.hpp"
#include "attention/run.hpp"
#include "attention/shapes.hpp"
#include "attention/views.hpp"

namespace attn {

void refuse_aliases(const std::string& who, std::initializer_list<const Matrix*> results,
                    std::initializer_list<std::pair<std::string, const Matrix*>> inputs) {
    for (const Matrix* result : results)
        for (const auto& [name, input] : inputs)
            if (result == input)
                throw std::invalid_argument(who + ": a result's buffer is " + name +
                                            " itself; the call would overwrite " + name +
                                            " while it still reads it (pass separate results)");
}

// One head: Q, K, V.

namespace {

// A single head's call on Q, K, V (and the mask of options, over its L×S scores).
struct CoreCall {
    MatrixView q, k, v;
    std::optional<MaskAsView> mask;
    Call call;
    CoreCall(Task task, const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionOptions& options)
        : q(Q), k(K), v(V) {
        if (options.mask) mask.emplace(*options.mask, 1, 1, Q.rows(), K.rows(), 2);
        call = {.task = task, .Q = q.view, .K = k.view, .V = v.view, .options = options};
        if (mask) call.mask = mask->view;
    }
};

}  // namespace

void scaled_dot_product_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V,
                                       const AttentionOptions& options, AttentionResult& out) {
    refuse_aliases("scaled_dot_product_attention_into", {&out.output, &out.weights, &out.log_sum_exp},
                   {{options.names.Q, &Q}, {options.names.K, &K}, {options.names.V, &V}});
    const CoreCall c(Task::forward, Q, K, V, options);
    Results r;
    r.output.values = std::move(out.output), r.weights.values = std::move(out.weights);
    r.log_sum_exp.values = std::move(out.log_sum_exp);
    run_lending(c.call, r, [&] {
        out = {std::move(r.output.values), std::move(r.weights.values), std::move(r.log_sum_exp.values)};
    });
}

AttentionResult scaled_dot_product_attention(const Matrix& Q, const Matrix& K, const Matrix& V,
                                             const AttentionOptions& options) {
    AttentionResult result;
    scaled_dot_product_attention_into(Q, K, V, options, result);
    return result;
}

namespace {

// A single head's backward on Q, K, V, the forward's results and dO (and the mask of options).
struct BackwardCall {
    MatrixView q, k, v, o, weights, log_sum_exp, d_o;
    std::optional<MaskAsView> mask;
    Call call;
    BackwardCall(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionResult& forward, const Matrix& dO,
                 const AttentionOptions& options)
        : q(Q), k(K), v(V), o(forward.output), weights(forward.weights), log_sum_exp(forward.log_sum_exp), d_o(dO) {
        if (options.mask) mask.emplace(*options.mask, 1, 1, Q.rows(), K.rows(), 2);
        call = {.task = Task::backward,
                .Q = q.view,
                .K = k.view,
                .V = v.view,
                .dO = d_o.view,
                .O = o.view,
                .weights = weights.view,
                .log_sum_exp = log_sum_exp.view,
                .options = options};
        if (mask) call.mask = mask->view;
    }
};

}  // namespace

void scaled_dot_product_attention_backward_into(const Matrix& Q, const Matrix& K, const Matrix& V,
                                                const AttentionResult& forward, const Matrix& dO,
                                                const AttentionOptions& options, AttentionGradients& g) {
    const OperandNames& name = options.names;
    refuse_aliases("scaled_dot_product_attention_backward", {&g.dQ, &g.dK, &g.dV, &g.dS},
                   {{name.Q, &Q},
                    {name.K, &K},
                    {name.V, &V},
                    {name.dO, &dO},
                    {"the forward's output", &forward.output},
                    {"the forward's α", &forward.weights},
                    {"the forward's log-sum-exp", &forward.log_sum_exp}});
    const BackwardCall c(Q, K, V, forward, dO, options);
    Results r;
    r.dQ.values = std::move(g.dQ), r.dK.values = std::move(g.dK), r.dV.values = std::move(g.dV);
    r.dS = std::move(g.dS);
    run_lending(c.call, r, [&] {
        g = {std::move(r.dQ.values), std::move(r.dK.values), std::move(r.dV.values), std::move(r.dS)};
    });
}

AttentionGradients scaled_dot_product_attention_backward(const Matrix& Q, const Matrix& K, const Matrix& V,
                                                         const AttentionResult& forward, const Matrix& dO,
                                                         const AttentionOptions& options) {
    AttentionGradients g;
    scaled_dot_product_attention_backward_into(Q, K, V, forward, dO, options, g);
    return g;
}

AttentionPass attention_forward_backward(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO,
                                         const AttentionOptions& options) {
    const MatrixView q(Q), k(K), v(V), d_o(dO);
    std::optional<MaskAsView> mask;
    if (options.mask) mask.emplace(*options.mask, 1, 1, Q.rows(), K.rows(), 2);
    Call call{
        .task = Task::forward_backward, .Q = q.view, .K = k.view, .V = v.view, .dO = d_o.view, .options = options};
    if (mask) call.mask = mask->view;
    Results r;
    run(call, r);
    return {{std::move(r.output.values), std::move(r.weights.values), std::move(r.log_sum_exp.values)},
            {std::move(r.dQ.values), std::move(r.dK.values), std::move(r.dV.values), std::move(r.dS)}};
}

// The layer: X and its weights.

SingleHeadAttention::SingleHeadAttention(Matrix W_Q, Matrix W_K, Matrix W_V, const OperandNames& names)
    : W_Q_(std::move(W_Q)), W_K_(std::move(W_K)), W_V_(std::move(W_V)) {
    check_weight_shapes(MatrixView(W_Q_).view, MatrixView(W_K_).view, MatrixView(W_V_).view, names, false);
    guards::check_weight_values(W_Q_, W_K_, W_V_, names);
}

namespace {
// The layer's call on X and its weights.
struct LayerCall {
    MatrixView x, w_q, w_k, w_v;
    std::optional<MaskAsView> mask;
    Call call;
    LayerCall(Task task, const Matrix& X, const SingleHeadAttention& layer, const AttentionOptions& options)
        : x(X), w_q(layer.W_Q()), w_k(layer.W_K()), w_v(layer.W_V()) {
        if (options.mask) mask.emplace(*options.mask, 1, 1, X.rows(), X.rows(), 2);
        call = {.task = task, .X = x.view, .W_Q = w_q.view, .W_K = w_k.view, .W_V = w_v.view, .options = options};
        if (mask) call.mask = mask->view;
    }
};

}  // namespace

// Steps 1–2.
SingleHeadAttention::Projections SingleHeadAttention::project(const Matrix& X, const AttentionOptions& options) const {
    const LayerCall c(Task::project, X, *this, options);
    Results r;
    run(c.call, r);
    return {std::move(r.Q.values), std::move(r.K.values), std::move(r.V.values)};
}

// The lesson's SingleHeadAttention.forward: steps 1–2, then 3–6. With a budget, everything both
// stages allocate is charged before step 1 runs: a run too large is refused before any work.
AttentionResult SingleHeadAttention::forward(const Matrix& X, const AttentionOptions& options) const {
    const LayerCall c(Task::forward, X, *this, options);
    Results r;
    run(c.call, r);
    return {std::move(r.output.values), std::move(r.weights.values), std::move(r.log_sum_exp.values)};
}

namespace {
// The layer's call on X, its weights and dO (and, for its backward, what its forward computed).
struct LayerGradientCall {
    MatrixView x, w_q, w_k, w_v, d_o;
    std::optional<MatrixView> q, k, v, o, weights, log_sum_exp;
    std::optional<MaskAsView> mask;
    Call call;
    LayerGradientCall(Task task, const Matrix& X, const SingleHeadAttention& layer, const Matrix& dO,
                      const AttentionOptions& options)
        : x(X), w_q(layer.W_Q()), w_k(layer.W_K()), w_v(layer.W_V()), d_o(dO) {
        if (options.mask) mask.emplace(*options.mask, 1, 1, X.rows(), X.rows(), 2);
        call = {.task = task,
                .X = x.view,
                .W_Q = w_q.view,
                .W_K = w_k.view,
                .W_V = w_v.view,
                .dO = d_o.view,
                .options = options};
        if (mask) call.mask = mask->view;
    }
    void given(const SingleHeadAttention::Projections& p, const AttentionResult& forward) {
        call.Q = q.emplace(p.Q).view, call.K = k.emplace(p.K).view, call.V = v.emplace(p.V).view;
        call.O = o.emplace(forward.output).view, call.weights = weights.emplace(forward.weights).view;
        call.log_sum_exp = log_sum_exp.emplace(forward.log_sum_exp).view;
    }
};

SingleHeadAttention::Gradients gradients_of(Results& r) {
    return {std::move(r.dX.values),
            std::move(r.dW_Q.values),
            std::move(r.dW_K.values),
            std::move(r.dW_V.values),
            {std::move(r.dQ.values), std::move(r.dK.values), std::move(r.dV.values), std::move(r.dS)}};
}

}  // namespace

SingleHeadAttention::Gradients SingleHeadAttention::backward(const Matrix& X, const Projections& projections,
                                                             const AttentionResult& result, const Matrix& dO,
                                                             const AttentionOptions& options) const {
    LayerGradientCall c(Task::backward, X, *this, dO, options);
    c.given(projections, result);
    Results r;
    run(c.call, r);
    return gradients_of(r);
}

SingleHeadAttention::Pass SingleHeadAttention::forward_backward(const Matrix& X, const Matrix& dO,
                                                                const AttentionOptions& options) const {
    const LayerGradientCall c(Task::forward_backward, X, *this, dO, options);
    Results r;
    run(c.call, r);
    return {{std::move(r.Q.values), std::move(r.K.values), std::move(r.V.values)},
            {std::move(r.output.values), std::move(r.weights.values), std::move(r.log_sum_exp.values)},
            gradients_of(r)};
}

// Stacks of heads.

namespace {

// A call on stacks of heads: Q, K, V and the mask of options over the (B, H, L, S) scores.
struct HeadsCall {
    HeadsAsView q, k, v;
    std::optional<MaskAsView> mask;
    Call call;
    HeadsCall(Task task, const HeadsView& Q, const CacheView& K, const CacheView& V, const AttentionOptions& options)
        : q(Q), k(K), v(V) {
        if (options.mask) mask.emplace(*options.mask, Q.shape.batch, Q.shape.heads, Q.shape.rows, K.shape.rows, 4);
        call = {.task = task, .Q = q.view, .K = k.view, .V = v.view, .options = options};
        if (mask) call.mask = mask->view;
    }
};

}  // namespace

HeadsResult scaled_dot_product_attention(const HeadsView& Q, const HeadsView& K, const HeadsView& V,
                                         const AttentionOptions& options) {
    return scaled_dot_product_attention(Q, CacheView(K), CacheView(V), options);
}

HeadsResult scaled_dot_product_attention(const HeadsView& Q, const CacheView& K, const CacheView& V,
                                         const AttentionOptions& options) {
    const HeadsCall c(Task::forward, Q, K, V, options);
    Results r;
    run(c.call, r);
    return {heads_of(std::move(r.output)), heads_of(std::move(r.log_sum_exp)), heads_of(std::move(r.weights))};
}

HeadsGradients scaled_dot_product_attention_backward(const HeadsView& Q, const HeadsView& K, const HeadsView& V,
                                                     const HeadsResult& forward, const HeadsView& dO,
                                                     const AttentionOptions& options) {
    HeadsCall c(Task::backward, Q, K, V, options);
    const HeadsAsView o(forward.output.view()), weights(forward.weights.view()),
        log_sum_exp(forward.log_sum_exp.view()), d_o(dO);
    c.call.dO = d_o.view, c.call.O = o.view, c.call.weights = weights.view, c.call.log_sum_exp = log_sum_exp.view;
    Results r;
    run(c.call, r);
    return {heads_of(std::move(r.dQ)), heads_of(std::move(r.dK)), heads_of(std::move(r.dV))};
}

}  // namespace attn
