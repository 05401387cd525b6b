// simd/dispatch.cpp — which instruction set's kernels run: the widest this CPU supports, or the one
// the environment variable ATTN_ISA names.
//
// meson.build compiles the kernel files once per instruction set, each with its own flags and in its
// own namespace (simd/batch.hpp), and lists them in simd_isas.hpp. This file is compiled for the
// baseline (it must run on every CPU, to find out which kernels can), asks the CPU what it supports,
// and forwards every call of simd.hpp to the chosen set's table (simd/kernels.hpp). The call through
// a pointer costs a few nanoseconds against the microseconds a kernel takes.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>

#include "matrix/size.hpp"
#include "simd/kernels.hpp"
#include "simd/simd.hpp"
#include "simd/threads.hpp"
#include "simd_isas.hpp"

#define ATTN_DECLARE_TABLE(isa)             \
    namespace attn::simd::isa {             \
    extern constinit const Kernels kernels; \
    }
ATTN_FOR_EACH_ISA(ATTN_DECLARE_TABLE)
#undef ATTN_DECLARE_TABLE

namespace attn::simd {

namespace {

#define ATTN_TABLE_ADDRESS(isa) &isa::kernels,
constexpr const Kernels* compiled[] = {ATTN_FOR_EACH_ISA(ATTN_TABLE_ADDRESS)};  // baseline first
#undef ATTN_TABLE_ADDRESS

// Whether this CPU (and its operating system, which must save the wider registers) can run the
// instructions the compiler was allowed for that set: meson.build's flags, feature by feature.
bool cpu_runs([[maybe_unused]] const std::string& isa) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (isa == "avx2") return avx2;
    const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl");
    if (isa == "avx512") return avx512;
    if (isa == "avx512bf16") return avx512 && __builtin_cpu_supports("avx512bf16");
#endif
    return true;  // the baseline ("sse2" on x86-64, "neon": every AArch64 CPU has it), or "native"
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
    return out;
}

const Kernels& find(const std::string& name, const std::string& asked_by) {
    for (const Kernels* k : compiled)
        if (k->name == name) {
            if (!cpu_runs(name))
                throw std::invalid_argument(asked_by + name +
                                            ": this CPU cannot run it (it can run: " + joined(supported_isas()) + ")");
            return *k;
        }
    throw std::invalid_argument(asked_by + name +
                                ": not an instruction set of this build (compiled: " + joined(compiled_isas()) + ")");
}

// The widest set the CPU runs, unless ATTN_ISA names another. Chosen at the first call; an ATTN_ISA
// that cannot be used throws then (and again at every later call, until set_isa chooses one).
const Kernels& environment_choice() {
    if (const char* env = std::getenv("ATTN_ISA"); env && *env) return find(env, "ATTN_ISA=");
    const Kernels* best = compiled[0];
    for (const Kernels* k : compiled)
        if (cpu_runs(k->name)) best = k;
    return *best;
}

std::atomic<const Kernels*> chosen{nullptr};

const Kernels& active() {
    if (const Kernels* k = chosen.load(std::memory_order_acquire)) return *k;
    const Kernels* k = &environment_choice();
    const Kernels* expected = nullptr;
    chosen.compare_exchange_strong(expected, k, std::memory_order_acq_rel);
    return *chosen.load(std::memory_order_acquire);
}

}  // namespace

std::vector<std::string> compiled_isas() {
    std::vector<std::string> names;
    for (const Kernels* k : compiled) names.emplace_back(k->name);
    return names;
}

std::vector<std::string> supported_isas() {
    std::vector<std::string> names;
    for (const Kernels* k : compiled)
        if (cpu_runs(k->name)) names.emplace_back(k->name);
    return names;
}

std::string isa() { return active().name; }
void set_isa(const std::string& name) { chosen.store(&find(name, "instruction set "), std::memory_order_release); }
std::string instruction_set() { return active().xsimd_name; }
std::size_t batch_width() { return active().width; }
std::size_t tile_columns() { return 2 * active().width; }
bool bf16_instructions() { return active().pair_chains != nullptr; }

const Blocking& blocking() {
    // One Blocking per compiled set, made on first use (NR differs between sets).
    static std::mutex mutex;
    static std::map<const Kernels*, Blocking> made;
    const Kernels* k = &active();
    const std::lock_guard lock(mutex);
    return made.try_emplace(k, blocking_for(caches(), 2 * k->width)).first->second;
}

