// tests/check_close.hpp — the one closeness check of the tests: |got − want| ≤ abs + rel·|want| for
// every element (equal values pass, infinities included), reporting the first mismatch only.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "matrix/matrix.hpp"

namespace check_detail {
inline std::size_t rows(const attn::Matrix& m) { return m.rows(); }
inline std::size_t cols(const attn::Matrix& m, std::size_t) { return m.cols(); }
inline double at(const attn::Matrix& m, std::size_t i, std::size_t j) { return m(i, j); }
// A double-precision reference (tests/reference.hpp): rows of doubles.
inline std::size_t rows(const std::vector<std::vector<double>>& m) { return m.size(); }
inline std::size_t cols(const std::vector<std::vector<double>>& m, std::size_t i) { return m[i].size(); }
inline double at(const std::vector<std::vector<double>>& m, std::size_t i, std::size_t j) { return m[i][j]; }
}  // namespace check_detail

template <class Want>  // attn::Matrix or reference::Mat
void check_close(const attn::Matrix& got, const Want& want, double abs = 1e-5, double rel = 1e-5) {
    using namespace check_detail;
    REQUIRE(got.rows() == rows(want));
    for (std::size_t i = 0; i < got.rows(); ++i) {
        REQUIRE(got.cols() == cols(want, i));
        for (std::size_t j = 0; j < got.cols(); ++j) {
            const double g = got(i, j), w = at(want, i, j);
            if (!(std::fabs(g - w) <= abs + rel * std::fabs(w)) && !(g == w)) {
                FAIL_CHECK("element (" << i << ", " << j << "): got " << g << ", want " << w);
                return;
            }
        }
    }
    SUCCEED();
}
