// simd/gemm.cpp — matrix products the way fast libraries compute them, told one step at a time.
//
// C = A·B computes m·n dot products of length k: 2·m·n·k flops on 3 matrices of data. The textbook
// i-j-k loop (matrix/ops.cpp) walks down a column of B for every element: a new cache line for each
// multiply-add. Three changes turn that into near-peak arithmetic; bench/ measures each of them.
//
// 1. i-k-j order and vectors. Hold a_ip fixed and sweep a row of B: C_i· += a_ip · B_p·. Both rows are
//    contiguous, so W columns of C advance with one FMA instruction (simd::axpy).
// 2. A register tile (simd/microkernel.hpp). Keep an MR×NR block of C (6×16 with AVX2) in 12 vector
//    registers for the whole k loop: C is read and written once instead of k times, and each loaded
//    row of B serves 6 rows of A.
// 3. Cache blocks and packing. Copy kc×NR strips of B ("panels") into contiguous memory, where the
//    microkernel reads them row after row, and arrange the loops so that what is reused stays in a
//    cache while the rest streams past it. Which way round depends on the width of B
//    (simd/blocking.cpp derives every size from the running CPU's caches):
//    - a wide B (more than 4 panels: X·W, S = Q·Kᵀ, 1024³): pack a kc×nc block of B's panels, which
//      sits in L2; take the rows of A MR at a time (2·MR with AVX-512: microkernel.hpp's TALL), kc
//      deep, a strip that sits in L1, and run each strip over every panel of the block. C is then
//      written tile after tile along its rows, where the prefetchers see MR streams and each tile's
//      first loads of C cost almost nothing. The other way round (one panel kept in L1 while every
//      strip of A passes it, as BLIS does) takes each C tile from MR rows far apart, new rows at every
//      call, and those first loads stall the tile (BM_matmul_square, BM_matmul_transposed).
//    - a narrow B (α·V, d_v = 64: 2 panels of 32 with AVX-512, 4 of 16 with AVX2): keep one panel in
//      L1 and run a block of A's rows (panel_mc of them, in L2) over it, the block read in place.
//      With so few panels there are few C tiles, and it is A, n×n, that streams; kept in L2 for the
//      panels' passes, the block of α is read from memory once, where copying α (a full read and
//      write of the n×n matrix) would cost more than it saves. AVX-512's tall tile runs α·V in the
//      wide order instead: each strip of α, read once, then feeds 2·MR rows' FMAs per row of V,
//      while a block of α whose rows lie n floats apart does not stay in L2 (BM_matmul).
//    A is read in place in both orders. A strip whose rows are 4 KiB apart (k = 1024) keeps them in
//    the same sets of L1, where the passing panel evicts them, and the next panel's call reads them
//    again from L2; copying each strip to a contiguous buffer first would avoid that, but the copy is
//    the first read of A from memory, and with AVX2 and AVX-512 it cost more than it saved
//    (BM_gemm_steps).
//
// What each step buys is BM_gemm_steps (1024³, one thread): docs/performance.md's ladder of the GEMM.
//
// The same code computes A·Bᵀ: only the packing differs. A panel of Bᵀ is read from NR rows of B,
// so S = Q·Kᵀ never builds Kᵀ; the transposition happens one small panel at a time while packing.
#include <algorithm>

#include "matrix/shape_checks.hpp"
#include "simd/bf16.hpp"
#include "simd/kernels.hpp"
#include "simd/microkernel.hpp"
#include "simd/packing.hpp"
#include "simd/scratch.hpp"
#include "simd/threads.hpp"

