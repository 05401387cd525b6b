// attn::learn: training W_Q and W_K with the backward's gradients, W_V fixed, moves α onto the cells
// each task wants; training W_V too moves α less. For a fixed seed, the same run every time.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "lesson/learn.hpp"
#include "lesson/worked_example.hpp"
#include "matrix/ops.hpp"

using attn::Backend;
using attn::Matrix;
namespace learn = attn::learn;

namespace {

std::size_t row_argmax(const Matrix& M, std::size_t i) {
    const auto row = M.row(i);
    return std::size_t(std::max_element(row.begin(), row.end()) - row.begin());
}

// What the default run (300 steps, lr 0.05, seed 1) brings every wanted cell of α to, at least.
float promised_weight(learn::Task) { return 0.95f; }

}  // namespace

TEST_CASE("the defaults are 300 steps, lr 0.05, seed 1, and only W_Q and W_K trained", "[learn]") {
    const learn::Settings s;
    CHECK(s.steps == 300);
    CHECK(s.learning_rate == 0.05f);
    CHECK(s.seed == 1);
    CHECK_FALSE(s.train_values);
}

TEST_CASE("with W_V fixed, training puts every wanted cell of α at the promised weight and the loss near 0",
          "[learn]") {
    const learn::Task task = GENERATE(learn::Task::sentence, learn::Task::retrieval);
    const Backend b = GENERATE(Backend::naive, Backend::simd, Backend::parallel);
    INFO(learn::to_string(task) << " on " << attn::to_string(b));
    const learn::Problem p = learn::make_problem(task, 1);
    learn::Settings settings;
    settings.backend = b;
    const learn::Run run = learn::train(p, settings);
    REQUIRE(run.loss.size() == settings.steps + 1);
    CHECK(run.loss.back() < 0.01 * run.loss.front());
    CHECK(run.W_V_end == p.W_V);  // the values never moved
    const std::vector<float> reached = learn::wanted_weights(run.alpha_end, p);
    std::size_t right_at_start = 0;
    for (std::size_t i = 0; i < p.wanted.size(); ++i) {
        INFO("row " << i << ": " << reached[i]);
        CHECK(reached[i] == run.alpha_end(i, p.wanted[i]));
        CHECK(reached[i] >= promised_weight(task));
        right_at_start += row_argmax(run.alpha_start, i) == p.wanted[i];
        // at the start every row attends nowhere in particular: no weight far from uniform
        for (std::size_t j = 0; j < p.wanted.size(); ++j)
            CHECK(std::abs(run.alpha_start(i, j) - 1.0f / float(p.wanted.size())) < 0.05f);
    }
    CHECK(right_at_start < p.wanted.size());  // the task was not solved before training
}

TEST_CASE("training W_V too: W_V moves, takes up part of the error, and α moves less", "[learn]") {
    const learn::Task task = GENERATE(learn::Task::sentence, learn::Task::retrieval);
    INFO(learn::to_string(task));
    const learn::Problem p = learn::make_problem(task, 1);
    learn::Settings fixed, values;
    values.train_values = true;
    const learn::Run alone = learn::train(p, fixed), shared = learn::train(p, values);
    CHECK(shared.W_V_end != p.W_V);
    CHECK(learn::values_moved(p, alone) == 0.0);
    CHECK(learn::values_moved(p, shared) > 0.05);
    CHECK(shared.loss.back() < 0.01 * shared.loss.front());
    const auto a = learn::wanted_weights(alone.alpha_end, p), s = learn::wanted_weights(shared.alpha_end, p);
    // the claim `attn learn --train-values` prints: α's weight on the wanted cells, summed, is less
    CHECK(std::accumulate(s.begin(), s.end(), 0.0) < std::accumulate(a.begin(), a.end(), 0.0));
    for (std::size_t i = 0; i < p.wanted.size(); ++i) CHECK(row_argmax(shared.alpha_end, i) == p.wanted[i]);
}

