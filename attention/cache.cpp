// attention/cache.cpp — key/value caches in the type they are stored in (attention/heads.hpp): made
// from floats, read back as floats, and the names of their types.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
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

// Refuses a finite float x that `type` stores as ±∞ (the pattern `stored`), naming its place: the
// decode would otherwise refuse the cache as if the caller's floats held ∞.
void check_stored_finite(float x, std::uint16_t stored, KvDtype type, std::size_t k, const HeadsView& floats,
                         const std::string& name) {
    if (!std::isfinite(x) ||
        !std::isinf(type == KvDtype::bf16 ? from_bfloat16_bits(stored) : from_float16_bits(stored)))
        return;
    const HeadsShape& s = floats.shape;
    const std::size_t column = k % s.cols, row = k / s.cols % s.rows, head = k / s.cols / s.rows % s.heads,
                      batch = k / s.cols / s.rows / s.heads;
    char numbers[256];
    std::snprintf(numbers, sizeof numbers,
                  " holds %.6g at [%zu, %zu, %zu, %zu], which rounds to ±∞ in %s (the largest is %.6g)", x, batch, head,
                  row, column, to_string(type).c_str(),
                  double(type == KvDtype::bf16 ? largest_bfloat16 : largest_float16));
    throw std::overflow_error("to_cache: " + name + " (" + shape_string(s) + ")" + numbers +
                              ": a cache cannot hold it");
}

}  // namespace

CacheView::CacheView(const HeadsView& floats) : data(floats.data), shape(floats.shape), type(KvDtype::f32) {}

CacheView::CacheView(const void* data, HeadsShape shape, KvDtype type) : data(data), shape(shape), type(type) {}

CacheView Cache::view() const {
    return {type == KvDtype::f32 ? static_cast<const void*>(floats.data()) : halves.data(), shape, type};
}

Cache to_cache(const HeadsView& floats, KvDtype type, const std::string& name) {
    Cache cache;
    cache.shape = floats.shape;
    cache.type = type;
    const std::size_t count = element_count(floats.shape);
    if (count && !floats.data)
        throw std::invalid_argument("to_cache: " + name + " (" + shape_string(floats.shape) + ") has no data");
    if (type == KvDtype::f32) {
        cache.floats.assign(floats.data, floats.data + count);
        return cache;
    }
    cache.halves.resize(count);
    for (std::size_t k = 0; k < count; ++k) {
        const float x = floats.data[k];
        cache.halves[k] = type == KvDtype::bf16 ? bfloat16_bits(x) : float16_bits(x);
        check_stored_finite(x, cache.halves[k], type, k, floats, name);
    }
    return cache;
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
