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
// In the scores' own units. Every e^(s − m) is taken as the lesson takes it, the difference first: a
// score or a mask term may be any finite float, and s·log₂e alone would overflow past FLT_MAX/log₂e ≈
// 2.4·10³⁸ (a term of 2.4·10³⁸ would give NaN, a row of float32's lowest value, −3.4·10³⁸, weight 0
// where the softmax gives it the mean of V).
//
// Causal: a block's keys end at its last row, so the tiles wholly in its future (about half of all
// tiles) are never visited. In the tiles that cross the diagonal nothing is masked with −∞: each
// row takes its maximum and exponentials only up to its own diagonal and gives the keys after it
// weight 0, a strip of rows skips the panels of keys all in its future, and P·V stops at the
// strip's last diagonal. The results are bit for bit those of masking the whole tile (the skipped
// work only ever added zeros); BM_core_long with causal:1 measures what the skipping saves.
//
// Terms (a caller's mask or bias, simd.hpp's ScoreTerms): added to each tile of scores as soon as it is
// written, only where its row may look (the causal mask applies as well).
// A −∞ term is one more score of weight 0. A row that has seen only −∞ keeps m = −∞, ℓ = 0 and o = 0
// (rescale_factors gives it the factor 1, never e^(−∞ − (−∞)), and its tile is zeroed, not
// exponentiated); its first finite score makes the factor e^(−∞) = 0 against sums that are 0. A row
// that never sees one ends with ℓ = 0: its output row stays 0 and its L is −∞. Without terms the
// only cost is one test per tile.
//
// bf16. fused_attention_bf16_into runs the same blocks with the two products on bfloat16 pairs
// (simd/bf16.hpp): each block's rows of Q, each packed panel of Kᵀ and of V, and each tile of
// weights e^(s − m) are rounded to bfloat16 as they are packed, and the register tile steps with
// vdpbf16ps (or its emulation). The maxima, the exponentials, ℓ and o stay in float; ℓ sums the
// weights as computed, before they are rounded for the product with V (that rounding is one more
// error of at most 2⁻⁸ of each weight, which tests/test_bf16.cpp's bound counts). Tiles have an even
// number of keys, so a tile's weights pair up in place. BM_core/fused_bf16 measures it.
//
// Extra memory per thread: the score block (BR×BC), one packed panel of Kᵀ (d_k×NR) and one of V
// (BC×NR: a full-width float panel of V is read in place, so it serves a narrower last one and
// bf16's pairs), and four floats per row (m, ℓ, the new m and e^(m − m')); bf16 adds the block's
// rows of Q and one key, in pairs: fused_scratch in simd/scratch.hpp, which fused_scratch_bytes(d_k,
// dtype) budgets. Nothing grows with n or d_v. Each panel is packed and then used at once by every
// row strip of the block, while it is still in L1.
#include <cmath>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "matrix/shape_checks.hpp"
#include "simd/bf16.hpp"
#include "simd/kernels.hpp"
#include "simd/microkernel.hpp"
#include "simd/packing.hpp"
#include "simd/score_terms.hpp"
#include "simd/scratch.hpp"
#include "simd/threads.hpp"

