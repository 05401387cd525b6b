// simd/fused_backward.cpp — the gradients of attention without the n×n matrices (FlashAttention-2's
// backward, without atomics).
//
// The materialised backward (attention/backward.cpp) keeps α (n×m) from the forward and builds dα and
// dS (n×m) beside it. Here neither exists: every tile of α is recomputed from Q, K and the forward's
// log-sum-exp of each row, L_i = log Σ_j e^(s_ij), since
//     α_ij = e^(s_ij) / Σ_t e^(s_it) = e^(s_ij − L_i)            (s = scale·Q·Kᵀ, masked)
// and the softmax's backward needs only one number per row besides the tile itself:
//     D_i = Σ_j α_ij·dα_ij = Σ_j α_ij·(do_i·v_j) = do_i·o_i,
// a dot product of two rows the caller already has (dO and O). With P a tile of α and
// dP = dO·Vᵀ the same tile of dα, every tile gives
//     dS' = P ⊙ (dP − D)   (grad 5)       dV += Pᵀ·dO   (grad 6.V)
//     dK += dS'ᵀ·Q         (grad 3.K)     dQ += dS'·K   (grad 3.Q)      (and dS = scale·dS', grad 4)
//
// Two passes, so that every element of dQ, dK and dV is summed by one thread (no atomics, and the
// same bits for any number of threads, like every kernel of simd/):
//   pass 1, a team over blocks of keys: each block of K and V stays put while the queries stream
//           past in tiles; its rows of dK and dV are complete when the last tile has gone by;
//   pass 2, a team over blocks of queries: the keys stream past, and dQ's rows are complete.
// Pass 1 computes its tiles transposed (keys down, queries across: Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ), so
// that Pᵀ and dS'ᵀ come out row by row as the products dV += Pᵀ·dO and dK += dS'ᵀ·Q read them: no
// tile is ever transposed. The price of two passes is recomputing S and dP once more: 14·n·m·d
// flops in all (d_k = d_v = d) against the 8·n·m·d of the materialised backward's four products.
// BM_backward/fused counts 10·n·m·d (the four products and one recomputation of S, the usual count
// for this algorithm), so its GFLOPs are comparable with other implementations' figures.
//
// Causal: a query tile wholly before a key block, or a key tile wholly after a query block, is never
// visited; in a tile that crosses the diagonal, P and dS' are set to 0 past it (a masked α is 0,
// and so is its gradient).
//
// Extra memory: D and L in base 2 (two floats per query row), and per thread two score tiles of
// fused_rows × panel_kc and one packed panel: fused_backward_scratch_bytes in simd/dispatch.cpp.
#include <algorithm>
#include <cmath>

#include "matrix/shape_checks.hpp"
#include "simd/exp.hpp"
#include "simd/kernels.hpp"
#include "simd/microkernel.hpp"
#include "simd/packing.hpp"
#include "simd/threads.hpp"

