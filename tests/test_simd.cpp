// The fast kernels against the naive ones: every tail size, large sizes, masks, extreme scores,
// bit-for-bit determinism across thread counts, and the same shape errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "check_close.hpp"
#include "matrix/ops.hpp"
#include "matrix/random.hpp"
#include "simd/simd.hpp"
#include "thread_counts.hpp"

using attn::random_matrix;

using attn::Backend;
using attn::Matrix;
using attn::simd::Threads;

namespace {

Matrix simd_matmul(const Matrix& A, const Matrix& B, Threads t) {
    Matrix C;
    attn::simd::matmul_into(A, B, C, t);
    return C;
}

Matrix simd_matmul_transposed(const Matrix& A, const Matrix& B, float scale, Threads t) {
    Matrix C;
    attn::simd::matmul_transposed_into(A, B, scale, C, t);
    return C;
}

// Runs f with OpenMP teams of `threads` threads, then restores the default.
template <class F>
auto with_threads(int threads, F f) {
    const int before = attn::simd::max_threads();
    attn::simd::set_max_threads(threads);
    auto result = f();
    attn::simd::set_max_threads(before);
    return result;
}

}  // namespace

TEST_CASE("simd dot and axpy equal the plain loops for every length 0 to 70", "[simd][vector]") {
    std::mt19937 rng(1);
    for (std::size_t n = 0; n <= 70; ++n) {
        const Matrix a = random_matrix(1, n, rng), b = random_matrix(1, n, rng);
        double want = 0.0;
        for (std::size_t k = 0; k < n; ++k) want += double(a(0, k)) * b(0, k);
        INFO("n = " << n);
        CHECK(attn::simd::dot(a.data(), b.data(), n) == Approx(want).epsilon(1e-5).margin(1e-5));
        Matrix y = b;
        attn::simd::axpy(0.5f, a.data(), y.data(), n);
        for (std::size_t k = 0; k < n; ++k) CHECK(y(0, k) == std::fma(0.5f, a(0, k), b(0, k)));
    }
}

TEST_CASE("simd row_max finds the largest element at every position of every length 0 to 70, on every instruction set",
          "[simd][vector]") {
    // The lanes are folded by shuffles (all_lanes_max): a maximum in any lane, or in the scalar
    // tail, must come out; so must a row of equal values, of −∞ only, or of negatives only.
    const std::string chosen = attn::simd::isa();
    for (const std::string& isa : attn::simd::supported_isas()) {
        attn::simd::set_isa(isa);
        CHECK(attn::simd::row_max({}) == -std::numeric_limits<float>::infinity());
        for (std::size_t n = 1; n <= 70; ++n) {
            std::vector<float> row(n);
            for (std::size_t k = 0; k < n; ++k) row[k] = -100.0f - float((k * 37) % 23);  // negatives, unsorted
            for (std::size_t at = 0; at < n; ++at) {
                INFO(isa << ": n = " << n << ", largest at " << at);
                std::vector<float> x = row;
                x[at] = -1.5f;
                CHECK(attn::simd::row_max(x) == -1.5f);
            }
            INFO(isa << ": n = " << n);
            CHECK(attn::simd::row_max(row) == *std::max_element(row.begin(), row.end()));
            const std::vector<float> masked(n, -std::numeric_limits<float>::infinity());
            CHECK(attn::simd::row_max(masked) == -std::numeric_limits<float>::infinity());
        }
    }
    attn::simd::set_isa(chosen);
}

