// attention/kernels.hpp — one function per step of the chain, choosing the kernel by Backend.
// The chain in attention.cpp calls only these, so the backend changes which loops run, never
// which formula is computed.
#pragma once

#include "attention/attention.hpp"

namespace attn::kernels {

void matmul(const Matrix& A, const Matrix& B, Matrix& C, Backend backend);             // C = A·B
void scaled_scores(const Matrix& Q, const Matrix& K, float c, Matrix& S, Backend backend);  // S = c·Q·Kᵀ
void causal_mask(Matrix& S, Backend backend);                                          // S_ij ← −∞, j > i
void softmax_rows(Matrix& S, Backend backend);                                         // row-wise softmax
// O = softmax(c·Q·Kᵀ [masked])·V in one tiled pass (Backend::fused only).
void fused_attention(const Matrix& Q, const Matrix& K, const Matrix& V, float c, bool causal, Matrix& O);

}  // namespace attn::kernels
