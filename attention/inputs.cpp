// attention/inputs.cpp — a call's operands as the kernels read them, and the buffers that takes.
//
// The kernels read float32 matrices in C order, key/value caches of one type, and a mask through one
// stride per axis of (B, H, L, S). A view that is already so is read where it lies, without a copy;
// any other (float64, integers, float16 queries, another byte order, strides, a mask whose batch
// axes do not merge into one) is converted first. conversion_buffers lists exactly what inputs_of
// allocates, by the same rules, for the plan to charge before anything is converted.
#include "attention/inputs.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "attention/elements.hpp"
#include "matrix/size.hpp"

namespace attn {

namespace elements {

std::size_t bytes_of(Element element) {
    switch (element) {
        case Element::f64:
        case Element::i64:
        case Element::u64: return 8;
        case Element::f32:
        case Element::i32:
        case Element::u32: return 4;
        case Element::f16:
        case Element::bf16:
        case Element::i16:
        case Element::u16: return 2;
        case Element::i8:
        case Element::u8:
        case Element::boolean: return 1;
    }
    return 1;
}

std::vector<std::ptrdiff_t> strides_of(const View& view) {
    if (!view.strides.empty()) return {view.strides.begin(), view.strides.end()};
    std::vector<std::ptrdiff_t> strides(view.shape.size());
    std::ptrdiff_t step = 1;
    for (std::size_t k = view.shape.size(); k-- > 0; step *= std::ptrdiff_t(view.shape[k])) strides[k] = step;
    return strides;
}

std::size_t count(const View& view) {
    std::uint64_t total = 1;
    for (const std::size_t d : view.shape) total = checked_product(total, d, "an operand's shape");
    return std::size_t(total);
}

bool read_in_place(const View& view, Element element) {
    if (count(view) == 0) return true;
    if (view.element != element || (view.swapped && bytes_of(element) > 1)) return false;
    std::ptrdiff_t step = 1;  // C order: each axis steps over all the axes after it (axes of one element aside)
    for (std::size_t k = view.shape.size(); !view.strides.empty() && k-- > 0; step *= std::ptrdiff_t(view.shape[k]))
        if (view.shape[k] != 1 && view.strides[k] != step) return false;
    return true;
}

}  // namespace elements

std::string to_string(Element element) {
    switch (element) {
        case Element::f32: return "float32";
        case Element::f64: return "float64";
        case Element::f16: return "float16";
        case Element::bf16: return "bfloat16";
        case Element::i8: return "int8";
        case Element::i16: return "int16";
        case Element::i32: return "int32";
        case Element::i64: return "int64";
        case Element::u8: return "uint8";
        case Element::u16: return "uint16";
        case Element::u32: return "uint32";
        case Element::u64: return "uint64";
        case Element::boolean: return "bool";
    }
    return "?";
}

namespace {

using elements::count;
using elements::read_in_place;

// A weight given in PyTorch's layout (d × d_model), read as the lesson's (d_model × d): the same
// memory, its two axes exchanged.
struct Transposed {
    std::size_t shape[2];
    std::ptrdiff_t strides[2];
    View view;
    explicit Transposed(const View& W) : shape{W.shape[1], W.shape[0]} {
        const std::vector<std::ptrdiff_t> own = elements::strides_of(W);
        strides[0] = own[1], strides[1] = own[0];
        view = {W.data, shape, strides, W.element, W.swapped};
    }
};

std::string given_as(const View& view) {
    return "given as " + to_string(view.element) + (view.swapped ? " of the other byte order" : "") +
           (view.strides.empty() ? "" : ", strided");
}

// ---- float operands ------------------------------------------------------------------------------

// The view's values as a (count / cols) × cols matrix of floats: borrowed where it lies, else converted.
Matrix floats_of(const View& view, std::size_t cols, Inputs& in) {
    const std::size_t total = count(view), rows = cols ? total / cols : 0;
    if (read_in_place(view, Element::f32)) return Matrix::borrow(static_cast<const float*>(view.data), rows, cols);
    Matrix& copy = in.floats.emplace_back(rows, cols);
    elements::for_each_float(view, [&](float x, std::size_t k) { copy.data()[k] = x; });
    return Matrix::borrow(copy.data(), rows, cols);
}

HeadsView heads_of(const View& view, std::size_t batch, std::size_t heads, Inputs& in) {
    const std::size_t rank = view.shape.size(), rows = view.shape[rank - 2], cols = view.shape[rank - 1];
    return {floats_of(view, cols, in).data(), {batch, heads, rows, cols}};
}

// ---- keys and values -----------------------------------------------------------------------------

// The float x as `type` holds it (nearest, ties to even), refused when a finite x would be held as ±∞.
struct Rounding {
    KvDtype type;
    std::string who, name;
    std::span<const std::size_t> shape;
    std::uint16_t bits(float x, std::size_t k) const {
        const std::uint16_t stored = type == KvDtype::bf16 ? bfloat16_bits(x) : float16_bits(x);
        if (std::isfinite(x) &&
            std::isinf(type == KvDtype::bf16 ? from_bfloat16_bits(stored) : from_float16_bits(stored)))
            refuse(x, k);
        return stored;
    }
    [[noreturn]] void refuse(float x, std::size_t k) const {
        std::string place;
        for (std::size_t axis = shape.size(), rest = k; axis-- > 0; rest /= shape[axis])
            place = std::to_string(rest % shape[axis]) + (place.empty() ? "" : ", ") + place;
        char numbers[160];
        std::snprintf(numbers, sizeof numbers, " holds %.6g at [%s], which rounds to ±∞ in %s (the largest is %.6g)", x,
                      place.c_str(), to_string(type).c_str(),
                      double(type == KvDtype::bf16 ? largest_bfloat16 : largest_float16));
        throw std::overflow_error(who + ": " + name + " (" + shape_string(shape) + ")" + numbers +
                                  ": a cache cannot hold it");
    }
};

bool cache_in_place(const View& view, KvDtype type, bool kept) {
    return read_in_place(view, kept ? element_of(type) : Element::f32) && (kept || type == KvDtype::f32);
}

CacheView cache_of(const View& view, const std::string& name, const Shapes& s, bool kept, Inputs& in) {
    const std::size_t rank = view.shape.size(), rows = view.shape[rank - 2], cols = view.shape[rank - 1];
    const HeadsShape shape{s.batch, s.kv_heads, rows, cols};
    if (cache_in_place(view, s.cache, kept)) return {view.data, shape, kept ? s.cache : KvDtype::f32};
    if (s.cache == KvDtype::f32 || !kept) {  // floats: the view's values, rounded to the cache's type
        const Rounding round{s.cache, s.who, name, view.shape};
        Matrix& copy = in.floats.emplace_back(count(view) / std::max<std::size_t>(cols, 1), cols);
        elements::for_each_float(view, [&](float x, std::size_t k) {
            copy.data()[k] = s.cache == KvDtype::f32    ? x
                             : s.cache == KvDtype::bf16 ? from_bfloat16_bits(round.bits(x, k))
                                                        : from_float16_bits(round.bits(x, k));
        });
        return {copy.data(), shape, KvDtype::f32};
    }
    Cache& cache = in.caches.emplace_back(cache_from(view, s.cache, s.who, name));
    return {cache.halves.data(), shape, s.cache};
}

// ---- the mask ------------------------------------------------------------------------------------

// The mask's elements as the kernels read them: booleans, or floats in this machine's byte order.
bool mask_elements_in_place(const View& mask) {
    return mask.element == Element::boolean || (mask.element == Element::f32 && !mask.swapped);
}

// The batch axes N... of `strides` (the first `axes`) read as one, extent B: their stride, when each
// steps over the whole extent of those after it (axes of one element aside); none otherwise.
std::optional<std::ptrdiff_t> merged_stride(std::span<const std::size_t> shape, std::span<const std::ptrdiff_t> strides,
                                            std::size_t axes) {
    std::ptrdiff_t stride = 0, extent = 0;  // of the axes merged so far, the innermost first
    for (std::size_t k = axes; k-- > 0;) {
        if (shape[k] == 1) continue;
        if (extent != 0 && strides[k] != stride * extent) return std::nullopt;
        if (extent == 0) stride = strides[k], extent = 1;
        extent *= std::ptrdiff_t(shape[k]);
    }
    return stride;
}

// The mask read in place: its strides over (N..., H, L, S), the batch axes merged; none when they do
// not merge or its elements need converting.
std::optional<ScoreMask> mask_in_place(const View& mask, const Shapes& s) {
    if (!mask_elements_in_place(mask)) return std::nullopt;
    const std::vector<std::size_t> scores = scores_shape(s);
    const std::vector<std::ptrdiff_t> strides = broadcast(mask, scores);
    const std::optional<std::ptrdiff_t> batch = merged_stride(scores, strides, s.leading.size());
    if (!batch) return std::nullopt;
    const auto axis = [&](std::size_t from_end) {
        return from_end <= s.rank - s.leading.size() ? strides[s.rank - from_end] : 0;
    };
    return ScoreMask{mask.element == Element::boolean ? ScoreMask::Kind::boolean : ScoreMask::Kind::additive,
                     mask.data,
                     *batch,
                     axis(3),
                     axis(2),
                     axis(1)};
}

// The copy of a mask that cannot be read in place: (B, H', L', S'), each of H', L', S' the scores' own
// or 1 where the mask repeats along it; booleans as bytes, any other type as floats.
struct CompactMask {
    std::size_t extents[4];  // B, H', L', S'
    std::vector<std::ptrdiff_t> strides;
    CompactMask(const View& mask, const Shapes& s) : strides(broadcast(mask, scores_shape(s))) {
        const std::size_t axes = s.leading.size(), rank = s.rank;
        const auto own = [&](std::size_t from_end, std::size_t extent) {
            return from_end <= rank - axes && strides[rank - from_end] != 0 ? extent : 1;
        };
        extents[0] = s.batch, extents[1] = own(3, s.heads), extents[2] = own(2, s.L), extents[3] = own(1, s.S);
    }
    std::uint64_t count() const {
        return checked_product(checked_product(checked_product(extents[0], extents[1], "mask"), extents[2], "mask"),
                               extents[3], "mask");
    }
};

ScoreMask mask_copy(const View& mask, const Shapes& s, Inputs& in) {
    const CompactMask compact(mask, s);
    const bool boolean = mask.element == Element::boolean;
    const std::size_t element = boolean ? 1 : sizeof(float);
    std::vector<unsigned char>& bytes = in.masks.emplace_back(compact.count() * element);
    // the broadcast view of the mask, restricted to the compact extents (the batch axes written out)
    std::vector<std::size_t> shape = s.leading;
    const std::size_t rest[] = {compact.extents[1], compact.extents[2], compact.extents[3]};
    shape.insert(shape.end(), rest + (s.rank >= 3 ? 0 : 1), rest + 3);
    const View spread{mask.data, shape, compact.strides, mask.element, mask.swapped};
    elements::for_each_float(spread, [&](float x, std::size_t k) {
        if (boolean) bytes[k] = x != 0.0f;
        else std::memcpy(bytes.data() + k * sizeof(float), &x, sizeof(float));
    });
    const auto [B, H, L, S] = compact.extents;
    const auto stride = [](std::size_t extent, std::size_t step) { return extent == 1 ? 0 : std::ptrdiff_t(step); };
    return {boolean ? ScoreMask::Kind::boolean : ScoreMask::Kind::additive,
            bytes.data(),
            stride(B, H * L * S),
            stride(H, L * S),
            stride(L, S),
            stride(S, 1)};
}

}  // namespace

Element element_of(KvDtype type) {
    return type == KvDtype::bf16 ? Element::bf16 : type == KvDtype::f16 ? Element::f16 : Element::f32;
}

bool read_in_place(const View& view) {
    return elements::read_in_place(
        view, view.element == Element::f16 || view.element == Element::bf16 ? view.element : Element::f32);
}

Matrix to_matrix(const View& view) {
    const std::size_t cols = view.shape.empty() ? 1 : view.shape.back(), total = count(view);
    Matrix M(cols ? total / cols : 0, cols);
    elements::for_each_float(view, [&](float x, std::size_t k) { M.data()[k] = x; });
    return M;
}

Inputs inputs_of(const Call& c, const Shapes& s, bool decodes) {
    Inputs in;
    const OperandNames& name = c.options.names;
    if (c.X) {
        in.X = floats_of(*c.X, s.d_model, in);
        const auto weight = [&](const View& W, std::size_t cols) {
            return c.torch_weights ? floats_of(Transposed(W).view, cols, in) : floats_of(W, cols, in);
        };
        in.W_Q = weight(*c.W_Q, s.E), in.W_K = weight(*c.W_K, s.E), in.W_V = weight(*c.W_V, s.E_v);
    }
    if (c.Q) in.Q = heads_of(*c.Q, s.batch, s.heads, in);
    if (c.K && c.V && !c.X) {
        in.K = cache_of(*c.K, name.K, s, decodes, in);
        in.V = cache_of(*c.V, name.V, s, decodes, in);
    } else if (c.K && c.V) {  // the layer's projections, given to its backward
        in.K = heads_of(*c.K, 1, 1, in);
        in.V = heads_of(*c.V, 1, 1, in);
    }
    if (c.mask) in.mask = mask_in_place(*c.mask, s);
    if (c.mask && !in.mask) in.mask = mask_copy(*c.mask, s, in);
    if (c.dO) in.dO = heads_of(*c.dO, s.batch, s.heads, in);
    if (c.O) in.O = heads_of(*c.O, s.batch, s.heads, in);
    if (c.weights) in.weights = heads_of(*c.weights, s.batch, s.heads, in);
    if (c.log_sum_exp) in.log_sum_exp = heads_of(*c.log_sum_exp, s.batch, s.heads, in);
    return in;
}

Cache cache_from(const View& view, KvDtype type, const std::string& who, const std::string& name) {
    Cache cache;
    cache.type = type;
    const std::size_t total = count(view);
    if (type == KvDtype::f32) {
        cache.floats.resize(total);
        elements::for_each_float(view, [&](float x, std::size_t k) { cache.floats[k] = x; });
        return cache;
    }
    const Rounding round{type, who, name, view.shape};
    cache.halves.resize(total);
    elements::for_each_float(view, [&](float x, std::size_t k) { cache.halves[k] = round.bits(x, k); });
    return cache;
}

std::vector<Need> conversion_buffers(const Call& c, const Shapes& s, bool decodes) {
    std::vector<Need> buffers;
    const OperandNames& name = c.options.names;
    const auto as_floats = [&](const std::string& label, const View& view) {
        if (!read_in_place(view, Element::f32))
            buffers.push_back(
                {label, {view.shape.begin(), view.shape.end()}, " as float32 in C order (" + given_as(view) + ")"});
    };
    if (c.X) {
        as_floats(name.X, *c.X);
        for (const auto& [label, W] : {std::pair{&name.W_Q, &*c.W_Q}, {&name.W_K, &*c.W_K}, {&name.W_V, &*c.W_V}}) {
            if (!c.torch_weights) as_floats(*label, *W);
            else if (!read_in_place(Transposed(*W).view, Element::f32))
                buffers.push_back({*label, {W->shape.begin(), W->shape.end()}, " transposed from PyTorch's layout"});
        }
    }
    if (c.Q) as_floats(name.Q, *c.Q);
    const bool kept = !c.X && decodes;
    for (const auto& [label, view] : {std::pair{&name.K, &c.K}, {&name.V, &c.V}}) {
        if (!*view) continue;
        if (c.X) as_floats(*label, **view);
        else if (!cache_in_place(**view, s.cache, kept))
            buffers.push_back(
                {*label,
                 {(*view)->shape.begin(), (*view)->shape.end()},
                 (kept ? " cached as " + to_string(s.cache) : " as float32 holding " + to_string(s.cache) + " values") +
                     " (" + given_as(**view) + ")",
                 kept && s.cache != KvDtype::f32 ? 2 : sizeof(float)});
    }
    if (c.mask && !mask_in_place(*c.mask, s)) {
        const CompactMask compact(*c.mask, s);
        buffers.push_back({name.mask + " copied for the batch",
                           {std::begin(compact.extents), std::end(compact.extents)},
                           {},
                           c.mask->element == Element::boolean ? 1 : sizeof(float)});
    }
    const std::pair<std::string, const std::optional<View>*> gradient_operands[] = {
        {name.dO, &c.dO},
        {"the forward's output", &c.O},
        {"the forward's α", &c.weights},
        {"the forward's log-sum-exp", &c.log_sum_exp}};
    for (const auto& [label, view] : gradient_operands)
        if (*view) as_floats(label, **view);
    return buffers;
}

}  // namespace attn
