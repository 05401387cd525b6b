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
constexpr const Kernels* compiled[] = {ATTN_FOR_EACH_ISA(ATTN_TABLE_ADDRESS)};  // baseline first
#undef ATTN_TABLE_ADDRESS

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

// Each kernel of the table, forwarded to the set in use.
#define ATTN_FORWARD(result, name, parameters, arguments) \
    result name parameters { return active().name arguments; }
ATTN_FOR_EACH_KERNEL(ATTN_FORWARD)
#undef ATTN_FORWARD

// What the kernels of the set in use allocate: simd/scratch.hpp's formulas, which the kernels size their
// buffers with, here for that set's tile width and block sizes and in a count that cannot wrap.
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

std::uint64_t gemm_scratch_bytes(std::size_t /* m: A is read in place */, std::size_t k, std::size_t n) {
    const std::size_t NR = tile_columns();
    return bytes(gemm_panel_floats<CheckedCount>(gemm_blocks(blocking(), k, n, NR), k, n, NR));
}

std::size_t fused_team_size(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v) {
    const std::size_t row_strips = (n + MR - 1) / MR;
    if (!use_team(Threads::all, 2.0 * double(n) * double(m) * double(d_k + d_v), row_strips)) return 1;
    return std::min<std::size_t>(std::size_t(std::max(max_threads(), 1)), row_strips);
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
DecodeScratchBytes decode_scratch_bytes(std::size_t groups, std::size_t rows, std::size_t keys, std::size_t d_k,
                                        std::size_t d_v, Storage type) {
    const std::size_t block = blocking().decode_keys, units = decode_units(groups, keys, block);
    const bool reorders = reads_in_pair_order(type, active().f16_instructions);
    const auto floats = decode_scratch<CheckedCount>(rows, std::min(block, keys), units, d_k, d_v, reorders);
    const std::size_t team = decode_team(units, groups, rows, keys, d_k, d_v);
    return {bytes(floats.per_thread()), bytes(floats.shared()), team};
}

std::uint64_t fused_backward_scratch_bytes(std::size_t m, std::size_t d_k, std::size_t d_v) {
    // per thread; the lanes' dQᵀ and the two floats per query row are counted by the caller, who knows n
    return bytes(fused_backward_scratch<CheckedCount>(d_k, d_v, fused_backward_keys_per_block(m, blocking()),
                                                      blocking().panel_kc, tile_columns())
                     .total());
}

std::size_t fused_backward_team_size(std::size_t n, std::size_t m, std::size_t d_k) {
    return fused_backward_team(n, m, d_k);
}
float pair_chains(std::size_t steps) {
    if (!active().pair_chains)
        throw std::invalid_argument("pair_chains: instruction set " + isa() + " has no vdpbf16ps");
    return active().pair_chains(steps);
}
}  // namespace attn::simd