TEST_CASE("simd largest_row_square is the largest Σ x² over rows of every length 0 to 70, and NaN wherever one is",
          "[simd][vector]") {
    const std::string chosen = attn::simd::isa();
    std::mt19937 rng(5);
    for (const std::string& isa : attn::simd::supported_isas()) {
        attn::simd::set_isa(isa);
        CHECK(attn::simd::largest_row_square(nullptr, 0, 8) == 0.0f);
        for (std::size_t n = 0; n <= 70; ++n)
            for (std::size_t rows = 1; rows <= 5; ++rows) {
                INFO(isa << ": " << rows << " rows of " << n);
                Matrix A = random_matrix(rows, n, rng);
                double want = 0.0;
                for (std::size_t i = 0; i < rows; ++i) {
                    double sum = 0.0;
                    for (std::size_t k = 0; k < n; ++k) sum += double(A(i, k)) * A(i, k);
                    want = std::max(want, sum);
                }
                // a float sum of n squares: within n·2⁻²⁴ of the exact one, relative
                CHECK(attn::simd::largest_row_square(A.data(), rows, n) ==
                      Approx(want).epsilon(double(n + 1) * 0x1p-24).margin(1e-30));
                if (n == 0) continue;
                A(rows - 1, n - 1) = NAN;  // in the last row's tail or last batch: it must come out
                CHECK(std::isnan(attn::simd::largest_row_square(A.data(), rows, n)));
                A(rows - 1, n - 1) = 0.0f;
                A(0, 0) = INFINITY;
                CHECK(attn::simd::largest_row_square(A.data(), rows, n) == INFINITY);
            }
    }
    attn::simd::set_isa(chosen);
}

TEST_CASE("vectorised exp is within 2e-7 relative of exp over [-87, 0]", "[simd][softmax]") {
    // The softmax only ever exponentiates x − max ≤ 0; below −87.3 results are denormal and then 0.
    const std::size_t n = 100003;  // odd, so the tail is exercised too
    Matrix x(1, n);
    for (std::size_t k = 0; k < n; ++k) x(0, k) = -87.0f * float(k) / float(n - 1);
    const Matrix input = x;
    const float sum = attn::simd::exp_and_sum(x.row(0), 0.0f);
    double want_sum = 0.0, worst = 0.0;
    for (std::size_t k = 0; k < n; ++k) {
        const double want = std::exp(double(input(0, k)));
        want_sum += want;
        worst = std::max(worst, std::fabs(x(0, k) - want) / want);
    }
    INFO("worst relative error " << worst);
    CHECK(worst <= 2e-7);
    // The returned sum adds 100003 floats in W running lanes: its rounding grows with n/W (about 1e-5
    // relative with SSE2's 4 lanes), which is a property of float summation, not of exp.
    CHECK(sum == Approx(want_sum).epsilon(1e-4));
    // the shift is subtracted first: e^(x − shift)
    Matrix y{{3.0f, 2.0f, 1.0f}};
    attn::simd::exp_and_sum(y.row(0), 3.0f);
    CHECK(y(0, 0) == 1.0f);
    CHECK(y(0, 2) == Approx(std::exp(-2.0)).epsilon(2e-7));
}

