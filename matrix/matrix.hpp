// matrix/matrix.hpp — the one data type of the project: a dense, row-major float32 matrix.
//
// Element (i, j) lives at data()[i * cols() + j]; a row is cols() consecutive floats, so a row of Q
// or K is one contiguous vector, which is exactly what a dot product q_i·k_j wants to read.
// The storage starts on a 64-byte boundary (one cache line), so the first row never straddles a
// line at its start. The kernels in simd/ use unaligned loads throughout — a row other than the
// first starts wherever cols() puts it — which cost no more than aligned ones when the address
// happens to be aligned; the boundary is a cheap courtesy, not something they rely on.
// This file knows nothing about attention.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "matrix/storage.hpp"

namespace attn {

// −∞: what the causal mask writes above the diagonal (e^−∞ = 0), and the maximum of no numbers.
inline constexpr float neg_inf = -std::numeric_limits<float>::infinity();

class Matrix {
public:
    Matrix() = default;
    Matrix(std::size_t rows, std::size_t cols, float fill = 0.0f);
    // Typed as in the lesson: Matrix X{{1.0, 0.5, -0.2, 0.8}, {0.3, -0.6, 1.2, 0.1}};
    // every inner list must have the same length (else std::invalid_argument).
    Matrix(std::initializer_list<std::initializer_list<float>> rows);

    // A matrix over rows×cols floats that someone else owns (row-major, alive while it is read):
    // nothing is copied, and the result is const, so nothing can write through it. This is how the
    // Python module reads a NumPy array in place. A copy of it owns a copy of the values.
    static const Matrix borrow(const float* data, std::size_t rows, std::size_t cols);
    // A rows×cols window onto memory someone else owns that a kernel may write: one slice of a larger
    // buffer, filled in place. resize_for_overwrite to this same shape keeps writing there; to another
    // shape, or once copied or assigned a fresh matrix, it owns storage of its own like any matrix.
    static Matrix window(float* data, std::size_t rows, std::size_t cols);

    Matrix(const Matrix& other);
    Matrix(Matrix&& other) noexcept;
    Matrix& operator=(const Matrix& other);
    Matrix& operator=(Matrix&& other) noexcept;
    ~Matrix() = default;

    std::size_t rows() const { return rows_; }
    std::size_t cols() const { return cols_; }
    std::size_t size() const { return rows_ * cols_; }
    bool empty() const { return size() == 0; }

    float& operator()(std::size_t i, std::size_t j) { return elements_[i * cols_ + j]; }
    float operator()(std::size_t i, std::size_t j) const { return elements_[i * cols_ + j]; }

    std::span<float> row(std::size_t i) { return {elements_ + i * cols_, cols_}; }
    std::span<const float> row(std::size_t i) const { return {elements_ + i * cols_, cols_}; }

    float* data() { return elements_; }
    const float* data() const { return elements_; }

    // Give the matrix this shape, to be overwritten: unlike NumPy's reshape it does NOT keep the
    // values in place (they are unspecified afterwards), and every kernel that calls it writes all
    // elements. Keeps the allocation when it is large enough, so a caller that reuses a Matrix as an
    // output buffer pays for fresh memory only once.
    void resize_for_overwrite(std::size_t rows, std::size_t cols);

private:
    std::size_t rows_ = 0;
    std::size_t cols_ = 0;
    std::vector<float, MatrixAllocator<float>> data_;
    float* elements_ = nullptr;  // data_.data(), or the memory a borrowed matrix reads
    bool window_ = false;        // elements_ is someone else's memory, to be written (Matrix::window)
};

// "3×4": how every error message and printout spells a shape; "2×8×16×64" for any rank ("scalar" for none).
std::string shape_string(std::size_t rows, std::size_t cols);
std::string shape_string(const Matrix& m);
std::string shape_string(std::span<const std::size_t> shape);

bool operator==(const Matrix& a, const Matrix& b);  // same shape and bit-identical elements

}  // namespace attn
