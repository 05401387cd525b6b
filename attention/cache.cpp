// attention/cache.cpp — key/value caches in the type they are stored in (attention/heads.hpp): made
// from floats, read back as floats, and the names of their types.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "attention/heads.hpp"
#include "matrix/size.hpp"

namespace attn {

namespace {

std::size_t element_count(const HeadsShape& s) {
    return checked_product(checked_product(checked_product(s.batch, s.heads, "cache"), s.rows, "cache"), s.cols,
                           "cache");
}

}  // namespace

CacheView::CacheView(const HeadsView& floats) : data(floats.data), shape(floats.shape), type(KvDtype::f32) {}

CacheView::CacheView(const void* data, HeadsShape shape, KvDtype type) : data(data), shape(shape), type(type) {}

CacheView Cache::view() const {
    return {type == KvDtype::f32 ? static_cast<const void*>(floats.data()) : halves.data(), shape, type};
}

Cache to_cache(const HeadsView& floats, KvDtype type) {
    Cache cache;
    cache.shape = floats.shape;
    cache.type = type;
    const std::size_t count = element_count(floats.shape);
    if (count && !floats.data)
        throw std::invalid_argument("to_cache: the floats (" + shape_string(floats.shape) + ") have no data");
    if (type == KvDtype::f32) {
        cache.floats.assign(floats.data, floats.data + count);
        return cache;
    }
    cache.halves.resize(count);
    for (std::size_t k = 0; k < count; ++k)
        cache.halves[k] = type == KvDtype::bf16 ? bfloat16_bits(floats.data[k]) : float16_bits(floats.data[k]);
    return cache;
}

std::string to_string(KvDtype type) {
    switch (type) {
        case KvDtype::f32: return "f32";
        case KvDtype::bf16: return "bf16";
        case KvDtype::f16: return "f16";
    }
    return "?";
}

KvDtype kv_dtype_from_string(const std::string& name) {
    for (const KvDtype type : {KvDtype::f32, KvDtype::bf16, KvDtype::f16})
        if (to_string(type) == name) return type;
    throw std::invalid_argument("kv dtype \"" + name + "\": the choices are f32, bf16 and f16");
}

Heads to_floats(const CacheView& cache) {
    const HeadsShape& s = cache.shape;
    const std::size_t count = element_count(s);
    Heads out{Matrix(checked_product(checked_product(s.batch, s.heads, "cache"), s.rows, "cache"), s.cols), s};
    if (cache.type == KvDtype::f32) {
        const auto* floats = static_cast<const float*>(cache.data);
        std::copy(floats, floats + count, out.values.data());
        return out;
    }
    const auto* bits = static_cast<const std::uint16_t*>(cache.data);
    for (std::size_t k = 0; k < count; ++k)
        out.values.data()[k] = cache.type == KvDtype::bf16 ? from_bfloat16_bits(bits[k]) : from_float16_bits(bits[k]);
    return out;
}

}  // namespace attn