namespace {

// The worst error of each of `exponentials` (exp_and_sum, exp2_and_sum, exp2_bf16_and_sum, with shift
// 0) over every float from −0 down to `lowest`, against `reference` in double, on each instruction
// set: worst[f][i]. Where the true value is a normal float the error is counted in its ulps, and
// relative to it; below FLT_MIN, as an absolute difference. (The exponentials of one reference share
// its values, which take most of the time.)
struct Worst {
    double ulps = 0.0, relative = 0.0, below_min = 0.0;
    float x = 0.0f;
};
using Exponentials = float (*)(std::span<float>, float);
std::vector<std::vector<Worst>> worst_exponentials(const std::vector<Exponentials>& exponentials,
                                                   double (*reference)(double), float lowest,
                                                   const std::vector<std::string>& isas) {
    const std::uint32_t first = 0x80000000u, last = std::bit_cast<std::uint32_t>(lowest);
    std::vector<std::vector<Worst>> worst(exponentials.size(), std::vector<Worst>(isas.size()));
    std::vector<float> input, x;
    std::vector<double> want, ulp;  // the true value in double, and one ulp of it as a float (0 below FLT_MIN)
    for (std::uint64_t start = first; start <= last; start += 1u << 16) {
        input.clear();
        for (std::uint64_t b = start; b <= last && b < start + (1u << 16); ++b)
            input.push_back(std::bit_cast<float>(std::uint32_t(b)));
        want.resize(input.size());
        ulp.resize(input.size());
        for (std::size_t k = 0; k < input.size(); ++k) {
            want[k] = reference(double(input[k]));
            int exponent = 0;
            std::frexp(want[k], &exponent);  // want = f·2^exponent with f in [0.5, 1): an ulp is 2^(exponent − 24)
            ulp[k] = want[k] < double(std::numeric_limits<float>::min()) ? 0.0 : std::ldexp(1.0, exponent - 24);
        }
        for (std::size_t f = 0; f < exponentials.size(); ++f)
            for (std::size_t i = 0; i < isas.size(); ++i) {
                attn::simd::set_isa(isas[i]);
                x = input;
                exponentials[f](x, 0.0f);
                Worst& w = worst[f][i];
                for (std::size_t k = 0; k < x.size(); ++k) {
                    const double error = std::fabs(double(x[k]) - want[k]);
                    if (ulp[k] == 0.0) {
                        w.below_min = std::max(w.below_min, error);
                        continue;
                    }
                    w.relative = std::max(w.relative, error / want[k]);
                    if (error / ulp[k] > w.ulps) {
                        w.ulps = error / ulp[k];
                        w.x = input[k];
                    }
                }
            }
    }
    return worst;
}

}  // namespace

TEST_CASE(
    "softmax exp and exp2: within 1.25 ulp for every float in [-88, 0] and [-127, 0], and the bfloat16 grade of 2^t "
    "within its bound, on every instruction set",
    "[simd][softmax][slow][exhaustive]") {
    // All 1.1 billion floats from −0 down to −88 for e^x, and down to −127 for the fused kernels' 2^t,
    // to a float's grade and to bfloat16's (the bf16 mode's: its bound is relative, where 2^t is
    // normal). Below FLT_MIN the result must be 0 or the true subnormal within FLT_MIN; −∞ gives 0, ±0
    // gives 1.
    const bool base2 = GENERATE(false, true);
    const std::string chosen = attn::simd::isa();
    const std::vector<std::string> isas = attn::simd::supported_isas();
    const std::vector<Exponentials> exponentials =
        base2 ? std::vector<Exponentials>{&attn::simd::exp2_and_sum, &attn::simd::exp2_bf16_and_sum}
              : std::vector<Exponentials>{&attn::simd::exp_and_sum};
    const auto worst = base2 ? worst_exponentials(
                                   exponentials, [](double t) { return std::exp2(t); }, -127.0f, isas)
                             : worst_exponentials(
                                   exponentials, [](double x) { return std::exp(x); }, -88.0f, isas);
    for (std::size_t f = 0; f < exponentials.size(); ++f)
        for (std::size_t i = 0; i < isas.size(); ++i) {
            attn::simd::set_isa(isas[i]);
            const Worst& w = worst[f][i];
            const bool bf16_grade = f == 1;
            INFO((!base2       ? "e^x, "
                  : bf16_grade ? "2^t to bfloat16's grade, "
                               : "2^t, ")
                 << isas[i] << ": worst " << w.ulps << " ulp (at " << w.x << "), " << w.relative
                 << " relative; below FLT_MIN, off by " << w.below_min);
            // measured: e^x 0.99 ulp (SSE2), 1.01 (AVX2, AVX-512); 2^t 1.08, 0.80, 0.80; bfloat16's grade
            // 8.6e-5 relative
            if (bf16_grade) CHECK(w.relative <= attn::simd::bf16_exp2_error);
            else CHECK(w.ulps <= 1.25);
            CHECK(w.below_min <= double(std::numeric_limits<float>::min()));
            std::vector<float> ends{-std::numeric_limits<float>::infinity(), -0.0f, 0.0f};
            exponentials[f](ends, 0.0f);
            CHECK(ends == std::vector<float>{0.0f, 1.0f, 1.0f});
        }
    attn::simd::set_isa(chosen);
}

