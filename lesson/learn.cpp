// lesson/learn.cpp — a few hundred steps of training, written out: forward, loss, backward
// (attention/backward.cpp: the same gradients its tests check against finite differences and
// PyTorch), and Adam's update of W_Q and W_K (and of W_V when asked).
#include "lesson/learn.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

#include "lesson/worked_example.hpp"
#include "matrix/ops.hpp"

namespace attn::learn {

namespace {

// T_i = v_{p(i)}: row i is the value of token i's partner.
Matrix partner_rows(const Matrix& V, const std::vector<std::size_t>& wanted) {
    Matrix T(V.rows(), V.cols());
    for (std::size_t i = 0; i < V.rows(); ++i)
        std::copy(V.row(wanted[i]).begin(), V.row(wanted[i]).end(), T.row(i).begin());
    return T;
}

Matrix identity(std::size_t n) {
    Matrix I(n, n);
    for (std::size_t k = 0; k < n; ++k) I(k, k) = 1.0f;
    return I;
}

// The task put together: V = X·W_V, and T_i = v_{p(i)}.
Problem with_targets(Matrix X, Matrix W_V, std::size_t d_k, std::vector<std::size_t> wanted) {
    Matrix T = partner_rows(matmul(X, W_V), wanted);
    return {std::move(X), std::move(W_V), d_k, std::move(T), std::move(wanted)};
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
    if (task == Task::sentence)  // 猫 → 坐, 坐 → 猫, 地毯 → 坐; d_k = 3, as W_V's d_v
        return with_targets(worked_example::X(), worked_example::W_V(), 3, {1, 0, 1});
    std::mt19937 rng(seed);
    std::vector<std::size_t> wanted = {0, 1, 2, 3, 4, 5, 6, 7};
    for (std::size_t i = wanted.size() - 1; i > 0; --i) std::swap(wanted[i], wanted[rng() % (i + 1)]);  // Fisher–Yates
    Matrix X = uniform_matrix(8, 8, rng, -1.0f, 1.0f);
    return with_targets(std::move(X), identity(8), 8, std::move(wanted));  // V = X
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
    const std::size_t d_model = problem_.X.cols(), d_k = problem_.d_k;
    std::mt19937 rng(settings.seed);
    // W_Q and W_K small and random: every score near 0, so every row of α near uniform, attending
    // nowhere in particular. W_V starts as the problem's, whose values the targets are made of.
    W_Q_ = uniform_matrix(d_model, d_k, rng, -0.1f, 0.1f);
    W_K_ = uniform_matrix(d_model, d_k, rng, -0.1f, 0.1f);
    W_V_ = problem_.W_V;
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
    if (settings_.train_values) adam_v_.step(W_V_, g.dW_V, settings_.learning_rate);
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
    run.W_V_end = trainer.W_V();
    return run;
}

std::vector<float> wanted_weights(const Matrix& alpha, const Problem& problem) {
    std::vector<float> weights;
    for (std::size_t i = 0; i < problem.wanted.size(); ++i) weights.push_back(alpha(i, problem.wanted[i]));
    return weights;
}

double mean_wanted_weight(const Matrix& alpha, const Problem& problem) {
    const std::vector<float> weights = wanted_weights(alpha, problem);
    double sum = 0;
    for (float w : weights) sum += w;
    return sum / double(weights.size());
}

Reach compare_reach(double mean, double other_mean) {
    if (std::abs(mean - other_mean) <= reach_margin) return Reach::about_as_far;
    return mean < other_mean ? Reach::less : Reach::further;
}

double values_moved(const Problem& problem, const Run& run) {
    double moved = 0, size = 0;  // ‖W_V,end − W_V‖² and ‖W_V‖², in double
    for (std::size_t k = 0; k < problem.W_V.size(); ++k) {
        const double start = problem.W_V.data()[k], end = run.W_V_end.data()[k];
        moved += (end - start) * (end - start);
        size += start * start;
    }
    return std::sqrt(moved / size);
}

std::vector<std::string> trained_weights(const Settings& settings) {
    std::vector<std::string> names = {"W_Q", "W_K"};
    if (settings.train_values) names.push_back("W_V");
    return names;
}

std::string to_string(Task task) { return task == Task::sentence ? "sentence" : "retrieval"; }

}  // namespace attn::learn
