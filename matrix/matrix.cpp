#include "matrix/matrix.hpp"

#include <cstring>
#include <stdexcept>

namespace attn {

Matrix::Matrix(std::size_t rows, std::size_t cols, float fill)
    : rows_(rows), cols_(cols), data_(rows * cols, fill) {}

Matrix::Matrix(std::initializer_list<std::initializer_list<float>> rows) {
    rows_ = rows.size();
    cols_ = rows_ == 0 ? 0 : rows.begin()->size();
    data_.reserve(rows_ * cols_);
    for (const auto& r : rows) {
        if (r.size() != cols_) {
            throw std::invalid_argument("Matrix: row " + std::to_string(data_.size() / cols_ + 1) +
                                        " has " + std::to_string(r.size()) + " values, row 1 has " +
                                        std::to_string(cols_));
        }
        data_.insert(data_.end(), r.begin(), r.end());
    }
}

void Matrix::reshape(std::size_t rows, std::size_t cols) {
    rows_ = rows;
    cols_ = cols;
    if (data_.size() < rows * cols) data_.resize(rows * cols);
}

std::string shape_string(std::size_t rows, std::size_t cols) {
    return std::to_string(rows) + "×" + std::to_string(cols);
}

std::string shape_string(const Matrix& m) { return shape_string(m.rows(), m.cols()); }

bool operator==(const Matrix& a, const Matrix& b) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
    return a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace attn
