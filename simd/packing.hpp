// simd/packing.hpp — copying a strip of B into the layout the microkernel reads: kc rows of NR
// floats, contiguous. Packing is where A·Bᵀ stops needing Bᵀ: the panel is filled from rows of B.
#pragma once

#include <algorithm>
#include <cstddef>

#include "matrix/matrix.hpp"
#include "simd/bf16.hpp"
#include "simd/microkernel.hpp"

namespace attn::simd::ATTN_ISA {

// Which matrix the caller passed as B: B itself (k×n), or its transpose given row by row (n×k).
enum class BLayout { k_by_n, transposed };

// Columns past `cols` of each of the panel's `depth` rows are zero (the tile works on full batches).
inline void zero_past(float* panel, std::size_t depth, std::size_t cols) {
    if (cols < NR)
        for (std::size_t t = 0; t < depth; ++t) std::fill(panel + t * NR + cols, panel + (t + 1) * NR, 0.0f);
}

// Four rows of four floats (ld apart, from `from`) written as four columns: row i of `to` (NR floats
// apart) is column i of the block. Two rounds of interleaving: the first pairs rows 0 and 2, 1 and
// 3; the second pairs the results the same way, and each output is then one column. Sixteen floats
// moved with four loads, eight shuffles and four stores, where element by element they take sixteen
// loads and sixteen stores (BM_core/fused: the Kᵀ panel is packed this way for every block).
inline void transpose_4x4(const float* from, std::size_t ld, float* to) {
    using Four = xsimd::make_sized_batch_t<float, 4>;
    const Four r0 = Four::load_unaligned(from), r1 = Four::load_unaligned(from + ld),
               r2 = Four::load_unaligned(from + 2 * ld), r3 = Four::load_unaligned(from + 3 * ld);
    const Four a = xsimd::zip_lo(r0, r2), b = xsimd::zip_hi(r0, r2), c = xsimd::zip_lo(r1, r3),
               d = xsimd::zip_hi(r1, r3);
    xsimd::zip_lo(a, c).store_unaligned(to);
    xsimd::zip_hi(a, c).store_unaligned(to + NR);
    xsimd::zip_lo(b, d).store_unaligned(to + 2 * NR);
    xsimd::zip_hi(b, d).store_unaligned(to + 3 * NR);
}

// Columns [0, cols) of a panel, kc deep, from `cols` rows of floats `ld` apart: column j of the panel
// is row j, read along it (Kᵀ's panels are K's rows, transposed).
inline void transpose_into_panel(const float* rows, std::size_t ld, std::size_t kc, std::size_t cols, float* panel) {
    std::size_t j = 0;
    for (; j + 4 <= cols; j += 4) {
        std::size_t p = 0;
        for (; p + 4 <= kc; p += 4) transpose_4x4(rows + j * ld + p, ld, panel + p * NR + j);
        for (; p < kc; ++p)
            for (std::size_t t = j; t < j + 4; ++t) panel[p * NR + t] = rows[t * ld + p];
    }
    for (; j < cols; ++j)
        for (std::size_t p = 0; p < kc; ++p) panel[p * NR + j] = rows[j * ld + p];
}

// Panel of columns [j0, j0+cols) and depth [p0, p0+kc) of B, as kc rows of NR floats; columns
// past `cols` are zero, so the microkernel can always work on full batches.
inline void pack_panel(const Matrix& B, BLayout layout, std::size_t p0, std::size_t kc, std::size_t j0,
                       std::size_t cols, float* panel) {
    if (layout == BLayout::k_by_n) {  // row p of the panel is a piece of row p0 + p of B
        for (std::size_t p = 0; p < kc; ++p) std::copy_n(B.row(p0 + p).data() + j0, cols, panel + p * NR);
    } else {  // column j of the panel is a piece of row j0 + j of B: read along B's rows
        transpose_into_panel(B.row(j0).data() + p0, B.cols(), kc, cols, panel);
    }
    zero_past(panel, kc, cols);
}

// Floats the rounded rows pack_key_pairs works on take: four keys' pairs.
inline std::size_t key_pairs_rows(std::size_t d_k) { return 4 * depth_of<true>(d_k); }

// bf16: the panel of keys [j0, j0+cols) for the scores, as pack_panel(transposed) lays it out, with
// each key's pairs (k_2p, k_2p+1) down column j: four keys at a time rounded into `rows`
// (key_pairs_rows(d_k) floats), then transposed into their columns four by four.
inline void pack_key_pairs(const Matrix& K, std::size_t j0, std::size_t cols, float* panel, float* rows) {
    const std::size_t d_k = K.cols(), depth = depth_of<true>(d_k);
    for (std::size_t j = 0; j < cols; j += 4) {
        const std::size_t keys = std::min<std::size_t>(4, cols - j);
        for (std::size_t k = 0; k < keys; ++k) round_to_pairs(K.row(j0 + j + k).data(), d_k, rows + k * depth);
        transpose_into_panel(rows, depth, depth, keys, panel + j);
    }
    zero_past(panel, depth, cols);
}

// bf16: the panel of V's columns [c0, c0+cols) over keys [j0, j0+keys), as pack_panel(k_by_n) lays
// it out, with the rows of keys 2p and 2p+1 rounded into pair row p (an odd last key paired with 0).
inline void pack_value_pairs(const Matrix& V, std::size_t j0, std::size_t keys, std::size_t c0, std::size_t cols,
                             float* panel) {
    for (std::size_t j = 0; j < keys; j += 2)
        round_rows_to_pairs(V.row(j0 + j).data() + c0, j + 1 < keys ? V.row(j0 + j + 1).data() + c0 : nullptr, cols,
                            panel + j / 2 * floats_per_pair * NR, NR);
    zero_past(panel, depth_of<true>(keys), cols);
}

}  // namespace attn::simd::ATTN_ISA
