// simd/blocking.hpp — block sizes for the GEMM and the fused kernel, derived from the caches of the
// CPU the program runs on (simd/blocking.cpp tells the model step by step).
#pragma once

#include <cstddef>
#include <string>

namespace attn::simd {

// Rows of the register tile (simd/microkernel.hpp), the same for every instruction set; its
// columns, NR = two batches, are 8 floats with SSE2 or NEON, 16 with AVX2 and 32 with AVX-512.
inline constexpr std::size_t MR = 6;

// Rows of the wide GEMM's and the fused kernel's tile for a tile NR floats wide: two strips of MR
// at once with AVX-512 (NR = 32), whose 32 vector registers hold 24 accumulators, two rows of B and
// a broadcast; one strip otherwise (AVX2 has 16 registers; SSE2's and NEON's tiles, NR = 8, were
// not measured taller).
inline constexpr std::size_t tall_rows(std::size_t nr) { return nr == 32 ? 2 * MR : MR; }

// x rounded up to a multiple of `unit` (≥ 1): the padded widths of packed panels and per-row buffers.
inline constexpr std::size_t round_up(std::size_t x, std::size_t unit) { return (x + unit - 1) / unit * unit; }

// One data cache level: total bytes, ways of associativity, bytes per line, and how many logical
// CPUs share it. Zero fields mean "not reported".
struct CacheLevel {
    std::size_t bytes = 0, ways = 0, line = 0, shared_by = 1;
};

// The model sizes blocks from L1 and L2; L3 is read so that `attn --version` and the benchmark's
// report name every cache of the machine their figures come from.
struct Caches {
    CacheLevel l1d, l2, l3;
    std::string source;  // "sysfs", "sysconf", or "fallback" (a Zen 3 core: 32 KiB, 512 KiB, 32 MiB)
};

// Read once from /sys/devices/system/cpu/cpu0/cache (Linux, x86 and ARM), else sysconf, else the
// fallback; a level that neither reports takes the fallback's numbers.
const Caches& caches();

// The block sizes every kernel uses (a model, not a measurement: `scripts/dev tune` checks it).
// Two shapes of blocking (simd/gemm.cpp, step 3): a product whose B is wider than 4 panels keeps a
// strip of A in L1 and runs it over a packed block of B in L2; α·V, whose B (V) has at most 4
// panels, keeps a panel of B in L1 and runs a block of A's rows (of α) in L2 over it (with tiles of
// one strip; AVX-512's tall tile runs it in the wide order), and so does the fused kernel with a
// panel of V and a block of scores.
struct Blocking {
    std::size_t kc;          // wide: depth of the strip of A held in L1, from L2 (the least traffic of A and C)
    std::size_t nc;          // wide: columns of the packed block of B, a multiple of NR, from L2
    std::size_t panel_kc;    // narrow: depth of the panel of B held in L1, from L1 (fused: keys per tile)
    std::size_t panel_mc;    // narrow: rows of A per block, a multiple of MR, from L2
    std::size_t fused_rows;  // fused: query rows per block, a multiple of MR, from L2
    // decode (simd/decode.cpp): keys per block of the cache, each block's softmax computed on one
    // thread and merged after. Fixed, never from the thread count, so that the blocks, and with them
    // the bits of the result, are the same for any team. 1024 keys: a block's scores for the 4 query
    // rows of a group take 16 KiB (128 KiB at 32 rows), in L1 or L2; the (m, ℓ, o) it leaves for the
    // merge, d_v + 2 floats per query row, is small beside the 2·1024 cached rows it reads; a cache
    // of S = 4096 keys is 4 blocks a head, enough to share over 2 threads. Longer blocks start cold
    // less often: the first rows of a block's keys and values were asked for ahead only at the end of
    // the block before, which another thread may have taken, and its values a whole pass over the
    // keys earlier (BM_decode measures the length).
    std::size_t decode_keys = 1024;
};

// The model applied to any caches, for a register tile NR floats wide (pure: the tests feed it
// Zen 3's, a Xeon's and a Neoverse core's caches at NR = 8, 16 and 32).
Blocking blocking_for(const Caches& c, std::size_t nr);

// How the GEMM (simd/gemm.cpp) blocks a product k deep with n columns: in the narrow order (B of at
// most 4 panels, tiles of one strip) or the wide one, with depth blocks of kc (equal ones, at most
// the order's depth) and column blocks of nc. simd/dispatch.cpp budgets the GEMM's scratch from the
// same numbers.
struct GemmBlocks {
    bool narrow;
    std::size_t kc, nc;
};
GemmBlocks gemm_blocks(const Blocking& b, std::size_t k, std::size_t n, std::size_t nr);

// Throws std::invalid_argument, naming `who` and the sizes, unless kc and panel_kc are ≥ 1, panel_mc
// and fused_rows positive multiples of MR, and nc one of NR = `nr`.
void check_blocking(const char* who, const Blocking& b, std::size_t nr);

// blocking_for(caches(), NR of the instruction set in use), computed once per instruction set
// (simd/dispatch.cpp).
const Blocking& blocking();

// Rows per block for `rows` rows on `threads` threads: at most `most`, a multiple of MR, and so
// many blocks that every thread gets the same number, at least `blocks_per_thread` of them. With
// dynamic scheduling several blocks per thread also even out blocks of unequal cost (causal).
std::size_t balanced_rows(std::size_t rows, std::size_t most, std::size_t threads, std::size_t blocks_per_thread);

// The fused backward (simd/fused_backward.cpp) deals its blocks of keys to dq_lanes copies of dQ, and
// a block holds at most as many keys as the fused forward's block holds queries, in blocks enough
// for one per lane (BM_backward/fused: smaller blocks, two per lane, were slower). Both follow from
// the problem alone, never from the team, so every sum runs in one order for any number of threads.
inline constexpr std::size_t dq_lanes = 4;
std::size_t fused_backward_keys_per_block(std::size_t m, const Blocking& b);

// "L1d 48 KiB 12-way, L2 2 MiB 16-way, L3 260 MiB 20-way shared by 2 (sysfs)"
std::string describe(const Caches& c);
// "wide: kc 720, nc 352; narrow: 1590 rows × 288 deep; fused: 906 query rows × 288 keys"
std::string describe(const Blocking& b);

}  // namespace attn::simd
