#include "attention/kernels.hpp"

#include "matrix/ops.hpp"
#include "simd/simd.hpp"

namespace attn::kernels {

namespace {

simd::Threads threads_of(Backend backend) {
    return backend == Backend::simd ? simd::Threads::one : simd::Threads::all;
}

}  // namespace

void matmul(const Matrix& A, const Matrix& B, Matrix& C, Backend backend) {
    if (backend == Backend::naive) return matmul_into(A, B, C);
    simd::matmul(A, B, C, threads_of(backend));
}

void scaled_scores(const Matrix& Q, const Matrix& K, float c, Matrix& S, Backend backend) {
    if (backend == Backend::naive) {  // the formula as written: build Kᵀ, multiply, then scale
        check_matmul_transposed_shapes("matmul_transposed", Q, K);
        matmul_into(Q, transpose(K), S);
        return scale_in_place(S, c);
    }
    simd::matmul_transposed(Q, K, c, S, threads_of(backend));  // rows of K read directly, c fused
}

void causal_mask(Matrix& S, Backend backend) {
    if (backend == Backend::naive) return causal_mask_in_place(S);
    simd::causal_mask(S, threads_of(backend));
}

void softmax_rows(Matrix& S, Backend backend) {
    if (backend == Backend::naive) return softmax_rows_in_place(S);
    simd::softmax_rows(S, threads_of(backend));
}

void fused_attention(const Matrix& Q, const Matrix& K, const Matrix& V, float c, bool causal, Matrix& O) {
    simd::fused_attention(Q, K, V, c, causal, O, simd::Threads::all);
}

}  // namespace attn::kernels
