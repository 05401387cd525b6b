// io/printable.cpp — the words of the readers' messages: bytes from a file or a path made safe to
// quote on one line, and the names of a refused cell's problems.
#include "io/io.hpp"

namespace attn {

std::string printable(std::string_view text) {
    std::string out;
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x20 && byte != 0x7f) {
            out += c;
        } else {
            constexpr char hex[] = "0123456789abcdef";
            out += {'\\', 'x', hex[byte >> 4], hex[byte & 15]};
        }
    }
    return out;
}

std::string to_string(CellError::Problem problem) {
    switch (problem) {
        case CellError::Problem::not_a_number: return "not_a_number";
        case CellError::Problem::beyond_float32: return "beyond_float32";
        case CellError::Problem::infinite: return "infinite";
        case CellError::Problem::nan: return "nan";
        case CellError::Problem::empty: return "empty";
        case CellError::Problem::decimal_comma: return "decimal_comma";
    }
    return "?";
}

}  // namespace attn
