// attention/backends.cpp — each step of the chain, sent to the kernel its backend names (naive loops
// or simd/), what each stage allocates on each backend (beside the calls that allocate it), and what
// the kernels were built for.
#include "attention/backends.hpp"

#include <algorithm>
#include <string>

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

void scores_into(const Matrix& Q, const Matrix& K, Matrix& S, Backend backend) {
    if (backend == Backend::naive) {  // the formula as written: build Kᵀ, then multiply
        check_matmul_transposed_shapes("matmul_transposed", Q, K);
        return matmul_into(Q, transpose(K), S);
    }
    simd::matmul_transposed_into(Q, K, 1.0f, S, threads_of(backend));  // panels of Kᵀ packed from rows of K
}

ScaledScores scale(Matrix& S, float factor, Backend backend) {
    if (backend != Backend::naive) return {S, factor};  // multiplied in step 5's kernel, as it reads S
    scale_in_place(S, factor);
    return {S, 1.0f};
}

void causal_mask_in_place(const ScaledScores& S, Backend backend) {  // −∞ stays −∞ under any factor > 0
    if (backend == Backend::naive) return causal_mask_in_place(S.S);
    simd::causal_mask_in_place(S.S, threads_of(backend));
}

Matrix& softmax_rows_in_place(const ScaledScores& S, Backend backend) {
    if (backend == Backend::naive) {
        if (S.factor != 1.0f) scale_in_place(S.S, S.factor);
        softmax_rows_in_place(S.S);
    } else {
        simd::softmax_rows_in_place(S.S, S.factor, threads_of(backend));
    }
    return S.S;
}

void fused_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal,
                          AttentionResult& out) {
    out.weights.resize_for_overwrite(0, 0);
    simd::fused_attention_into(Q, K, V, scale, causal, out.output, simd::Threads::all);
}

namespace {

std::string of(const char* what, std::size_t rows, std::size_t cols) {
    return what + (" (" + shape_string(rows, cols) + ")");
}

// The product kernels keep one packing buffer on the calling thread, as large as the largest call
// asked for (simd/gemm.cpp): of two products in a row, the larger one's.
std::uint64_t packing_of(std::uint64_t first, std::uint64_t second) { return std::max(first, second); }

}  // namespace

std::vector<Buffer> projection_buffers(std::size_t n, std::size_t d_model, std::size_t d_k, std::size_t d_v,
                                       Backend backend) {
    std::vector<Buffer> buffers = {{of("Q", n, d_k) + " of step 2", matrix_bytes(n, d_k)},
                                   {of("K", n, d_k) + " of step 2", matrix_bytes(n, d_k)},
                                   {of("V", n, d_v) + " of step 2", matrix_bytes(n, d_v)}};
    if (backend != Backend::naive)
        buffers.push_back(
            {"the packed panels of W_Q, W_K and W_V (step 2 on the " + to_string(backend) + " backend)",
             packing_of(simd::gemm_scratch_bytes(n, d_model, d_k), simd::gemm_scratch_bytes(n, d_model, d_v))});
    return buffers;
}

std::vector<Buffer> attention_buffers(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v, Backend backend) {
    const std::string on = " on the " + to_string(backend) + " backend";
    std::vector<Buffer> buffers;
    if (backend == Backend::fused) {
        const std::size_t team = simd::fused_team_size(n, m, d_k, d_v);
        buffers.push_back({"the fused kernel's scratch (" + std::to_string(team) + " thread" + (team == 1 ? "" : "s") +
                               ", one score block and two panels each)",
                           checked_product(simd::fused_scratch_bytes(d_k), team, "fused scratch")});
    } else {
        buffers.push_back(
            {of("S/α", n, m) + " of steps 3–5" + on + "; --backend fused never stores S", matrix_bytes(n, m)});
        if (backend == Backend::naive) buffers.push_back({of("Kᵀ", d_k, m) + " of step 3" + on, matrix_bytes(d_k, m)});
        else
            buffers.push_back({"the packed panels of Kᵀ and V (steps 3 and 6" + on + ")",
                               packing_of(simd::gemm_scratch_bytes(n, d_k, m), simd::gemm_scratch_bytes(n, m, d_v))});
    }
    buffers.push_back({of("O", n, d_v) + " of step 6", matrix_bytes(n, d_v)});
    return buffers;
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