TEST_CASE("simd A·B and scale·A·Bᵀ equal naive for every size 1 to 70 in each dimension", "[simd][matmul]") {
    const bool transposed = GENERATE(false, true);
    const Threads t = GENERATE(Threads::one, Threads::all);
    std::mt19937 rng(transposed ? 3 : 2);
    for (std::size_t s = 1; s <= 70; ++s) {
        for (const auto [m, k, n] : {std::array<std::size_t, 3>{s, 37, 45}, {29, s, 45}, {29, 37, s}, {s, s, s}}) {
            INFO((transposed ? "A·Bᵀ" : "A·B") << " m=" << m << " k=" << k << " n=" << n);
            const Matrix A = random_matrix(m, k, rng);
            if (transposed) {
                const Matrix B = random_matrix(n, k, rng);
                const float scale = 1.0f / std::sqrt(float(k));
                check_close(simd_matmul_transposed(A, B, scale, t),
                            attn::scaled(attn::matmul(A, attn::transpose(B)), scale));
            } else {
                const Matrix B = random_matrix(k, n, rng);
                check_close(simd_matmul(A, B, t), attn::matmul(A, B));
            }
        }
    }
}

TEST_CASE("simd products across every cache-block boundary", "[simd][matmul][large]") {
    // With this CPU's blocks and with small ones that every size here crosses: k > kc crosses a
    // depth block (partial sums stored and reloaded), n > nc a column block; m is split in strips of
    // MR rows between the threads, or of 2·MR with AVX-512, with a shorter strip at the end when they
    // do not divide it (23 = 12 + 6 + 5 rows: a tall strip, then a tall remainder in two tiles).
    std::mt19937 rng(4);
    const Threads t = GENERATE(Threads::one, Threads::all);
    const attn::simd::Blocking small{.kc = 40, .nc = 64, .panel_kc = 40, .panel_mc = 18, .fused_rows = 12};
    for (const attn::simd::Blocking& blocks : {attn::simd::blocking(), small}) {
        for (const auto [m, k, n] :
             {std::array<std::size_t, 3>{150, 600, 97}, {7, 3, 2100}, {300, 64, 300}, {23, 64, 300}}) {
            INFO("m=" << m << " k=" << k << " n=" << n << " kc=" << blocks.kc << " nc=" << blocks.nc);
            const Matrix A = random_matrix(m, k, rng), B = random_matrix(k, n, rng), Bt = attn::transpose(B);
            const Matrix want = attn::matmul(A, B);
            Matrix got;
            attn::simd::matmul_into(A, B, got, t, blocks);
            check_close(got, want, 1e-4f);
            attn::simd::matmul_transposed_into(A, Bt, 1.0f, got, t, blocks);
            check_close(got, want, 1e-4f);
        }
    }
}

TEST_CASE("simd softmax and mask equal naive for every row length 1 to 70 and ±1e4 scores", "[simd][softmax]") {
    std::mt19937 rng(5);
    const Threads t = GENERATE(Threads::one, Threads::all);
    const float range = GENERATE(1.0f, 30.0f, 1e4f);
    for (std::size_t n = 1; n <= 70; ++n) {
        INFO("n = " << n << ", scores in ±" << range);
        Matrix S = random_matrix(n, n, rng, -range, range);
        Matrix fast = S;
        attn::simd::causal_mask_in_place(fast, t);
        CHECK(fast == attn::causal_mask(S));
        attn::simd::softmax_rows_in_place(fast, 1.0f, t);
        check_close(fast, attn::softmax_rows(attn::causal_mask(S)), 1e-6f);
        for (std::size_t k = 0; k < fast.size(); ++k) REQUIRE(std::isfinite(fast.data()[k]));
    }
}

