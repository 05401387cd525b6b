// matrix/norms.hpp — the lengths of rows and columns, which the chain's guards take of every input
// before any work (attention/guards.cpp bounds each step's float range with them). Unlike
// matrix/ops.hpp, written for speed: they run on every call (matrix/norms.cpp says how).
#pragma once

#include <span>

#include "matrix/matrix.hpp"

namespace attn {

// Sizes of entries, in double so that they cannot overflow themselves: the largest Euclidean
// norm of a row, and of a column. NaN or ∞ when A holds one; 0 for an empty A.
double max_row_norm(const Matrix& A);
// ‖x‖ = √Σ x_k², summed in double: the length of one row (max_row_norm takes it of every row).
double norm(std::span<const float> x);
double max_col_norm(const Matrix& A);
// The larger of two norms, NaN winning every comparison, so that it is reported rather than skipped.
double larger_norm(double a, double b);

}  // namespace attn
