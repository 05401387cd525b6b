// simd/unavailable.cpp — simd/ for a build without its kernels (meson -Dkernels=naive), such as the
// WebAssembly build of the pages' live worked example: the naive backend runs as everywhere, and a
// call for the simd, parallel or fused backend is refused with a message that says why.
#include <stdexcept>
#include <string>

#include "simd/kernel_list.hpp"
#include "simd/simd.hpp"

namespace attn::simd {

namespace {

[[noreturn]] void refuse(const char* op) {
    throw std::invalid_argument(std::string(op) +
                                ": this build has no fast kernels (meson -Dkernels=naive): use the naive backend");
}

}  // namespace

// Every kernel of simd/kernel_list.hpp, refused under its own name.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define ATTN_REFUSE(result, name, parameters, arguments) \
    result name parameters { refuse(#name); }
ATTN_FOR_EACH_KERNEL(ATTN_REFUSE)
#undef ATTN_REFUSE
#pragma GCC diagnostic pop
void causal_mask_in_place(Matrix&, Threads) { refuse("causal_mask"); }
void add_score_terms_in_place(Matrix&, float, const ScoreTerms&, Threads) { refuse("add_score_terms"); }
float pair_chains(std::size_t) { refuse("pair_chains"); }

// Nothing to allocate: the backends that would are refused before they start.
std::uint64_t gemm_scratch_bytes(std::size_t, std::size_t, std::size_t) { return 0; }
std::uint64_t fused_scratch_bytes(std::size_t, Dtype) { return 0; }
std::uint64_t fused_backward_scratch_bytes(std::size_t, std::size_t, std::size_t) { return 0; }
std::size_t fused_backward_team_size(std::size_t, std::size_t, std::size_t) { return 0; }
std::size_t fused_team_size(std::size_t, std::size_t, std::size_t, std::size_t) { return 0; }
DecodeScratchBytes decode_scratch_bytes(std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, Storage) {
    return {0, 0, 0};
}

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