namespace attn::simd::ATTN_ISA {

namespace {

// The packing buffer of B's panels is allocated once per calling thread (the team shares the
// caller's) and reused by later calls: touching fresh memory for the first time costs more than
// packing itself (BM_core_fresh against BM_core).
float* packing_buffer(std::size_t floats) {
    thread_local ScratchBuffer buffer;
    if (buffer.size() < floats) grow_exactly(buffer, floats);
    return buffer.data();
}

// C = scale·(A·B) with B given in `layout`. Loop nest: column block jc → depth block pc (pack the
// block's panels) → then, wide, TALL-row strip → panel → microkernel, or, narrow, block of rows →
// panel → strip → microkernel. Threads split the packing, then the strips (wide) or the blocks
// (narrow, as many as a multiple of the threads); each C element is written by exactly one thread,
// and is one FMA chain over p in order whatever the block sizes or the thread count: the result does
// not depend on them.
void gemm(const Matrix& A, const Matrix& B, BLayout layout, float scale, Matrix& C, Threads threads,
          const Blocking& blocking) {
    const std::size_t m = A.rows(), k = A.cols(), n = layout == BLayout::k_by_n ? B.cols() : B.rows();
    C.resize_for_overwrite(m, n);
    if (C.empty()) return;
    if (k == 0) {
        std::fill(C.data(), C.data() + C.size(), 0.0f);  // empty sums
        return;
    }
    // Two loop orders (see 3. above). A B of at most 4 panels (α·V) keeps each panel in L1 while a
    // block of A's rows passes; a wider B keeps a strip of A in L1 while the panels pass. The depth
    // of a block is what the operand that stays in L1 leaves room for.
    const GemmBlocks shape = gemm_blocks(blocking, k, n, NR);
    const bool narrow = shape.narrow;
    const std::size_t KC = shape.kc, NC = shape.nc;
    float* const packed = packing_buffer(gemm_panel_floats<std::size_t>(shape, k, n, NR));
    const std::size_t ldc = C.cols();
    const auto strips = static_cast<std::ptrdiff_t>((m + TALL - 1) / TALL);
    [[maybe_unused]] const bool team = use_team(threads, 2.0 * double(m) * double(n) * double(k), std::size_t(strips));
    // Narrow: blocks of at most panel_mc rows, as many as a multiple of the threads, so that no
    // thread waits on a short last block.
    const std::size_t MC = balanced_rows(m, blocking.panel_mc, team ? std::size_t(max_threads()) : 1, 1);
    const auto blocks = static_cast<std::ptrdiff_t>((m + MC - 1) / MC);

#pragma omp parallel if (team)
    for (std::size_t jc = 0; jc < n; jc += NC) {
        const std::size_t nc = std::min(NC, n - jc);
        const std::ptrdiff_t panels = static_cast<std::ptrdiff_t>((nc + NR - 1) / NR);
        for (std::size_t pc = 0; pc < k; pc += KC) {
            const std::size_t kc = std::min(KC, k - pc);
            const bool first = pc == 0, last = pc + kc == k;
#pragma omp for schedule(static)
            for (std::ptrdiff_t q = 0; q < panels; ++q) {
                const std::size_t j0 = jc + static_cast<std::size_t>(q) * NR;
                pack_panel(B, layout, pc, kc, j0, std::min(NR, n - j0), packed + static_cast<std::size_t>(q) * kc * NR);
            }
            // (implicit barrier: all panels are packed before anyone reads them)
            // The tile of C at rows [i0, i0+height) and panel q, from A read in place.
            const auto tile = [&](std::size_t i0, std::size_t height, std::ptrdiff_t q) {
                const std::size_t j0 = jc + static_cast<std::size_t>(q) * NR;
                run_strip_microkernel(std::min(height, m - i0), kc, A.row(i0).data() + pc, k,
                                      packed + static_cast<std::size_t>(q) * kc * NR, NR, C.data() + i0 * ldc + j0, ldc,
                                      std::min(NR, n - j0), first, last, scale);
            };
            if (!narrow) {  // each strip of A runs over every panel
#pragma omp for schedule(static)
                for (std::ptrdiff_t strip = 0; strip < strips; ++strip)
                    for (std::ptrdiff_t q = 0; q < panels; ++q) tile(static_cast<std::size_t>(strip) * TALL, TALL, q);
            } else {  // each panel stays in L1 while a block of A's rows passes it
#pragma omp for schedule(static)
                for (std::ptrdiff_t block = 0; block < blocks; ++block) {
                    const std::size_t i0 = static_cast<std::size_t>(block) * MC, end = std::min(m, i0 + MC);
                    for (std::ptrdiff_t q = 0; q < panels; ++q)
                        for (std::size_t i = i0; i < end; i += MR) tile(i, MR, q);
                }
            }
            // (implicit barrier: nobody repacks while another thread still reads the panels)
        }
    }
}

}  // namespace

// [fast matmul] C = A·B: steps 2 (X·W) and 6 (α·V)
void matmul_into(const Matrix& A, const Matrix& B, Matrix& C, Threads threads, const Blocking& blocking) {
    check_matmul_shapes("matmul", A, B);
    check_blocking("matmul", blocking, NR);
    gemm(A, B, BLayout::k_by_n, 1.0f, C, threads, blocking);
}

// [fast scores] S' = scale·Q·Kᵀ: steps 3 and 4 in one pass; panels of Kᵀ are packed from rows of K
void matmul_transposed_into(const Matrix& A, const Matrix& B, float scale, Matrix& C, Threads threads,
                            const Blocking& blocking) {
    check_matmul_transposed_shapes("matmul_transposed", A, B);
    check_blocking("matmul_transposed", blocking, NR);
    gemm(A, B, BLayout::transposed, scale, C, threads, blocking);
}

// Step 2 alone, so that bench/ can measure what step 3 adds: the register tile run straight on B
// (its rows n floats apart), no packing, no blocks. B's width must be a multiple of NR.
void matmul_register_tile_into(const Matrix& A, const Matrix& B, Matrix& C) {
    check_matmul_shapes("matmul_register_tile", A, B);
    check_width_multiple("matmul_register_tile", B, NR, "NR");
    C.resize_for_overwrite(A.rows(), B.cols());
    for (std::size_t i = 0; i < A.rows(); i += TALL)
        for (std::size_t j = 0; j < B.cols(); j += NR)
            run_strip_microkernel(std::min(TALL, A.rows() - i), A.cols(), A.row(i).data(), A.cols(), B.data() + j,
                                  B.cols(), C.row(i).data() + j, C.cols(), NR, true, true, 1.0f);
}

// The bf16 mode's scores product alone: C = scale·Â·B̂ᵀ, Â and B̂ rounded to bfloat16 pairs
// (simd/bf16.hpp), on one thread, with the panels and the register tile of the fused kernel's
// tile_scores. So the tests can hold its arithmetic against a model of vdpbf16ps, element by element.
void matmul_transposed_bf16_into(const Matrix& A, const Matrix& B, float scale, Matrix& C) {
    check_matmul_transposed_shapes("matmul_transposed_bf16", A, B);
    C.resize_for_overwrite(A.rows(), B.rows());
    const std::size_t depth = depth_of<true>(A.cols());  // ≤ A.cols() + 1: the sizes below fit as A does
    ScratchBuffer a_pairs(A.rows() * depth + key_pairs_rows(A.cols())), panel(depth * NR);  // then B's rows
    [[maybe_unused]] const FlushSubnormals modes;
    for (std::size_t i = 0; i < A.rows(); ++i) round_to_pairs(A.row(i).data(), A.cols(), a_pairs.data() + i * depth);
    for (std::size_t j = 0; j < B.rows(); j += NR) {
        const std::size_t width = std::min(NR, B.rows() - j);
        pack_key_pairs(B, j, width, panel.data(), a_pairs.data() + A.rows() * depth);
        for (std::size_t i = 0; i < A.rows(); i += TALL)
            run_strip_microkernel<Bf16Step>(std::min(TALL, A.rows() - i), depth, a_pairs.data() + i * depth, depth,
                                            panel.data(), NR, C.row(i).data() + j, C.cols(), width, true, true, scale);
    }
}

}  // namespace attn::simd::ATTN_ISA
