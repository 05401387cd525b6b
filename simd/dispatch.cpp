// simd/dispatch.cpp — which instruction set's kernels run: the widest this CPU supports, or the one
// the environment variable ATTN_ISA names; and each kernel of simd.hpp, calling that set's.
//
// meson.build compiles the kernel files once per instruction set, each with its own flags and in its
// own namespace (simd/batch.hpp), and lists them in simd_isas.hpp (none at all in a build without
// the kernels, -Dkernels=naive: then every kernel refuses, naming that build). This file is compiled
// for the baseline (it must run on every CPU, to find out which kernels can), asks the CPU what it
// supports, and each function of simd.hpp below calls the chosen set's (its table, simd/kernels.hpp,
// points at the definition in the kernel's own file). The call through a pointer costs a few
// nanoseconds against the microseconds a kernel takes.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <span>
#include <stdexcept>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "matrix/size.hpp"
#include "simd/kernels.hpp"
#include "simd/scratch.hpp"
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
// Baseline first. Constant-initialised, so that benchmarks and tests registered by other files'
// static initialisers find the list filled; the trailing nullptr lets a build with no sets list none.
constexpr const Kernels* compiled_or_null[] = {ATTN_FOR_EACH_ISA(ATTN_TABLE_ADDRESS) nullptr};
constexpr std::span<const Kernels* const> compiled{compiled_or_null, std::size(compiled_or_null) - 1};
#undef ATTN_TABLE_ADDRESS

// What a build without the kernels reports of itself; its functions are never called.
constexpr Kernels none{.name = "none", .xsimd_name = "none"};

// Whether this CPU (and its operating system, which must save the wider registers) can run the
// instructions the compiler was allowed for that set: meson.build's flags, feature by feature.
bool cpu_runs([[maybe_unused]] const std::string& isa) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    // F16C from CPUID leaf 1, ECX bit 29: not every compiler's __builtin_cpu_supports has a name for it
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
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
    if (compiled.empty()) return none;
    const Kernels* best = compiled[0];
    for (const Kernels* k : compiled)
        if (cpu_runs(k->name)) best = k;
    return *best;
}

std::atomic<const Kernels*> chosen{nullptr};

const Kernels& chosen_set() {
    if (const Kernels* k = chosen.load(std::memory_order_acquire)) return *k;
    const Kernels* k = &environment_choice();
    const Kernels* expected = nullptr;
    chosen.compare_exchange_strong(expected, k, std::memory_order_acq_rel);
    return *chosen.load(std::memory_order_acquire);
}

// The set whose kernels run: a build without them refuses here, before any work.
const Kernels& active() {
    const Kernels& k = chosen_set();
    if (&k == &none)
        throw std::invalid_argument("this build has no fast kernels (meson -Dkernels=naive): use the naive backend");
    return k;
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

std::string isa() { return chosen_set().name; }
void set_isa(const std::string& name) { chosen.store(&find(name, "instruction set "), std::memory_order_release); }
std::string instruction_set() { return chosen_set().xsimd_name; }
std::size_t batch_width() { return chosen_set().width; }
std::size_t tile_columns() { return 2 * chosen_set().width; }
bool bf16_instructions() { return chosen_set().pair_chains != nullptr; }

const Blocking& blocking() {
    // One Blocking per compiled set, made on first use (NR differs between sets).
    static std::mutex mutex;
    static std::map<const Kernels*, Blocking> made;
    static const Blocking unblocked{};
    const Kernels* k = &chosen_set();
    if (k == &none) return unblocked;
    const std::lock_guard lock(mutex);
    return made.try_emplace(k, blocking_for(caches(), 2 * k->width)).first->second;
}

// ---- the kernels, each calling the set in use, beside the scratch it allocates --------------------
// What a kernel allocates is simd/scratch.hpp's formula, evaluated for that set's tile width and
// block sizes, in a count that cannot wrap.
namespace {

// Sums and products that throw std::length_error rather than wrap (matrix/size.hpp).
struct CheckedCount {
    std::uint64_t value;
    explicit CheckedCount(std::uint64_t v) : value(v) {}
    friend CheckedCount operator+(CheckedCount a, CheckedCount b) {
        return CheckedCount(checked_sum(a.value, b.value, "kernel scratch"));
    }
    friend CheckedCount operator*(CheckedCount a, CheckedCount b) {
        return CheckedCount(checked_product(a.value, b.value, "kernel scratch"));
    }
};

std::uint64_t bytes(CheckedCount floats) { return (floats * CheckedCount(sizeof(float))).value; }

}  // namespace

void matmul_into(const Matrix& A, const Matrix& B, Matrix& C, Threads threads, const Blocking& blocking) {
    active().matmul_into(A, B, C, threads, blocking);
}

void matmul_register_tile_into(const Matrix& A, const Matrix& B, Matrix& C) {
    active().matmul_register_tile_into(A, B, C);
}

void matmul_transposed_into(const Matrix& A, const Matrix& B, float scale, Matrix& C, Threads threads,
                            const Blocking& blocking) {
    active().matmul_transposed_into(A, B, scale, C, threads, blocking);
}

std::uint64_t gemm_scratch_bytes(std::size_t /* m: A is read in place */, std::size_t k, std::size_t n) {
    const std::size_t NR = 2 * active().width;
    return bytes(gemm_panel_floats<CheckedCount>(gemm_blocks(blocking(), k, n, NR), k, n, NR));
}

void matmul_transposed_bf16_into(const Matrix& A, const Matrix& B, float scale, Matrix& C) {
    active().matmul_transposed_bf16_into(A, B, scale, C);
}

void fused_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal, Matrix& O,
                          float* log_sum_exp, Threads threads, const Blocking& blocking, const ScoreTerms* terms) {
    active().fused_attention_into(Q, K, V, scale, causal, O, log_sum_exp, threads, blocking, terms);
}

