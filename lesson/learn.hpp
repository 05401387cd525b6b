// lesson/learn.hpp — watching relevance being learned: W_Q and W_K trained by gradient descent on
// a task whose right attention is known, with the backward of attention/backward.cpp.
//
// The lesson's first confusion says relevance is not fixed in advance but learned. Here a task says
// which token each token should read, and the target of token i is the value of its partner p(i):
// T_i = v_{p(i)}, V = X·W_V. W_V stays fixed, so the values cannot move: O_i = Σ_j α_ij·v_j equals
// T_i only when row i of α puts all its weight on p(i) (the values are affinely independent), and
// L = ½‖O − T‖² falls as training moves α there. Training W_V too (Settings::train_values) lets the
// values move toward the targets as well, and the error is then shared between α and W_V.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attention/attention.hpp"

namespace attn::learn {

enum class Task {
    sentence,   // the lesson's 猫 坐 地毯: 猫 reads 坐, 坐 reads 猫, 地毯 reads 坐
    retrieval,  // 8 tokens with random embeddings, each to find the one partner a shuffle gave it
};
// The task `attn learn` and the pages' training run unless told otherwise.
inline constexpr Task default_task = Task::sentence;

// A task: the inputs, the values' projection, the target, and the cell each row of α should choose.
struct Problem {
    Matrix X;                         // n×d_model: the tokens' embeddings
    Matrix W_V;                       // d_model×d_v: V = X·W_V, where training starts (and stays, by default)
    std::size_t d_k = 0;              // the width of the queries and keys W_Q and W_K make
    Matrix T;                         // n×d_v: row i is the value of token i's partner, T_i = v_{p(i)}
    std::vector<std::size_t> wanted;  // wanted[i] = p(i)
};
// sentence: the worked example's X and W_V (lesson/worked_example.hpp), d_model = 4, d_k = d_v = 3.
// retrieval: 8 random embeddings, W_V = I, d_model = d_k = d_v = 8; the seed draws them and the shuffle.
Problem make_problem(Task task, std::uint32_t seed);

struct Settings {
    std::size_t steps = 300;
    float learning_rate = 0.05f;  // Adam's step size
    std::uint32_t seed = 1;       // the initial weights (and the retrieval task's embeddings)
    Backend backend = Backend::naive;
    bool train_values = false;  // W_V trained too; by default only W_Q and W_K are
};

// One run of training, a step at a time: train() below runs it to the end, and the pages' live
// example steps it between redraws. W_Q and W_K start small and random from settings.seed (every
// score near 0, α near uniform: attending nowhere in particular); W_V starts as the problem's.
class Trainer {
public:
    Trainer(Problem problem, const Settings& settings);
    // What the forward saw at the current weights: L = ½‖O − T‖² and α.
    struct Look {
        double loss;
        Matrix alpha;
    };
    Look look() const;
    // One step: the forward (returned, as it was before the update), the backward, Adam's update of
    // W_Q and W_K (and of W_V when settings.train_values).
    Look step();
    std::size_t steps_taken() const { return steps_; }
    const Problem& problem() const { return problem_; }
    const Matrix& W_Q() const { return W_Q_; }
    const Matrix& W_K() const { return W_K_; }
    const Matrix& W_V() const { return W_V_; }

private:
    // Adam for one weight matrix: running averages of the gradient and of its square (learn.cpp).
    struct Adam {
        Matrix m, v;                           // the averages, the shape of the weight
        float beta1_t = 1.0f, beta2_t = 1.0f;  // β₁ᵗ and β₂ᵗ
        void step(Matrix& W, const Matrix& dW, float rate);
    };
    Problem problem_;
    Settings settings_;
    Matrix W_Q_, W_K_, W_V_;
    Adam adam_q_, adam_k_, adam_v_;
    std::size_t steps_ = 0;
};

// What a run of training saw: the loss before every step and after the last, α at the start, after
// half the steps, and at the end, and W_V at the end (the problem's own unless settings.train_values).
struct Run {
    std::vector<double> loss;  // steps + 1 values
    Matrix alpha_start, alpha_middle, alpha_end;
    std::size_t middle_step;
    Matrix W_V_end;
};
Run train(const Problem& problem, const Settings& settings);

// α's weight on the cell each row wants, alpha(i, wanted[i]): how far training has taken each row.
std::vector<float> wanted_weights(const Matrix& alpha, const Problem& problem);

// Their mean: one number for how far training took α.
double mean_wanted_weight(const Matrix& alpha, const Problem& problem);

// Two runs' mean wanted weights compared. Means within `reach_margin` of each other count as α having
// moved about as far in both; beyond it, less or further.
inline constexpr double reach_margin = 0.01;
enum class Reach { less, about_as_far, further };
Reach compare_reach(double mean, double other_mean);

// How far W_V moved in a run, relative to where it started: ‖W_V,end − W_V‖ / ‖W_V‖ (0 when fixed).
double values_moved(const Problem& problem, const Run& run);

// L = ½‖O − T‖², summed in double.
double squared_error(const Matrix& O, const Matrix& T);

// The weights a run with these settings trains, by name: "W_Q", "W_K", and "W_V" when train_values.
std::vector<std::string> trained_weights(const Settings& settings);

std::string to_string(Task task);  // "sentence", "retrieval"

}  // namespace attn::learn
