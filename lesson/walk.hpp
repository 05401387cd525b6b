// lesson/walk.hpp — the whole worked example computed once, as plain data: the traced chain and every
// demo the walk shows beside it, the backward walk and the bfloat16 walk. `attn walk` prints these,
// and lesson/json.hpp writes them for Python, the WebAssembly page and `attn walk --format json`;
// none of them computes a demo of its own.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "lesson/experiments.hpp"
#include "lesson/fused_walk.hpp"
#include "lesson/sentences.hpp"

namespace attn::lesson {

// Step 5 written out for one row of S': its maximum, the e^(S' − m) and their sum.
struct SoftmaxRow {
    std::size_t row = 0;  // 0-based
    experiments::SoftmaxWrittenOut written_out;
};

// Exercise 5 for one row: o_i, v_i, o_i − v_i (and Σ_j α_ij·(v_j − v_i)), and ‖o_i − v_i‖.
struct OutputAgainstValue {
    std::size_t row = 0;  // 0-based
    experiments::OutputAgainstValue table;
};

// Confusion 4's example: the original Transformer's d_model and h, and the head width they give.
struct Heads {
    std::size_t d_model = 0, h = 0, d_k = 0;
};

struct ForwardWalk {
    AttentionOptions options;
    Matrix W_Q, W_K, W_V;
    AttentionTrace trace;
    Matrix softmax_input;  // what the softmax was given: S', masked under the causal mask

    // The entry of row 1 that step 3 writes out (S₁ⱼ = q₁·kⱼ, beside (Q·K)₁ⱼ and, in confusion 1,
    // S₁ⱼ = ‖q₁‖·‖kⱼ‖·cos θ₁ⱼ): key 2, or key 1 when n = 1.
    std::size_t column = 0;           // 0-based
    std::optional<Matrix> Q_times_K;  // step 3's remark: defined only when n = d_k

    // Confusion 1: the cosines, S₁ⱼ = ‖q₁‖·‖kⱼ‖·cos θ₁ⱼ, S from W_K = W_Q, and where each row's
    // largest score is, in S and in that S (the first also answers exercise 2).
    Matrix cosines;
    float q_norm = 0, k_norm = 0;  // ‖q₁‖ and ‖kⱼ‖
    Matrix S_with_W_K_as_W_Q;
    std::vector<std::size_t> largest_in_S, largest_with_W_K_as_W_Q;

    // Step 5: α's row sums, and the one row written out — row 1, or the last row under the causal mask,
    // where row 1 sees only itself; confusion 3 writes o of the same row as a mix of values.
    std::vector<float> weights_row_sums;
    SoftmaxRow softmax_row;

    // Confusion 2: the softmax down the columns of S', and its column and row sums.
    Matrix softmax_by_column;
    std::vector<float> by_column_column_sums, by_column_row_sums;

    // Exercise 5: row 1, and under the causal mask (where o₁ = v₁) the last row too.
    std::vector<OutputAgainstValue> exercise5;

    Heads heads;

    // Steps 3–6 as the fused kernel does them: key by key, in tiles of two, and in two merged halves.
    FusedWalk fused;
};

// The walk of `layer` on X: the lesson's (worked_example) or any other, as the pages' editable example.
ForwardWalk forward_walk(const SingleHeadAttention& layer, const Matrix& X, const AttentionOptions& options);

// The lesson's worked example.
ForwardWalk worked_example_walk(const AttentionOptions& options);

// The worked example run backwards, for L = ½‖O − T‖² with T = I (lesson/worked_example.hpp).
struct Gradient {
    const char* marker;   // its line in attention/backward.cpp: "grad 6.V"
    std::string formula;  // "dV = αᵀ·dO"
    Backward note;        // what it says; key(note) is its member in the JSON: "dV"
    const Matrix* value;  // in the BackwardWalk's `gradients`
};

struct BackwardWalk {
    AttentionOptions options;
    Matrix target;
    double loss = 0;
    BackwardTrace gradients;
    float step_size = 0;  // η of the one step of gradient descent shown at the end
    double loss_after_step = 0;
    // Every gradient, last step first, as the walk shows them (pointing into `gradients`).
    std::vector<Gradient> in_order() const;
};

BackwardWalk backward_walk(const AttentionOptions& options);

// The worked example's O once more with the products on bfloat16 (the fused kernel's bf16 mode).
struct Bf16Walk {
    Matrix Q, K, V;  // rounded to bfloat16
    Matrix output, output_f32;
    double largest_change = 0;  // max |O_bf16 − O_f32|
};

Bf16Walk bf16_walk(const AttentionOptions& options);

// How many of O's numbers, printed with `precision` decimals, differ from the float32 walk's.
std::size_t changed_at(const Bf16Walk& walk, int precision);

}  // namespace attn::lesson
