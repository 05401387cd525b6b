// matrix/shape_checks.hpp — the shape checks every kernel makes before it works, naive and fast
// alike, so that all backends word their errors the same way: std::invalid_argument naming the op
// and both shapes, e.g. "matmul: (3×4)·(3×3): inner dimensions 4 and 3 differ".
#pragma once

#include "matrix/matrix.hpp"

namespace attn {

void check_matmul_shapes(const char* op, const Matrix& A, const Matrix& B);             // A·B
void check_matmul_transposed_shapes(const char* op, const Matrix& A, const Matrix& B);  // A·Bᵀ
void check_square(const char* op, const Matrix& S);                                     // n×n
// The same number of rows (as K and V must have: one value per key), each matrix named.
void check_same_rows(const char* op, const char* a_name, const Matrix& A, const char* b_name, const Matrix& B);
// The same shape (as a matrix and its gradient must have), each matrix named.
void check_same_shape(const char* op, const char* a_name, const Matrix& A, const char* b_name, const Matrix& B);
// A width that is a multiple of `unit`, called `unit_name` in the message.
void check_width_multiple(const char* op, const Matrix& M, std::size_t unit, const char* unit_name);

}  // namespace attn
