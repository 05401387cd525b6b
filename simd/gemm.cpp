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
// 3. Cache blocks and packing. Copy a kc×NR strip of B (a "panel") into contiguous memory once and
//    reuse it against every MR-row strip of A: the panel stays in L1, the mc×kc block of A being
//    swept in L2, all kc×nc panels in L3. The three sizes come from the running CPU's caches
//    (simd/blocking.cpp; on a Zen 3 core kc = 320, mc = 306: a 20 KiB panel, a 383 KiB block).
//    The A block is copied too, into one contiguous mc×kc block, when more than 4 panels sweep it:
//    left in place, its rows are a whole row of A apart (4 KiB for k = 1024), so they all fall into
//    the same few sets of L2 and evict each other long before L2 is full. Measured (BM_tune_gemm, 1024³, one thread, kc = 288,
//    Intel Xeon family 6 model 207, L2 2 MiB 16-way): with A in place 82 GFLOP/s at mc = 1026
//    against 104–111 at mc = 36–72; packed, see docs/performance.md.
//
// What each step bought (BM_gemm_steps, 1024³, one thread, AVX-512 machine of docs/performance.md,
// whose FMA peak measured 212 GFLOP/s):
//     i-j-k 0.43 GFLOP/s → i-k-j scalar 6.1 (14×) → i-k-j xsimd 40 (6.6×) → register tile 126 (3.1×)
//     → packed panels and cache blocks 184 (1.5×, 86% of peak).
//
// The same code computes A·Bᵀ: only the packing differs. A panel of Bᵀ is read from NR rows of B,
// so S = Q·Kᵀ never builds Kᵀ; the transposition happens one small panel at a time while packing.
#include <algorithm>
#include <cstring>
#include <vector>

#include "matrix/shape_checks.hpp"
#include "simd/kernels.hpp"
#include "simd/microkernel.hpp"
#include "simd/packing.hpp"
#include "simd/threads.hpp"

namespace attn::simd::ATTN_ISA {

namespace {

// The packing buffer is allocated once per calling thread and reused by later calls: fresh memory
// costs ~1 ms per MiB to touch for the first time on this machine, more than packing itself.
// Two of them per thread: panels of B (shared by the team: the calling thread's) and the block of
// A (each thread its own).
enum class Pack { B, A };
float* packing_buffer(Pack which, std::size_t floats) {
    thread_local ScratchBuffer buffers[2];
    auto& buffer = buffers[which == Pack::A];
    if (buffer.size() < floats) buffer.resize(floats);
    return buffer.data();
}

// Rows [ic, ic+mc) × columns [pc, pc+kc) of A, copied to one contiguous block (row stride kc).
const float* pack_block(const Matrix& A, std::size_t ic, std::size_t mc, std::size_t pc, std::size_t kc) {
    float* block = packing_buffer(Pack::A, mc * kc);
    for (std::size_t i = 0; i < mc; ++i) std::memcpy(block + i * kc, A.row(ic + i).data() + pc, kc * sizeof(float));
    return block;
}

// C = scale·(A·B) with B given in `layout`. Loop nest: column block jc → depth block pc (pack the
// panels) → row block ic → panel → MR-row strip → microkernel. Threads split the packing, then the
// row blocks; each C element is written by exactly one thread. Row blocks are at most mc rows and
// as many as a multiple of the threads, so that no thread waits on a short last block; the block
// height does not change any result (every element is one FMA chain over p).
void gemm(const Matrix& A, const Matrix& B, BLayout layout, float scale, Matrix& C, Threads threads,
          const Blocking& blocking) {
    const std::size_t m = A.rows(), k = A.cols(), n = layout == BLayout::k_by_n ? B.cols() : B.rows();
    C.resize_for_overwrite(m, n);
    if (C.empty()) return;
    if (k == 0) {
        std::fill(C.data(), C.data() + C.size(), 0.0f);  // empty sums
        return;
    }
    // Depth blocks of equal size, at most kc: k = 2048 with kc = 288 makes 8 blocks of 256 rather
    // than 7 of 288 and a last one of 32, which would pay a full pass over C for 1/9 of the work.
    const std::size_t depth_blocks = (k + blocking.kc - 1) / blocking.kc;
    const std::size_t KC = std::min(round_up((k + depth_blocks - 1) / depth_blocks, 8), blocking.kc), NC = blocking.nc;
    float* const packed = packing_buffer(Pack::B, std::min(KC, k) * round_up(std::min(NC, n), NR));
    const std::size_t ldc = C.cols();

    [[maybe_unused]] const bool team = use_team(threads, 2.0 * double(m) * double(n) * double(k), (m + MR - 1) / MR);
    const std::size_t MC = balanced_rows(m, blocking.mc, team ? std::size_t(max_threads()) : 1, 1);
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
#pragma omp for schedule(static)
            for (std::ptrdiff_t block = 0; block < static_cast<std::ptrdiff_t>((m + MC - 1) / MC); ++block) {
                const std::size_t ic = static_cast<std::size_t>(block) * MC, mc = std::min(MC, m - ic);
                // Packing pays when the block is swept by many panels; α·V (d_v = 64: 2 panels of
                // 32 with AVX-512, 4 of 16 with AVX2) reads each element of α at most 4 times, and
                // copying α cost more than it saved: read in place, α·V ran 1.07–1.21× faster
                // (n = 1024/2048, d = 64, 2 threads, AMD EPYC AVX-512; AVX2 the same or better).
                const bool pack_a = panels > 4;
                const float* a_block = pack_a ? pack_block(A, ic, mc, pc, kc) : A.row(ic).data() + pc;
                const std::size_t lda = pack_a ? kc : k;
                for (std::ptrdiff_t q = 0; q < panels; ++q) {
                    const std::size_t j0 = jc + static_cast<std::size_t>(q) * NR;
                    const float* panel = packed + static_cast<std::size_t>(q) * kc * NR;
                    for (std::size_t ir = 0; ir < mc; ir += MR) {
                        run_microkernel(std::min(MR, mc - ir), kc, a_block + ir * lda, lda, panel, NR,
                                        C.data() + (ic + ir) * ldc + j0, ldc, std::min(NR, n - j0), first, last, scale);
                    }
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
    for (std::size_t i = 0; i < A.rows(); i += MR)
        for (std::size_t j = 0; j < B.cols(); j += NR)
            run_microkernel(std::min(MR, A.rows() - i), A.cols(), A.row(i).data(), A.cols(), B.data() + j, B.cols(),
                            C.row(i).data() + j, C.cols(), NR, true, true, 1.0f);
}

}  // namespace attn::simd::ATTN_ISA
