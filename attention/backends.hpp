// attention/backends.hpp — one function per step of the chain, choosing the kernel by Backend.
// The chain in attention.cpp calls only these, so the backend changes which loops run, never
// which formula is computed.
#pragma once

#include "attention/attention.hpp"

namespace attn::backends {

void matmul_into(const Matrix& A, const Matrix& B, Matrix& C, Backend backend);                      // C = A·B
void scaled_scores_into(const Matrix& Q, const Matrix& K, float scale, Matrix& S, Backend backend);  // S = scale·Q·Kᵀ
void causal_mask_in_place(Matrix& S, Backend backend);   // S_ij ← −∞, j > i
void softmax_rows_in_place(Matrix& S, Backend backend);  // row-wise softmax
// O = softmax(scale·Q·Kᵀ [masked])·V in one tiled pass (Backend::fused only): out.output is O,
// out.weights is left empty (0×0), since α is never formed.
void fused_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal,
                          AttentionResult& out);

}  // namespace attn::backends
