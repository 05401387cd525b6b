// matrix/shape_checks.hpp — the shape checks every kernel makes before it works, naive and fast
// alike, so that all backends word their errors the same way: std::invalid_argument naming the op
// and both shapes, e.g. "matmul: (3×4)·(3×3): inner dimensions 4 and 3 differ".
#pragma once

#include "matrix/matrix.hpp"

namespace attn {

void check_matmul_shapes(const char* op, const Matrix& A, const Matrix& B);             // A·B
void check_matmul_transposed_shapes(const char* op, const Matrix& A, const Matrix& B);  // A·Bᵀ
void check_square(const char* op, const Matrix& S);                                     // n×n

}  // namespace attn
