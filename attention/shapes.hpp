// attention/shapes.hpp — the first step of the one path (attention/run.cpp): a call's shapes read from
// its description and checked, every shape rule in one place (attention/shapes.cpp). Internal to
// attention/.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attention/call.hpp"

namespace attn {

// The sizes of one call: B (the leading dimensions N... as one), H, H_kv, G = H / H_kv, L, S, E, E_v;
// for the layer also d_model (B = H = H_kv = 1, L = S = n, E = d_k, E_v = d_v).
struct Shapes {
    std::size_t batch = 1, heads = 1, kv_heads = 1, group = 1, L = 0, S = 0, E = 0, E_v = 0, d_model = 0;
    bool layer = false;                // steps 1–2 first, from X and the weights
    std::vector<std::size_t> leading;  // N..., as the queries give them
    std::size_t rank = 2;              // of the queries (2: one head; 3: (H, L, E); more: N... too)
    KvDtype cache = KvDtype::f32;      // the type the keys and values are read in
    const char* who = "";              // how messages name the call: "scaled_dot_product_attention", …

    std::size_t count() const { return batch * heads; }        // query heads
    std::size_t kv_count() const { return batch * kv_heads; }  // key/value heads
    // A result's shape in the rank of its operand: N..., then (heads, rows, cols) as far as the rank has room.
    std::vector<std::size_t> of(std::size_t heads, std::size_t rows, std::size_t cols) const;
};

// Every shape of the call, checked (std::invalid_argument from shapes.who, naming the operands with
// their shapes); the options that constrain them (dtype, the cache's type, explicit_scale) too.
Shapes shapes_of(const Call& call);

// The layer's weights, each 2-D: W_Q and W_K d_model × d_k (d_k ≥ 1), W_V d_model × d_v (given
// d × d_model, nn.Linear's layout, with torch_weights). DModelMismatch when their d_model differ,
// else std::invalid_argument from SingleHeadAttention.
void check_weight_shapes(const View& W_Q, const View& W_K, const View& W_V, const OperandNames& names,
                         bool torch_weights);

// The strides of `view` read as an array of shape `target` (NumPy's broadcast: the dimensions aligned
// from the right, each 1 or equal to the target's, missing ones read as 1), in elements, 0 along a
// repeated dimension; empty when it does not broadcast.
std::vector<std::ptrdiff_t> broadcast(const View& view, std::span<const std::size_t> target);

// The scores' shape of the call: (N..., H, L, S), as many dimensions as the queries have.
std::vector<std::size_t> scores_shape(const Shapes& shapes);

}  // namespace attn
