// attention/inputs.hpp — a call's operands as the kernels read them: float32 in C order, the keys and
// values in the cache's type, the mask through four strides. A view already so is read in place;
// any other is converted, into buffers the plan has named and charged (conversion_buffers, listed by
// the same rules). Internal to attention/.
#pragma once

#include <optional>
#include <vector>

#include "attention/heads.hpp"
#include "attention/shapes.hpp"

namespace attn {

struct Inputs {
    HeadsView Q, dO, O, weights, log_sum_exp;  // (B, H, rows, cols) floats; those the call has
    CacheView K, V;                            // (B, H_kv, S, E) and (B, H_kv, S, E_v), in shapes.cache
    std::optional<ScoreMask> mask;             // over (B, H, L, S)
    Matrix X, W_Q, W_K, W_V;                   // the layer's, the weights as the lesson writes them (d_model × d)

    // What was converted, and what the views above then read (each element's storage stays where it
    // is when these grow).
    std::vector<Matrix> floats;
    std::vector<Cache> caches;
    std::vector<std::vector<unsigned char>> masks;
};

// The call's operands read or converted. The keys and values are kept in the cache's type when the
// forward `decodes` (the decode kernel reads 16-bit numbers); every other kernel reads floats, the
// cache's values widened. A finite float that the cache's type would hold as ±∞ is refused
// (std::overflow_error, naming its place).
Inputs inputs_of(const Call& call, const Shapes& shapes, bool decodes);

// A cache of `type` made from any view (its values rounded, nearest, ties to even), refusing
// (std::overflow_error from `who`) a finite value it would hold as ±∞; its shape left to the caller.
Cache cache_from(const View& view, KvDtype type, const std::string& who, const std::string& name);

// The element a cache of `type` holds: float32, bfloat16 or float16.
Element element_of(KvDtype type);

// The buffers inputs_of allocates for this call (none when every view is read in place), by shape.
std::vector<Need> conversion_buffers(const Call& call, const Shapes& shapes, bool decodes);

}  // namespace attn
