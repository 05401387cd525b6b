// simd/packing.hpp — copying a strip of B into the layout the microkernel reads: kc rows of NR
// floats, contiguous. Packing is where A·Bᵀ stops needing Bᵀ: the panel is filled from rows of B.
#pragma once

#include <algorithm>
#include <cstddef>

#include "matrix/matrix.hpp"
#include "simd/microkernel.hpp"

namespace attn::simd::ATTN_ISA {

// Which matrix the caller passed as B: B itself (k×n), or its transpose given row by row (n×k).
enum class BLayout { k_by_n, transposed };

// Panel of columns [j0, j0+cols) and depth [p0, p0+kc) of B, as kc rows of NR floats; columns
// past `cols` are zero, so the microkernel can always work on full batches.
inline void pack_panel(const Matrix& B, BLayout layout, std::size_t p0, std::size_t kc, std::size_t j0,
                       std::size_t cols, float* panel) {
    if (layout == BLayout::k_by_n) {  // row p of the panel is a piece of row p0 + p of B
        for (std::size_t p = 0; p < kc; ++p) std::copy_n(B.row(p0 + p).data() + j0, cols, panel + p * NR);
    } else {  // column j of the panel is a piece of row j0 + j of B: read along B's rows
        for (std::size_t j = 0; j < cols; ++j) {
            const float* src = B.row(j0 + j).data() + p0;
            for (std::size_t p = 0; p < kc; ++p) panel[p * NR + j] = src[p];
        }
    }
    if (cols < NR)
        for (std::size_t p = 0; p < kc; ++p) std::fill(panel + p * NR + cols, panel + (p + 1) * NR, 0.0f);
}

}  // namespace attn::simd::ATTN_ISA
