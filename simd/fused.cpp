// simd/fused.cpp — attention without the n×n matrix.
//
// The materialised path writes all of S (n×m floats: 1 GiB at n = 16384), then reads it back for
// the softmax and again for α·V. Here a block of BR query rows stays put while K and V stream past in
// tiles of BC keys; each tile's scores live only in a BR×BC scratch block, and α is never stored.
//
// Online softmax. For query row i, after tiles 1..t let
//     m  = max of the scores seen so far,   ℓ = Σ_j e^(s_j − m),   o = Σ_j e^(s_j − m)·v_j.
// A new tile with scores s'_j raises the maximum to m' = max(m, max_j s'_j). Every old term
// e^(s_j − m) becomes e^(s_j − m') = e^(s_j − m)·e^(m − m'), so multiplying ℓ and o by the one factor
// e^(m − m') makes them exactly what they would have been had m' been used from the start; then
// the tile's own terms e^(s'_j − m') are added. Nothing is approximated: after the last tile,
//     o / ℓ = Σ_j e^(s_j − m)·v_j / Σ_j e^(s_j − m) = Σ_j softmax(s)_j·v_j,
// the lesson's O = softmax(Q·Kᵀ/√d_k)·V, row by row. (Only the rounding differs: float sums in
// another order.)
//
// The same update in symbols, for a tile with scores $s'_j$:
//   $m' = \max(m, \max_j s'_j)$,  $\ell' = \ell\, e^{m - m'} + \sum_j e^{s'_j - m'}$,  $o' = o\, e^{m - m'} + \sum_j e^{s'_j - m'} v_j$
//
// Causal: tiles that lie entirely in the future of the block (first key > last query) are skipped,
// about half of all tiles; only tiles crossing the diagonal are masked.
//
// Extra memory per thread: the score block (BR×BC), one packed panel of Kᵀ (d_k×NR) and one of V
// (BC×NR), and m, ℓ for BR rows: fused_scratch_bytes(d_k). Nothing grows with n or d_v. Each panel
// is packed and then used at once by every row strip of the block, while it is still in L1.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "matrix/shape_checks.hpp"
#include "matrix/size.hpp"
#include "simd/microkernel.hpp"
#include "simd/packing.hpp"
#include "simd/simd.hpp"
#include "simd/threads.hpp"