namespace attn::simd::ATTN_ISA {

namespace {

using Buffer = ScratchBuffer;

// One thread's scratch space, kept from call to call (first touch of fresh memory is slow).
struct Scratch {
    Buffer scores, k_panel, v_panel;
    Buffer running_max, running_sum;  // m and ℓ per row of the block
    Buffer tile_max, correction;      // per row, for the tile at hand: max(m, the tile's maximum) and e^(m − m')
    Buffer q_pairs;                   // bf16: the block's rows of Q, rounded to pairs, and one more row (a key's)
    // Each buffer at least the size simd/scratch.hpp gives it (the per-row ones are read W rows at a time).
    void fit(const FusedScratch<std::size_t>& size) {
        const auto grow = [](Buffer& b, std::size_t n) {
            if (b.size() < n) grow_exactly(b, n);
        };
        grow(scores, size.scores);
        grow(k_panel, size.k_panel);
        grow(v_panel, size.v_panel);
        grow(q_pairs, size.q_pairs);
        for (Buffer* per_row : {&running_max, &running_sum, &tile_max, &correction}) grow(*per_row, size.per_row);
    }
};

// Block sizes (simd/blocking.cpp): BR query rows per block, at most blocking.fused_rows and fewer
// when that leaves a thread idle; BC = blocking.panel_kc keys per tile. Each block packs every Kᵀ
// tile it visits (and V's where it is packed), so the packing cost is divided by BR: the taller the
// block, the less of it (BM_tune sweeps BR and BC around the cache model's choice).
struct Problem {
    const Matrix &Q, &K, &V;
    float scale;  // the scores' factor
    bool causal;
    Matrix& O;
    float* log_sum_exp;       // per row L and its remainder (simd/score_terms.hpp), for the backward; or nullptr
    std::size_t BR, BC;       // query rows per block, keys per tile (the score block's row stride)
    const ScoreTerms* terms;  // added to the scores (nullptr: none)
};

void scale_row(float* x, std::size_t n, float factor) {
    for (std::size_t k = 0; k < n; ++k) x[k] *= factor;
}

// How many of the tile's keys row i0 + r may see: with the mask, keys j0 .. i0 + r (none when the
// tile starts after the row); without it, all `cols`.
std::size_t visible_keys(const Problem& p, std::size_t i0, std::size_t r, std::size_t j0, std::size_t cols) {
    if (!p.causal) return cols;
    return i0 + r + 1 > j0 ? std::min(cols, i0 + r + 1 - j0) : 0;
}

// [fused scores] S_tile = scale·Q[i0..i0+rows)·K[j0..j0+cols)ᵀ, into the BR×BC score block (row stride BC).
// Strips of TALL rows (12 with AVX-512, 6 otherwise: microkernel.hpp). Causal: a strip of rows skips
// the panels of keys that all lie in its future; those scores are never read (online_softmax_update
// stops each row at its diagonal).
// bf16: the rows are the block's rows of Q in pairs (attend_block rounds them), and so is the panel.
template <bool bf16>
void tile_scores(const Problem& p, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols, Scratch& s) {
    const std::size_t d_k = p.Q.cols(), depth = depth_of<bf16>(d_k);
    const float* q_rows = bf16 ? s.q_pairs.data() : p.Q.row(i0).data();  // row r at q_rows + r·depth
    for (std::size_t q = 0; q * NR < cols; ++q) {
        const std::size_t width = std::min(NR, cols - q * NR);
        if constexpr (bf16) pack_key_pairs(p.K, j0 + q * NR, width, s.k_panel.data(), s.q_pairs.data() + p.BR * depth);
        else pack_panel(p.K, BLayout::transposed, 0, d_k, j0 + q * NR, width, s.k_panel.data());
        for (std::size_t r = 0; r < rows; r += TALL) {
            const std::size_t strip = std::min(TALL, rows - r);
            if (visible_keys(p, i0, r + strip - 1, j0, cols) <= q * NR) continue;  // causal: all in the future
            run_strip_microkernel<StepOf<bf16>>(strip, depth, q_rows + r * depth, depth, s.k_panel.data(), NR,
                                                s.scores.data() + r * p.BC + q * NR, p.BC, width, true, true, p.scale);
        }
    }
}

// The caller's terms, added to each score of the tile its row may see: the product was rounded by
// tile_scores first. A −∞ term gives the key weight 0, as the causal mask does.
void add_tile_terms(const Problem& p, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols, Scratch& s) {
    const ScoreTerms& terms = *p.terms;
    for (std::size_t r = 0; r < rows; ++r)
        add_terms(s.scores.data() + r * p.BC, visible_keys(p, i0, r, j0, cols), terms, term_index(terms, i0 + r, j0),
                  terms.col_stride, 1.0f);
}

// [fused softmax] The online-softmax step for each row of the block: new max, rescale ℓ and o, exponentiate the tile.
// The new maxima and the factors e^(m − m') are computed W rows at a time: one vector exp instead of a
// call to std::exp per row and tile.
// Causal: each row reads its scores only up to its diagonal; the keys after it get weight 0, which
// is what e^(−∞) would give them.
void online_softmax_update(const Problem& p, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols,
                           Scratch& s) {
    const std::size_t d_v = p.V.cols();
    for (std::size_t r = 0; r < rows; ++r)
        s.tile_max[r] = row_max({s.scores.data() + r * p.BC, visible_keys(p, i0, r, j0, cols)});
    rescale_factors(s.running_max.data(), s.tile_max.data(), s.correction.data(), rows);  // padded (Scratch::fit)
    std::swap(s.running_max, s.tile_max);                                                 // m ← m'
    for (std::size_t r = 0; r < rows; ++r) {
        const std::span<float> tile(s.scores.data() + r * p.BC, cols);
        const std::size_t visible = s.running_max[r] == neg_inf ? 0 : visible_keys(p, i0, r, j0, cols);
        std::fill(tile.begin() + visible, tile.end(), 0.0f);  // masked, or nothing visible yet: weight 0
        if (visible == 0) continue;
        // e^(s − m'), the difference first (the materialised softmax's exponential)
        s.running_sum[r] = s.running_sum[r] * s.correction[r] + exp_and_sum(tile.first(visible), s.running_max[r]);
        // unmoved max: skip; the first tile's products overwrite o, so there is nothing to rescale yet
        if (j0 > 0 && s.correction[r] != 1.0f) scale_row(p.O.row(i0 + r).data(), d_v, s.correction[r]);
    }
}

// [fused values] o_i += Σ_j e^(s_ij − m_i)·v_j for the tile: (rows×cols)·(cols×d_v) added into O;
// the first tile (j0 = 0) writes O instead, so no pass of zeros over O comes before it.
// Causal: a strip stops at its last row's diagonal; the weights after it are 0 for every row of the
// strip, and adding 0·v_j would change no bit of o (v_j is finite: attention/guards.cpp refuses
// NaN and ±inf before any work).
// bf16: the tile's weights are first rounded to pairs in place (row r's pairs where its weights were),
// and V's panels are packed in pairs.
template <bool bf16>
void accumulate_values(const Problem& p, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols,
                       Scratch& s) {
    const std::size_t d_v = p.V.cols();
    if constexpr (bf16)
        for (std::size_t r = 0; r < rows; ++r)
            round_to_pairs(s.scores.data() + r * p.BC, cols, s.scores.data() + r * p.BC);
    for (std::size_t q = 0; q * NR < d_v; ++q) {
        const std::size_t width = std::min(NR, d_v - q * NR);
        // A full-width float panel is read where it lies in V: its rows are NR floats d_v apart, which
        // the tile reads as well as a packed copy, so copying would only move bytes (BM_core/fused,
        // BM_core_long). A narrower last panel is packed, zeros past d_v; bf16 packs pairs.
        const bool in_place = !bf16 && width == NR;
        const float* panel = in_place ? p.V.row(j0).data() + q * NR : s.v_panel.data();
        if constexpr (bf16) pack_value_pairs(p.V, j0, cols, q * NR, width, s.v_panel.data());
        else if (!in_place) pack_panel(p.V, BLayout::k_by_n, j0, cols, q * NR, width, s.v_panel.data());
        for (std::size_t r = 0; r < rows; r += TALL) {
            const std::size_t strip = std::min(TALL, rows - r), keys = visible_keys(p, i0, r + strip - 1, j0, cols);
            if (keys == 0) continue;
            run_strip_microkernel<StepOf<bf16>>(strip, depth_of<bf16>(keys), s.scores.data() + r * p.BC, p.BC, panel,
                                                in_place ? d_v : NR, p.O.row(i0 + r).data() + q * NR, d_v, width,
                                                j0 == 0, false, 1.0f);
        }
    }
}

// Rows [i0, i0+rows) of O, start to finish, on one thread.
template <bool bf16>
void attend_block(const Problem& p, std::size_t i0, std::size_t rows, Scratch& s) {
    const std::size_t m_keys = p.K.rows(), d_v = p.V.cols(), d_k = p.Q.cols();
    if constexpr (bf16)  // the block's queries in pairs, once for all its tiles
        for (std::size_t r = 0; r < rows; ++r)
            round_to_pairs(p.Q.row(i0 + r).data(), d_k, s.q_pairs.data() + r * depth_of<true>(d_k));
    std::fill(s.running_max.begin(), s.running_max.begin() + rows, neg_inf);
    std::fill(s.running_sum.begin(), s.running_sum.begin() + rows, 0.0f);
    const std::size_t end = p.causal ? std::min(m_keys, i0 + rows) : m_keys;  // causal: no key past the block
    if (end == 0) std::fill(p.O.row(i0).data(), p.O.row(i0).data() + rows * d_v, 0.0f);  // no key: o = 0
    for (std::size_t j0 = 0; j0 < end; j0 += p.BC) {
        const std::size_t cols = std::min(p.BC, end - j0);
        tile_scores<bf16>(p, i0, rows, j0, cols, s);
        if (p.terms) add_tile_terms(p, i0, rows, j0, cols, s);
        online_softmax_update(p, i0, rows, j0, cols, s);
        accumulate_values<bf16>(p, i0, rows, j0, cols, s);
    }
    for (std::size_t r = 0; r < rows; ++r) {  // o / ℓ; a row that saw nothing (ℓ = 0) stays 0
        const float l = s.running_sum[r];
        if (l > 0.0f) scale_row(p.O.row(i0 + r).data(), d_v, 1.0f / l);
        if (p.log_sum_exp) {  // L = m + log ℓ, and what its float leaves out (simd/score_terms.hpp)
            const LogSumExp L = log_sum_exp(s.running_max[r], l);
            p.log_sum_exp[2 * (i0 + r)] = L.L;
            p.log_sum_exp[2 * (i0 + r) + 1] = L.remainder;
        }
    }
}

// bf16: the CPU's handling of subnormals set as vdpbf16ps has it, on every thread (simd/bf16.hpp).
struct KeepModes {};
template <bool bf16>
using ModesOf = std::conditional_t<bf16, FlushSubnormals, KeepModes>;

template <bool bf16>
void fused_attention(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal, Matrix& O,
                     float* log_sum_exp, Threads threads, const Blocking& blocking, const ScoreTerms* terms) {
    check_matmul_transposed_shapes("fused_attention", Q, K);
    check_blocking("fused_attention", blocking, NR);
    check_same_rows("fused_attention", "K", K, "V", V);
    O.resize_for_overwrite(Q.rows(), V.cols());
    const std::size_t n = Q.rows();
    [[maybe_unused]] const bool team =
        use_team(threads, 2.0 * double(n) * double(K.rows()) * double(Q.cols() + V.cols()), (n + MR - 1) / MR);
    // Balance: as many blocks as threads, or a multiple: otherwise a last, short block leaves a
    // thread idle (192-row blocks cut n = 1024 into 6, so one thread did 576 rows and the other
    // 448). Causal blocks cost more
    // the lower they are (block b visits b + 1 diagonals' worth of tiles), so a team cuts them 8 per
    // thread and hands them out dynamically, the most expensive first: whoever finishes early takes
    // the cheap ones at the end. But no causal block is cut below 256 rows (rounded up to MR) while
    // that leaves 2 a thread: each block packs every K and V tile up to its diagonal, and blocks of
    // a few dozen rows spend more on that than the finer split saves (BM_core_long, causal:1, at
    // n = 256 to 1024). A row's result does not depend
    // on the block it falls in: tiles start at multiples of BC, and a key in its future adds exactly 0.
    const std::size_t threads_used = team ? std::size_t(max_threads()) : 1;
    std::size_t rows = balanced_rows(n, blocking.fused_rows, threads_used, causal && team ? 8 : 1);
    if (causal)
        rows = std::max(rows, std::min(round_up(256, MR), balanced_rows(n, blocking.fused_rows, threads_used, 2)));
    const std::size_t keys = fused_tile_keys(blocking, bf16);
    const Problem p{Q, K, V, scale, causal, O, log_sum_exp, rows, keys, terms};
    const auto blocks = static_cast<std::ptrdiff_t>((n + rows - 1) / rows);
    // No more threads than blocks: each thread that starts allocates its scratch, and
    // fused_team_size (what a caller budgets) counts at most one per block of MR rows.
    [[maybe_unused]] const int team_size = static_cast<int>(std::min<std::ptrdiff_t>(max_threads(), blocks));
#pragma omp parallel if (team) num_threads(team_size)
    {
        [[maybe_unused]] const ModesOf<bf16> modes;
        record_team_size();
        thread_local Scratch scratch;
        scratch.fit(fused_scratch<std::size_t>(Q.cols(), p.BR, p.BC, NR, W, bf16 ? floats_per_pair : 0));
#pragma omp for schedule(dynamic)
        for (std::ptrdiff_t b = blocks - 1; b >= 0; --b) {  // the bottom (causal: largest) block first
            const std::size_t i0 = static_cast<std::size_t>(b) * p.BR;
            attend_block<bf16>(p, i0, std::min(p.BR, n - i0), scratch);
        }
    }
}

}  // namespace

void fused_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal, Matrix& O,
                          float* log_sum_exp, Threads threads, const Blocking& blocking, const ScoreTerms* terms) {
    fused_attention<false>(Q, K, V, scale, causal, O, log_sum_exp, threads, blocking, terms);
}

void fused_attention_bf16_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal, Matrix& O,
                               Threads threads, const Blocking& blocking, const ScoreTerms* terms) {
    fused_attention<true>(Q, K, V, scale, causal, O, nullptr, threads, blocking, terms);
}

}  // namespace attn::simd::ATTN_ISA
