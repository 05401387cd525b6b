// The claims of the exercises and of the variance argument, asserted with fixed seeds.
#include <catch2/catch.hpp>

#include <cmath>

#include "lesson/experiments.hpp"
#include "lesson/worked_example.hpp"
#include "run_attn.hpp"

namespace ex = attn::experiments;
using attn::Matrix;
using attn::Scale;
using Catch::Contains;

TEST_CASE("row statistics of uniform, one-hot and two-point rows", "[experiments]") {
    const std::vector<float> uniform(8, 0.125f), one_hot = {0, 1, 0, 0}, two = {0.25f, 0.75f};
    CHECK(ex::row_stats(uniform).entropy == Approx(std::log(8.0)));
    CHECK(ex::row_stats(uniform).max_weight == 0.125);
    CHECK(ex::row_stats(one_hot).entropy == 0.0);
    CHECK(ex::row_stats(one_hot).jacobian_norm == Approx(0.0).margin(1e-12));
    // J = [[p(1−p), −p(1−p)], [−p(1−p), p(1−p)]]: ‖J‖_F = 2·p(1−p)
    CHECK(ex::row_stats(two).jacobian_norm == Approx(2 * 0.25 * 0.75));
}

TEST_CASE("exercise 1: entropy is ordered none < ÷√d_k < ÷d_k at every d_k ≥ 16", "[experiments][exercise1]") {
    const auto results = ex::scaling_experiment({16, 64, 256, 1024}, 64, 64, 1);
    REQUIRE(results.size() == 12);
    for (std::size_t k = 0; k < results.size(); k += 3) {
        INFO("d_k = " << results[k].d_k);
        REQUIRE(results[k].scale == Scale::none);
        REQUIRE(results[k + 1].scale == Scale::sqrt_dk);
        REQUIRE(results[k + 2].scale == Scale::dk);
        CHECK(results[k].mean.entropy < results[k + 1].mean.entropy);
        CHECK(results[k + 1].mean.entropy < results[k + 2].mean.entropy);
        CHECK(results[k].mean.max_weight > results[k + 1].mean.max_weight);
    }
    // no scaling at d_k = 1024 is nearly one-hot with a vanishing Jacobian; ÷d_k is nearly uniform
    CHECK(results[9].mean.max_weight > 0.9);
    CHECK(results[9].mean.jacobian_norm < 0.1);
    CHECK(results[11].mean.entropy > 0.99 * std::log(64.0));
}

TEST_CASE("exercise 1 over draws: the mean and spread of each draw's row averages", "[experiments][exercise1]") {
    const std::vector<std::size_t> dims = {4, 64};
    const auto one = ex::scaling_over_draws(dims, 16, 16, 1, 5);
    const auto single = ex::scaling_experiment(dims, 16, 16, 5);
    REQUIRE(one.size() == single.size());
    for (std::size_t k = 0; k < one.size(); ++k) {
        CHECK(one[k].mean.entropy == Approx(single[k].mean.entropy));
        CHECK(one[k].spread.entropy == 0.0);
    }
    const auto three = ex::scaling_over_draws(dims, 16, 16, 3, 5);
    const auto draw = [&](unsigned seed) { return ex::scaling_experiment(dims, 16, 16, seed); };
    const auto a = draw(5), b = draw(6), c = draw(7);
    for (std::size_t k = 0; k < three.size(); ++k) {
        const double x[3] = {a[k].mean.max_weight, b[k].mean.max_weight, c[k].mean.max_weight};
        const double mean = (x[0] + x[1] + x[2]) / 3;
        const double var =
            ((x[0] - mean) * (x[0] - mean) + (x[1] - mean) * (x[1] - mean) + (x[2] - mean) * (x[2] - mean)) / 3;
        CHECK(three[k].mean.max_weight == Approx(mean));
        CHECK(three[k].spread.max_weight == Approx(std::sqrt(var)).margin(1e-9));
        CHECK(three[k].spread.max_weight > 0);
    }
    CHECK_THROWS_AS(ex::scaling_over_draws(dims, 16, 16, 0, 5), std::invalid_argument);
    CHECK(three[0].draws == 3);
    // ÷√d_k: the means of 20 draws stay within 3 standard errors (what exercise 1 says); ÷ 1 falls far more
    const auto twenty = ex::scaling_over_draws({4, 16, 64, 256, 1024}, 64, 64, 20, 1);
    CHECK_FALSE(ex::scaling_trend(twenty, Scale::sqrt_dk).entropy_changes());
    CHECK(ex::scaling_trend(twenty, Scale::none).entropy_changes());
    CHECK_THROWS_AS(ex::scaling_trend(one, Scale::sqrt_dk), std::invalid_argument);  // one draw decides nothing
}