TEST_CASE("a seed gives the same run every time; another seed another start", "[learn]") {
    const learn::Problem p = learn::make_problem(learn::Task::retrieval, 7);
    learn::Settings settings;
    settings.steps = 40;
    settings.seed = 7;
    const learn::Run a = learn::train(p, settings), b = learn::train(p, settings);
    CHECK(a.loss == b.loss);
    CHECK(a.alpha_end == b.alpha_end);
    settings.seed = 8;
    CHECK(learn::train(p, settings).loss.front() != a.loss.front());
    CHECK(learn::make_problem(learn::Task::retrieval, 8).wanted != p.wanted);
}

TEST_CASE("the sentence task has the lesson's sizes, and T is each token's partner's value", "[learn]") {
    const learn::Problem p = learn::make_problem(learn::Task::sentence, 1);
    CHECK(p.wanted == std::vector<std::size_t>{1, 0, 1});
    CHECK(p.X == attn::worked_example::X());
    CHECK(p.W_V == attn::worked_example::W_V());
    CHECK((p.X.cols() == 4 && p.d_k == 3 && p.W_V.cols() == 3));
    const Matrix V = attn::matmul(p.X, p.W_V);
    // the three values are not on one line, so O_i = T_i only when row i of α is one-hot on p(i)
    const float a[3] = {V(1, 0) - V(0, 0), V(1, 1) - V(0, 1), V(1, 2) - V(0, 2)},
                b[3] = {V(2, 0) - V(0, 0), V(2, 1) - V(0, 1), V(2, 2) - V(0, 2)};
    const float cross[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
    CHECK(std::sqrt(cross[0] * cross[0] + cross[1] * cross[1] + cross[2] * cross[2]) > 0.1f);
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t j = 0; j < 3; ++j) CHECK(p.T(i, j) == V(p.wanted[i], j));
    const learn::Trainer trainer(p, learn::Settings{});
    CHECK((trainer.W_Q().rows() == 4 && trainer.W_Q().cols() == 3 && trainer.W_K().cols() == 3));
    CHECK(trainer.W_V() == p.W_V);
    const learn::Problem r = learn::make_problem(learn::Task::retrieval, 1);
    CHECK((r.X.rows() == 8 && r.X.cols() == 8 && r.d_k == 8 && r.W_V.cols() == 8 && r.T.cols() == 8));
    CHECK(learn::squared_error(Matrix{{1, 2}, {3, 4}}, Matrix{{1, 0}, {0, 4}}) == Approx(0.5 * (4 + 9)));
}

TEST_CASE("values_moved is ‖W_V,end − W_V‖ / ‖W_V‖", "[learn]") {
    learn::Problem p;
    p.W_V = Matrix{{3, 0}, {0, 4}};  // ‖W_V‖ = 5
    learn::Run run;
    run.W_V_end = Matrix{{3, 1}, {0, 4}};
    CHECK(learn::values_moved(p, run) == Approx(0.2));
}

TEST_CASE("wanted_weights reads α at each row's wanted cell", "[learn]") {
    learn::Problem p;
    p.wanted = {2, 0};
    const Matrix alpha{{0.1f, 0.2f, 0.7f}, {0.6f, 0.3f, 0.1f}};
    CHECK(learn::wanted_weights(alpha, p) == std::vector<float>{0.7f, 0.6f});
}

TEST_CASE("mean_wanted_weight averages the wanted cells; compare_reach counts means within the margin as equal",
          "[learn]") {
    learn::Problem p;
    p.wanted = {1, 0};
    const Matrix alpha{{0.3f, 0.7f}, {0.5f, 0.5f}};
    CHECK(learn::mean_wanted_weight(alpha, p) == Approx(0.6));
    CHECK(learn::compare_reach(0.80, 0.80 + learn::reach_margin / 2) == learn::Reach::about_as_far);
    CHECK(learn::compare_reach(0.80 + learn::reach_margin / 2, 0.80) == learn::Reach::about_as_far);
    CHECK(learn::compare_reach(0.80, 0.80 + 2 * learn::reach_margin) == learn::Reach::less);
    CHECK(learn::compare_reach(0.80 + 2 * learn::reach_margin, 0.80) == learn::Reach::further);
}
