// simd/tile_softmax.hpp — the fused forward's online softmax on a tile of scores (simd/fused.cpp),
// W rows or W scores at a time: the new maxima and the factors that rescale what came before, and
// each row's weights with their sum, as floats or as the bf16 mode's pairs.
//
// In a file of their own, beside the kernel rather than in it: simd/fused.cpp's FMA loops are all
// register tiles, which tests/checks/count_spills.py checks for spills, and a compiler may keep an
// exponential's constants on the stack (Clang does) without harm here.
#pragma once

#include <cstddef>

#include "simd/batch.hpp"

namespace attn::simd::ATTN_ISA {

// A batch whose lane k holds k: which lanes of a chunk of scores lie before a row's last key.
inline Batch lane_numbers() {
    alignas(64) float k[W];
    for (std::size_t i = 0; i < W; ++i) k[i] = float(i);
    return Batch::load_aligned(k);
}

// The scores of simd/fused.cpp are in base 2 (they carry log₂e: the weight of x is 2^(x − m)), or, with a
// caller's terms, in their own units (`natural`: e^(x − m), simd/exp.hpp's exp_of_difference).

// The online softmax's bookkeeping for `rows` rows (a multiple of W is read and written): the new
// maxima m' = max(m, tile max) into tile_max, and e^(m − m') into correction: 0 on a row's first tile
// with a finite score, 1 while a row has seen nothing (m' = −∞).
void rescale_factors(const float* max_so_far, float* tile_max, float* correction, std::size_t rows, bool natural);

// One row of a tile: x_k ← e^(x_k − m) for k < visible, 0 for visible ≤ k < end (a multiple of 2W; the
// causal keys after the row's diagonal and the tile's padding), returning the sum of the weights.
// m is the row's maximum, finite. The float32 kernel's weights, to a float's accuracy (simd/exp.hpp).
float row_weights(float* x, std::size_t visible, std::size_t end, float m, bool natural);

// The same for the bf16 mode: the exponentials to bfloat16's grade (simd/exp.hpp), summed as computed,
// and written as bfloat16 pairs (simd/bf16.hpp's store_pairs) from the start of the row, where the
// register tile of α·V reads them: one pass, with nothing rounded twice.
float row_weight_pairs(float* x, std::size_t visible, std::size_t end, float m, bool natural);

}  // namespace attn::simd::ATTN_ISA
