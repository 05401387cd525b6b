// simd/fused_backward.cpp — the gradients of attention without the n×n matrices (FlashAttention-2's
// backward, without atomics).
//
// The materialised backward (attention/backward.cpp) keeps α (n×m) from the forward and builds dα and
// dS (n×m) beside it. Here neither exists: every tile of α is recomputed from Q, K and the forward's
// log-sum-exp of each row, L_i = log Σ_j e^(s_ij), since
//     α_ij = e^(s_ij) / Σ_t e^(s_it) = e^(s_ij − L_i)            (s = scale·Q·Kᵀ, masked)
// (L_i in two parts, the float L and what it leaves out, simd/score_terms.hpp: a row of float32's
// lowest value has L = the score of every key, and only the remainder says there are m of them)
// and the softmax's backward needs only one number per row besides the tile itself:
//     D_i = Σ_j α_ij·dα_ij = Σ_j α_ij·(do_i·v_j) = do_i·o_i,
// a dot product of two rows the caller already has (dO and O). With P a tile of α and
// dP = dO·Vᵀ the same tile of dα, every tile gives
//     dS' = P ⊙ (dP − D)   (grad 5)       dV += Pᵀ·dO   (grad 6.V)
//     dK += dS'ᵀ·Q         (grad 3.K)     dQ += dS'·K   (grad 3.Q)      (and dS = scale·dS', grad 4)
//
// One pass over blocks of keys. Each block of K and V stays put while the queries stream past in
// tiles; its rows of dK and dV are complete when the last tile has gone by, summed by the one
// thread that owns the block. dQ is the hard part: every block of keys adds to every row of it.
// FlashAttention-2 adds with atomics, whose order, and so whose rounding, changes from run to run.
// Here the blocks of keys are dealt round-robin to a fixed number of lanes (dq_lanes, whatever the
// number of threads); each lane sums its blocks' contributions, in block order, into a dQ of its
// own, and the lanes are added in lane order at the end: the same bits for any number of threads,
// like every kernel of simd/. The price is dq_lanes copies of dQ (d_k·n floats each).
//
// The tiles are computed transposed (keys down, queries across: Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ), so that
// Pᵀ and dS'ᵀ come out row by row as dV += Pᵀ·dO and dK += dS'ᵀ·Q read them, and dQ is summed
// transposed, dQᵀ += Kᵀ·dS'ᵀ, reading dS'ᵀ's rows in place: no tile is ever transposed. Work: the
// four products and one recomputation of S, 10·n·m·d flops (d_k = d_v = d), what BM_backward/fused
// counts.
//
// Causal: a query tile wholly before a block of keys is never visited; in a tile that crosses the
// diagonal, P and dS' are set to 0 past it (a masked α is 0, and so is its gradient).
//
// Terms: the forward's, added to each tile of Sᵀ before α is recomputed, so a −∞ term gives α = 0 and
// a gradient of 0. A query row that saw no key (L = −∞) has α = 0 on its whole row (see the L below).
// Scores and terms stay in their own units, as in the forward (simd/fused.cpp): any finite term works.
//
// Extra memory: L, its remainder and D (three floats per query row), the lanes' dQᵀ, and per thread two
// tiles, a panel and the block's Kᵀ: fused_backward_scratch in simd/scratch.hpp, which
// fused_backward_scratch_bytes budgets.
#include <algorithm>
#include <cmath>

#include "matrix/shape_checks.hpp"
#include "simd/exp.hpp"
#include "simd/kernels.hpp"
#include "simd/microkernel.hpp"
#include "simd/packing.hpp"
#include "simd/score_terms.hpp"
#include "simd/scratch.hpp"
#include "simd/threads.hpp"

