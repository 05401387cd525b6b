// tests/walk_output.hpp — read the matrices back out of `attn walk`'s text and compare them with the library's.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "matrix/matrix.hpp"

// Whether a printed line is a row of a matrix: numbers between brackets ("[ 0.4838 … ]", "-inf" and
// "nan" among them), not a line naming code markers ("code: attention/attention.cpp [step 3]").
inline bool is_matrix_row(const std::string& line) {
    const auto open = line.find('['), close = line.find(']');
    if (open == std::string::npos || close == std::string::npos) return false;
    const auto first = line.find_first_not_of(' ', open + 1);
    return first < close && std::string("-0123456789in").find(line[first]) != std::string::npos;
}

// The numbers of the bracketed matrix printed after the first line containing `heading`.
inline std::vector<std::vector<float>> matrix_after(const std::string& text, const std::string& heading) {
    std::istringstream in(text.substr(text.find(heading)));
    std::string line;
    std::getline(in, line);
    std::vector<std::vector<float>> rows;
    bool started = false;
    while (std::getline(in, line)) {
        const auto open = line.find('['), close = line.find(']');
        if (!is_matrix_row(line)) {
            if (started) break;
            continue;
        }
        started = true;
        std::istringstream cells(line.substr(open + 1, close - open - 1));
        std::vector<float> row;
        for (std::string cell; cells >> cell;) row.push_back(cell == "-inf" ? -INFINITY : std::stof(cell));
        rows.push_back(row);
    }
    return rows;
}

inline void check_matches(const std::vector<std::vector<float>>& printed, const attn::Matrix& want, double tolerance) {
    REQUIRE(printed.size() == want.rows());
    for (std::size_t i = 0; i < want.rows(); ++i) {
        REQUIRE(printed[i].size() == want.cols());
        for (std::size_t j = 0; j < want.cols(); ++j) CHECK(printed[i][j] == Approx(want(i, j)).margin(tolerance));
    }
}
