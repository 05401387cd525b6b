// tests/random.hpp — seeded random matrices for property tests.
#pragma once

#include <random>

#include "matrix/matrix.hpp"

inline attn::Matrix random_matrix(std::size_t rows, std::size_t cols, std::mt19937& rng, float lo = -1.0f,
                                  float hi = 1.0f) {
    std::uniform_real_distribution<float> dist(lo, hi);
    attn::Matrix m(rows, cols);
    for (std::size_t k = 0; k < m.size(); ++k) m.data()[k] = dist(rng);
    return m;
}
