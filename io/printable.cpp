// io/printable.cpp — bytes from a file or a path, made safe to quote in a one-line message.
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

}  // namespace attn
