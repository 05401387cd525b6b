// attention/learn.cpp — a few hundred steps of training, written out: forward, loss, backward
// (attention/backward.cpp: the same gradients its tests check against finite differences and
// PyTorch), and Adam's update of W_Q, W_K and W_V.
#include "attention/learn.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

#include "attention/worked_example.hpp"

namespace attn::learn {

namespace {

// T_i = x_{p(i)}: row i is the embedding of token i's partner.
Matrix partner_rows(const Matrix& X, const std::vector<std::size_t>& wanted) {
    Matrix T(X.rows(), X.cols());
    for (std::size_t i = 0; i < X.rows(); ++i)
        std::copy(X.row(wanted[i]).begin(), X.row(wanted[i]).end(), T.row(i).begin());
    return T;
}

// Draws of our own from std::mt19937, whose sequence the standard fixes: std::uniform_real_distribution
// and std::shuffle are left to each library, and a seed must give the same run with every compiler
// (and in the WebAssembly build, whose library is another).
float uniform(std::mt19937& rng, float lo, float hi) {
    return lo + (hi - lo) * float(rng() >> 8) * (1.0f / 16777216.0f);  // 24 random bits: [0, 1) exactly in float
}

Matrix uniform_matrix(std::size_t rows, std::size_t cols, std::mt19937& rng, float lo, float hi) {
    Matrix M(rows, cols);
    for (std::size_t k = 0; k < M.size(); ++k) M.data()[k] = uniform(rng, lo, hi);
    return M;
}

}  // namespace

// Adam: running averages of the gradient and of its square, each corrected for starting at 0, and a
// step of about `rate` along the gradient's sign for every entry, shorter where the gradient has been
// noisy. β₁ᵗ and β₂ᵗ are kept by multiplication (the same bits with every libm).
void Trainer::Adam::step(Matrix& W, const Matrix& dW, float rate) {
    constexpr float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
    if (m.empty()) m = v = Matrix(W.rows(), W.cols());
    beta1_t *= beta1;
    beta2_t *= beta2;
    const float unbias1 = 1.0f - beta1_t, unbias2 = 1.0f - beta2_t;
    for (std::size_t k = 0; k < W.size(); ++k) {
        const float g = dW.data()[k];
        m.data()[k] = beta1 * m.data()[k] + (1 - beta1) * g;      // m ← β₁·m + (1 − β₁)·g
        v.data()[k] = beta2 * v.data()[k] + (1 - beta2) * g * g;  // v ← β₂·v + (1 − β₂)·g²
        W.data()[k] -= rate * (m.data()[k] / unbias1) / (std::sqrt(v.data()[k] / unbias2) + epsilon);
    }
}

Problem make_problem(Task task, std::uint32_t seed) {
    if (task == Task::sentence) {
        const std::vector<std::size_t> wanted = {1, 0, 1};  // 猫 → 坐, 坐 → 猫, 地毯 → 坐
        return {worked_example::X(), partner_rows(worked_example::X(), wanted), wanted};
    }
    std::mt19937 rng(seed);
    std::vector<std::size_t> wanted = {0, 1, 2, 3, 4, 5, 6, 7};
    for (std::size_t i = wanted.size() - 1; i > 0; --i) std::swap(wanted[i], wanted[rng() % (i + 1)]);  // Fisher–Yates
    const Matrix X = uniform_matrix(8, 8, rng, -1.0f, 1.0f);
    return {X, partner_rows(X, wanted), wanted};
}

double squared_error(const Matrix& O, const Matrix& T) {
    double sum = 0.0;
    for (std::size_t k = 0; k < O.size(); ++k) {
        const double e = double(O.data()[k]) - double(T.data()[k]);
        sum += 0.5 * e * e;
    }
    return sum;
}

Trainer::Trainer(Problem problem, const Settings& settings) : problem_(std::move(problem)), settings_(settings) {
    const std::size_t d_model = problem_.X.cols();  // d_k = d_v = d_model
    std::mt19937 rng(settings.seed);
    // W_Q and W_K small and random: every score near 0, so every row of α near uniform, attending
    // nowhere in particular. W_V starts as the identity, V = X: each value starts as its own token's
    // embedding, so "read your partner" means one cell of α (any W_V that swapped the values around
    // would let other cells give the same O; starting from V = X, training has no reason to go there).
    W_Q_ = uniform_matrix(d_model, d_model, rng, -0.1f, 0.1f);
    W_K_ = uniform_matrix(d_model, d_model, rng, -0.1f, 0.1f);
    W_V_ = Matrix(d_model, d_model);
    for (std::size_t k = 0; k < d_model; ++k) W_V_(k, k) = 1.0f;
}

Trainer::Look Trainer::look() const {
    const AttentionOptions options{.backend = settings_.backend};
    const auto projections = SingleHeadAttention(W_Q_, W_K_, W_V_).project(problem_.X, options);
    const AttentionResult result = scaled_dot_product_attention(projections.Q, projections.K, projections.V, options);
    return {squared_error(result.output, problem_.T), result.weights};  // L = ½‖O − T‖²
}

Trainer::Look Trainer::step() {
    const AttentionOptions options{.backend = settings_.backend};
    const SingleHeadAttention layer(W_Q_, W_K_, W_V_);
    const auto projections = layer.project(problem_.X, options);
    const AttentionResult result = scaled_dot_product_attention(projections.Q, projections.K, projections.V, options);
    Matrix dO = result.output;  // dO = ∂L/∂O = O − T
    for (std::size_t k = 0; k < dO.size(); ++k) dO.data()[k] -= problem_.T.data()[k];
    const auto g = layer.backward(problem_.X, projections, result, dO, options);  // attention/backward.cpp
    adam_q_.step(W_Q_, g.dW_Q, settings_.learning_rate);                          // W ← W − η·(Adam's direction)
    adam_k_.step(W_K_, g.dW_K, settings_.learning_rate);
    adam_v_.step(W_V_, g.dW_V, settings_.learning_rate);
    ++steps_;
    return {squared_error(result.output, problem_.T), result.weights};  // L = ½‖O − T‖², before the update
}

Run train(const Problem& p, const Settings& settings) {
    Trainer trainer(p, settings);
    Run run;
    run.middle_step = settings.steps / 2;
    for (std::size_t step = 0; step < settings.steps; ++step) {
        Trainer::Look seen = trainer.step();
        run.loss.push_back(seen.loss);
        if (step == 0) run.alpha_start = seen.alpha;
        if (step == run.middle_step) run.alpha_middle = std::move(seen.alpha);
    }
    Trainer::Look end = trainer.look();
    run.loss.push_back(end.loss);
    if (settings.steps == 0) run.alpha_start = run.alpha_middle = end.alpha;
    run.alpha_end = std::move(end.alpha);
    return run;
}

std::string to_string(Task task) { return task == Task::sentence ? "sentence" : "retrieval"; }

}  // namespace attn::learn
