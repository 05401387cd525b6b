// bench/gemm_steps.hpp — the stepping stones between the textbook matmul and simd::matmul, kept so
// that bench/ can measure what each step of the story in simd/gemm.cpp buys. Not used by the library.
#pragma once

#include "matrix/matrix.hpp"

namespace bench {

// Step 1 is attn::matmul (i-j-k). Step 2: the loops reordered to i-k-j, compiled without
// auto-vectorisation (gemm_steps_scalar.cpp) so the gain is the access order alone.
void matmul_ikj_scalar(const attn::Matrix& A, const attn::Matrix& B, attn::Matrix& C);
// Step 3: the same i-k-j order, each inner loop one simd::axpy over a row of B.
void matmul_ikj_simd(const attn::Matrix& A, const attn::Matrix& B, attn::Matrix& C);
// Step 4 is simd::matmul_register_tile_into: the register tile (simd/microkernel.hpp) run straight
// on B, no packing or blocking (in simd/, since it is compiled per instruction set like the tile).
// Step 5 is simd::matmul: the tile with packed panels and cache blocks.

}  // namespace bench
