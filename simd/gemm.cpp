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
// 3. Cache blocks and packing. Copy a KC×NR strip of B (a "panel") into contiguous memory once and
//    reuse it against every MR-row strip of A: the panel (16 KiB with AVX2, 32 KiB with AVX-512)
//    stays in L1, the MC×KC block of A being swept (72 KiB) in L2, all KC×NC panels in L3.
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
#include "matrix/size.hpp"
#include "simd/microkernel.hpp"
#include "simd/packing.hpp"
#include "simd/simd.hpp"
#include "simd/threads.hpp"

namespace attn::simd {

namespace {

constexpr std::size_t KC = 256;   // depth of a packed panel: KC×NR floats, 16 or 32 KiB, fits L1
constexpr std::size_t MC = 72;    // rows of A per block (a multiple of MR): MC×KC floats = 72 KiB, fits L2
constexpr std::size_t NC = 2048;  // columns packed at once: KC×NC floats = 2 MiB, fits L3

// The packing buffer is allocated once per calling thread and reused by later calls: fresh memory
// costs ~1 ms per MiB to touch for the first time on this machine, more than packing itself.
float* packing_buffer(std::size_t floats) {
    thread_local std::vector<float, AlignedAllocator<float, matrix_alignment>> buffer;
    if (buffer.size() < floats) buffer.resize(floats);
    return buffer.data();
}

// C = scale·(A·B) with B given in `layout`. Loop nest: column block jc → depth block pc (pack the
// panels) → row block ic → panel → MR-row strip → microkernel. Threads split the packing, then the
// row blocks; each C element is written by exactly one thread.
void gemm(const Matrix& A, const Matrix& B, BLayout layout, float scale, Matrix& C, Threads threads) {
    const std::size_t m = A.rows(), k = A.cols(), n = layout == BLayout::k_by_n ? B.cols() : B.rows();
    C.resize_for_overwrite(m, n);
    if (C.empty()) return;
    if (k == 0) {
        std::fill(C.data(), C.data() + C.size(), 0.0f);  // empty sums
        return;
    }
    float* const packed = packing_buffer(std::min(KC, k) * round_up(std::min(NC, n), NR));
    const std::size_t lda = A.cols(), ldc = C.cols();

    [[maybe_unused]] const bool team = use_team(threads, 2.0 * double(m) * double(n) * double(k), (m + MC - 1) / MC);
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
                for (std::ptrdiff_t q = 0; q < panels; ++q) {
                    const std::size_t j0 = jc + static_cast<std::size_t>(q) * NR;
                    const float* panel = packed + static_cast<std::size_t>(q) * kc * NR;
                    for (std::size_t ir = 0; ir < mc; ir += MR) {
                        run_microkernel(std::min(MR, mc - ir), kc, A.data() + (ic + ir) * lda + pc, lda, panel, NR,
                                        C.data() + (ic + ir) * ldc + j0, ldc, std::min(NR, n - j0), first, last, scale);
                    }
                }
            }
            // (implicit barrier: nobody repacks while another thread still reads the panels)
        }
    }
}

}  // namespace

std::uint64_t gemm_scratch_bytes(std::size_t k, std::size_t n) {
    return matrix_bytes(std::min(KC, k), round_up(std::min(NC, n), NR));
}

// [fast matmul] C = A·B: steps 2 (X·W) and 6 (α·V)
void matmul_into(const Matrix& A, const Matrix& B, Matrix& C, Threads threads) {
    check_matmul_shapes("matmul", A, B);
    gemm(A, B, BLayout::k_by_n, 1.0f, C, threads);
}

// [fast scores] S' = c·Q·Kᵀ: steps 3 and 4 in one pass; panels of Kᵀ are packed from rows of K
void matmul_transposed_into(const Matrix& A, const Matrix& B, float scale, Matrix& C, Threads threads) {
    check_matmul_transposed_shapes("matmul_transposed", A, B);
    gemm(A, B, BLayout::transposed, scale, C, threads);
}

}  // namespace attn::simd