namespace attn::simd::ATTN_ISA {

namespace {

using Buffer = ScratchBuffer;

// One thread's scratch, kept from call to call: the score tile (Sᵀ, then Pᵀ) and the gradient tile
// (dPᵀ, then dS'ᵀ), each padded by NR floats (dQᵀ's product reads whole panels of dS'ᵀ's rows), one
// packed panel, and the block's Kᵀ.
struct Scratch {
    Buffer scores, gradients, panel, keys_transposed;
    void fit(const FusedBackwardScratch<std::size_t>& size) {  // simd/scratch.hpp
        for (auto [b, n] : {std::pair{&scores, size.tile},
                            {&gradients, size.tile},
                            {&panel, size.panel},
                            {&keys_transposed, size.keys_transposed}})
            if (b->size() < n) grow_exactly(*b, n);
    }
};

Scratch& thread_scratch(const FusedBackwardScratch<std::size_t>& size) {
    thread_local Scratch scratch;
    scratch.fit(size);
    return scratch;
}

struct Problem {
    const Matrix &Q, &K, &V, &dO;
    const float* L;          // each query row's log-sum-exp, as the float L_i (+∞ for a row that saw no key)
    const float* remainder;  // −log₂e × what L_i leaves out: the tile's exponent is in base 2
    const float* D;          // do_i·o_i
    float scale;
    bool causal;
    std::size_t block, tile;  // keys per block, queries per streamed tile (the tiles' row stride)
    const ScoreTerms* terms;  // the forward's (nullptr: none)
};

// C (rows×cols, row stride ldc) = factor·A·B[b0 .. b0+cols)ᵀ: A's rows against rows of B, B packed
// NR rows at a time as panels of Bᵀ (depth: B's width).
void times_transposed(const float* A, std::size_t lda, std::size_t rows, const Matrix& B, std::size_t b0,
                      std::size_t cols, float factor, float* C, std::size_t ldc, Buffer& panel) {
    const std::size_t depth = B.cols();
    for (std::size_t q = 0; q * NR < cols; ++q) {
        const std::size_t width = std::min(NR, cols - q * NR);
        pack_panel(B, BLayout::transposed, 0, depth, b0 + q * NR, width, panel.data());
        for (std::size_t r = 0; r < rows; r += TALL)
            run_strip_microkernel(std::min(TALL, rows - r), depth, A + r * lda, lda, panel.data(), NR,
                                  C + r * ldc + q * NR, ldc, width, true, true, factor);
    }
}

// C (rows×B.cols(), row stride ldc) (+)= A (rows×depth)·B[b0 .. b0+depth): `first` starts from 0.
void times(const float* A, std::size_t lda, std::size_t rows, std::size_t depth, const Matrix& B, std::size_t b0,
           bool first, float* C, std::size_t ldc, Buffer& panel) {
    for (std::size_t q = 0; q * NR < B.cols(); ++q) {
        const std::size_t width = std::min(NR, B.cols() - q * NR);
        pack_panel(B, BLayout::k_by_n, b0, depth, q * NR, width, panel.data());
        for (std::size_t r = 0; r < rows; r += TALL)
            run_strip_microkernel(std::min(TALL, rows - r), depth, A + r * lda, lda, panel.data(), NR,
                                  C + r * ldc + q * NR, ldc, width, first, false, 1.0f);
    }
}

// The forward's terms on the tile Sᵀ (keys down, queries across): key j0 + r's row reads
// term(i0 + c, j0 + r) along c, the terms' row stride.
void add_tile_terms(const Problem& p, std::size_t j0, std::size_t keys, std::size_t i0, std::size_t queries, float* t,
                    std::size_t ld) {
    const ScoreTerms& terms = *p.terms;
    for (std::size_t r = 0; r < keys; ++r)
        add_terms(t + r * ld, queries, terms, term_index(terms, i0, j0 + r), terms.row_stride, 1.0f);
}

// [fused gradient tile] Pᵀ = e^((Sᵀ − L) − remainder), dS'ᵀ = Pᵀ ⊙ (dPᵀ − D) on a keys×queries tile (row
// stride ld), in place: Sᵀ becomes Pᵀ, dPᵀ becomes dS'ᵀ. L, its remainder and D belong to the queries,
// one per column. The exponent, in base 2, is (s − L)·log₂e − remainder·log₂e: the difference first,
// as the forward takes it (simd/exp.hpp), then one FMA.
// The exponent is capped at 0, so P ≤ 1 as α is: a recomputed score is rounded in another order than
// the forward's, off by up to about (d_k + 2)·ε·‖q‖·‖k‖, which for scores near 1e19 is beyond 1e12,
// and 2^(that) would be ∞. The range checks of attention/guards.cpp count on α ≤ 1.
void softmax_gradient_tile(float* t, float* dp, std::size_t rows, std::size_t cols, std::size_t ld, const float* L,
                           const float* R, const float* D) {
    const auto exponent = [](Batch s, Batch L_i, Batch R_i) {
        return xsimd::min(xsimd::fma(s - L_i, Batch(log2_e), R_i), Batch(0.0f));
    };
    for (std::size_t r = 0; r < rows; ++r) {
        float* tr = t + r * ld;
        float* dr = dp + r * ld;
        std::size_t c = 0;
        for (; c + W <= cols; c += W) {
            const Batch p = softmax_exp2(
                exponent(Batch::load_unaligned(tr + c), Batch::load_unaligned(L + c), Batch::load_unaligned(R + c)));
            p.store_unaligned(tr + c);
            (p * (Batch::load_unaligned(dr + c) - Batch::load_unaligned(D + c))).store_unaligned(dr + c);
        }
        for (; c < cols; ++c) {  // the tail, through the same exponential: a batch padded with zeros
            const float p = softmax_exp2(exponent(Batch(tr[c]), Batch(L[c]), Batch(R[c]))).get(0);
            tr[c] = p;
            dr[c] = p * (dr[c] - D[c]);
        }
    }
}

// Causal, on a tile that crosses the diagonal: Pᵀ and dS'ᵀ are 0 wherever the key (row k0 + r) comes
// after the query (column q0 + c).
void zero_future(float* t, float* dp, std::size_t rows, std::size_t cols, std::size_t ld, std::size_t q0,
                 std::size_t k0) {
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c)
            if (k0 + r > q0 + c) t[r * ld + c] = dp[r * ld + c] = 0.0f;
}

// dQᵀ[·, q0 .. q0+queries) += Kᵀ·dS'ᵀ: Kᵀ (d_k×keys, row stride `block`) against the tile's rows,
// read in place, NR queries at a time (the padding of Scratch covers the last panel's overhang).
void add_query_gradients(const Problem& p, std::size_t keys, std::size_t q0, std::size_t queries, const Scratch& s,
                         float* dQt, std::size_t n) {
    const std::size_t d_k = p.Q.cols();
    for (std::size_t q = 0; q * NR < queries; ++q)
        for (std::size_t r = 0; r < d_k; r += TALL)
            run_strip_microkernel(std::min(TALL, d_k - r), keys, s.keys_transposed.data() + r * p.block, p.block,
                                  s.gradients.data() + q * NR, p.tile, dQt + r * n + q0 + q * NR, n,
                                  std::min(NR, queries - q * NR), false, false, 1.0f);
}

// Rows [j0, j0+keys) of dK and dV, and this block's part of dQᵀ, as the queries stream past in tiles.
void key_block(const Problem& p, std::size_t j0, std::size_t keys, Matrix& dK, Matrix& dV, float* dQt, Scratch& s) {
    const std::size_t n = p.Q.rows(), d_k = p.Q.cols(), ld = p.tile;
    for (std::size_t j = 0; j < keys; ++j)  // Kᵀ of the block, for dQᵀ's product
        for (std::size_t c = 0; c < d_k; ++c) s.keys_transposed[c * p.block + j] = p.K(j0 + j, c);
    const std::size_t first_tile = p.causal ? j0 / p.tile * p.tile : 0;  // earlier queries see none of these keys
    for (std::size_t i0 = first_tile; i0 < n; i0 += p.tile) {
        const std::size_t queries = std::min(p.tile, n - i0);
        // Sᵀ = scale·K·Qᵀ and dPᵀ = V·dOᵀ for the tile: keys down, queries across
        times_transposed(p.K.row(j0).data(), p.K.cols(), keys, p.Q, i0, queries, p.scale, s.scores.data(), ld, s.panel);
        times_transposed(p.V.row(j0).data(), p.V.cols(), keys, p.dO, i0, queries, 1.0f, s.gradients.data(), ld,
                         s.panel);
        if (p.terms) add_tile_terms(p, j0, keys, i0, queries, s.scores.data(), ld);
        softmax_gradient_tile(s.scores.data(), s.gradients.data(), keys, queries, ld, p.L + i0, p.remainder + i0,
                              p.D + i0);
        if (p.causal && j0 + keys > i0 + 1) zero_future(s.scores.data(), s.gradients.data(), keys, queries, ld, i0, j0);
        const bool first = i0 == first_tile;
        times(s.scores.data(), ld, keys, queries, p.dO, i0, first, dV.row(j0).data(), dV.cols(),
              s.panel);  // dV += Pᵀ·dO
        times(s.gradients.data(), ld, keys, queries, p.Q, i0, first, dK.row(j0).data(), dK.cols(),
              s.panel);                                        // dK += dS'ᵀ·Q
        add_query_gradients(p, keys, i0, queries, s, dQt, n);  // dQᵀ += Kᵀ·dS'ᵀ
    }
}

void scale_rows(Matrix& M, std::size_t r0, std::size_t rows, float factor) {
    float* x = M.row(r0).data();
    for (std::size_t k = 0; k < rows * M.cols(); ++k) x[k] *= factor;
}

}  // namespace