namespace attn::simd::ATTN_ISA {

namespace {

using Buffer = ScratchBuffer;

// One thread's scratch, kept from call to call: the score tile (S, then P), the gradient tile
// (dP, then dS'), and one packed panel.
struct Scratch {
    Buffer scores, gradients, panel;
    void fit(std::size_t tile_floats, std::size_t panel_floats) {
        for (auto [b, n] : {std::pair{&scores, tile_floats}, {&gradients, tile_floats}, {&panel, panel_floats}})
            if (b->size() < n) grow_exactly(*b, n);
    }
};

// Each thread's own, shared by both passes.
Scratch& thread_scratch(std::size_t tile_floats, std::size_t panel_floats) {
    thread_local Scratch scratch;
    scratch.fit(tile_floats, panel_floats);
    return scratch;
}

struct Problem {
    const Matrix &Q, &K, &V, &dO;
    const float* L;  // log₂ of each query row's Σ 2^t, t = scale·log₂e·q·k (the forward's L_i·log₂e)
    const float* D;  // do_i·o_i
    float scale_log2e;
    bool causal;
    std::size_t block, tile;  // rows of a block (keys in pass 1, queries in pass 2), rows of a streamed tile
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

// [fused gradient tile] P = 2^(t − L), dS' = P ⊙ (dP − D) on a rows×cols tile (row stride ld), in
// place: t becomes P, dP becomes dS'. L and D belong to the queries: one per row of the tile
// (`per_column` false), or one per column (true: pass 1's transposed tiles).
void softmax_gradient_tile(float* t, float* dp, std::size_t rows, std::size_t cols, std::size_t ld, const float* L,
                           const float* D, bool per_column) {
    for (std::size_t r = 0; r < rows; ++r) {
        float* tr = t + r * ld;
        float* dr = dp + r * ld;
        std::size_t c = 0;
        for (; c + W <= cols; c += W) {
            const Batch l = per_column ? Batch::load_unaligned(L + c) : Batch(L[r]);
            const Batch d = per_column ? Batch::load_unaligned(D + c) : Batch(D[r]);
            const Batch p = softmax_exp2(Batch::load_unaligned(tr + c) - l);
            p.store_unaligned(tr + c);
            (p * (Batch::load_unaligned(dr + c) - d)).store_unaligned(dr + c);
        }
        for (; c < cols; ++c) {  // the tail, through the same exponential: a batch padded with zeros
            const std::size_t q = per_column ? c : r;
            alignas(64) float lane[W] = {};
            lane[0] = tr[c] - L[q];
            const float p = softmax_exp2(Batch::load_aligned(lane)).get(0);
            tr[c] = p;
            dr[c] = p * (dr[c] - D[q]);
        }
    }
}

// Causal, on a tile that crosses the diagonal: P and dS' are 0 wherever the key comes after the query.
// Rows are queries q0 + r and columns keys k0 + c, or (transposed) rows keys and columns queries.
void zero_future(float* t, float* dp, std::size_t rows, std::size_t cols, std::size_t ld, std::size_t q0,
                 std::size_t k0, bool transposed) {
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) {
            const std::size_t query = transposed ? q0 + c : q0 + r, key = transposed ? k0 + r : k0 + c;
            if (key > query) t[r * ld + c] = dp[r * ld + c] = 0.0f;
        }
}

void scale_rows(Matrix& M, std::size_t r0, std::size_t rows, float factor) {
    float* x = M.row(r0).data();
    for (std::size_t k = 0; k < rows * M.cols(); ++k) x[k] *= factor;
}

// The tile of queries [q0, q0+queries) against keys [k0, k0+keys): P in s.scores and dS' in
// s.gradients, queries down and keys across (S = Q·Kᵀ, dP = dO·Vᵀ), or `transposed`, keys down and
// queries across (Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ). Row stride: p.tile.
void probabilities_and_gradients(const Problem& p, std::size_t q0, std::size_t queries, std::size_t k0,
                                 std::size_t keys, bool transposed, Scratch& s) {
    const Matrix &A = transposed ? p.K : p.Q, &B = transposed ? p.Q : p.K;     // scores: A·Bᵀ
    const Matrix &dA = transposed ? p.V : p.dO, &dB = transposed ? p.dO : p.V;  // their gradients: dA·dBᵀ
    const std::size_t a0 = transposed ? k0 : q0, b0 = transposed ? q0 : k0;
    const std::size_t rows = transposed ? keys : queries, cols = transposed ? queries : keys;
    times_transposed(A.row(a0).data(), A.cols(), rows, B, b0, cols, p.scale_log2e, s.scores.data(), p.tile, s.panel);
    times_transposed(dA.row(a0).data(), dA.cols(), rows, dB, b0, cols, 1.0f, s.gradients.data(), p.tile, s.panel);
    softmax_gradient_tile(s.scores.data(), s.gradients.data(), rows, cols, p.tile, p.L + q0, p.D + q0, transposed);
    if (p.causal && k0 + keys > q0 + 1)
        zero_future(s.scores.data(), s.gradients.data(), rows, cols, p.tile, q0, k0, transposed);
}

// Pass 1: rows [j0, j0+keys) of dK and dV, as queries stream past in tiles.
void key_block(const Problem& p, std::size_t j0, std::size_t keys, Matrix& dK, Matrix& dV, Scratch& s) {
    const std::size_t n = p.Q.rows(), ld = p.tile;
    const std::size_t first_tile = p.causal ? j0 / p.tile * p.tile : 0;  // earlier queries see none of these keys
    for (std::size_t i0 = first_tile; i0 < n; i0 += p.tile) {
        const std::size_t queries = std::min(p.tile, n - i0);
        probabilities_and_gradients(p, i0, queries, j0, keys, true, s);  // Pᵀ and dS'ᵀ: keys down
        const bool first = i0 == first_tile;
        times(s.scores.data(), ld, keys, queries, p.dO, i0, first, dV.row(j0).data(), dV.cols(), s.panel);     // dV += Pᵀ·dO
        times(s.gradients.data(), ld, keys, queries, p.Q, i0, first, dK.row(j0).data(), dK.cols(), s.panel);  // dK += dS'ᵀ·Q
    }
}

// Pass 2: rows [i0, i0+queries) of dQ, as keys stream past in tiles.
void query_block(const Problem& p, std::size_t i0, std::size_t queries, Matrix& dQ, Scratch& s) {
    const std::size_t end = p.causal ? std::min(p.K.rows(), i0 + queries) : p.K.rows();
    for (std::size_t j0 = 0; j0 < end; j0 += p.tile) {
        const std::size_t keys = std::min(p.tile, end - j0);
        probabilities_and_gradients(p, i0, queries, j0, keys, false, s);  // P and dS': queries down
        times(s.gradients.data(), p.tile, queries, keys, p.K, j0, j0 == 0, dQ.row(i0).data(), dQ.cols(), s.panel);  // dQ += dS'·K
    }
}

}  // namespace

void fused_attention_backward_into(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& O,
                                   const Matrix& dO, std::span<const float> log_sum_exp, float scale, bool causal,
                                   Matrix& dQ, Matrix& dK, Matrix& dV, Threads threads, const Blocking& blocking) {
    check_matmul_transposed_shapes("fused_attention_backward", Q, K);
    check_blocking("fused_attention_backward", blocking, NR);
    check_same_rows("fused_attention_backward", "K", K, "V", V);
    check_same_shape("fused_attention_backward", "O", O, "dO", dO);
    const std::size_t n = Q.rows(), m = K.rows();
    dQ.resize_for_overwrite(n, Q.cols());
    dK.resize_for_overwrite(m, K.cols());
    dV.resize_for_overwrite(m, V.cols());
    std::fill(dK.data(), dK.data() + dK.size(), 0.0f);  // keys no query sees (causal, m > n) get 0
    std::fill(dV.data(), dV.data() + dV.size(), 0.0f);
    // The rows' statistics: L in base 2 (the kernel's scores carry log₂e, as in the forward) and D = do_i·o_i.
    Buffer L(n), D(n);
    for (std::size_t i = 0; i < n; ++i) {
        L[i] = log_sum_exp[i] * 1.44269504f;
        D[i] = dot(dO.row(i).data(), O.row(i).data(), O.cols());
    }
    const std::size_t tile = blocking.panel_kc;  // fixed: the order of every sum does not depend on the team
    [[maybe_unused]] const bool team =
        use_team(threads, 5.0 * double(n) * double(m) * double(Q.cols() + V.cols()), (std::max(n, m) + MR - 1) / MR);
    const std::size_t threads_used = team ? std::size_t(max_threads()) : 1;
    const auto block_of = [&](std::size_t rows) {
        return balanced_rows(rows, blocking.fused_rows, threads_used, causal && team ? 8 : 1);
    };
    const std::size_t tile_floats = blocking.fused_rows * tile, panel_floats = std::max({Q.cols(), V.cols(), tile}) * NR;
    Problem p{Q, K, V, dO, L.data(), D.data(), scale * 1.44269504f, causal, block_of(m), tile};
    const auto key_blocks = static_cast<std::ptrdiff_t>((m + p.block - 1) / p.block);
    [[maybe_unused]] const int key_team = static_cast<int>(std::min<std::ptrdiff_t>(max_threads(), key_blocks));
#pragma omp parallel if (team) num_threads(key_team)
    {
        Scratch& scratch = thread_scratch(tile_floats, panel_floats);
#pragma omp for schedule(dynamic)
        for (std::ptrdiff_t b = 0; b < key_blocks; ++b) {  // causal: the first keys are seen by the most queries
            const std::size_t j0 = static_cast<std::size_t>(b) * p.block, keys = std::min(p.block, m - j0);
            key_block(p, j0, keys, dK, dV, scratch);
            scale_rows(dK, j0, keys, scale);  // grad 4, dS = scale·dS': applied to dK's thin rows
        }
    }
    p.block = block_of(n);
    const auto query_blocks = static_cast<std::ptrdiff_t>((n + p.block - 1) / p.block);
    [[maybe_unused]] const int query_team = static_cast<int>(std::min<std::ptrdiff_t>(max_threads(), query_blocks));
#pragma omp parallel if (team) num_threads(query_team)
    {
        Scratch& scratch = thread_scratch(tile_floats, panel_floats);
#pragma omp for schedule(dynamic)
        for (std::ptrdiff_t b = query_blocks - 1; b >= 0; --b) {  // causal: the last queries see the most keys
            const std::size_t i0 = static_cast<std::size_t>(b) * p.block, queries = std::min(p.block, n - i0);
            query_block(p, i0, queries, dQ, scratch);
            scale_rows(dQ, i0, queries, scale);
        }
    }
}

}  // namespace attn::simd::ATTN_ISA
