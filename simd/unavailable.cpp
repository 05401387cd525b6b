// simd/unavailable.cpp — simd/ for a build without its kernels (meson -Dkernels=naive), such as the
// WebAssembly build of the pages' live worked example: the naive backend runs as everywhere, and a
// call for the simd, parallel or fused backend is refused with a message that says why.
#include <stdexcept>
#include <string>

#include "simd/simd.hpp"

namespace attn::simd {

namespace {

[[noreturn]] void refuse(const char* op) {
    throw std::invalid_argument(std::string(op) +
                                ": this build has no fast kernels (meson -Dkernels=naive): use the naive backend");
}

}  // namespace

void matmul_into(const Matrix&, const Matrix&, Matrix&, Threads, const Blocking&) { refuse("matmul"); }
void matmul_register_tile_into(const Matrix&, const Matrix&, Matrix&) { refuse("matmul_register_tile"); }
void matmul_transposed_into(const Matrix&, const Matrix&, float, Matrix&, Threads, const Blocking&) {
    refuse("matmul_transposed");
}
void matmul_transposed_bf16_into(const Matrix&, const Matrix&, float, Matrix&) { refuse("matmul_transposed_bf16"); }
void fused_attention_into(const Matrix&, const Matrix&, const Matrix&, float, bool, Matrix&, float*, Threads,
                          const Blocking&, const ScoreTerms*) {
    refuse("fused_attention");
}
void fused_attention_bf16_into(const Matrix&, const Matrix&, const Matrix&, float, bool, Matrix&, Threads,
                               const Blocking&, const ScoreTerms*) {
    refuse("fused_attention_bf16");
}
void fused_attention_backward_into(const Matrix&, const Matrix&, const Matrix&, const Matrix&, const Matrix&,
                                   std::span<const float>, float, bool, Matrix&, Matrix&, Matrix&, Threads,
                                   const Blocking&, const ScoreTerms*) {
    refuse("fused_attention_backward");
}
void causal_mask_in_place(Matrix&, Threads) { refuse("causal_mask"); }
void add_score_terms_in_place(Matrix&, float, const ScoreTerms&, Threads) { refuse("add_score_terms"); }
void softmax_rows_in_place(Matrix&, float, Threads) { refuse("softmax_rows"); }
void softmax_gradient_rows_in_place(const Matrix&, Matrix&, Threads) { refuse("softmax_gradient_rows"); }
float dot(const float*, const float*, std::size_t) { refuse("dot"); }
void axpy(float, const float*, float*, std::size_t) { refuse("axpy"); }
float exp_and_sum(std::span<float>, float) { refuse("exp_and_sum"); }
float exp2_and_sum(std::span<float>, float) { refuse("exp2_and_sum"); }
float row_max(std::span<const float>) { refuse("row_max"); }
float fma_chains(std::size_t) { refuse("fma_chains"); }
float pair_chains(std::size_t) { refuse("pair_chains"); }

// Nothing to allocate: the backends that would are refused before they start.
std::uint64_t gemm_scratch_bytes(std::size_t, std::size_t, std::size_t) { return 0; }
std::uint64_t fused_scratch_bytes(std::size_t, Dtype) { return 0; }
std::uint64_t fused_backward_scratch_bytes(std::size_t, std::size_t, std::size_t) { return 0; }
std::size_t fused_backward_team_size(std::size_t, std::size_t, std::size_t) { return 0; }
std::size_t fused_team_size(std::size_t, std::size_t, std::size_t, std::size_t) { return 0; }

std::vector<std::string> compiled_isas() { return {}; }
std::vector<std::string> supported_isas() { return {}; }
std::string isa() { return "none"; }
void set_isa(const std::string& name) {
    throw std::invalid_argument("ATTN_ISA=" + name + ": this build has no fast kernels (meson -Dkernels=naive)");
}
std::string instruction_set() { return "none"; }
std::size_t batch_width() { return 1; }
std::size_t tile_columns() { return 1; }
bool bf16_instructions() { return false; }
const Blocking& blocking() {
    static const Blocking none{};
    return none;
}

std::string cpu_model() { return "unknown"; }
bool openmp_built() { return false; }
int max_threads() { return 1; }
void set_max_threads(int) {}

}  // namespace attn::simd
