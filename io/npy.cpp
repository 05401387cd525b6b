// io/npy.cpp — the NumPy .npy format: reading (1.0 and 2.0, float32, float64 or boolean, any rank) and
// writing (1.0, float32).
#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <fstream>
#include <system_error>
#include <vector>

#include "io/checks.hpp"

namespace attn {

static_assert(std::endian::native == std::endian::little, "the .npy reader assumes a little-endian machine");

using namespace io_checks;

namespace {

// ---- .npy ---------------------------------------------------------------------------------------
//
// Layout: the 6 bytes "\x93NUMPY", major and minor version bytes, the header length (2 bytes
// little-endian in version 1.0, 4 bytes in 2.0), then the header: a Python dict literal such as
//     {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// padded with spaces to a multiple of 64 bytes and ended by '\n'. The data follows in C order (the
// last index fastest).

constexpr std::size_t max_header_bytes = 10000;  // as NumPy's own reader allows by default

struct NpyHeader {
    std::size_t item_bytes = 0;  // in the file: 4 (<f4), 8 (<f8) or 1 (|b1)
    bool boolean = false;        // |b1
    std::vector<std::uint64_t> dims;
    std::size_t data_offset = 0;
};

// A strict reader for the one dict literal .npy headers contain.
class HeaderParser {
public:
    HeaderParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

    NpyHeader parse() {
        bool have_descr = false, have_order = false, have_shape = false;
        std::string descr;
        bool fortran = false;
        std::vector<std::uint64_t> shape;
        expect('{');
        while (!peek('}')) {
            const std::string key = string_literal();
            expect(':');
            if (key == "descr") {
                descr = string_literal();
                have_descr = true;
            } else if (key == "fortran_order") {
                fortran = boolean();
                have_order = true;
            } else if (key == "shape") {
                shape = tuple();
                have_shape = true;
            } else {
                bad("unknown key '" + key + "'");
            }
            if (!peek(',')) break;
            expect(',');
        }
        expect('}');
        skip_space();
        if (pos_ != s_.size()) bad("unexpected text after the closing brace");
        if (!have_descr || !have_order || !have_shape) bad("needs the keys 'descr', 'fortran_order' and 'shape'");

        NpyHeader h;
        if (descr == "<f4") h.item_bytes = 4;
        else if (descr == "<f8") h.item_bytes = 8;
        else if (descr == "|b1") h.item_bytes = 1, h.boolean = true;
        else if (descr == ">f4" || descr == ">f8")
            fail(name_, "big-endian data ('" + descr + "') is not supported; use '<f4' or '<f8'");
        else
            fail(name_, "dtype '" + descr +
                            "' is not supported; use float32 ('<f4'), float64 ('<f8') or, for a mask, bool ('|b1')");
        if (fortran) fail(name_, "Fortran (column-major) order is not supported; save a C-ordered array");
        h.dims = std::move(shape);
        return h;
    }

private:
    std::string_view s_;
    const std::string& name_;
    std::size_t pos_ = 0;

    [[noreturn]] void bad(const std::string& what) { fail(name_, "malformed header: " + what); }
    void skip_space() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t')) ++pos_;
    }
    bool peek(char c) {
        skip_space();
        return pos_ < s_.size() && s_[pos_] == c;
    }
    void expect(char c) {
        if (!peek(c)) bad(std::string("expected '") + c + "' at byte " + std::to_string(pos_));
        ++pos_;
    }
    std::string string_literal() {
        skip_space();
        if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"'))
            bad("expected a quoted string at byte " + std::to_string(pos_));
        const char quote = s_[pos_++];
        const std::size_t end = s_.find(quote, pos_);
        if (end == std::string_view::npos) bad("unterminated string");
        std::string value(s_.substr(pos_, end - pos_));
        pos_ = end + 1;
        return value;
    }
    bool boolean() {
        skip_space();
        for (const auto& [word, value] :
             {std::pair{std::string_view("True"), true}, {std::string_view("False"), false}}) {
            if (s_.substr(pos_, word.size()) == word) {
                pos_ += word.size();
                return value;
            }
        }
        bad("fortran_order must be True or False");
    }
    std::vector<std::uint64_t> tuple() {
        std::vector<std::uint64_t> dims;
        expect('(');
        while (!peek(')')) {
            std::uint64_t d = 0;
            const auto [end, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), d);
            if (ec != std::errc() || end == s_.data() + pos_) bad("shape must be a tuple of whole numbers");
            pos_ = static_cast<std::size_t>(end - s_.data());
            dims.push_back(d);
            if (dims.size() > 32) bad("shape has too many dimensions");
            if (!peek(',')) break;
            expect(',');
        }
        expect(')');
        return dims;
    }
};