TEST_CASE("simd softmax turns an all -inf row into zeros", "[simd][softmax][edge]") {
    const float inf = INFINITY;
    Matrix S{{-inf, -inf, -inf, -inf, -inf, -inf, -inf, -inf, -inf}, {0, 0, -inf, 0, 0, 0, 0, 0, 0}};
    attn::simd::softmax_rows_in_place(S, 1.0f, Threads::one);
    CHECK(S == attn::softmax_rows(
                   Matrix{{-inf, -inf, -inf, -inf, -inf, -inf, -inf, -inf, -inf}, {0, 0, -inf, 0, 0, 0, 0, 0, 0}}));
    CHECK(S(0, 4) == 0.0f);
    CHECK(S(1, 2) == 0.0f);
    CHECK(S(1, 0) == 0.125f);
}

TEST_CASE("attention core: simd and parallel equal naive, causal or not, over all tails", "[simd][attention]") {
    std::mt19937 rng(6);
    const Backend backend = GENERATE(Backend::simd, Backend::parallel);
    const bool causal = GENERATE(false, true);
    for (std::size_t n = 1; n <= 70; ++n) {
        const std::size_t d_k = 1 + (n * 7) % 70, d_v = 1 + (n * 13) % 70;
        INFO(attn::to_string(backend) << (causal ? " causal" : "") << " n=" << n << " d_k=" << d_k << " d_v=" << d_v);
        const Matrix Q = random_matrix(n, d_k, rng), K = random_matrix(n, d_k, rng), V = random_matrix(n, d_v, rng);
        const auto want = attn::scaled_dot_product_attention(Q, K, V, {.causal = causal});
        const auto got = attn::scaled_dot_product_attention(Q, K, V, {.causal = causal, .backend = backend});
        check_close(got.weights, want.weights, 1e-6f);
        check_close(got.output, want.output);
    }
}

TEST_CASE("attention core at a large size and with scores up to ±1e4", "[simd][attention][large]") {
    std::mt19937 rng(7);
    const Backend backend = GENERATE(Backend::simd, Backend::parallel);
    const bool causal = GENERATE(false, true);
    const std::size_t n = 517, d = 64;
    const float spread = GENERATE(1.0f, 85.0f);  // with ±85 entries, scores ÷√64 reach about ±1e4
    const Matrix Q = random_matrix(n, d, rng, -spread, spread), K = random_matrix(n, d, rng, -spread, spread);
    const Matrix V = random_matrix(n, d, rng);
    const auto want = attn::scaled_dot_product_attention(Q, K, V, {.causal = causal});
    const auto got = attn::scaled_dot_product_attention(Q, K, V, {.causal = causal, .backend = backend});
    // A float score of size |s| is only known to within ulp(|s|) (≈ 1e-3 at 1e4), and two correct
    // kernels round differently (FMA or not, another summation order). e^Δ then moves the weights by
    // about Δ, so the allowed difference is a few ulps of the largest score, and 1e-5 where that is
    // smaller (the ±1 case).
    const Matrix S = attn::scaled(attn::matmul(Q, attn::transpose(K)), 0.125f);
    float largest = 0.0f;
    for (std::size_t k = 0; k < S.size(); ++k) largest = std::max(largest, std::fabs(S.data()[k]));
    const float score_ulp = std::nextafter(largest, INFINITY) - largest;
    INFO("largest |score| " << largest << ", its ulp " << score_ulp);
    check_close(got.weights, want.weights, std::max(1e-6f, 4 * score_ulp));
    check_close(got.output, want.output, std::max(1e-5f, 4 * score_ulp));
    for (std::size_t k = 0; k < got.output.size(); ++k) REQUIRE(std::isfinite(got.output.data()[k]));
}

