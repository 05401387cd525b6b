// io/csv.cpp — comma-separated text: one matrix row per line.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <system_error>
#include <vector>

#include "io/checks.hpp"
#include "matrix/size.hpp"

namespace attn {

using namespace io_checks;

namespace {

// ---- .csv ---------------------------------------------------------------------------------------

// One CSV field as a float. Parsed as a double first, so that a value too large for float32 (1e39)
// is told apart from one that is not a number; a value below float32's smallest rounds to 0 (or a
// denormal), as NumPy's float32 conversion does and as the .npy float64 path does.
enum class Field { number, not_a_number, out_of_range };

// std::from_chars for a double, where the standard library has it (GCC's does). Emscripten 3.1.6's
// libc++ has only the integer one: there the same grammar (an optional '-', then inf, infinity,
// nan, nan(…) in any case, or digits with an optional point and exponent) is checked here and the
// value read by strtod, whose ERANGE stands for from_chars' result_out_of_range.
std::errc parse_double(std::string_view field, double& d) {
#if defined(__cpp_lib_to_chars)
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), d);
    return end == field.data() + field.size() ? ec : std::errc::invalid_argument;
#else
    std::string_view rest = field.substr(!field.empty() && field.front() == '-');
    const auto lower = [](std::string_view s) {
        std::string out(s);
        for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return out;
    };
    const std::string word = lower(rest);
    const auto digits = [&](std::size_t& at) {
        const std::size_t from = at;
        while (at < rest.size() && rest[at] >= '0' && rest[at] <= '9') ++at;
        return at - from;
    };
    bool valid = word == "inf" || word == "infinity" || word == "nan" ||
                 (word.rfind("nan(", 0) == 0 && word.back() == ')' &&
                  word.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_", 4) == word.size() - 1);
    if (!valid) {
        std::size_t at = 0;
        std::size_t count = digits(at);
        if (at < rest.size() && rest[at] == '.') count += digits(++at);
        valid = count > 0;
        if (valid && at < rest.size() && (rest[at] == 'e' || rest[at] == 'E')) {
            ++at;
            if (at < rest.size() && (rest[at] == '+' || rest[at] == '-')) ++at;
            valid = digits(at) > 0;
        }
        valid = valid && at == rest.size();
    }
    if (!valid) return std::errc::invalid_argument;
    const std::string text(field);
    errno = 0;
    d = std::strtod(text.c_str(), nullptr);
    return errno == ERANGE ? std::errc::result_out_of_range : std::errc();
#endif
}

Field parse_number(std::string_view field, float& value) {
    value = 0.0f;
    while (!field.empty() && (field.front() == ' ' || field.front() == '\t')) field.remove_prefix(1);
    while (!field.empty() && (field.back() == ' ' || field.back() == '\t')) field.remove_suffix(1);
    // One sign at most: from_chars takes no '+', so it is dropped here, and "+-1" stays not a number.
    if (!field.empty() && field.front() == '+') {
        field.remove_prefix(1);
        if (!field.empty() && (field.front() == '-' || field.front() == '+')) return Field::not_a_number;
    }
    double d = 0.0;
    const std::errc ec = field.empty() ? std::errc::invalid_argument : parse_double(field, d);
    if (ec == std::errc::invalid_argument) return Field::not_a_number;
    if (ec == std::errc::result_out_of_range) {
        // Beyond double, one way or the other: |x| > 1.8e308 is out of range; |x| < 4.9e-324 is below
        // float32's smallest as well, so it becomes 0 like 1e-50 does (and as in NumPy).
        const std::string text(field);
        if (std::fabs(std::strtod(text.c_str(), nullptr)) >= 1.0) return Field::out_of_range;
        value = field.front() == '-' ? -0.0f : 0.0f;
        return Field::number;
    }
    if (ec != std::errc()) return Field::not_a_number;
    value = static_cast<float>(d);
    if (std::isfinite(d) && !std::isfinite(value)) return Field::out_of_range;
    return Field::number;
}

// Calls `field` with each comma-separated field of `line`, in order, without storing them (a line
// of five million values would otherwise hold 80 MB of views).
template <class Fn>
void for_each_field(std::string_view line, Fn&& field) {
    for (std::size_t start = 0;;) {
        const std::size_t comma = line.find(',', start);
        field(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos) return;
        start = comma + 1;
    }
}

std::string read_file(const std::string& path, const ReadOptions& options) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
    const auto size = static_cast<std::uint64_t>(in.tellg());
    check_limit(path, "its text", size, options);
    std::string bytes(size, '\0');
    in.seekg(0);
    if (!in.read(bytes.data(), static_cast<std::streamsize>(size))) fail(path, "read error");
    return bytes;
}

}  // namespace