// The preamble and header, from the first bytes of the file.
NpyHeader parse_header(std::string_view bytes, const std::string& name) {
    if (bytes.empty()) fail(name, "empty file");
    if (bytes.substr(0, 6) != std::string_view("\x93NUMPY", 6))
        fail(name, "not a .npy file (it does not start with \\x93NUMPY)");
    if (bytes.size() < 8) fail(name, "file ends inside the format version");
    const auto major = static_cast<unsigned char>(bytes[6]), minor = static_cast<unsigned char>(bytes[7]);
    if ((major != 1 && major != 2) || minor != 0)
        fail(name, "NumPy format version " + std::to_string(major) + "." + std::to_string(minor) +
                       " is not supported; use 1.0 or 2.0");
    const std::size_t length_bytes = major == 1 ? 2 : 4;
    if (bytes.size() < 8 + length_bytes) fail(name, "file ends inside the header length");
    std::uint64_t header_len = 0;
    for (std::size_t k = 0; k < length_bytes; ++k)
        header_len |= std::uint64_t(static_cast<unsigned char>(bytes[8 + k])) << (8 * k);
    if (header_len > max_header_bytes)
        fail(name, "header of " + std::to_string(header_len) + " bytes is larger than the " +
                       std::to_string(max_header_bytes) + " allowed");
    const std::size_t start = 8 + length_bytes;
    if (bytes.size() < start + header_len) fail(name, "file ends inside the header");
    NpyHeader h = HeaderParser(bytes.substr(start, header_len), name).parse();
    h.data_offset = start + header_len;
    return h;
}

std::string data_length_error(std::uint64_t expected, std::uint64_t found) {
    return "the data is " + std::string(found < expected ? "shorter" : "longer") +
           " than the header says: " + std::to_string(expected) + " bytes expected, " + std::to_string(found) +
           " found";
}

// How many values a header promises: its size checked against the limit (a bool takes one byte in
// memory, a float four), then its data's length against the `found` bytes the file holds after the
// header. Both before anything is allocated: a header that claims more than its file holds costs
// nothing, whatever the limit allows.
std::uint64_t promised_count(const NpyHeader& h, std::uint64_t found, const std::string& name,
                             const ReadOptions& options) {
    const std::uint64_t count = check_size(name, h.dims, h.boolean ? 1 : sizeof(float), options);
    std::uint64_t expected = 0;
    try {
        expected = checked_product(count, h.item_bytes, name);
    } catch (const std::length_error&) {
        fail(name, "the shape is too large to count in bytes");
    }
    if (found != expected) fail(name, data_length_error(expected, found));
    return count;
}

// The array of a header whose promise was checked (promised_count), allocated and not yet filled.
Array allocate(const NpyHeader& h, std::uint64_t count) {
    Array a;
    a.shape.assign(h.dims.begin(), h.dims.end());  // each fits a size_t: check_size said so
    if (h.boolean) {
        a.truth = std::make_unique<bool[]>(std::size_t(count));
        return a;
    }
    const std::size_t cols = a.shape.empty() ? 1 : a.shape.back();
    std::size_t rows = 1;
    for (std::size_t k = 0; k + 1 < a.shape.size(); ++k) rows *= a.shape[k];  // a prefix of count: fits
    a.values = Matrix(rows, cols);
    return a;
}

// Where element `index` (C order) of an array of this shape is, as a message says it: "row 2,
// column 3" (from 1) in a matrix, NumPy's "[0, 2, 1]" (from 0) at any other rank.
std::string position(const Shape& shape, std::size_t index) {
    if (shape.size() == 2)
        return "row " + std::to_string(index / shape[1] + 1) + ", column " + std::to_string(index % shape[1] + 1);
    std::string text;
    for (std::size_t k = shape.size(); k-- > 0;) {
        text = std::to_string(index % shape[k]) + (text.empty() ? "" : ", ") + text;
        index /= shape[k];
    }
    return "index [" + text + "]";
}

// A float value that cannot be an input: NaN, or an infinity (−∞ allowed where the options say so).
void check_value(const std::string& name, float v, const Array& a, std::size_t index, const ReadOptions& options) {
    if (std::isfinite(v) || (options.minus_infinity && v < 0 && !std::isnan(v))) return;
    const bool nan = std::isnan(v);
    const std::size_t cols = a.values.cols();
    const char* what = nan ? "NaN" : options.minus_infinity ? "+∞ (only −∞ masks a score)" : "an infinite value";
    fail_cell(name, std::string(what) + " at " + position(a.shape, index), index / cols, index % cols,
              nan ? CellError::Problem::nan : CellError::Problem::infinite);
}

