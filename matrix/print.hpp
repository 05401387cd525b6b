// matrix/print.hpp — turning a Matrix into aligned text for a terminal.
#pragma once

#include <cstdint>
#include <ostream>
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
// written to `out` as it is formed: two passes over the values (the common width, then the text),
// so printing needs no memory that grows with the matrix.
void print_matrix(std::ostream& out, const Matrix& m, const PrintOptions& options = {});
// The same text as a string, for matrices small enough to hold it (the walk's, the exercises').
std::string format_matrix(const Matrix& m, const PrintOptions& options = {});

// Columns a UTF-8 string occupies in a terminal: CJK ideographs and full-width forms count 2,
// combining marks 0, ANSI colour escapes 0, everything else 1. (Bytes would count 猫 as 3.)
std::size_t display_width(std::string_view utf8);

// `text` padded with spaces to `width` display columns, on the right (left-aligned) or on the left.
std::string pad_right(std::string_view text, std::size_t width);
std::string pad_left(std::string_view text, std::size_t width);

// A float with fixed precision; −∞ printed as "-inf" and +∞ as "inf", −0 printed as 0.
std::string format_number(float value, int precision);

// The shortest decimal that reads back to the same float: 0.05f is "0.05" (not 0.0500000007), 4e-4f
// is "0.0004", 1e-7f is "1e-07"; at most 9 significant digits, which every float32 needs at most.
std::string shortest_decimal(float value);

// A float for a table read by eye (the pages' worked example), in digits the float holds: 0 and
// 0.001 ≤ |x| < 100000 with `decimals` decimals, or with as many as the float's spacing there
// resolves when that is fewer (12345.678f is "12345.678": its spacing is 0.00098, so a fourth
// decimal would not be the float's); any other magnitude as its shortest decimal ("3e+19",
// "1e-05"). ±∞ and NaN as format_number writes them; −0, and what rounds to 0, without a sign.
std::string table_number(float value, int decimals);

}  // namespace attn
