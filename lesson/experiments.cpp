// lesson/experiments.cpp — the lesson's exercises and confusions as computations: the
// numbers `attn exercise`, `attn variance` and `attn walk` print, and the tests check.
#include "lesson/experiments.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <ctime>
#include <random>
#include <stdexcept>

#include "lesson/worked_example.hpp"
#include "matrix/norms.hpp"
#include "matrix/ops.hpp"
#include "matrix/random.hpp"

namespace attn::experiments {

namespace {

// Entries independent with mean 0 and variance 1: the lesson's assumption in the √d_k argument.
Matrix normal_matrix(std::size_t rows, std::size_t cols, std::mt19937_64& rng) {
    return random_matrix_from(rows, cols, rng, std::normal_distribution<float>(0.0f, 1.0f));
}

// The CPU time the calling thread has used: it stands still while the thread waits for a core.
double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t mid = values.size() / 2;
    return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

}  // namespace

std::size_t row_argmax(std::span<const float> row) {
    return static_cast<std::size_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

RowStats row_stats(std::span<const float> weights) {
    RowStats s;
    double sum_sq = 0;
    for (float a : weights) {
        if (a > 0) s.entropy -= a * std::log(double(a));
        s.max_weight = std::max(s.max_weight, double(a));
        sum_sq += double(a) * a;
    }
    // ‖J‖²_F = Σ_i Σ_j α_i²(δ_ij − α_j)² = Σ_i α_i²(1 − 2α_i + Σ_j α_j²)
    double norm_sq = 0;
    for (float a : weights) norm_sq += double(a) * a * (1.0 - 2.0 * a + sum_sq);
    s.jacobian_norm = std::sqrt(std::max(norm_sq, 0.0));
    return s;
}

std::vector<ScalingResult> scaling_experiment(const std::vector<std::size_t>& dims, std::size_t keys, std::size_t rows,
                                              unsigned seed) {
    std::vector<ScalingResult> results;
    std::mt19937_64 rng(seed);
    for (std::size_t d_k : dims) {
        const Matrix Q = normal_matrix(rows, d_k, rng), K = normal_matrix(keys, d_k, rng), V(keys, 1, 0.0f);
        for (Scale scale : {Scale::none, Scale::sqrt_dk, Scale::dk}) {
            const Matrix weights = scaled_dot_product_attention(Q, K, V, {.scale = scale}).weights;
            ScalingResult r{d_k, scale, {}, {}};
            for (std::size_t i = 0; i < rows; ++i) {
                const RowStats s = row_stats(weights.row(i));
                r.mean.entropy += s.entropy / double(rows);
                r.mean.max_weight += s.max_weight / double(rows);
                r.mean.jacobian_norm += s.jacobian_norm / double(rows);
            }
            results.push_back(r);
        }
    }
    return results;
}

std::vector<ScalingResult> scaling_over_draws(const std::vector<std::size_t>& dims, std::size_t keys, std::size_t rows,
                                              std::size_t draws, unsigned seed) {
    if (draws == 0) throw std::invalid_argument("scaling_over_draws: draws must be at least 1");
    std::vector<std::vector<ScalingResult>> each;
    for (std::size_t t = 0; t < draws; ++t) each.push_back(scaling_experiment(dims, keys, rows, seed + unsigned(t)));
    std::vector<ScalingResult> results = each[0];
    for (std::size_t r = 0; r < results.size(); ++r) {
        // mean and standard deviation over the draws, field by field: E[x], then √E[(x − E[x])²] in a
        // second pass (E[x²] − E[x]² would cancel into rounding noise, nonzero even for one draw)
        const auto over_draws = [&](double RowStats::*field, double& mean, double& spread) {
            double sum = 0, squares = 0;
            for (const auto& draw : each) sum += draw[r].mean.*field;
            mean = sum / double(draws);
            for (const auto& draw : each) squares += (draw[r].mean.*field - mean) * (draw[r].mean.*field - mean);
            spread = std::sqrt(squares / double(draws));
        };
        for (double RowStats::*field : {&RowStats::entropy, &RowStats::max_weight, &RowStats::jacobian_norm})
            over_draws(field, results[r].mean.*field, results[r].spread.*field);
        results[r].draws = draws;
    }
    return results;
}

ScalingTrend scaling_trend(const std::vector<ScalingResult>& results, Scale scale) {
    ScalingTrend t{scale, {}, {}, {}, {}, {}};
    bool seen = false;
    for (const ScalingResult& r : results) {
        if (r.scale != scale) continue;
        if (!seen) t.first = t.peak_jacobian = t.lowest_entropy = t.highest_entropy = r;
        seen = true;
        t.last = r;
        if (r.mean.jacobian_norm > t.peak_jacobian.mean.jacobian_norm) t.peak_jacobian = r;
        if (r.mean.entropy < t.lowest_entropy.mean.entropy) t.lowest_entropy = r;
        if (r.mean.entropy > t.highest_entropy.mean.entropy) t.highest_entropy = r;
    }
    if (!seen) throw std::invalid_argument("scaling_trend: no result for scale " + to_string(scale));
    t.min_entropy = t.lowest_entropy.mean.entropy;
    t.max_entropy = t.highest_entropy.mean.entropy;
    t.entropy_threshold = entropy_change_threshold(t.lowest_entropy, t.highest_entropy);
    return t;
}

double entropy_change_threshold(const ScalingResult& a, const ScalingResult& b) {
    if (a.draws < 2 || b.draws < 2)
        throw std::invalid_argument("entropy_change_threshold: a mean over " +
                                    std::to_string(std::min(a.draws, b.draws)) +
                                    " draw has no standard error; give at least 2 draws");
    // se² = spread² / (draws − 1): the sample variance of the draws over draws
    const double se_a2 = a.spread.entropy * a.spread.entropy / double(a.draws - 1),
                 se_b2 = b.spread.entropy * b.spread.entropy / double(b.draws - 1);
    return entropy_change_standard_errors * std::sqrt(se_a2 + se_b2);
}

Matrix scores_without_transpose(const Matrix& Q, const Matrix& K) {
    return matmul(Q, K);  // (n×d_k)·(n×d_k): matmul refuses it, naming both shapes, unless n = d_k
}

Matrix cosines(const Matrix& Q, const Matrix& K) {
    Matrix C = matmul(Q, transpose(K));  // S_ij = q_i·k_j, divided below by both lengths
    for (std::size_t i = 0; i < C.rows(); ++i) {
        for (std::size_t j = 0; j < C.cols(); ++j) {
            const double lengths = norm(Q.row(i)) * norm(K.row(j));
            C(i, j) = lengths > 0.0 ? static_cast<float>(C(i, j) / lengths) : 0.0f;
        }
    }
    return C;
}

Matrix scores_with_weights(const Matrix& X, const Matrix& W_Q, const Matrix& W_K) {
    return matmul(matmul(X, W_Q), transpose(matmul(X, W_K)));
}

SoftmaxWrittenOut softmax_written_out(std::span<const float> row) {
    SoftmaxWrittenOut w;
    w.max = *std::max_element(row.begin(), row.end());
    for (float x : row) w.sum += w.exponentials.emplace_back(std::exp(x - w.max));
    return w;
}

std::vector<float> row_sums(const Matrix& M) {
    std::vector<float> sums(M.rows(), 0.0f);
    for (std::size_t i = 0; i < M.rows(); ++i)
        for (float x : M.row(i)) sums[i] += x;
    return sums;
}

std::vector<float> column_sums(const Matrix& M) { return row_sums(transpose(M)); }

Matrix softmax_columns(const Matrix& S) { return transpose(softmax_rows(transpose(S))); }

std::size_t head_width(std::size_t d_model, std::size_t heads) {
    if (heads == 0 || d_model % heads != 0)
        throw std::invalid_argument("head_width: d_model = " + std::to_string(d_model) + " does not split into " +
                                    std::to_string(heads) + " heads of equal width");
    return d_model / heads;
}

DiagonalResult diagonal_experiment(std::size_t draws, std::size_t d_k, unsigned seed) {
    std::mt19937_64 rng(seed);
    const Matrix X = worked_example::X();
    const std::size_t n = X.rows();
    DiagonalResult r;
    r.draws = draws;
    std::size_t independent = 0, tied = 0;
    for (std::size_t t = 0; t < draws; ++t) {
        const Matrix W_Q = normal_matrix(X.cols(), d_k, rng), W_K = normal_matrix(X.cols(), d_k, rng);
        const Matrix Q = matmul(X, W_Q), S = matmul(Q, transpose(matmul(X, W_K)));
        const Matrix S_tied = matmul(Q, transpose(Q));  // W_K = W_Q: S_ij = (x_i·W)·(x_j·W)
        for (std::size_t i = 0; i < n; ++i) {
            independent += row_argmax(S.row(i)) == i;
            tied += row_argmax(S_tied.row(i)) == i;
            for (std::size_t j = 0; j < n; ++j)
                r.tied_pair_violations += S_tied(i, j) > std::max(S_tied(i, i), S_tied(j, j)) * (1 + 1e-5f) + 1e-5f;
        }
    }
    r.independent_fraction = double(independent) / double(draws * n);
    r.tied_fraction = double(tied) / double(draws * n);
    return r;
}

std::vector<GrowthRun> growth_runs(const std::vector<std::size_t>& ns, Backend backend, std::size_t runs,
                                   const std::function<void(std::size_t, std::size_t)>& progress) {
    if (runs == 0) throw std::invalid_argument("growth_runs: runs must be at least 1");
    std::mt19937_64 rng(3);
    std::vector<std::array<Matrix, 3>> inputs;  // Q, K, V for each n
    for (std::size_t n : ns)
        inputs.push_back({normal_matrix(n, 64, rng), normal_matrix(n, 64, rng), normal_matrix(n, 64, rng)});
    for (const auto& [Q, K, V] : inputs) scaled_dot_product_attention(Q, K, V, {.backend = backend});  // untimed
    std::vector<GrowthRun> result(runs);
    for (std::size_t r = 0; r < runs; ++r) {
        for (std::size_t k = 0; k < ns.size(); ++k) {
            if (progress) progress(r + 1, ns[k]);
            const auto& [Q, K, V] = inputs[k];
            const double cpu = thread_cpu_seconds();
            const auto start = std::chrono::steady_clock::now();
            const AttentionResult out = scaled_dot_product_attention(Q, K, V, {.backend = backend});
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            result[r].push_back({ns[k], ns[k] * ns[k], out.weights.size() * sizeof(float), seconds,
                                 std::min(seconds, thread_cpu_seconds() - cpu)});
        }
    }
    return result;
}

std::vector<GrowthPoint> median_of_runs(const std::vector<GrowthRun>& runs) {
    std::vector<GrowthPoint> points = runs.at(0);
    for (std::size_t k = 0; k < points.size(); ++k) {
        std::vector<double> seconds;
        for (const GrowthRun& run : runs) seconds.push_back(run[k].seconds);
        points[k].seconds = median(seconds);
    }
    return points;
}

std::vector<GrowthPoint> growth_experiment(const std::vector<std::size_t>& ns, Backend backend, std::size_t repeats,
                                           const std::function<void(std::size_t)>& progress) {
    if (repeats == 0) throw std::invalid_argument("growth_experiment: repeats must be at least 1");
    const auto tell = [&progress](std::size_t, std::size_t n) {
        if (progress) progress(n);
    };
    return median_of_runs(growth_runs(ns, backend, repeats, tell));
}

double fitted_exponent(const std::vector<double>& x, const std::vector<double>& y) {
    double mx = 0, my = 0;
    for (std::size_t k = 0; k < x.size(); ++k) {
        mx += std::log(x[k]) / double(x.size());
        my += std::log(y[k]) / double(x.size());
    }
    double sxy = 0, sxx = 0;
    for (std::size_t k = 0; k < x.size(); ++k) {
        sxy += (std::log(x[k]) - mx) * (std::log(y[k]) - my);
        sxx += (std::log(x[k]) - mx) * (std::log(x[k]) - mx);
    }
    return sxy / sxx;
}

ExponentSpread time_exponents(const std::vector<GrowthRun>& runs) {
    std::vector<double> exponents;
    for (const GrowthRun& run : runs) {
        std::vector<double> n, seconds;
        for (const GrowthPoint& p : run) n.push_back(double(p.n)), seconds.push_back(p.seconds);
        exponents.push_back(fitted_exponent(n, seconds));
    }
    const auto [lowest, highest] = std::minmax_element(exponents.begin(), exponents.end());
    return {median(exponents), *lowest, *highest};
}

Busy how_busy(const std::vector<GrowthRun>& runs) {
    const GrowthRun& first = runs.at(0);
    double mean = 0, sum_squares = 0;  // of log n
    for (const GrowthPoint& p : first) mean += std::log(double(p.n)) / double(first.size());
    for (const GrowthPoint& p : first) sum_squares += (std::log(double(p.n)) - mean) * (std::log(double(p.n)) - mean);
    Busy busy;
    for (std::size_t k = 0; k < first.size(); ++k) {
        std::vector<double> seconds, waited;
        for (const GrowthRun& run : runs) {
            seconds.push_back(run[k].seconds);
            waited.push_back(run[k].seconds > 0 ? 1 - run[k].ran / run[k].seconds : 0);
        }
        const auto [fastest, slowest] = std::minmax_element(seconds.begin(), seconds.end());
        const double leverage = sum_squares > 0 ? std::fabs(std::log(double(first[k].n)) - mean) / sum_squares : 0;
        const double shift = *fastest > 0 ? leverage * std::log(*slowest / *fastest) : 0;
        if (k == 0 || shift > busy.exponent_shift) {
            busy.n = first[k].n;
            busy.fastest = *fastest, busy.slowest = *slowest, busy.exponent_shift = shift;
        }
        if (const double w = median(waited); k == 0 || w > busy.waited) busy.waited_n = first[k].n, busy.waited = w;
    }
    return busy;
}

bool too_busy(const Busy& busy, double margin) {
    const auto hundredths = [](double x) { return std::lround(x * 100); };  // as printed: 0.16, 51%
    return hundredths(busy.exponent_shift) > hundredths(margin) || hundredths(busy.waited) > hundredths(busiest_wait);
}

GrowthVerdict growth_verdict(const ExponentSpread& exponents, const Busy& busy, double margin) {
    const auto hundredths = [](double x) { return std::lround(x * 100); };  // as printed
    const long lowest = hundredths(exponents.lowest), highest = hundredths(exponents.highest),
               band = hundredths(margin);
    if (too_busy(busy, margin)) return GrowthVerdict::too_busy;
    if (lowest >= 200 - band && highest <= 200 + band) return GrowthVerdict::close_to_2;
    if (lowest > 200 + band) return GrowthVerdict::above_2;
    if (highest < 200 - band) return GrowthVerdict::below_2;
    return GrowthVerdict::undecided;
}

std::vector<double> context_contribution(const Matrix& weights, const Matrix& V, std::size_t row) {
    std::vector<double> sum(V.cols(), 0.0);
    for (std::size_t j = 0; j < V.rows(); ++j) {
        if (j == row) continue;
        for (std::size_t k = 0; k < V.cols(); ++k) sum[k] += double(weights(row, j)) * (double(V(j, k)) - V(row, k));
    }
    return sum;
}

OutputAgainstValue output_against_value(const AttentionTrace& trace, std::size_t row) {
    const auto contribution = context_contribution(trace.weights, trace.V, row);
    OutputAgainstValue r{Matrix(4, trace.V.cols()), 0.0};
    double norm_sq = 0.0;
    for (std::size_t k = 0; k < trace.V.cols(); ++k) {
        r.rows(0, k) = trace.output(row, k);
        r.rows(1, k) = trace.V(row, k);
        r.rows(2, k) = trace.output(row, k) - trace.V(row, k);
        r.rows(3, k) = static_cast<float>(contribution[k]);
        norm_sq += double(r.rows(2, k)) * r.rows(2, k);
    }
    r.distance = std::sqrt(norm_sq);
    return r;
}

std::vector<VarianceResult> variance_experiment(const std::vector<std::size_t>& dims, std::size_t samples,
                                                unsigned seed, const std::function<void(std::size_t)>& progress) {
    std::vector<VarianceResult> results;
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (std::size_t d_k : dims) {
        if (progress) progress(d_k);
        // Welford's running mean and sum of squared deviations, for q·k and for q·k/√d_k.
        double mean[2] = {0, 0}, m2[2] = {0, 0};
        const double inv_sqrt = 1.0 / std::sqrt(double(d_k));
        for (std::size_t s = 1; s <= samples; ++s) {
            double dot = 0;
            for (std::size_t p = 0; p < d_k; ++p) dot += normal(rng) * normal(rng);
            const double values[2] = {dot, dot * inv_sqrt};
            for (int k = 0; k < 2; ++k) {
                const double delta = values[k] - mean[k];
                mean[k] += delta / double(s);
                m2[k] += delta * (values[k] - mean[k]);
            }
        }
        results.push_back({d_k, m2[0] / double(samples - 1), m2[1] / double(samples - 1)});
    }
    return results;
}

}  // namespace attn::experiments
