// attention/chain.hpp — the lesson's chain for one head, its steps alone: what the one path
// (attention/run.cpp) runs on every head of a call once that head's values are checked
// (attention/guards.cpp). Defined beside the steps they run: attention/attention.cpp (steps 1–6) and
// attention/backward.cpp (grads 6–1). Internal to attention/.
#pragma once

#include "attention/attention.hpp"

namespace attn::chain {

// Steps 1–2: Q = X·W_Q, K = X·W_K, V = X·W_V.
void project(const Matrix& X, const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V, Backend backend,
             SingleHeadAttention::Projections& out);

// Steps 3–6: O, and α (materialised backends) or, with keep_for_backward on the fused backend, the
// log-sum-exp, into `out` (whose matrices are written in place when they have the shapes).
void forward(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionOptions& options, AttentionResult& out);

// Grads 6–3: dQ, dK, dV for dO, from the forward's α or log-sum-exp.
void backward(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionResult& forward, const Matrix& dO,
              const AttentionOptions& options, AttentionGradients& out);

// Grads 2–1: dW_Q, dW_K, dW_V and dX from dQ, dK and dV.
void project_backward(const Matrix& X, const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V,
                      const AttentionGradients& qkv, Backend backend, SingleHeadAttention::Gradients& out);

}  // namespace attn::chain