Matrix parse_csv(std::string_view text, const std::string& name, const ReadOptions& options) {
    if (text.empty()) fail(name, "empty file");
    if (text.back() == '\n') text.remove_suffix(1);  // one final newline ends the last line
    // At its peak, reading holds the file's text, the values parsed from it and the matrix they are
    // copied into at the end: all of it must fit the limit, checked as the values come.
    const auto check_memory = [&](std::uint64_t count) {
        std::uint64_t bytes = 0;
        try {
            bytes = checked_sum(text.size(), checked_product(count, 2 * sizeof(float), "CSV values"), "CSV values");
        } catch (const std::length_error&) {
            fail(name, "too many values to count");
        }
        check_limit(name, "reading it (its text, and its values as parsed and as a matrix)", bytes, options);
    };
    std::vector<float> values;
    std::size_t cols = 0, rows = 0, line_number = 0, first_data_line = 0;
    for (std::size_t start = 0; start <= text.size();) {
        const std::size_t newline = std::min(text.find('\n', start), text.size());
        std::string_view line = text.substr(start, newline - start);
        start = newline + 1;
        ++line_number;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line_number == 1 && options.csv_header) continue;
        if (line.find_first_not_of(" \t") == std::string_view::npos)
            fail(name, "line " + std::to_string(line_number) + " is empty");
        const std::size_t count = static_cast<std::size_t>(std::count(line.begin(), line.end(), ',')) + 1;
        if (rows == 0) {
            cols = count;
            first_data_line = line_number;
            check_size(name, 1, cols, options);
            check_memory(cols);
            // Room for every line at once (the lines are counted, not guessed), so the values are
            // never copied to a larger buffer as they grow.
            const std::size_t lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
            const std::uint64_t left = options.max_bytes - std::min(options.taken, options.max_bytes);
            const std::size_t fit = (left - std::min<std::uint64_t>(left, text.size())) / (2 * sizeof(float)) / cols;
            values.reserve(std::min(lines, fit) * cols);
        } else if (count != cols) {
            fail(name, "line " + std::to_string(line_number) + " has " + std::to_string(count) + " values, line " +
                           std::to_string(first_data_line) + " has " + std::to_string(cols));
        }
        check_size(name, rows + 1, cols, options);
        check_memory(std::uint64_t(rows + 1) * cols);
        std::size_t j = 0;
        for_each_field(line, [&](std::string_view field) {
            float v = 0.0f;
            const Field kind = parse_number(field, v);
            const std::string shown(field.substr(0, 40));
            if (kind == Field::out_of_range)
                fail_cell(name,
                          "line " + std::to_string(line_number) + ", value " + std::to_string(j + 1) + " ('" + shown +
                              "') is outside the range of float32 (largest ±3.4e38)",
                          rows, j, CellError::Problem::beyond_float32, shown);
            if (kind == Field::not_a_number) {
                bool any_number = false;
                for_each_field(line, [&](std::string_view f) {
                    float ignored;
                    any_number |= parse_number(f, ignored) != Field::not_a_number;
                });
                if (line_number == 1 && !any_number)
                    fail(name, "line 1 is not numeric ('" + shown + "'); if it is a header, pass --csv-header");
                fail_cell(name,
                          "line " + std::to_string(line_number) + ", value " + std::to_string(j + 1) +
                              " is not a number: '" + shown + "'",
                          rows, j, CellError::Problem::not_a_number, shown);
            }
            check_finite(name, v, rows, j);
            values.push_back(v);
            ++j;
        });
        ++rows;
        if (newline == text.size()) break;
    }
    if (rows == 0) fail(name, "no data rows after the header");
    Matrix m(rows, cols);
    std::copy(values.begin(), values.end(), m.data());
    return m;
}