TEST_CASE("parallel results are bit-for-bit identical for 1, 2 and 3 threads", "[simd][parallel]") {
    if (!several_thread_counts()) return;
    std::mt19937 rng(8);
    const Matrix A = random_matrix(203, 300, rng), B = random_matrix(300, 77, rng), Bt = random_matrix(190, 300, rng);
    const Matrix Q = random_matrix(333, 40, rng), K = random_matrix(333, 40, rng), V = random_matrix(333, 24, rng);
    const auto run_all = [&] {
        Matrix S = random_matrix(150, 150, rng, -5, 5);
        attn::simd::softmax_rows_in_place(S, 0.7f, Threads::all);
        return std::make_tuple(
            simd_matmul(A, B, Threads::all), simd_matmul_transposed(A, Bt, 0.3f, Threads::all),
            attn::scaled_dot_product_attention(Q, K, V, {.causal = true, .backend = Backend::parallel}).output, S);
    };
    const auto serial = with_threads(1, [&] {
        rng.seed(9);
        return run_all();
    });
    for (int threads : {2, 3}) {
        INFO(threads << " threads");
        const auto parallel = with_threads(threads, [&] {
            rng.seed(9);
            return run_all();
        });
        CHECK(std::get<0>(parallel) == std::get<0>(serial));
        CHECK(std::get<1>(parallel) == std::get<1>(serial));
        CHECK(std::get<2>(parallel) == std::get<2>(serial));
        CHECK(std::get<3>(parallel) == std::get<3>(serial));
    }
    // and the one-thread backend agrees with the parallel one exactly
    CHECK(simd_matmul(A, B, Threads::one) == std::get<0>(serial));
}

TEST_CASE("simd kernels refuse bad shapes with the same messages as the naive ops", "[simd][errors]") {
    Matrix C;
    CHECK_THROWS_WITH(attn::simd::matmul_into(Matrix(3, 4), Matrix(3, 3), C, Threads::one),
                      "matmul: (3×4)·(3×3): inner dimensions 4 and 3 differ");
    CHECK_THROWS_WITH(attn::simd::matmul_transposed_into(Matrix(3, 4), Matrix(5, 3), 1.0f, C, Threads::all),
                      Catch::Contains("matmul_transposed: (3×4)·(5×3)ᵀ"));
    CHECK_THROWS_AS(
        attn::scaled_dot_product_attention(Matrix(3, 3), Matrix(3, 2), Matrix(3, 3), {.backend = Backend::parallel}),
        std::invalid_argument);
}

TEST_CASE("simd products of empty shapes", "[simd][edge]") {
    CHECK(simd_matmul(Matrix(0, 5), Matrix(5, 3), Threads::all).rows() == 0);
    CHECK(simd_matmul(Matrix(2, 0), Matrix(0, 3), Threads::one) == Matrix(2, 3, 0.0f));
    CHECK(simd_matmul_transposed(Matrix(4, 3), Matrix(0, 3), 1.0f, Threads::one).cols() == 0);
}

TEST_CASE("the build reports its instruction set, batch width and thread count", "[simd]") {
    CHECK_FALSE(attn::simd::instruction_set().empty());
    const std::size_t w = attn::simd::batch_width();
    CHECK((w == 4 || w == 8 || w == 16));
    CHECK(attn::simd::tile_columns() == 2 * w);
    CHECK(attn::simd::max_threads() >= 1);
    const auto compiled = attn::simd::compiled_isas(), supported = attn::simd::supported_isas();
    REQUIRE_FALSE(supported.empty());
    CHECK(supported.front() == compiled.front());  // the baseline runs everywhere
    CHECK(std::find(supported.begin(), supported.end(), attn::simd::isa()) != supported.end());
}

