// simd/scratch.hpp — each kernel's scratch memory, defined once. The kernels size their buffers with
// these formulas in plain std::size_t (what they allocate was budgeted before the call); the budget
// functions of simd/dispatch.cpp evaluate the same formulas in a count whose sums and products refuse
// to overflow. That checked count builds error strings, so only the baseline instantiates it: no
// string code in a kernel copy (tests/checks/check_isa_symbols.py). Internal linkage keeps every
// object's instances its own.
#pragma once

#include <algorithm>
#include <cstddef>

#include "matrix/float16.hpp"
#include "simd/blocking.hpp"

namespace attn::simd {

namespace {

// The GEMM's packed panels of B (depth k, width n), on the calling thread: a kc × nc block at most,
// its width in whole panels of nr floats (simd/gemm.cpp).
template <class Count>
Count gemm_panel_floats(const GemmBlocks& blocks, std::size_t k, std::size_t n, std::size_t nr) {
    return Count(std::min(blocks.kc, k)) * Count(round_up(std::min(blocks.nc, n), nr));
}

// The fused forward's tiles (simd/fused.cpp): keys per tile, and the most query rows per block. A tile
// holds whole panels of nr keys (K is packed once per call, in panels, and a tile starts at one), and
// the block's scores, rows × keys floats, keep to the share of L2 the cache model gives them
// (simd/blocking.cpp). With products on bfloat16 pairs (`pairs`), a panel of V holds a pair of keys in
// one float (vdpbf16ps's layout), twice the keys in the bytes of L1 that blocking.panel_kc fills
// with floats, so the tile takes twice the keys and the block half the rows: a key tile sized for
// 16-bit operands. (The emulation, two floats a pair, takes the same tiles, so that it gives the
// instruction's bits at the same width.)
struct FusedTile {
    std::size_t keys, rows;
};
inline FusedTile fused_tile(const Blocking& blocking, std::size_t nr, bool pairs) {
    const std::size_t keys = round_up(blocking.panel_kc * (pairs ? 2 : 1), nr);
    return {keys, std::max(blocking.fused_rows * blocking.panel_kc / keys / MR * MR, MR)};
}

// One thread's scratch of the fused forward (simd/fused.cpp), in floats per buffer.
template <class Count>
struct FusedScratch {
    Count scores;    // the rows × keys score block
    Count q_pairs;   // with pairs: the block's rows of Q (else 0)
    Count key_rows;  // with pairs: four keys' rows, rounded, while K is packed (else 0)
    Count lane_max;  // each row's largest score of the tile so far, lane by lane: rows × w
    Count per_row;   // each of m, ℓ, the new m and e^(m − m'): the rows padded to whole batches of w
    Count total() const { return scores + q_pairs + key_rows + lane_max + per_row * Count(4); }
};

// A depth of n elements: n floats, or ⌈n/2⌉ pairs of floats_per_pair floats (floats_per_pair > 0).
template <class Count>
Count fused_depth(std::size_t n, std::size_t floats_per_pair) {
    return Count(floats_per_pair ? (n + 1) / 2 * floats_per_pair : n);
}

template <class Count>
FusedScratch<Count> fused_scratch(std::size_t d_k, std::size_t rows, std::size_t keys, std::size_t w,
                                  std::size_t floats_per_pair) {
    const Count pairs = floats_per_pair ? Count(1) : Count(0);
    return {Count(rows) * Count(keys), pairs * Count(rows) * fused_depth<Count>(d_k, floats_per_pair),
            pairs * Count(4) * fused_depth<Count>(d_k, floats_per_pair), Count(rows) * Count(w),
            Count(round_up(rows, w))};
}

// K and V of one call of the fused forward, packed once by the call's team in the layouts its
// register tile reads (simd/fused.cpp), in floats: K as panels of Kᵀ, nr keys wide (the keys rounded
// up to whole panels) and d_k deep (in pairs: ⌈d_k/2⌉ deep), V as panels of nr of its columns, a row
// a key (a pair of keys).
template <class Count>
struct FusedPacked {
    Count keys, values;
    Count total() const { return keys + values; }
};

template <class Count>
FusedPacked<Count> fused_packed(std::size_t m, std::size_t d_k, std::size_t d_v, std::size_t nr,
                                std::size_t floats_per_pair) {
    return {fused_depth<Count>(d_k, floats_per_pair) * Count(round_up(m, nr)),
            fused_depth<Count>(m, floats_per_pair) * Count(round_up(d_v, nr))};
}

// Whether the decode kernel (simd/decode.cpp) reads the rows of a cache of this type in pair order:
// a bfloat16 cache's, and a float16 one's where no instruction converts float16 (f16_instructions,
// simd/kernels.hpp). The group's queries are then put in the same order, in scratch.
constexpr bool reads_in_pair_order(Storage type, bool f16_instructions) {
    return type == Storage::bf16 || (type == Storage::f16 && !f16_instructions);
}

// The decode kernel's scratch (simd/decode.cpp), in floats per buffer. `reorders`: the cache's rows
// are read in pair order (reads_in_pair_order), and the queries are put in the same order.
template <class Count>
struct DecodeScratch {
    Count scores;    // per thread: the rows × keys scores of one block, then its weights
    Count rows;      // per thread: the group's queries reordered (a cache read in pair order)
    Count outputs;   // per thread: the rows × d_v o of one block, summed before it is written to its unit
    Count partials;  // on the calling thread: each unit's m, ℓ and o (d_v) per query row, and one row for the merge
    Count norms;     // on the calling thread: each unit's largest key and value norms (2 doubles: 4 floats)
    Count per_thread() const { return scores + rows + outputs; }
    Count shared() const { return partials + norms; }
};

template <class Count>
DecodeScratch<Count> decode_scratch(std::size_t rows, std::size_t keys_per_block, std::size_t units, std::size_t d_k,
                                    std::size_t d_v, bool reorders) {
    return {Count(rows) * Count(keys_per_block), reorders ? Count(rows) * Count(d_k) : Count(0),
            Count(rows) * Count(d_v), Count(units) * Count(rows) * (Count(d_v) + Count(2)) + Count(d_v),
            Count(units) * Count(4)};
}

// One thread's scratch of the fused backward (simd/fused_backward.cpp), in floats per buffer.
template <class Count>
struct FusedBackwardScratch {
    Count tile;             // each of the two block × tile tiles (scores, gradients), padded by nr
    Count panel;            // one packed panel: max(d_k, d_v, tile) × nr
    Count keys_transposed;  // the block's Kᵀ: d_k × block
    Count total() const { return tile * Count(2) + panel + keys_transposed; }
};

template <class Count>
FusedBackwardScratch<Count> fused_backward_scratch(std::size_t d_k, std::size_t d_v, std::size_t block,
                                                   std::size_t tile, std::size_t nr) {
    return {Count(block) * Count(tile) + Count(nr), Count(std::max({d_k, d_v, tile})) * Count(nr),
            Count(d_k) * Count(block)};
}

}  // namespace

}  // namespace attn::simd
