// simd/microkernel.hpp — the register tile at the heart of every product in simd/.
//
// An MR×NR block of C (6 rows × 2 batches = 6×16 floats with AVX2, 6×32 with AVX-512) lives in
// 12 vector registers for the whole loop over p. Each step loads one row of B as two batches,
// broadcasts one element of A per row, and does 12 FMAs:
//
//     c_r· += a_rp · b_p·        for r = 0..5, all NR columns at once
//
// 8 loads feed 12 FMAs (192 flops with AVX2), and C is read and written once per call instead of
// once per p. BM_gemm_steps measures the tile against the vector loops before it and the packed,
// blocked product after it; BM_tile_in_l1, the tile alone with all its data in L1.
#pragma once

#include <algorithm>
#include <cstddef>

#include "simd/batch.hpp"
#include "simd/blocking.hpp"

namespace attn::simd::ATTN_ISA {

inline constexpr std::size_t NR = 2 * W;  // columns of the register tile: two batches (MR rows: blocking.hpp)

// Rows of the tile of the wide GEMM and of the fused kernel (blocking.hpp): 12 with AVX-512. In a
// 12-row tile each loaded row of B serves twice the FMAs it does in a 6-row one, which matters most
// in the wide order, where B's panels stream from L2 (BM_tile_in_l1 with rows 6 and 12; in use,
// BM_matmul_square, BM_matmul_transposed and BM_core/fused).
inline constexpr std::size_t TALL = tall_rows(NR);

// One step of the tile: acc + a·b, lane by lane, `a` one element of A broadcast. The bf16 mode steps on
// pairs of bfloat16 instead (simd/bf16.hpp); nothing else of the tile changes.
// With AVX-512 the step names the instruction: xsimd 8.1 computes that set's fma() as x·y + z and
// leaves the fusing to the compiler, which an instrumented or less optimised build may not do (the
// bf16 emulation's exactness needs one rounding per step, simd/bf16.hpp).
struct FmaStep {
    static Batch apply(Batch a, Batch b, Batch acc) {
#if XSIMD_WITH_AVX512F
        return Batch(_mm512_fmadd_ps(a, b, acc));
#else
        return xsimd::fma(a, b, acc);
#endif
    }
};

// What the tile does with each finished row on its way out, after the scale, while it is still in
// registers: nothing (every product but one), or, for the fused kernel's scores, keep each row's
// largest score (RowMaxima, simd/fused.cpp), so that the softmax needs no pass of its own for it.
// `rows_down(k)` is the same hook for a tile whose first row is the k-th of this one's.
struct PlainRows {
    void row(std::size_t, Batch, Batch) const {}
    PlainRows rows_down(std::size_t) const { return *this; }
};

// C[R×cols] (+)= A[R×kc]·B[kc×NR], with R ≤ TALL rows and cols ≤ NR columns. B's rows are ldb floats
// apart: NR for a packed panel (gemm.cpp), or the width of an unpacked matrix (bench/ uses that to
// measure what packing adds).
// `first`: this is the first depth block, so start from 0 instead of C. `last`: multiply by scale
// on the way out; `hook` sees each row then (the two batches of its NR columns, past `cols` too).
// Every element is one FMA chain over p in order, whatever R or cols is: that is what makes the
// result independent of how rows are split between threads.
// Never inlined: on its own, each height's loop has every pointer and bound in a register. Inlined
// into gemm()'s loop nest, GCC 12 kept the one-row loop's end pointer on the stack (one reload per
// step; tests/checks/count_spills.py finds such reloads).
// [fast microkernel]
template <std::size_t R, class Step = FmaStep, class Rows = PlainRows>
[[gnu::noinline]] void microkernel(std::size_t kc, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                                   float* c, std::size_t ldc, std::size_t cols, bool first, bool last, float scale,
                                   Rows hook = {}) {
    // A tile that sticks out past the last column of C is staged in a full-width copy, so that the
    // loads and stores below are the same for every tile. With three ways in (zeros, C, the copy)
    // and the loops over r left rolled, GCC 12 kept acc[][] in memory: 12 vector stores and reloads
    // before the p loop and after it, on every call. One way in, the r loops unrolled: the
    // accumulators stay in registers (tests/checks/count_spills.py fails on a vector spill here).
    // Every r loop is unrolled for up to 16 rows: at 8, both compilers kept the 12-row tile's
    // acc[][] in memory (GCC across the stores after the p loop, Clang in the p loop itself).
    alignas(64) float edge[R * NR];
    float* tile = c;
    std::size_t ldt = ldc;
    if (cols < NR) {
        if (!first)
            for (std::size_t r = 0; r < R; ++r) std::copy(c + r * ldc, c + r * ldc + cols, edge + r * NR);
        tile = edge;
        ldt = NR;
    }
    Batch acc[R][2];
#pragma GCC unroll 16
    for (std::size_t r = 0; r < R; ++r) {
        acc[r][0] = first ? Batch(0.0f) : Batch::load_unaligned(tile + r * ldt);
        acc[r][1] = first ? Batch(0.0f) : Batch::load_unaligned(tile + r * ldt + W);
    }
    // A's rows, as row r % MR of strip r / MR: the two strips of a tall tile then share five row
    // offsets, and GCC 12 keeps every pointer in a register. Addressed a[r · lda + p], the twelve
    // offsets did not fit, and the 12-row loop reloaded two of them from the stack on every step.
    const float* strip[(R + MR - 1) / MR];
    for (std::size_t g = 0; g < (R + MR - 1) / MR; ++g) strip[g] = a + g * MR * lda;
    for (std::size_t p = 0; p < kc; ++p) {
        const Batch b0 = Batch::load_unaligned(b + p * ldb);
        const Batch b1 = Batch::load_unaligned(b + p * ldb + W);
#pragma GCC unroll 16
        for (std::size_t r = 0; r < R; ++r) {
            const Batch a_rp(strip[r / MR][(r % MR) * lda + p]);  // one element of A in every lane
            acc[r][0] = Step::apply(a_rp, b0, acc[r][0]);
            acc[r][1] = Step::apply(a_rp, b1, acc[r][1]);
        }
    }
#pragma GCC unroll 16
    for (std::size_t r = 0; r < R; ++r) {
        if (last) {
            acc[r][0] *= Batch(scale);
            acc[r][1] *= Batch(scale);
        }
        hook.row(r, acc[r][0], acc[r][1]);
        acc[r][0].store_unaligned(tile + r * ldt);
        acc[r][1].store_unaligned(tile + r * ldt + W);
    }
    if (cols < NR)
        for (std::size_t r = 0; r < R; ++r) std::copy(edge + r * NR, edge + r * NR + cols, c + r * ldc);
}

// The rows left at the bottom of a block get a tile of their own height, compiled for each height.
template <class Step = FmaStep, class Rows = PlainRows>
inline void run_microkernel(std::size_t rows, std::size_t kc, const float* a, std::size_t lda, const float* b,
                            std::size_t ldb, float* c, std::size_t ldc, std::size_t cols, bool first, bool last,
                            float scale, Rows hook = {}) {
    switch (rows) {
        case 6: return microkernel<6, Step>(kc, a, lda, b, ldb, c, ldc, cols, first, last, scale, hook);
        case 5: return microkernel<5, Step>(kc, a, lda, b, ldb, c, ldc, cols, first, last, scale, hook);
        case 4: return microkernel<4, Step>(kc, a, lda, b, ldb, c, ldc, cols, first, last, scale, hook);
        case 3: return microkernel<3, Step>(kc, a, lda, b, ldb, c, ldc, cols, first, last, scale, hook);
        case 2: return microkernel<2, Step>(kc, a, lda, b, ldb, c, ldc, cols, first, last, scale, hook);
        case 1: return microkernel<1, Step>(kc, a, lda, b, ldb, c, ldc, cols, first, last, scale, hook);
    }
}
static_assert(MR == 6, "run_microkernel lists one case per tile height");

// A strip of at most TALL rows (the wide GEMM's, the fused kernel's): a full one in one tall tile,
// a shorter one (the bottom of A or of a block) MR rows at a time.
template <class Step = FmaStep, class Rows = PlainRows>
inline void run_strip_microkernel(std::size_t rows, std::size_t kc, const float* a, std::size_t lda, const float* b,
                                  std::size_t ldb, float* c, std::size_t ldc, std::size_t cols, bool first, bool last,
                                  float scale, Rows hook = {}) {
    if constexpr (TALL > MR)
        if (rows == TALL) return microkernel<TALL, Step>(kc, a, lda, b, ldb, c, ldc, cols, first, last, scale, hook);
    for (std::size_t r = 0; r < rows; r += MR)
        run_microkernel<Step>(std::min(MR, rows - r), kc, a + r * lda, lda, b, ldb, c + r * ldc, ldc, cols, first, last,
                              scale, hook.rows_down(r));
}

}  // namespace attn::simd::ATTN_ISA
