// io/npy.cpp — the NumPy .npy format: reading (1.0 and 2.0, float32 or float64) and writing (1.0, float32).
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
// padded with spaces to a multiple of 64 bytes and ended by '\n'. The data follows, row-major.

constexpr std::size_t max_header_bytes = 10000;  // as NumPy's own reader allows by default

struct NpyHeader {
    std::size_t item_bytes = 0;  // 4 (<f4) or 8 (<f8)
    std::uint64_t rows = 0, cols = 0;
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
        else if (descr == ">f4" || descr == ">f8")
            fail(name_, "big-endian data ('" + descr + "') is not supported; use '<f4' or '<f8'");
        else fail(name_, "dtype '" + descr + "' is not supported; use float32 ('<f4') or float64 ('<f8')");
        if (fortran) fail(name_, "Fortran (column-major) order is not supported; save a C-ordered array");
        if (shape.size() != 2)
            fail(name_, std::to_string(shape.size()) + "-D array; a matrix must be 2-D (rows, columns)");
        h.rows = shape[0];
        h.cols = shape[1];
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

// Converts `count` items of `h.item_bytes` each into the matrix, starting at element `first`.
void convert(const NpyHeader& h, const char* data, std::size_t first, std::size_t count, Matrix& m,
             const std::string& name) {
    for (std::size_t k = 0; k < count; ++k) {
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
        const std::size_t index = first + k;
        check_finite(name, v, index / m.cols(), index % m.cols());
        m.data()[index] = v;
    }
}

std::string data_length_error(std::uint64_t expected, std::uint64_t found) {
    return "the data is " + std::string(found < expected ? "shorter" : "longer") +
           " than the header says: " + std::to_string(expected) + " bytes expected, " + std::to_string(found) +
           " found";
}

}  // namespace

Matrix io_checks::read_npy_file(const std::string& path, const ReadOptions& options) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
    const auto size = static_cast<std::uint64_t>(in.tellg());
    in.seekg(0);
    std::string prefix(static_cast<std::size_t>(std::min<std::uint64_t>(size, 12 + max_header_bytes)), '\0');
    if (!in.read(prefix.data(), static_cast<std::streamsize>(prefix.size()))) fail(path, "read error");
    const NpyHeader h = parse_header(prefix, path);
    check_size(path, h.rows, h.cols, options);
    const std::uint64_t expected = checked_product(h.rows * h.cols, h.item_bytes, path);  // rows·cols checked above
    if (size < h.data_offset || size - h.data_offset != expected)
        fail(path, data_length_error(expected, size - h.data_offset));
    Matrix m(h.rows, h.cols);
    in.seekg(static_cast<std::streamoff>(h.data_offset));
    std::vector<char> chunk(std::size_t{1} << 20);  // converted a MiB at a time, never the whole file twice
    for (std::size_t done = 0, total = m.size(); done < total;) {
        const std::size_t count = std::min(total - done, chunk.size() / h.item_bytes);
        if (!in.read(chunk.data(), static_cast<std::streamsize>(count * h.item_bytes))) fail(path, "read error");
        convert(h, chunk.data(), done, count, m, path);
        done += count;
    }
    return m;
}

Matrix parse_npy(std::string_view bytes, const std::string& name, const ReadOptions& options) {
    const NpyHeader h = parse_header(bytes, name);
    check_size(name, h.rows, h.cols, options);
    const std::uint64_t expected = checked_product(h.rows * h.cols, h.item_bytes, name);  // rows·cols checked above
    const std::uint64_t found = bytes.size() - h.data_offset;
    if (found != expected) fail(name, data_length_error(expected, found));
    Matrix m(h.rows, h.cols);
    convert(h, bytes.data() + h.data_offset, 0, m.size(), m, name);
    return m;
}

std::string npy_header(const Matrix& m) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(m.rows()) + ", " +
                         std::to_string(m.cols()) + "), }";
    const std::size_t preamble = 10;  // magic, version, 2-byte length
    header.append(64 - (preamble + header.size() + 1) % 64, ' ');
    header += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(header.size() & 0xFF);
    out += static_cast<char>(header.size() >> 8);
    return out + header;
}

std::string npy_bytes(const Matrix& m) {
    return npy_header(m).append(reinterpret_cast<const char*>(m.data()), m.size() * sizeof(float));
}

}  // namespace attn