TEST_CASE("exercise 1's rule: a change beyond 3 standard errors of the difference of two means",
          "[experiments][exercise1]") {
    ex::ScalingResult a{4, Scale::sqrt_dk, {}, {}, 5}, b = a;
    a.spread.entropy = 0.2;  // population sd over 5 draws: se² = 0.04 / 4 = 0.01
    b.spread.entropy = 0.4;  // se² = 0.16 / 4 = 0.04
    CHECK(ex::entropy_change_threshold(a, b) == Approx(3 * std::sqrt(0.05)));
    a.draws = 1;
    CHECK_THROWS_AS(ex::entropy_change_threshold(a, b), std::invalid_argument);
}

TEST_CASE("exercise 2: the diagonal is not guaranteed; with W_Q = W_K no pair beats both diagonals",
          "[experiments][exercise2]") {
    const auto r = ex::diagonal_experiment(5000, 3, 2);
    CHECK(r.tied_pair_violations == 0);
    CHECK(r.independent_fraction == Approx(1.0 / 3).margin(0.03));  // independent weights: chance level
    CHECK(r.tied_fraction > r.independent_fraction + 0.2);
    CHECK(r.tied_fraction < 1.0);  // …but still not always the diagonal
}

TEST_CASE("exercise 3: score count and its memory grow with exponent exactly 2", "[experiments][exercise3]") {
    const auto points = ex::growth_experiment({40, 80, 160, 320}, attn::Backend::simd, 3);
    std::vector<double> n, scores, bytes;
    for (const auto& p : points) {
        CHECK(p.scores == p.n * p.n);
        CHECK(p.score_bytes == p.n * p.n * sizeof(float));
        CHECK(p.seconds > 0);  // measured, and only reported: timings are the benchmark's business
        n.push_back(double(p.n));
        scores.push_back(double(p.scores));
        bytes.push_back(double(p.score_bytes));
    }
    CHECK(ex::fitted_exponent(n, scores) == Approx(2.0).epsilon(1e-12));
    CHECK(ex::fitted_exponent(n, bytes) == Approx(2.0).epsilon(1e-12));
    CHECK(ex::growth_experiment({64}, attn::Backend::fused, 1)[0].score_bytes == 0);
    CHECK(ex::fitted_exponent({1, 2, 4, 8}, {3, 3 * std::pow(2, 2.5), 3 * std::pow(4, 2.5), 3 * std::pow(8, 2.5)}) ==
          Approx(2.5));
}

TEST_CASE("exercise 3 over runs: each n's median, and each run's exponent", "[experiments][exercise3]") {
    // (each call ran all its time on a core: none waited)
    const auto point = [](std::size_t n, double seconds) { return ex::GrowthPoint{n, n * n, 0, seconds, seconds}; };
    // three runs, times ∝ n², n^2.5 and n³ (exponents 2, 2.5, 3), and one run slowed at n = 20
    const std::vector<ex::GrowthRun> runs = {{point(10, 1), point(20, 4), point(40, 16)},
                                             {point(10, 1), point(20, std::pow(2, 2.5)), point(40, std::pow(4, 2.5))},
                                             {point(10, 1), point(20, 8), point(40, 64)}};
    const auto medians = ex::median_of_runs(runs);
    CHECK(medians[1].seconds == std::pow(2, 2.5));
    CHECK(medians[2].seconds == std::pow(4, 2.5));
    const ex::ExponentSpread e = ex::time_exponents(runs);
    CHECK(e.lowest == Approx(2.0));
    CHECK(e.median == Approx(2.5));
    CHECK(e.highest == Approx(3.0));
    CHECK(ex::growth_verdict(e, ex::Busy{}) == ex::GrowthVerdict::undecided);
    // At n = 40 the runs took 16 to 64: with log n at ln 10, ln 20, ln 40, that n's leverage on a slope
    // is ln 2 / (2·ln²2), so a 4× scatter alone could move an exponent by ln 4 / (2·ln 2) = 1.
    const ex::Busy busy = ex::how_busy(runs);
    CHECK((busy.n == 40 && busy.fastest == 16 && busy.slowest == 64));
    CHECK(busy.exponent_shift == Approx(1.0));
    CHECK(busy.waited == 0);
    CHECK(ex::growth_verdict(e, busy) == ex::GrowthVerdict::too_busy);
    const auto measured = ex::growth_runs({16, 32}, attn::Backend::simd, 3);
    REQUIRE(measured.size() == 3);
    for (const auto& run : measured)
        CHECK((run.size() == 2 && run[1].n == 32 && run[1].seconds > 0 && run[1].ran >= 0 &&
               run[1].ran <= run[1].seconds));
    CHECK_THROWS_AS(ex::growth_runs({16}, attn::Backend::simd, 0), std::invalid_argument);
}

