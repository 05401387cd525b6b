// attention/backward.cpp — how attention learns: the chain of attention.cpp run backwards.
//
// Training needs, for a loss L computed from O, the gradient of L with respect to every input of the
// chain; above all the weights W_Q, W_K and W_V, which are what training changes. The chain rule
// passes ∂L/∂(a step's output) back to ∂L/∂(its inputs), one step at a time, in reverse order. We
// write ∂L/∂M as dM (same shape as M); the caller hands in dO = ∂L/∂O (for L = ½‖O − T‖², dO = O − T).
// Each gradient carries the marker of its step ("grad 6.V" in square brackets, and so on; the lesson
// pages link to them), with its formula and shapes in the comment above it. Sizes as in attention.cpp.
//
// Two rules give every product's gradient: for C = A·B,  dA = dC·Bᵀ  and  dB = Aᵀ·dC
// (C_ij = Σ_p A_ip·B_pj, so ∂L/∂A_ip = Σ_j dC_ij·B_pj, and ∂L/∂B_pj = Σ_i A_ip·dC_ij).
#include "attention/backends.hpp"
#include "attention/chain.hpp"
#include "matrix/ops.hpp"

namespace attn {

namespace {

// Grads 6–3: dO → dV, dK, dQ, on the materialised backends (the forward kept α).
void attention_gradients_6_to_3(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& alpha,
                                const Matrix& dO, const AttentionOptions& options, AttentionGradients& g) {
    const Backend b = options.backend;
    Matrix& dS = g.dS;  // one n×m buffer: dα, then dS', then dS (each gradient overwrites the one before)
    // [grad 6.V] dV = αᵀ·dO        (m×n)·(n×d_v) → (m×d_v);  dv_j = Σ_i α_ij·do_i: as much of do_i as token i read of v_j
    backends::transposed_matmul_into(alpha, dO, g.dV, b);
    // [grad 6.α] dα = dO·Vᵀ        (n×d_v)·(d_v×m) → (n×m);  dα_ij = do_i·v_j
    backends::matmul_transposed_into(dO, V, dS, b);
    // [grad 5] dS' = α ⊙ (dα − rowsum(dα ⊙ α))     (n×m);  the softmax's Jacobian, applied without being formed.
    //   why: $\partial\alpha_{ij}/\partial S'_{it} = \alpha_{ij}(\delta_{jt} - \alpha_{it})$, so $dS'_{it} = \sum_j d\alpha_{ij}\,\alpha_{ij}(\delta_{jt} - \alpha_{it}) = \alpha_{it}\,(d\alpha_{it} - \sum_j d\alpha_{ij}\alpha_{ij})$
    backends::softmax_gradient_in_place(alpha, dS, b);
    // [grad 4.mask] dS'_ij = 0 where S'_ij = −∞  (n×m);  a masked score became −∞ whatever it was: no gradient.
    //   Nothing to compute: there α_ij = 0, so grad 5 has already given dS'_ij = 0·(dα_ij − …) = 0.
    //
    // [grad 4] dS = scale·dS'                     (n×m);  S' = scale·S, so each score's gradient is scaled alike
    const backends::ScaledScores dS_scaled = backends::scale(dS, score_factor(options, Q.cols()), b);
    // [grad 3.Q] dQ = dS·K          (n×m)·(m×d_k) → (n×d_k);  dq_i = Σ_j dS_ij·k_j: every key, weighted by its score's gradient
    backends::matmul_into(dS_scaled, K, g.dQ, b);
    // [grad 3.K] dK = dSᵀ·Q         (m×n)·(n×d_k) → (m×d_k);  dk_j = Σ_i dS_ij·q_i: every query, weighted alike
    backends::transposed_matmul_into(dS_scaled, Q, g.dK, b);
}

}  // namespace

namespace chain {

// Grads 6–3 by the backend asked for: the lesson's gradients one by one (above), or the fused kernel,
// which recomputes α from the log-sum-exp tile by tile.
void backward(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionResult& forward, const Matrix& dO,
              const AttentionOptions& options, AttentionGradients& g) {
    const float scale = score_factor(options, Q.cols());
    // [grads 6–3 fused] (dQ, dK, dV) = backward of O = softmax(scale·Q·Kᵀ)·V   (n×d_k), (m×d_k), (m×d_v);  α recomputed from L, never stored
    if (options.backend == Backend::fused)
        return backends::fused_attention_backward_into(Q, K, V, forward, dO, scale, options, g);
    attention_gradients_6_to_3(Q, K, V, forward.weights, dO, options, g);
}

// Grads 2–1: dQ, dK, dV → dW_Q, dW_K, dW_V, dX.
void project_backward(const Matrix& X, const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V,
                      const AttentionGradients& a, Backend b, SingleHeadAttention::Gradients& g) {
    const auto path = [b](const Matrix& dM, const Matrix& W) {  // dM·Wᵀ: one path back to X (n×d_model)
        Matrix P;
        backends::matmul_transposed_into(dM, W, P, b);
        return P;
    };
    // [grad 2.Q] dW_Q = Xᵀ·dQ      (d_model×n)·(n×d_k) → (d_model×d_k);  a descent step subtracts η·dW_Q
    backends::transposed_matmul_into(X, a.dQ, g.dW_Q, b);
    // [grad 2.K] dW_K = Xᵀ·dK      (d_model×n)·(n×d_k) → (d_model×d_k)
    backends::transposed_matmul_into(X, a.dK, g.dW_K, b);
    // [grad 2.V] dW_V = Xᵀ·dV      (d_model×n)·(n×d_v) → (d_model×d_v)
    backends::transposed_matmul_into(X, a.dV, g.dW_V, b);
    // [grad 1] dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ   (n×d_model);  x_i fed all three projections: three paths add up
    g.dX = path(a.dQ, W_Q);
    add_in_place(g.dX, path(a.dK, W_K));
    add_in_place(g.dX, path(a.dV, W_V));
}

}  // namespace chain

}  // namespace attn
