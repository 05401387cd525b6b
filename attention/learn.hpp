// attention/learn.hpp — watching relevance being learned: W_Q, W_K and W_V trained by gradient
// descent on a task whose right attention is known, with the backward of attention/backward.cpp.
//
// The lesson's first confusion says relevance is not fixed in advance but learned. Here a task says
// which token each token should read: the target of token i is the embedding of its partner p(i),
// T_i = x_{p(i)}. The values start as the embeddings themselves (V = X), and O_i = Σ_j α_ij·v_j, so
// the loss L = ½‖O − T‖² falls as row i of α moves its weight to the partner: starting from queries
// and keys that attend nowhere in particular, training must move α to the cells the task wants.
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

// A task: the inputs, the target, and the cell each row of α should choose.
struct Problem {
    Matrix X;                         // n×d_model
    Matrix T;                         // n×d_model: row i is the embedding of token i's partner
    std::vector<std::size_t> wanted;  // wanted[i] = p(i)
};
Problem make_problem(Task task, std::uint32_t seed);

struct Settings {
    std::size_t steps = 300;
    float learning_rate = 0.05f;  // Adam's step size
    std::uint32_t seed = 1;       // the initial weights (and the retrieval task's embeddings)
    Backend backend = Backend::naive;
};

// One run of training, a step at a time: train() below runs it to the end, and the pages' live
// example steps it between redraws. The weights start as train() describes, from settings.seed.
class Trainer {
public:
    Trainer(Problem problem, const Settings& settings);
    // What the forward saw at the current weights: L = ½‖O − T‖² and α.
    struct Look {
        double loss;
        Matrix alpha;
    };
    Look look() const;
    // One step: the forward (returned, as it was before the update), the backward, Adam's update.
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

// What a run of training saw: the loss before every step and after the last, and α at the start,
// after half the steps, and at the end.
struct Run {
    std::vector<double> loss;  // steps + 1 values
    Matrix alpha_start, alpha_middle, alpha_end;
    std::size_t middle_step;
};
Run train(const Problem& problem, const Settings& settings);

// L = ½‖O − T‖², summed in double.
double squared_error(const Matrix& O, const Matrix& T);

std::string to_string(Task task);  // "sentence", "retrieval"

}  // namespace attn::learn
