// matrix/shape_checks.cpp — the shape checks every kernel makes, worded the same way for all of them.
#include "matrix/shape_checks.hpp"

#include <stdexcept>
#include <string>

namespace attn {

void check_matmul_shapes(const char* op, const Matrix& A, const Matrix& B) {
    if (A.cols() != B.rows()) {
        throw std::invalid_argument(std::string(op) + ": (" + shape_string(A) + ")·(" + shape_string(B) +
                                    "): inner dimensions " + std::to_string(A.cols()) + " and " +
                                    std::to_string(B.rows()) + " differ");
    }
}

void check_matmul_transposed_shapes(const char* op, const Matrix& A, const Matrix& B) {
    if (A.cols() != B.cols()) {
        throw std::invalid_argument(std::string(op) + ": (" + shape_string(A) + ")·(" + shape_string(B) +
                                    ")ᵀ: rows of both must have the same length, got " + std::to_string(A.cols()) +
                                    " and " + std::to_string(B.cols()));
    }
}

void check_square(const char* op, const Matrix& S) {
    if (S.rows() != S.cols()) {
        throw std::invalid_argument(std::string(op) + ": (" + shape_string(S) + "): needs a square n×n score matrix");
    }
}

void check_same_rows(const char* op, const char* a_name, const Matrix& A, const char* b_name, const Matrix& B) {
    if (A.rows() != B.rows()) {
        throw std::invalid_argument(std::string(op) + ": " + a_name + " (" + shape_string(A) + ") and " + b_name +
                                    " (" + shape_string(B) + ") must have the same number of rows");
    }
}

void check_same_shape(const char* op, const char* a_name, const Matrix& A, const char* b_name, const Matrix& B) {
    if (A.rows() != B.rows() || A.cols() != B.cols()) {
        throw std::invalid_argument(std::string(op) + ": " + a_name + " (" + shape_string(A) + ") and " + b_name +
                                    " (" + shape_string(B) + ") must have the same shape");
    }
}

void check_width_multiple(const char* op, const Matrix& M, std::size_t unit, const char* unit_name) {
    if (unit == 0 || M.cols() % unit != 0) {
        throw std::invalid_argument(std::string(op) + ": (" + shape_string(M) + "): the width must be a multiple of " +
                                    unit_name + " = " + std::to_string(unit));
    }
}

}  // namespace attn