TEST_CASE("every instruction set this CPU runs gives the same answers, within the float bound", "[simd][isa]") {
    // Each set's kernels sum in their own order (4, 8 or 16 lanes, their own depth blocks), so they
    // agree to rounding, not to the bit: compared with each other and with the naive chain.
    std::mt19937 rng(20);
    const Matrix Q = random_matrix(131, 40, rng), K = random_matrix(131, 40, rng), V = random_matrix(131, 33, rng);
    const auto want = attn::scaled_dot_product_attention(Q, K, V, {.causal = true});
    const std::string before = attn::simd::isa();
    Matrix first;
    for (const std::string& isa : attn::simd::supported_isas()) {
        INFO("instruction set " << isa);
        attn::simd::set_isa(isa);
        CHECK(attn::simd::isa() == isa);
        for (const Backend backend : {Backend::simd, Backend::parallel, Backend::fused}) {
            const auto got = attn::scaled_dot_product_attention(Q, K, V, {.causal = true, .backend = backend});
            check_close(got.output, want.output);
            if (first.empty()) first = got.output;
            check_close(got.output, first);
        }
    }
    attn::simd::set_isa(before);
    CHECK_THROWS_WITH(attn::simd::set_isa("avx9000"), Catch::Contains("not an instruction set of this build"));
    CHECK(attn::simd::isa() == before);  // a refused choice changes nothing
}

// Step 4 rides in step 5's kernel on the fast backends: softmax(S, scale) must be the same bits as
// scaling S by itself first (each product rounded, then the shift), for every scale the chain uses,
// masked rows and huge scores included (where one FMA for the multiply and the shift would not be).
TEST_CASE("simd softmax of scale·S is the same bits as scaling S first", "[simd][softmax]") {
    std::mt19937 rng(31);
    const Threads t = GENERATE(Threads::one, Threads::all);
    for (const float scale : {1.0f, 0.125f, 1.0f / std::sqrt(3.0f), 1.0f / 3.0f, 1.0f / 1024.0f}) {
        for (const float range : {1.0f, 30.0f, 1e4f, 1e36f}) {
            INFO("scale " << scale << ", scores in ±" << range);
            const Matrix S = attn::causal_mask(random_matrix(67, 67, rng, -range, range));
            Matrix folded = S, separate = attn::scaled(S, scale);
            attn::simd::softmax_rows_in_place(folded, scale, t);
            attn::simd::softmax_rows_in_place(separate, 1.0f, t);
            CHECK(folded == separate);
            for (std::size_t k = 0; k < folded.size(); ++k) REQUIRE(std::isfinite(folded.data()[k]));
        }
    }
}

TEST_CASE("simd causal mask on n×m keeps the top-left lower triangle, for n < m and n > m", "[simd][mask]") {
    std::mt19937 rng(91);
    const Threads t = GENERATE(Threads::one, Threads::all);
    for (const auto& [n, m] :
         {std::pair<std::size_t, std::size_t>{3, 7}, {7, 3}, {1, 5}, {5, 1}, {300, 257}, {257, 300}}) {
        INFO(n << "×" << m);
        const Matrix S = random_matrix(n, m, rng);
        Matrix masked = S;
        attn::simd::causal_mask_in_place(masked, t);
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < m; ++j) REQUIRE(masked(i, j) == (j <= i ? S(i, j) : -INFINITY));
    }
}

namespace {

// scale·S, each product rounded and stored, and then term(i, j) added: the definition of add_score_terms_in_place.
Matrix scaled_then_added(const Matrix& S, float scale, const attn::simd::ScoreTerms& terms) {
    Matrix out = S;
    for (std::size_t k = 0; k < out.size(); ++k) out.data()[k] *= scale;
    for (std::size_t i = 0; i < out.rows(); ++i)
        for (std::size_t j = 0; j < out.cols(); ++j) {
            const std::ptrdiff_t at = std::ptrdiff_t(i) * terms.row_stride + std::ptrdiff_t(j) * terms.col_stride;
            if (terms.boolean) {
                if (static_cast<const unsigned char*>(terms.data)[at] == 0) out(i, j) = -INFINITY;
            } else {
                out(i, j) = out(i, j) + static_cast<const float*>(terms.data)[at];
            }
        }
    return out;
}

// The same bits (−∞ equals −∞).
bool same_bits(const Matrix& a, const Matrix& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           std::equal(a.data(), a.data() + a.size(), b.data(), [](float x, float y) {
               return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
           });
}

}  // namespace