void fused_attention_backward_into(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& O, const Matrix& dO,
                                   std::span<const float> log_sum_exp, float scale, bool causal, Matrix& dQ, Matrix& dK,
                                   Matrix& dV, Threads threads, const Blocking& blocking, const ScoreTerms* terms) {
    check_matmul_transposed_shapes("fused_attention_backward", Q, K);
    check_blocking("fused_attention_backward", blocking, NR);
    check_same_rows("fused_attention_backward", "K", K, "V", V);
    check_same_shape("fused_attention_backward", "O", O, "dO", dO);
    const std::size_t n = Q.rows(), m = K.rows(), d_k = Q.cols();
    dQ.resize_for_overwrite(n, d_k);
    dK.resize_for_overwrite(m, K.cols());
    dV.resize_for_overwrite(m, V.cols());
    std::fill(dK.data(), dK.data() + dK.size(), 0.0f);  // keys no query sees (causal, m > n) get 0
    std::fill(dV.data(), dV.data() + dV.size(), 0.0f);
    // The rows' statistics, one per query: L, its remainder in the exponent's base 2, and D = do_i·o_i.
    // A row that saw no key (L = −∞: its terms were all −∞) takes L = +∞: every e^(s − L) is then 0 (s
    // finite or −∞), where −∞ − (−∞) would be NaN and a finite s − (−∞) would give weight 1.
    Buffer L(n), R(n), D(n);
    for (std::size_t i = 0; i < n; ++i) {
        L[i] = log_sum_exp[2 * i] == neg_inf ? -neg_inf : log_sum_exp[2 * i];
        R[i] = -log_sum_exp[2 * i + 1] * log2_e;
        D[i] = dot(dO.row(i).data(), O.row(i).data(), O.cols());
    }
    // Block and tile sizes depend on the problem only, never on the team: the order of every sum is fixed.
    const std::size_t tile = blocking.panel_kc, block = fused_backward_keys_per_block(m, blocking);
    const auto blocks = static_cast<std::ptrdiff_t>((m + block - 1) / block);
    Buffer dQt(dq_lanes * d_k * n, 0.0f);  // each lane's dQᵀ (d_k×n)
    const Problem p{Q, K, V, dO, L.data(), R.data(), D.data(), scale, causal, block, tile, terms};
    [[maybe_unused]] const std::size_t team_size = threads == Threads::all ? fused_backward_team(n, m, d_k) : 1;
    [[maybe_unused]] const bool team = team_size > 1;
    const auto scratch_size = fused_backward_scratch<std::size_t>(d_k, V.cols(), block, tile, NR);
#pragma omp parallel for schedule(dynamic) if (team) num_threads(int(team_size))
    for (std::ptrdiff_t lane = 0; lane < std::ptrdiff_t(dq_lanes); ++lane) {
        Scratch& scratch = thread_scratch(scratch_size);
        for (std::ptrdiff_t b = lane; b < blocks;
             b += dq_lanes) {  // causal: the first keys are seen by the most queries
            const std::size_t j0 = static_cast<std::size_t>(b) * block, keys = std::min(block, m - j0);
            key_block(p, j0, keys, dK, dV, dQt.data() + std::size_t(lane) * d_k * n, scratch);
            scale_rows(dK, j0, keys, scale);  // grad 4, dS = scale·dS': applied to dK's thin rows
        }
    }
    // dQ = scale·(the lanes' dQᵀ, added in lane order)ᵀ
#pragma omp parallel for schedule(static) if (team)
    for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i)
        for (std::size_t c = 0; c < d_k; ++c) {
            float sum = 0.0f;
            for (std::size_t lane = 0; lane < dq_lanes; ++lane) sum += dQt[(lane * d_k + c) * n + std::size_t(i)];
            dQ(std::size_t(i), c) = scale * sum;
        }
}

}  // namespace attn::simd::ATTN_ISA
