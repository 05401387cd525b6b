// matrix/matrix.cpp — the row-major Matrix: construction and resizing with checked sizes, shapes as text, equality.
#include "matrix/matrix.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "matrix/size.hpp"

namespace attn {

namespace {

// rows·cols, refused (std::length_error naming the shape) when the floats could never be addressed.
std::size_t element_count(std::size_t rows, std::size_t cols) {
    const std::uint64_t bytes = matrix_bytes(rows, cols);
    if (bytes > static_cast<std::uint64_t>(PTRDIFF_MAX))
        throw std::length_error("Matrix: shape " + shape_string(rows, cols) + " needs " + describe_bytes(bytes) +
                                ", more than this machine can address");
    return static_cast<std::size_t>(bytes / sizeof(float));
}

}  // namespace

Matrix::Matrix(std::size_t rows, std::size_t cols, float fill)
    : rows_(rows), cols_(cols), data_(element_count(rows, cols), fill), elements_(data_.data()) {}

Matrix::Matrix(std::initializer_list<std::initializer_list<float>> rows) {
    rows_ = rows.size();
    cols_ = rows_ == 0 ? 0 : rows.begin()->size();
    data_.reserve(rows_ * cols_);
    for (const auto& r : rows) {
        if (r.size() != cols_) {
            throw std::invalid_argument("Matrix: row " + std::to_string(data_.size() / cols_ + 1) + " has " +
                                        std::to_string(r.size()) + " values, row 1 has " + std::to_string(cols_));
        }
        data_.insert(data_.end(), r.begin(), r.end());
    }
    elements_ = data_.data();
}

const Matrix Matrix::borrow(const float* data, std::size_t rows, std::size_t cols) {
    Matrix m;
    m.rows_ = rows;
    m.cols_ = cols;
    element_count(rows, cols);               // the same refusal of an impossible shape as an owned matrix
    m.elements_ = const_cast<float*>(data);  // never written: the matrix is handed out const
    return m;
}

Matrix Matrix::window(float* data, std::size_t rows, std::size_t cols) {
    Matrix m;
    m.rows_ = rows;
    m.cols_ = cols;
    element_count(rows, cols);
    m.elements_ = data;
    m.window_ = true;
    return m;
}

// Copies own their values; moves take the storage (or the borrowed memory) along.
Matrix::Matrix(const Matrix& other)
    : rows_(other.rows_),
      cols_(other.cols_),
      data_(other.data(), other.data() + other.size()),
      elements_(data_.data()) {}

Matrix::Matrix(Matrix&& other) noexcept { *this = std::move(other); }

Matrix& Matrix::operator=(const Matrix& other) {
    if (this != &other) *this = Matrix(other);
    return *this;
}

Matrix& Matrix::operator=(Matrix&& other) noexcept {
    if (this == &other) return *this;
    rows_ = other.rows_;
    cols_ = other.cols_;
    data_ = std::move(other.data_);
    elements_ = other.elements_;
    window_ = other.window_;
    other.rows_ = other.cols_ = 0;
    other.window_ = false;
    other.data_.clear();
    other.elements_ = other.data_.data();
    return *this;
}

void Matrix::resize_for_overwrite(std::size_t rows, std::size_t cols) {
    const std::size_t count = element_count(rows, cols);    // checked before the shape changes
    if (window_ && rows == rows_ && cols == cols_) return;  // written where it looks
    window_ = false;
    if (data_.size() < count) data_.resize(count);
    elements_ = data_.data();  // a borrowed matrix gets storage of its own
    rows_ = rows;
    cols_ = cols;
}

std::string shape_string(std::size_t rows, std::size_t cols) {
    return std::to_string(rows) + "×" + std::to_string(cols);
}

std::string shape_string(const Matrix& m) { return shape_string(m.rows(), m.cols()); }

bool operator==(const Matrix& a, const Matrix& b) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
    return a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string shape_string(std::span<const std::size_t> shape) {
    std::string text;
    for (const std::size_t d : shape) text += (text.empty() ? "" : "×") + std::to_string(d);
    return shape.empty() ? "scalar" : text;
}

}  // namespace attn