TEST_CASE("add_score_terms_in_place equals scaling and then adding, for floats, flags and broadcasts", "[simd][mask]") {
    std::mt19937 rng(92);
    const Threads t = GENERATE(Threads::one, Threads::all);
    const std::size_t n = 300, m = 211;
    const Matrix S = random_matrix(n, m, rng, -5, 5);
    std::vector<float> floats(n * m);
    std::vector<unsigned char> keep(n * m);
    std::uniform_real_distribution<float> value(-3.0f, 3.0f);
    for (std::size_t k = 0; k < n * m; ++k) {
        floats[k] = rng() % 5 == 0 ? -INFINITY : value(rng);
        keep[k] = static_cast<unsigned char>(rng() % 3 == 0 ? 0 : 1 + rng() % 200);
    }
    using attn::simd::ScoreTerms;
    const std::ptrdiff_t cols = std::ptrdiff_t(m);
    for (const ScoreTerms& terms :
         {ScoreTerms{floats.data(), false, cols, 1},                                    // full n×m
          ScoreTerms{floats.data(), false, 0, 1},                                       // one row for every query
          ScoreTerms{floats.data(), false, 1, 0},                                       // one column for every key
          ScoreTerms{keep.data(), true, cols, 1}, ScoreTerms{keep.data(), true, 0, 1},  // a padding mask
          ScoreTerms{keep.data(), true, 1, cols}}) {                                    // transposed
        INFO("boolean " << terms.boolean << ", strides " << terms.row_stride << ", " << terms.col_stride);
        Matrix got = S;
        attn::simd::add_score_terms_in_place(got, 0.37f, terms, t);
        const Matrix want = scaled_then_added(S, 0.37f, terms);
        CHECK(same_bits(got, want));
        CHECK(std::count(got.data(), got.data() + got.size(), -INFINITY) > 0);
    }
}

TEST_CASE("for_each_in_team runs each index exactly once, on a team when asked", "[simd][team]") {
    const int before = attn::simd::max_threads();
    for (const int threads : {1, 2}) {
        attn::simd::set_max_threads(threads);
        for (const Threads t : {Threads::one, Threads::all}) {
            for (const std::size_t count : {0, 1, 2, 3, 97}) {
                INFO(threads << " threads, count " << count << ", all " << (t == Threads::all));
                std::vector<std::atomic<int>> runs(count);
                attn::simd::for_each_in_team(count, t, [&](std::size_t k) { runs[k].fetch_add(1); });
                for (const auto& r : runs) REQUIRE(r.load() == 1);
                const bool team = t == Threads::all && count >= 2 && attn::simd::openmp_built();
                CHECK(attn::simd::last_team_size() == (team ? threads : 1));
            }
        }
    }
    attn::simd::set_max_threads(before);
}

TEST_CASE("for_each_in_team rethrows a body's exception on the calling thread", "[simd][team]") {
    const Threads t = GENERATE(Threads::one, Threads::all);
    std::atomic<int> ran{0};
    CHECK_THROWS_WITH(attn::simd::for_each_in_team(50, t,
                                                   [&](std::size_t k) {
                                                       ran.fetch_add(1);
                                                       if (k == 7) throw std::invalid_argument("index 7");
                                                   }),
                      "index 7");
    if (t == Threads::one) CHECK(ran.load() == 8);  // on one thread the loop stops at the throw
}
