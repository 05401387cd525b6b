// lesson/worked_example.hpp — the lesson's three-token sentence and example weights.
//
// X is the lesson's own input: rows are the embeddings of 猫 (cat), 坐 (sat), 地毯 (mat), d_model = 4.
// The lesson does not print its projection weights, so these are chosen with one decimal each, so
// that Q, K and V can be checked by hand; d_k = d_v = 3.
#pragma once

#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "matrix/matrix.hpp"

namespace attn::worked_example {

inline Matrix X() {
    return {{1.0f, 0.5f, -0.2f, 0.8f},   // 猫
            {0.3f, -0.6f, 1.2f, 0.1f},   // 坐
            {0.7f, 0.9f, 0.4f, -0.5f}};  // 地毯
}

inline Matrix W_Q() { return {{0.5f, -0.2f, 0.8f}, {0.9f, 0.4f, -0.3f}, {-0.6f, 1.0f, 0.2f}, {0.3f, 0.1f, 0.7f}}; }

inline Matrix W_K() { return {{0.7f, 0.3f, -0.5f}, {0.2f, 0.9f, 0.4f}, {-0.4f, 0.6f, 1.1f}, {0.8f, -0.2f, 0.3f}}; }

inline Matrix W_V() { return {{1.0f, 0.0f, 0.5f}, {0.0f, 1.0f, -0.5f}, {0.5f, -0.5f, 1.0f}, {-0.5f, 0.5f, 0.0f}}; }

inline SingleHeadAttention layer() { return {W_Q(), W_K(), W_V()}; }

// One traced forward pass of the example: every intermediate, for printing and checking.
inline AttentionTrace trace(const AttentionOptions& options = {}) { return trace_forward(layer(), X(), options); }

// The backward's example (attn walk --grad): a loss L = ½‖O − T‖² with the target T = I, token i's
// output wanted as the i-th unit vector; its gradient is dO = O − T.
inline Matrix target() { return {{1.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 0.0f}, {0.0f, 0.0f, 1.0f}}; }

inline double loss(const Matrix& O) {  // ½ Σ_ij (O_ij − T_ij)², summed in double
    const Matrix T = target();
    double sum = 0.0;
    for (std::size_t k = 0; k < O.size(); ++k)
        sum += 0.5 * double(O.data()[k] - T.data()[k]) * (O.data()[k] - T.data()[k]);
    return sum;
}

inline Matrix loss_gradient(const Matrix& O) {  // dO = ∂L/∂O = O − T
    Matrix dO = target();
    for (std::size_t k = 0; k < O.size(); ++k) dO.data()[k] = O.data()[k] - dO.data()[k];
    return dO;
}

// The example's backward for that loss: every gradient, for printing and checking.
inline BackwardTrace backward_trace(const AttentionOptions& options = {}) {
    return trace_backward(layer(), X(), loss_gradient(trace(options).output), options);
}

// L after one step of gradient descent on the three weights, W ← W − η·dW: what training does with
// the gradients, once.
inline double loss_after_step(float eta, const AttentionOptions& options = {}) {
    const BackwardTrace g = backward_trace(options);
    const auto step = [eta](Matrix W, const Matrix& dW) {
        for (std::size_t k = 0; k < W.size(); ++k) W.data()[k] -= eta * dW.data()[k];
        return W;
    };
    const SingleHeadAttention moved(step(W_Q(), g.dW_Q), step(W_K(), g.dW_K), step(W_V(), g.dW_V));
    return loss(moved.forward(X(), options).output);
}

inline std::vector<std::string> tokens_zh() { return {"猫", "坐", "地毯"}; }
inline std::vector<std::string> tokens_en() { return {"猫 cat", "坐 sat", "地毯 mat"}; }

}  // namespace attn::worked_example
