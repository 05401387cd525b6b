// attention/elements.hpp — reading a view's elements (attention/call.hpp) as floats, whatever their type,
// strides and byte order: what every conversion of an input does (attention/inputs.cpp, and a cache
// made from any array, attention/cache.cpp). Internal to attention/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "attention/call.hpp"
#include "matrix/bfloat16.hpp"
#include "matrix/float16.hpp"

namespace attn::elements {

// Bytes of one element of this type.
std::size_t bytes_of(Element element);

// The view's strides in elements: its own, or C order's.
std::vector<std::ptrdiff_t> strides_of(const View& view);

// How many elements the view has (its shape's product, checked).
std::size_t count(const View& view);

// Whether the kernels can read the view where it lies as `element`: that type, this machine's byte
// order, C order (or no elements at all, whose order does not matter).
bool read_in_place(const View& view, Element element);

// A T stored at p, its bytes reversed when `swapped`.
template <class T>
T load(const unsigned char* p, bool swapped) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, p, sizeof(T));
    if (swapped)
        for (std::size_t k = 0; k < sizeof(T) / 2; ++k) std::swap(bytes[k], bytes[sizeof(T) - 1 - k]);
    T x;
    std::memcpy(&x, bytes, sizeof(T));
    return x;
}

// f(x, k) for every element, x its value as a float (rounded to nearest from float64 or an integer;
// exact from float16 and bfloat16) and k its place in C order, 0, 1, 2, …, visited in that order.
template <class T, class ToFloat, class F>
void each_as(const View& view, ToFloat to_float, F& f) {
    const std::size_t rank = view.shape.size(), total = count(view);
    if (total == 0) return;
    const std::vector<std::ptrdiff_t> strides = strides_of(view);
    const auto* base = static_cast<const unsigned char*>(view.data);
    const std::size_t inner = rank ? view.shape[rank - 1] : 1;
    const std::ptrdiff_t step = rank ? strides[rank - 1] : 0;
    std::vector<std::size_t> index(rank, 0);
    std::ptrdiff_t offset = 0;  // in elements, of the current row's first
    for (std::size_t k = 0; k < total;) {
        for (std::size_t j = 0; j < inner; ++j, ++k)
            f(to_float(load<T>(base + (offset + std::ptrdiff_t(j) * step) * std::ptrdiff_t(sizeof(T)), view.swapped)),
              k);
        for (std::size_t axis = rank > 0 ? rank - 1 : 0; axis-- > 0;) {  // the next row: carry as an odometer does
            offset += strides[axis];
            if (++index[axis] < view.shape[axis]) break;
            offset -= strides[axis] * std::ptrdiff_t(view.shape[axis]);
            index[axis] = 0;
        }
    }
}

template <class F>
void for_each_float(const View& view, F&& f) {
    const auto as_float = [](auto x) { return static_cast<float>(x); };
    switch (view.element) {
        case Element::f32: return each_as<float>(view, as_float, f);
        case Element::f64: return each_as<double>(view, as_float, f);
        case Element::f16: return each_as<std::uint16_t>(view, from_float16_bits, f);
        case Element::bf16: return each_as<std::uint16_t>(view, from_bfloat16_bits, f);
        case Element::i8: return each_as<std::int8_t>(view, as_float, f);
        case Element::i16: return each_as<std::int16_t>(view, as_float, f);
        case Element::i32: return each_as<std::int32_t>(view, as_float, f);
        case Element::i64: return each_as<std::int64_t>(view, as_float, f);
        case Element::u8: return each_as<std::uint8_t>(view, as_float, f);
        case Element::u16: return each_as<std::uint16_t>(view, as_float, f);
        case Element::u32: return each_as<std::uint32_t>(view, as_float, f);
        case Element::u64: return each_as<std::uint64_t>(view, as_float, f);
        case Element::boolean:
            return each_as<std::uint8_t>(
                view, [](std::uint8_t b) { return b ? 1.0f : 0.0f; }, f);
    }
}

}  // namespace attn::elements