std::uint64_t fused_scratch_bytes(std::size_t d_k, Dtype dtype) {
    const std::size_t pair = dtype == Dtype::bf16 ? active().floats_per_pair : 0;  // per thread, the tallest block
    const FusedTile tile = fused_tile(blocking(), tile_columns(), dtype == Dtype::bf16);
    return bytes(fused_scratch<CheckedCount>(d_k, tile.rows, tile.keys, batch_width(), pair).total());
}

std::uint64_t fused_packed_bytes(std::size_t m, std::size_t d_k, std::size_t d_v, Dtype dtype) {
    const std::size_t pair = dtype == Dtype::bf16 ? active().floats_per_pair : 0;
    return bytes(fused_packed<CheckedCount>(m, d_k, d_v, tile_columns(), pair).total());
}

std::size_t fused_team_size(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v) {
    const std::size_t row_strips = (n + MR - 1) / MR;
    if (!use_team(Threads::all, 2.0 * double(n) * double(m) * double(d_k + d_v), row_strips)) return 1;
    return std::min<std::size_t>(std::size_t(std::max(max_threads(), 1)), row_strips);
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

std::uint64_t fused_backward_scratch_bytes(std::size_t m, std::size_t d_k, std::size_t d_v) {
    // per thread; the lanes' dQᵀ and the two floats per query row are counted by the caller, who knows n
    return bytes(fused_backward_scratch<CheckedCount>(d_k, d_v, fused_backward_keys_per_block(m, blocking()),
                                                      blocking().panel_kc, 2 * active().width)
                     .total());
}

std::size_t fused_backward_team_size(std::size_t n, std::size_t m, std::size_t d_k) {
    return fused_backward_team(n, m, d_k);
}

void decode_attention_into(const DecodeProblem& problem, Threads threads, const Blocking& blocking) {
    active().decode_attention_into(problem, threads, blocking);
}

DecodeScratchBytes decode_scratch_bytes(std::size_t groups, std::size_t rows, std::size_t keys, std::size_t d_k,
                                        std::size_t d_v, Storage type) {
    const std::size_t block = blocking().decode_keys, units = decode_units(groups, keys, block);
    const bool reorders = reads_in_pair_order(type, active().f16_instructions);
    const auto floats = decode_scratch<CheckedCount>(rows, std::min(block, keys), units, d_k, d_v, reorders);
    const std::size_t team = decode_team(units, groups, rows, keys, d_k, d_v);
    return {bytes(floats.per_thread()), bytes(floats.shared()), team};
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
float exp2_bf16_and_sum(std::span<float> x, float shift) { return active().exp2_bf16_and_sum(x, shift); }
float row_max(std::span<const float> x) { return active().row_max(x); }
float fma_chains(std::size_t steps) { return active().fma_chains(steps); }
float largest_row_square(const float* rows, std::size_t count, std::size_t n) {
    return active().largest_row_square(rows, count, n);
}

float pair_chains(std::size_t steps) {
    if (!active().pair_chains)
        throw std::invalid_argument("pair_chains: instruction set " + isa() + " has no vdpbf16ps");
    return active().pair_chains(steps);
}
}  // namespace attn::simd