void matmul_into(const Matrix& A, const Matrix& B, Matrix& C, Threads threads, const Blocking& blocking) {
    active().matmul_into(A, B, C, threads, blocking);
}
void matmul_transposed_into(const Matrix& A, const Matrix& B, float scale, Matrix& C, Threads threads,
                            const Blocking& blocking) {
    active().matmul_transposed_into(A, B, scale, C, threads, blocking);
}
void matmul_transposed_bf16_into(const Matrix& A, const Matrix& B, float scale, Matrix& C) {
    active().matmul_transposed_bf16_into(A, B, scale, C);
}
void fused_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal, Matrix& O,
                          float* log_sum_exp, Threads threads, const Blocking& blocking, const ScoreTerms* terms) {
    active().fused_attention_into(Q, K, V, scale, causal, O, log_sum_exp, threads, blocking, terms);
}
void fused_attention_bf16_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal, Matrix& O,
                               Threads threads, const Blocking& blocking, const ScoreTerms* terms) {
    active().fused_attention_bf16_into(Q, K, V, scale, causal, O, threads, blocking, terms);
}
void fused_attention_backward_into(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& O, const Matrix& dO,
                                   std::span<const float> log_sum_exp, float scale, bool causal, Matrix& dQ, Matrix& dK,
                                   Matrix& dV, Threads threads, const Blocking& blocking, const ScoreTerms* terms) {
    active().fused_attention_backward_into(Q, K, V, O, dO, log_sum_exp, scale, causal, dQ, dK, dV, threads, blocking,
                                           terms);
}
// What the kernels of the set in use allocate (their buffers are described in simd/gemm.cpp and
// simd/fused.cpp). Computed here, for the baseline, from that set's tile width and block sizes: the
// checked arithmetic builds error strings, and no string code may be compiled into a kernel copy
// (tests/checks/check_isa_symbols.py says why).
std::uint64_t gemm_scratch_bytes(std::size_t /* m: A is read in place */, std::size_t k, std::size_t n) {
    // the packed panels of B (kc × nc at most), on the calling thread
    const std::size_t NR = tile_columns();
    const GemmBlocks g = gemm_blocks(blocking(), k, n, NR);
    return matrix_bytes(std::min(g.kc, k), round_up(std::min(g.nc, n), NR));
}

std::size_t fused_team_size(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v) {
    const std::size_t row_strips = (n + MR - 1) / MR;
    if (!use_team(Threads::all, 2.0 * double(n) * double(m) * double(d_k + d_v), row_strips)) return 1;
    return std::min<std::size_t>(std::size_t(std::max(max_threads(), 1)), row_strips);
}

std::uint64_t fused_scratch_bytes(std::size_t d_k, Dtype dtype) {
    const std::size_t BR = blocking().fused_rows, NR = tile_columns();
    // per thread: the BR×BC score block, a panel of Kᵀ (depth × NR) and one of V (BC keys' depth × NR),
    // four floats per row (m, ℓ, the new m, e^(m − m')), rows padded to whole batches; bf16 also
    // rounds the block's rows of Q and one key at a time ((BR + 1) × depth). Depths: d_k and BC floats, or with bf16 their pairs,
    // floats_per_pair floats each, and BC made even.
    const bool bf16 = dtype == Dtype::bf16;
    const std::size_t BC = bf16 ? round_up(blocking().panel_kc, 2) : blocking().panel_kc;
    const auto depth = [&](std::size_t n) { return bf16 ? (n + 1) / 2 * active().floats_per_pair : n; };
    const std::size_t padded_rows = round_up(BR, batch_width());
    const char* what = "fused scratch";
    const std::uint64_t k_floats = checked_product(checked_sum(NR, bf16 ? BR + 1 : 0, what), depth(d_k), what);
    const std::uint64_t floats = checked_sum(k_floats, BR * BC + depth(BC) * NR + 4 * padded_rows, what);
    return checked_product(floats, sizeof(float), what);
}
std::uint64_t fused_backward_scratch_bytes(std::size_t m, std::size_t d_k, std::size_t d_v) {
    const std::size_t block = fused_backward_keys_per_block(m, blocking()), BC = blocking().panel_kc,
                      NR = tile_columns();
    // per thread (simd/fused_backward.cpp): two tiles of block×BC (scores, gradients), each padded by
    // NR, one panel of max(d_k, d_v, BC)×NR, and the block's Kᵀ (d_k×block); the lanes' dQᵀ and the
    // two floats per query row are counted by the caller, who knows n
    const char* what = "fused backward scratch";
    const std::uint64_t floats = checked_sum(
        checked_sum(checked_product(std::max({d_k, d_v, BC}), NR, what), checked_product(d_k, block, what), what),
        2 * (block * BC + NR), what);
    return checked_product(floats, sizeof(float), what);
}

std::size_t fused_backward_team_size(std::size_t n, std::size_t m, std::size_t d_k) {
    return fused_backward_team(n, m, d_k);
}
void softmax_rows_in_place(Matrix& S, float scale, Threads threads) {
    active().softmax_rows_in_place(S, scale, threads);
}
void softmax_gradient_rows_in_place(const Matrix& P, Matrix& G, Threads threads) {
    active().softmax_gradient_rows_in_place(P, G, threads);
}
float dot(const float* a, const float* b, std::size_t n) { return active().dot(a, b, n); }
void axpy(float factor, const float* x, float* y, std::size_t n) { active().axpy(factor, x, y, n); }
float exp_and_sum(std::span<float> x, float shift) { return active().exp_and_sum(x, shift); }
float exp2_and_sum(std::span<float> x, float shift) { return active().exp2_and_sum(x, shift); }
float row_max(std::span<const float> x) { return active().row_max(x); }
float fma_chains(std::size_t steps) { return active().fma_chains(steps); }
float pair_chains(std::size_t steps) {
    if (!active().pair_chains)
        throw std::invalid_argument("pair_chains: instruction set " + isa() + " has no vdpbf16ps");
    return active().pair_chains(steps);
}
void matmul_register_tile_into(const Matrix& A, const Matrix& B, Matrix& C) {
    active().matmul_register_tile_into(A, B, C);
}

}  // namespace attn::simd
