// attention/cache.cpp — key/value caches in the type they are stored in (attention/heads.hpp): made
// from floats, read back as floats.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "attention/elements.hpp"
#include "attention/heads.hpp"
#include "attention/inputs.hpp"
#include "attention/views.hpp"
#include "matrix/size.hpp"

namespace attn {

CacheView::CacheView(const HeadsView& floats) : data(floats.data), shape(floats.shape), type(KvDtype::f32) {}

CacheView::CacheView(const void* data, HeadsShape shape, KvDtype type) : data(data), shape(shape), type(type) {}

CacheView Cache::view() const {
    return {type == KvDtype::f32 ? static_cast<const void*>(floats.data()) : halves.data(), shape, type};
}

Cache to_cache(const HeadsView& floats, KvDtype type, const std::string& name) {
    const HeadsAsView view(floats);
    if (!floats.data && elements::count(view.view) > 0)
        throw std::invalid_argument("to_cache: " + name + " (" + shape_string(floats.shape) + ") has no data");
    Cache cache = cache_from(view.view, type, "to_cache", name);
    cache.shape = floats.shape;
    return cache;
}

Heads to_floats(const CacheView& cache) {
    const HeadsShape& s = cache.shape;
    const std::size_t count = elements::count(HeadsAsView(cache).view);
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