// Converts `count` items of `h.item_bytes` each into the array, starting at element `first`.
void convert(const NpyHeader& h, const char* data, std::size_t first, std::size_t count, Array& a,
             const std::string& name, const ReadOptions& options) {
    for (std::size_t k = 0; k < count; ++k) {
        const std::size_t index = first + k;
        if (h.boolean) {
            const auto byte = static_cast<unsigned char>(data[k]);
            if (byte > 1)
                fail(name,
                     "byte " + std::to_string(byte) + " at " + position(a.shape, index) + " is not a boolean (0 or 1)");
            a.truth[index] = byte == 1;
            continue;
        }
        float v;
        if (h.item_bytes == 4) {
            std::memcpy(&v, data + 4 * k, 4);
        } else {
            double d;
            std::memcpy(&d, data + 8 * k, 8);
            v = static_cast<float>(d);
            if (std::isfinite(d) && !std::isfinite(v))
                fail(name, "value " + std::to_string(d) + " does not fit in float32");
        }
        check_value(name, v, a, index, options);
        a.values.data()[index] = v;
    }
}

std::uint64_t element_count(const Shape& shape) {
    std::uint64_t count = 1;
    for (const std::size_t d : shape) count *= d;  // checked when the header was read
    return count;
}

// The writer's one precondition: the matrix holds exactly the values the shape counts.
void check_count(const Matrix& m, const Shape& shape) {
    if (element_count(shape) != m.size())
        throw std::invalid_argument("npy_bytes: " + shape_string(m) + " values cannot be read as shape " +
                                    shape_string(shape));
}

}  // namespace

Array io_checks::read_npy_file(const std::string& path, const ReadOptions& options) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
    const auto size = static_cast<std::uint64_t>(in.tellg());
    in.seekg(0);
    std::string prefix(static_cast<std::size_t>(std::min<std::uint64_t>(size, 12 + max_header_bytes)), '\0');
    if (!in.read(prefix.data(), static_cast<std::streamsize>(prefix.size()))) fail(path, "read error");
    const NpyHeader h = parse_header(prefix, path);
    const std::uint64_t total = promised_count(h, size - h.data_offset, path, options);
    Array a = allocate(h, total);
    in.seekg(static_cast<std::streamoff>(h.data_offset));
    std::vector<char> chunk(std::size_t{1} << 20);  // converted a MiB at a time, never the whole file twice
    for (std::size_t done = 0; done < total;) {
        const std::size_t count = std::min<std::size_t>(total - done, chunk.size() / h.item_bytes);
        if (!in.read(chunk.data(), static_cast<std::streamsize>(count * h.item_bytes))) fail(path, "read error");
        convert(h, chunk.data(), done, count, a, path, options);
        done += count;
    }
    return a;
}

Matrix io_checks::matrix_of(Array a, const std::string& name) {
    if (a.boolean()) fail(name, "boolean array ('|b1'); a matrix must be float32 ('<f4') or float64 ('<f8')");
    if (a.shape.size() != 2)
        fail(name, std::to_string(a.shape.size()) + "-D array; a matrix must be 2-D (rows, columns)");
    return std::move(a.values);
}

Array parse_npy_array(std::string_view bytes, const std::string& name, const ReadOptions& options) {
    const NpyHeader h = parse_header(bytes, name);
    const std::uint64_t total = promised_count(h, bytes.size() - h.data_offset, name, options);
    Array a = allocate(h, total);
    convert(h, bytes.data() + h.data_offset, 0, std::size_t(total), a, name, options);
    return a;
}

Matrix parse_npy(std::string_view bytes, const std::string& name, const ReadOptions& options) {
    return matrix_of(parse_npy_array(bytes, name, options), name);
}

std::string npy_header(const Shape& shape) {
    std::string dims;
    for (std::size_t k = 0; k < shape.size(); ++k) dims += (k ? ", " : "") + std::to_string(shape[k]);
    if (shape.size() == 1) dims += ",";
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
    const std::size_t preamble = 10;  // magic, version, 2-byte length
    header.append(64 - (preamble + header.size() + 1) % 64, ' ');
    header += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(header.size() & 0xFF);
    out += static_cast<char>(header.size() >> 8);
    return out + header;
}

std::string npy_bytes(const Matrix& m, const Shape& shape) {
    check_count(m, shape);
    return npy_header(shape).append(reinterpret_cast<const char*>(m.data()), m.size() * sizeof(float));
}

std::string npy_bytes(const Matrix& m) { return npy_bytes(m, {m.rows(), m.cols()}); }

NpyOutput::NpyOutput(std::string path, const Matrix* values) : path(std::move(path)), values(values) {
    if (values) shape = {values->rows(), values->cols()};
}

NpyOutput::NpyOutput(std::string path, const Matrix* values, Shape shape)
    : path(std::move(path)), values(values), shape(std::move(shape)) {
    if (values) check_count(*values, this->shape);
}

}  // namespace attn