TEST_CASE("exercise 3: calls that waited for a core more than half their time make the machine too busy",
          "[experiments][exercise3]") {
    // Times ∝ n² in every run, the same in each (no scatter), but at n = 20 the calls ran for 0.3 of
    // their time, 0.5 and 0.2 of it: the median run waited 70% of it.
    const auto point = [](std::size_t n, double ran) {
        return ex::GrowthPoint{n, n * n, 0, double(n * n), ran * n * n};
    };
    const std::vector<ex::GrowthRun> runs = {{point(10, 1), point(20, 0.3), point(40, 1)},
                                             {point(10, 1), point(20, 0.5), point(40, 1)},
                                             {point(10, 1), point(20, 0.2), point(40, 1)}};
    const ex::Busy busy = ex::how_busy(runs);
    CHECK(busy.exponent_shift == 0);
    CHECK((busy.waited_n == 20 && busy.waited == Approx(0.7)));
    const ex::ExponentSpread e = ex::time_exponents(runs);
    CHECK(e.median == Approx(2.0));
    CHECK(ex::growth_verdict(e, busy) == ex::GrowthVerdict::too_busy);
    ex::Busy quiet = busy;
    quiet.waited = 0.504;  // 50% as printed: half the time is not more than half
    CHECK(ex::growth_verdict(e, quiet) == ex::GrowthVerdict::close_to_2);
}

TEST_CASE("exercise 5: o₁ − v₁ equals Σ_{j≠1} α₁ⱼ·(v_j − v₁) within 1e-6", "[experiments][exercise5]") {
    const attn::AttentionTrace t = attn::worked_example::trace();
    for (std::size_t row = 0; row < 3; ++row) {
        const auto c = ex::context_contribution(t.weights, t.V, row);
        for (std::size_t k = 0; k < t.V.cols(); ++k) CHECK(c[k] == Approx(t.output(row, k) - t.V(row, k)).margin(1e-6));
    }
}

TEST_CASE("variance: Var(q·k) within 5% of d_k, and of 1 after ÷√d_k", "[experiments][variance]") {
    for (const auto& r : ex::variance_experiment({1, 4, 16, 64, 256, 1024}, 20000, 7)) {
        INFO("d_k = " << r.d_k << ": " << r.raw << ", scaled " << r.scaled);
        CHECK(r.raw == Approx(double(r.d_k)).epsilon(0.05));
        CHECK(r.scaled == Approx(1.0).epsilon(0.05));
    }
}

TEST_CASE("attn exercise 1–5 and attn variance run in both languages", "[cli][experiments]") {
    for (const std::string lang : {"en", "zh"}) {
        for (const std::string n : {"1", "2", "4", "5"}) {
            INFO("attn exercise " << n << " --lang " << lang);
            const RunResult r = run_attn("exercise " + n + " --lang " + lang + " --samples 500");
            CHECK(r.status == 0);
            CHECK_THAT(r.out, Contains(lang == "en" ? "Exercise " + n : "练习 " + n));
        }
        const RunResult v = run_attn("variance --samples 2000 --lang " + lang);
        CHECK(v.status == 0);
        CHECK_THAT(v.out, Contains("1024"));
    }
    CHECK_THAT(run_attn("exercise 4").out, Contains("every row i attends only to j ≤ i"));
    CHECK_THAT(run_attn("exercise 5").out, Contains("‖o₁ − v₁‖ = 0.9338"));
    CHECK_THAT(run_attn("exercise 2").out,
               Contains("坐 sat   S_ii = 1.2631  max = 1.3378 (地毯 mat)  not the diagonal"));
}

TEST_CASE("attn exercise rejects a missing or unknown exercise with exit 2", "[cli][experiments][errors]") {
    for (const std::string args :
         {"exercise", "exercise 6", "exercise 1 --bogus", "variance --samples 1", "variance --samples x",
          "exercise 3 --largest 8", "exercise 3 --largest 99999", "variance --largest 64"}) {
        INFO("attn " << args);
        const RunResult r = run_attn(args);
        CHECK(r.status == 2);
        CHECK_THAT(r.err, Contains("attn: error: "));
    }
}
