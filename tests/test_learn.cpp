// attn::learn: training W_Q, W_K and W_V with the backward's gradients moves α to the cells each task
// wants, for a fixed seed, and does so the same way every time.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "attention/learn.hpp"

using attn::Backend;
using attn::Matrix;
namespace learn = attn::learn;

namespace {

std::size_t row_argmax(const Matrix& M, std::size_t i) {
    const auto row = M.row(i);
    return std::size_t(std::max_element(row.begin(), row.end()) - row.begin());
}

}  // namespace

TEST_CASE("training moves every row's largest weight to the wanted cell, and the loss below 10% of its start",
          "[learn]") {
    const learn::Task task = GENERATE(learn::Task::sentence, learn::Task::retrieval);
    const Backend b = GENERATE(Backend::naive, Backend::simd, Backend::parallel);
    INFO(learn::to_string(task) << " on " << attn::to_string(b));
    const learn::Problem p = learn::make_problem(task, 1);
    learn::Settings settings;
    settings.backend = b;
    const learn::Run run = learn::train(p, settings);
    REQUIRE(run.loss.size() == settings.steps + 1);
    CHECK(run.loss.back() < 0.1 * run.loss.front());
    std::size_t right_at_start = 0;
    for (std::size_t i = 0; i < p.wanted.size(); ++i) {
        INFO("row " << i);
        CHECK(row_argmax(run.alpha_end, i) == p.wanted[i]);
        CHECK(run.alpha_end(i, p.wanted[i]) > 0.5f);
        right_at_start += row_argmax(run.alpha_start, i) == p.wanted[i];
        // at the start every row attends nowhere in particular: no weight far from uniform
        for (std::size_t j = 0; j < p.wanted.size(); ++j)
            CHECK(std::abs(run.alpha_start(i, j) - 1.0f / float(p.wanted.size())) < 0.05f);
    }
    CHECK(right_at_start < p.wanted.size());  // the task was not solved before training
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

TEST_CASE("the loss is ½‖O − T‖², and T is each token's partner's embedding", "[learn]") {
    const learn::Problem p = learn::make_problem(learn::Task::sentence, 1);
    CHECK(p.wanted == std::vector<std::size_t>{1, 0, 1});
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t j = 0; j < p.X.cols(); ++j) CHECK(p.T(i, j) == p.X(p.wanted[i], j));
    CHECK(learn::squared_error(Matrix{{1, 2}, {3, 4}}, Matrix{{1, 0}, {0, 4}}) == Approx(0.5 * (4 + 9)));
}
