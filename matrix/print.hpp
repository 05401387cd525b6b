// matrix/print.hpp — turning a Matrix into aligned text for a terminal.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "matrix/matrix.hpp"

namespace attn {

struct PrintOptions {
    int precision = 4;                    // digits after the decimal point
    std::vector<std::string> row_labels;  // empty, or one per row (may be CJK: widths are counted)
    std::vector<std::string> col_labels;  // empty, or one per column
    std::string indent = "  ";
};

// One line per row, columns right-aligned to a common width, e.g.
//   猫    [  1.0000   0.5000  -0.2000 ]
std::string format_matrix(const Matrix& m, const PrintOptions& options = {});

// About how many bytes format_matrix needs for a rows × cols matrix at `precision` digits: each value
// becomes a std::string cell (32 bytes) and its characters in the text (a sign, digits, the point,
// padding), 48 + precision bytes in all. For a caller that budgets memory before printing.
std::uint64_t formatted_bytes(std::size_t rows, std::size_t cols, int precision);

// Columns a UTF-8 string occupies in a terminal: CJK ideographs and full-width forms count 2,
// combining marks 0, ANSI colour escapes 0, everything else 1. (Bytes would count 猫 as 3.)
std::size_t display_width(std::string_view utf8);

// `text` padded with spaces to `width` display columns, on the right (left-aligned) or on the left.
std::string pad_right(std::string_view text, std::size_t width);
std::string pad_left(std::string_view text, std::size_t width);

// A float with fixed precision; −∞ printed as "-inf" and +∞ as "inf", −0 printed as 0.
std::string format_number(float value, int precision);

}  // namespace attn
