// attention/backends.cpp — each step of the chain, sent to the kernel its backend names (naive loops
// or simd/), and what those kernels allocate and were built for.
#include "attention/backends.hpp"

#include <algorithm>

#include "matrix/ops.hpp"
#include "matrix/size.hpp"
#include "simd/simd.hpp"

namespace attn::backends {

namespace {

simd::Threads threads_of(Backend backend) { return backend == Backend::simd ? simd::Threads::one : simd::Threads::all; }

}  // namespace

void matmul_into(const Matrix& A, const Matrix& B, Matrix& C, Backend backend) {
    if (backend == Backend::naive) return matmul_into(A, B, C);
    simd::matmul_into(A, B, C, threads_of(backend));
}

void scaled_scores_into(const Matrix& Q, const Matrix& K, float scale, Matrix& S, Backend backend) {
    if (backend == Backend::naive) {  // the formula as written: build Kᵀ, multiply, then scale
        check_matmul_transposed_shapes("matmul_transposed", Q, K);
        matmul_into(Q, transpose(K), S);
        return scale_in_place(S, scale);
    }
    simd::matmul_transposed_into(Q, K, scale, S, threads_of(backend));  // rows of K read directly, scale fused
}

void causal_mask_in_place(Matrix& S, Backend backend) {
    if (backend == Backend::naive) return causal_mask_in_place(S);
    simd::causal_mask_in_place(S, threads_of(backend));
}

void softmax_rows_in_place(Matrix& S, Backend backend) {
    if (backend == Backend::naive) return softmax_rows_in_place(S);
    simd::softmax_rows_in_place(S, threads_of(backend));
}

void fused_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal,
                          AttentionResult& out) {
    out.weights.resize_for_overwrite(0, 0);
    simd::fused_attention_into(Q, K, V, scale, causal, out.output, simd::Threads::all);
}

}  // namespace attn::backends

attn::BuildInfo attn::build_info() {
    return {simd::isa(),
            simd::compiled_isas(),
            simd::supported_isas(),
            simd::instruction_set(),
            simd::batch_width(),
            simd::openmp_built(),
            simd::max_threads(),
            simd::cpu_model(),
            simd::describe(simd::caches()),
            simd::describe(simd::blocking())};
}

// What each backend allocates, mirroring the calls in attention.cpp: naive builds Kᵀ, the fast
// matmuls keep their packing buffers (each as large as the largest call asked for; the sum of the
// two calls bounds that), fused keeps scratch per thread.
std::uint64_t attn::attention_bytes(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v, Backend backend) {
    const std::string what = "attention working memory";
    std::uint64_t bytes = matrix_bytes(n, d_v);  // O
    if (backend == Backend::fused)
        return checked_sum(
            bytes, checked_product(simd::fused_scratch_bytes(d_k), simd::fused_team_size(n, m, d_k, d_v), what), what);
    bytes = checked_sum(bytes, matrix_bytes(n, m), what);                                  // S, then α, in one buffer
    if (backend == Backend::naive) return checked_sum(bytes, matrix_bytes(d_k, m), what);  // Kᵀ
    return checked_sum(
        bytes, checked_sum(simd::gemm_scratch_bytes(n, d_k, m), simd::gemm_scratch_bytes(n, m, d_v), what), what);
}

std::uint64_t attn::projection_bytes(std::size_t n, std::size_t d_model, std::size_t d_k, std::size_t d_v,
                                     Backend backend) {
    const std::string what = "projection working memory";
    std::uint64_t bytes =
        checked_sum(checked_product(matrix_bytes(n, d_k), 2, what), matrix_bytes(n, d_v), what);  // Q, K, V
    if (backend == Backend::naive) return bytes;
    return checked_sum(
        bytes, checked_sum(simd::gemm_scratch_bytes(n, d_model, d_k), simd::gemm_scratch_bytes(n, d_model, d_v), what),
        what);
}
