// lesson/fused_walk.hpp — steps 3–6 as the fused kernel does them, on the walk's own numbers: the
// softmax computed as the keys arrive. For one query row it keeps a running maximum m of the scores
// seen, the sum ℓ of e^(s_j − m) over them and the unnormalised output o = Σ e^(s_j − m)·v_j; when a
// key raises m, ℓ and o are rescaled by e^(m_old − m_new); at the end the row of O is o/ℓ. The same
// row taken in tiles of two keys, as the kernel takes a tile at once; then the keys split in two
// halves, each half's (m, ℓ, o), and their merge, which is exact. Everything in float32, in the
// order written here (simd/fused.cpp computes the same in base 2, tile by tile).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "matrix/matrix.hpp"

namespace attn::lesson {

// What one query row has kept after some of its keys: m, ℓ and o (m = −∞, ℓ = 0, o = 0 before any).
struct OnlineState {
    float m = 0, l = 0;
    std::vector<float> o;
};

// One step of the walk: a key, or a tile of keys, taken in.
struct KeyStep {
    std::vector<std::size_t> keys;  // 0-based
    std::vector<float> scores;      // their scores s_j (a row of S', the mask applied)
    float m_before = 0;             // m before them (−∞ before the first)
    float rescale = 0;              // e^(m_before − m): what ℓ and o were multiplied by (0 before the first)
    OnlineState after;              // m, ℓ, o once they are in
    std::vector<float> output;      // o/ℓ then: the row of O as far as these keys go
};

// The keys split in two halves, each taken in on its own, and the two states merged:
// m = max(m₁, m₂), ℓ = e^(m₁ − m)·ℓ₁ + e^(m₂ − m)·ℓ₂, o = e^(m₁ − m)·o₁ + e^(m₂ − m)·o₂.
struct Merge {
    std::vector<std::size_t> first_keys, second_keys;
    OnlineState first, second;
    float first_factor = 0, second_factor = 0;  // e^(m₁ − m), e^(m₂ − m) (0 for a half with no key)
    OnlineState merged;
    std::vector<float> output;      // o/ℓ of the merge
    double largest_difference = 0;  // from the one-pass state, over m, ℓ and every entry of o
};

struct FusedWalk {
    std::size_t row = 0;    // the row walked (0-based): the one whose maximum moves most often
    std::size_t moves = 0;  // how often it moves after the first key
    std::vector<KeyStep> one_at_a_time;
    std::vector<KeyStep> in_tiles;  // tiles of two keys
    Matrix output;                  // every row of O, each computed key by key
    double largest_difference = 0;  // max |O − step 6's O|
    Merge halves;
};

// The walk for scores S' (n×m, −∞ where the mask hides a key), values V (m×d_v) and the chain's own
// output O (step 6's), with which the fused O is compared.
FusedWalk fused_walk(const Matrix& softmax_input, const Matrix& V, const Matrix& output);

// The state after taking in `keys` of row `scores`, from `start` (the empty state when none given),
// a step at a time (a tile is one step).
KeyStep take_in(const OnlineState& start, std::span<const float> scores, const Matrix& V,
                const std::vector<std::size_t>& keys);

}  // namespace attn::lesson