namespace attn::simd {

namespace {

// Each block packs every K/V tile it visits, so the packing cost is divided by BR. Measured at
// n = 4096 (BM_core_long, 2 threads): BR = 48 gave 225 GFLOP/s, BR = 192 gives ~275.
constexpr std::size_t BR = 32 * MR;  // query rows per block (192 with MR = 6)
constexpr std::size_t BC = 256;      // keys per tile: the BR×BC score block is 192 KiB, in L2
constexpr float neg_inf = -std::numeric_limits<float>::infinity();

using Buffer = std::vector<float, AlignedAllocator<float, matrix_alignment>>;

// One thread's scratch space, kept from call to call (first touch of fresh memory is slow).
struct Scratch {
    Buffer scores, k_panel, v_panel, row_max, row_sum;
    void fit(std::size_t d_k) {
        const auto grow = [](Buffer& b, std::size_t n) {
            if (b.size() < n) b.resize(n);
        };
        grow(scores, BR * BC);
        grow(k_panel, d_k * NR);
        grow(v_panel, BC * NR);
        grow(row_max, BR);
        grow(row_sum, BR);
    }
};

struct Problem {
    const Matrix &Q, &K, &V;
    float scale;
    bool causal;
    Matrix& O;
};

void scale_row(float* x, std::size_t n, float c) {
    for (std::size_t k = 0; k < n; ++k) x[k] *= c;
}

// [fused scores] S_tile = c·Q[i0..i0+rows)·K[j0..j0+cols)ᵀ, into the BR×BC score block (row stride BC).
void tile_scores(const Problem& p, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols, Scratch& s) {
    const std::size_t d_k = p.Q.cols();
    for (std::size_t q = 0; q * NR < cols; ++q) {
        pack_panel(p.K, BLayout::transposed, 0, d_k, j0 + q * NR, std::min(NR, cols - q * NR), s.k_panel.data());
        for (std::size_t r = 0; r < rows; r += MR)
            run_microkernel(std::min(MR, rows - r), d_k, p.Q.row(i0 + r).data(), d_k, s.k_panel.data(), NR,
                            s.scores.data() + r * BC + q * NR, BC, std::min(NR, cols - q * NR), true, true, p.scale);
    }
    if (p.causal && j0 + cols > i0 + 1) {  // the tile reaches past the diagonal of some row: mask it
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t j = (i0 + r + 1 > j0 ? i0 + r + 1 - j0 : 0); j < cols; ++j) s.scores[r * BC + j] = neg_inf;
    }
}

// [fused softmax] The online-softmax step for each row of the block: new max, rescale ℓ and o, exponentiate the tile.
void online_softmax_update(const Problem& p, std::size_t i0, std::size_t rows, std::size_t cols, Scratch& s) {
    const std::size_t d_v = p.V.cols();
    for (std::size_t r = 0; r < rows; ++r) {
        const std::span<float> tile(s.scores.data() + r * BC, cols);
        float& m = s.row_max[r];
        const float m_new = std::fmax(m, row_max(tile));
        if (m_new == neg_inf) {  // nothing visible yet in this row: the tile contributes nothing
            std::fill(tile.begin(), tile.end(), 0.0f);
            continue;
        }
        const float correction = std::exp(m - m_new);  // e^(m − m'); 0 on the first visible tile
        s.row_sum[r] = s.row_sum[r] * correction + exp_and_sum(tile, m_new);
        m = m_new;
        if (correction != 1.0f) scale_row(p.O.row(i0 + r).data(), d_v, correction);
    }
}

// [fused values] o_i += Σ_j e^(s_ij − m_i)·v_j for the tile: (rows×cols)·(cols×d_v) added into O.
void accumulate_values(const Problem& p, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols,
                       Scratch& s) {
    const std::size_t d_v = p.V.cols();
    for (std::size_t q = 0; q * NR < d_v; ++q) {
        pack_panel(p.V, BLayout::k_by_n, j0, cols, q * NR, std::min(NR, d_v - q * NR), s.v_panel.data());
        for (std::size_t r = 0; r < rows; r += MR)
            run_microkernel(std::min(MR, rows - r), cols, s.scores.data() + r * BC, BC, s.v_panel.data(), NR,
                            p.O.row(i0 + r).data() + q * NR, d_v, std::min(NR, d_v - q * NR), false, false, 1.0f);
    }
}

// Rows [i0, i0+rows) of O, start to finish, on one thread.
void attend_block(const Problem& p, std::size_t i0, std::size_t rows, Scratch& s) {
    const std::size_t m_keys = p.K.rows(), d_v = p.V.cols();
    std::fill(s.row_max.begin(), s.row_max.begin() + BR, neg_inf);
    std::fill(s.row_sum.begin(), s.row_sum.begin() + BR, 0.0f);
    std::fill(p.O.row(i0).data(), p.O.row(i0).data() + rows * d_v, 0.0f);
    const std::size_t end = p.causal ? std::min(m_keys, i0 + rows) : m_keys;  // causal: no tile past the block
    for (std::size_t j0 = 0; j0 < end; j0 += BC) {
        const std::size_t cols = std::min(BC, m_keys - j0);
        tile_scores(p, i0, rows, j0, cols, s);
        online_softmax_update(p, i0, rows, cols, s);
        accumulate_values(p, i0, rows, j0, cols, s);
    }
    for (std::size_t r = 0; r < rows; ++r) {  // o / ℓ; a row that saw nothing (ℓ = 0) stays 0
        const float l = s.row_sum[r];
        if (l > 0.0f) scale_row(p.O.row(i0 + r).data(), d_v, 1.0f / l);
    }
}

}  // namespace

std::uint64_t fused_scratch_bytes(std::size_t d_k) {
    const std::uint64_t floats =
        checked_sum(checked_product(d_k, NR, "fused scratch"), BR * BC + BC * NR + 2 * BR, "fused scratch");
    return checked_product(floats, sizeof(float), "fused scratch");
}

void fused_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal, Matrix& O,
                          Threads threads) {
    check_matmul_transposed_shapes("fused_attention", Q, K);
    if (K.rows() != V.rows()) {
        throw std::invalid_argument("fused_attention: K (" + shape_string(K) + ") and V (" + shape_string(V) +
                                    ") must have the same number of rows");
    }
    O.resize_for_overwrite(Q.rows(), V.cols());
    const Problem p{Q, K, V, scale, causal, O};
    const auto blocks = static_cast<std::ptrdiff_t>((Q.rows() + BR - 1) / BR);
    // dynamic: causal blocks near the bottom have more tiles; any thread may take any block, and the
    // result does not depend on which one does.
    [[maybe_unused]] const bool team =
        use_team(threads, 2.0 * double(Q.rows()) * double(K.rows()) * double(Q.cols() + V.cols()),
                 static_cast<std::uint64_t>(blocks));
#pragma omp parallel if (team)
    {
        thread_local Scratch scratch;
        scratch.fit(Q.cols());
#pragma omp for schedule(dynamic)
        for (std::ptrdiff_t b = 0; b < blocks; ++b) {
            const std::size_t i0 = static_cast<std::size_t>(b) * BR;
            attend_block(p, i0, std::min(BR, Q.rows() - i0), scratch);
        }
    }
}

}  // namespace attn::simd
