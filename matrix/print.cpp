// matrix/print.cpp — matrices as aligned text, with labels whose width counts wide Chinese characters.
#include "matrix/print.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace attn {

namespace {

// Decode one UTF-8 code point starting at s[i]; advances i. Malformed bytes count as one column each.
char32_t next_code_point(std::string_view s, std::size_t& i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char b0 = byte(i);
    std::size_t len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) {
        ++i;
        return 0xFFFD;
    }
    char32_t cp = len == 1 ? b0 : static_cast<char32_t>(b0 & (0x7F >> len));
    for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (byte(i + k) & 0x3F);
    i += len;
    return cp;
}

bool is_wide(char32_t c) {
    return (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0x303E) || (c >= 0x3041 && c <= 0x33FF) ||
           (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xA000 && c <= 0xA4CF) ||
           (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) ||
           (c >= 0xFF00 && c <= 0xFF60) || (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x20000 && c <= 0x3FFFD);
}

bool is_zero_width(char32_t c) { return (c >= 0x0300 && c <= 0x036F) || c == 0x200B || (c >= 0xFE00 && c <= 0xFE0F); }

}  // namespace

std::size_t display_width(std::string_view s) {
    std::size_t width = 0;
    for (std::size_t i = 0; i < s.size();) {
        if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {  // skip "ESC [ ... letter"
            i += 2;
            while (i < s.size() && !std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
            ++i;
            continue;
        }
        const char32_t c = next_code_point(s, i);
        width += is_zero_width(c) ? 0 : is_wide(c) ? 2 : 1;
    }
    return width;
}

std::string pad_right(std::string_view text, std::size_t width) {
    const std::size_t w = display_width(text);
    return std::string(text) + std::string(w < width ? width - w : 0, ' ');
}

std::string pad_left(std::string_view text, std::size_t width) {
    const std::size_t w = display_width(text);
    return std::string(w < width ? width - w : 0, ' ') + std::string(text);
}

std::string format_number(float value, int precision) {
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    if (std::isnan(value)) return "nan";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", precision, static_cast<double>(value));
    std::string s = buf;
    // "-0.0000" reads as a sign that means something; it does not here.
    if (s.front() == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
    return s;
}

std::string shortest_decimal(float value) {
    char buf[32];
    for (int digits = 1; digits <= 9; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(value));
        if (std::strtof(buf, nullptr) == value) break;
    }
    return buf;
}

std::string table_number(float value, int decimals) {
    const float size = std::fabs(value);
    if (!std::isfinite(value) || value == 0.0f) return format_number(value, decimals);
    if (size < 1e-3f || size >= 1e5f) return shortest_decimal(value);
    const double spacing =
        double(std::nextafter(size, std::numeric_limits<float>::infinity())) - double(size);  // to the next float
    const int resolved = int(std::floor(-std::log10(spacing)));  // decimal places the spacing is within
    return format_number(value, std::max(0, std::min(decimals, resolved)));
}

void print_matrix(std::ostream& out, const Matrix& m, const PrintOptions& options) {
    std::size_t cell_width = 0;
    for (std::size_t k = 0; k < m.size(); ++k)
        cell_width = std::max(cell_width, display_width(format_number(m.data()[k], options.precision)));
    for (const auto& c : options.col_labels) cell_width = std::max(cell_width, display_width(c));
    std::size_t label_width = 0;
    for (const auto& l : options.row_labels) label_width = std::max(label_width, display_width(l));
    const std::string label_gap = label_width ? " " : "";

    if (!options.col_labels.empty()) {
        out << options.indent << std::string(label_width, ' ') << label_gap << " ";
        for (const auto& c : options.col_labels) out << ' ' << pad_left(c, cell_width);
        out << "\n";
    }
    for (std::size_t i = 0; i < m.rows(); ++i) {
        out << options.indent;
        if (label_width)
            out << pad_right(i < options.row_labels.size() ? options.row_labels[i] : "", label_width) << label_gap;
        out << "[";
        for (std::size_t j = 0; j < m.cols(); ++j)
            out << ' ' << pad_left(format_number(m(i, j), options.precision), cell_width);
        out << " ]\n";
    }
}

std::string format_matrix(const Matrix& m, const PrintOptions& options) {
    std::ostringstream out;
    print_matrix(out, m, options);
    return out.str();
}

}  // namespace attn
