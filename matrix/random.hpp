// matrix/random.hpp — matrices of random numbers, for the experiments, the tests and the benchmarks.
#pragma once

#include <random>

#include "matrix/matrix.hpp"

namespace attn {

// rows×cols values drawn one after another from `dist` with `rng`, row by row.
template <class Rng, class Distribution>
Matrix random_matrix_from(std::size_t rows, std::size_t cols, Rng& rng, Distribution dist) {
    Matrix m(rows, cols);
    for (std::size_t k = 0; k < m.size(); ++k) m.data()[k] = static_cast<float>(dist(rng));
    return m;
}

// Uniform on [lo, hi): the usual test and benchmark input.
inline Matrix random_matrix(std::size_t rows, std::size_t cols, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
    return random_matrix_from(rows, cols, rng, std::uniform_real_distribution<float>(lo, hi));
}

}  // namespace attn