namespace {

// ---- typed cells --------------------------------------------------------------------------------

// A typed cell with the non-ASCII forms of a number's characters taken as ASCII: U+FF01…U+FF5E (the
// full-width forms of '!'…'~': digits, signs, '.', ',', 'e') and the ideographic space, and the
// hyphens and minus signs U+2010…U+2015, U+2212, U+FE58, U+FE63 as '-'. Every other byte is kept.
std::string as_ascii(std::string_view typed) {
    std::string out;
    for (std::size_t i = 0; i < typed.size();) {
        const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(typed[k]); };
        if (byte(i) >= 0xE0 && byte(i) < 0xF0 && i + 2 < typed.size()) {  // three bytes: U+0800…U+FFFF
            const unsigned code = (byte(i) & 0x0Fu) << 12 | (byte(i + 1) & 0x3Fu) << 6 | (byte(i + 2) & 0x3Fu);
            const bool minus = (code >= 0x2010 && code <= 0x2015) || code == 0x2212 || code == 0xFE58 || code == 0xFE63;
            if (minus || (code >= 0xFF01 && code <= 0xFF5E) || code == 0x3000) {
                out += minus ? '-' : code == 0x3000 ? ' ' : static_cast<char>(code - 0xFEE0);
                i += 3;
                continue;
            }
        }
        out += typed[i++];
    }
    return out;
}

// One typed cell as a float, or CellError: "W_Q: row 2, column 1 ('1,5') is not a number: …".
float read_cell(const std::string& typed, const std::string& name, std::size_t row, std::size_t col) {
    using Problem = CellError::Problem;
    const std::string text = as_ascii(typed);
    const std::size_t first = text.find_first_not_of(" \t"), last = text.find_last_not_of(" \t");
    float v = 0.0f;
    Problem problem = Problem::empty;
    if (first != std::string::npos) {
        const std::string_view value(text.data() + first, last - first + 1);
        const bool comma = value.find(',') != std::string_view::npos;
        const Field kind = comma ? Field::not_a_number : parse_number(value, v);
        if (kind == Field::number && std::isfinite(v)) return v;
        problem = kind == Field::out_of_range ? Problem::beyond_float32
                  : comma                     ? Problem::decimal_comma
                  : kind != Field::number     ? Problem::not_a_number
                  : std::isnan(v)             ? Problem::nan
                                              : Problem::infinite;
    }
    static const char* const said[] = {
        "is not a number", "is outside the range of float32 (largest ±3.4e38)",
        "is infinite",     "is NaN",
        "is empty",        "is not a number: a comma stands where a decimal point belongs"};  // by Problem
    const std::size_t start = typed.find_first_not_of(" \t");  // the cell as typed, for the message
    const std::string shown = start == std::string::npos ? "" : typed.substr(start, 40);
    fail_cell(name,
              "row " + std::to_string(row + 1) + ", column " + std::to_string(col + 1) +
                  (shown.empty() ? "" : " ('" + shown + "')") + " " + said[static_cast<int>(problem)],
              row, col, problem, shown);
}

}  // namespace

Matrix parse_cells(const std::vector<std::vector<std::string>>& cells, const std::string& name,
                   const ReadOptions& options) {
    if (cells.empty() || cells[0].empty()) fail(name, "no values");
    for (std::size_t i = 1; i < cells.size(); ++i)
        if (cells[i].size() != cells[0].size())
            fail(name, "row " + std::to_string(i + 1) + " has " + std::to_string(cells[i].size()) +
                           " values, row 1 has " + std::to_string(cells[0].size()));
    check_size(name, cells.size(), cells[0].size(), options);
    Matrix m(cells.size(), cells[0].size());
    for (std::size_t i = 0; i < m.rows(); ++i)
        for (std::size_t j = 0; j < m.cols(); ++j) m(i, j) = read_cell(cells[i][j], name, i, j);
    return m;
}

Matrix io_checks::read_csv_file(const std::string& path, const ReadOptions& options) {
    return parse_csv(read_file(path, options), path, options);
}

}  // namespace attn
