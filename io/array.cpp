// io/array.cpp — the shape of an N-D array: how it is written, and how NumPy broadcasts it.
#include "io/io.hpp"

namespace attn {

std::string shape_string(const Shape& shape) {
    std::string text;
    for (const std::size_t d : shape) text += (text.empty() ? "" : "×") + std::to_string(d);
    return shape.empty() ? "scalar" : text;
}

std::optional<std::vector<std::ptrdiff_t>> broadcast_strides(const Shape& from, const Shape& to) {
    if (from.size() > to.size()) return std::nullopt;
    std::vector<std::ptrdiff_t> strides(to.size(), 0);
    std::ptrdiff_t step = 1;  // elements between neighbours along the dimension at hand, C order
    for (std::size_t k = 1; k <= from.size(); ++k) {
        const std::size_t have = from[from.size() - k], want = to[to.size() - k];
        if (have != 1 && have != want) return std::nullopt;
        if (have != 1) strides[to.size() - k] = step;
        step *= std::ptrdiff_t(have);
    }
    return strides;
}

}  // namespace attn
