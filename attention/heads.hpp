// attention/heads.hpp — many heads at once. Each head is the single head of attention.hpp, run on
// its own slice: multi-head attention splits d_model into h heads of d_k = d_model / h (the lesson's
// confusion 4), and nothing in one head's chain reads another head's numbers.
//
// Shapes follow PyTorch's scaled_dot_product_attention: queries (B, H, L, E), keys (B, H_kv, S, E),
// values (B, H_kv, S, E_v), the output (B, H, L, E_v). H is a multiple of H_kv: query head h reads
// key/value head h / (H / H_kv) — grouped-query attention (H_kv = 1: multi-query attention).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "attention/attention.hpp"

namespace attn {

// (batch, heads, rows, cols), row-major and contiguous: head (b, h) is a rows×cols matrix starting
// at element ((b·heads) + h)·rows·cols.
struct HeadsShape {
    std::size_t batch = 0, heads = 0, rows = 0, cols = 0;
};
std::string shape_string(const HeadsShape& s);  // "2×8×16×64"

// Heads in memory someone else owns, read in place (a NumPy array's buffer, a .npy file's values).
struct HeadsView {
    const float* data = nullptr;
    HeadsShape shape;
    const Matrix head(std::size_t b, std::size_t h) const;  // Matrix::borrow of head (b, h)
};

// Heads the library computed: the stack of matrices in one Matrix of (B·H·rows)×cols, which is the
// (B, H, rows, cols) layout itself; `shape` says how to read it.
struct Heads {
    Matrix values;
    HeadsShape shape;
    HeadsView view() const { return {values.data(), shape}; }
};

struct HeadsResult {
    Heads output;       // O (B, H, L, E_v)
    Heads log_sum_exp;  // (B, H, L, 2): L and its remainder (AttentionResult's); fused with keep_for_backward
    Heads weights;      // α (B, H, L, S) on the materialised backends (naive, simd, parallel), else empty
};

// softmax(scale·Q·Kᵀ [+ mask])·V for every head, each by the single head's chain on the backend
// asked for (Backend::naive loops over the heads, one single-head call each). The fast backends
// share the threads out over (batch, head, query block), so many small heads keep every core busy.
// options.mask is read with all four strides. Checks every shape first (std::invalid_argument
// naming the operands' shapes); with options.budget, everything is charged before any head runs.
// Each head's values are checked by its own call; of several heads that fail, the lowest one's
// error is thrown, whatever the thread count.
HeadsResult scaled_dot_product_attention(const HeadsView& Q, const HeadsView& K, const HeadsView& V,
                                         const AttentionOptions& options = {});

// Cached keys or values in the type they are stored in (options.hpp's KvDtype): floats (f32) or the
// 16-bit patterns of bfloat16 or float16 numbers, (B, H_kv, S, E) row-major and contiguous. A
// HeadsView is a float cache.
struct CacheView {
    const void* data = nullptr;
    HeadsShape shape;
    KvDtype type = KvDtype::f32;
    CacheView() = default;
    CacheView(const HeadsView& floats);  // implicit: a float cache, read in place
    CacheView(const void* data, HeadsShape shape, KvDtype type);
};

// A cache the library owns: floats rounded to `type` (nearest, ties to even), kept as floats (f32)
// or as 16-bit patterns (bf16, f16).
struct Cache {
    std::vector<float> floats;          // f32
    std::vector<std::uint16_t> halves;  // bf16, f16
    HeadsShape shape;
    KvDtype type = KvDtype::f32;
    CacheView view() const;
};
// to_cache makes one from `floats` (named `name` in its errors), refusing (std::overflow_error) a
// finite float that rounds to ±∞ in the type: from 65520 on in size for f16 (the largest float16 is
// 65504), from (2 − 2⁻⁸)·2¹²⁷ on for bf16 (matrix/bfloat16.hpp).
Cache to_cache(const HeadsView& floats, KvDtype type, const std::string& name = "the floats");
// A cache's values as floats: each element the value its bits hold (attention/cache.cpp).
Heads to_floats(const CacheView& cache);

// The same call with the keys and values read from a cache of any type: each cached element is the
// value its bits hold, and everything else is the float call's (masks, causal, GQA, scale, threads,
// budget). K and V must have the same type. Backend::fused runs the decode kernel (simd/decode.cpp:
// the keys split into blocks, their softmaxes merged) for every 16-bit cache, and for a float cache
// whose query heads have one or two rows each (L < simd::MR / 2; attention/heads.cpp says why); the
// other backends widen a 16-bit cache to floats and run their chain, so Backend::naive is the
// reference. A 16-bit cache has no backward: keep_for_backward needs an f32 cache.
HeadsResult scaled_dot_product_attention(const HeadsView& Q, const CacheView& K, const CacheView& V,
                                         const AttentionOptions& options = {});

// The backward for every head: dQ (B, H, L, E), dK (B, H_kv, S, E), dV (B, H_kv, S, E_v); a key/value
// head shared by a group of query heads receives the sum of their gradients.
struct HeadsGradients {
    Heads dQ, dK, dV;
};
HeadsGradients scaled_dot_product_attention_backward(const HeadsView& Q, const HeadsView& K, const HeadsView& V,
                                                     const HeadsResult& forward, const HeadsView& dO,
                                                     const AttentionOptions& options = {});

}  // namespace attn
