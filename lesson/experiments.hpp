// lesson/experiments.hpp — the lesson's exercises and its variance argument as computations that
// measure something. `attn exercise N` and `attn variance` print them; tests/ assert their claims.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "attention/attention.hpp"

namespace attn::experiments {

// ---- the softmax of one row, summarised -----------------------------------------------------

struct RowStats {
    double entropy = 0;        // H(α) = −Σ α_j ln α_j: ln n for uniform, 0 for one-hot
    double max_weight = 0;     // max_j α_j: 1/n for uniform, 1 for one-hot
    double jacobian_norm = 0;  // ‖diag(α) − ααᵀ‖_F: how strongly α responds to its scores; → 0 at one-hot
};
RowStats row_stats(std::span<const float> weights);

// ---- exercise 1: √d_k against d_k against no scaling ------------------------------------------

struct ScalingResult {
    std::size_t d_k;
    Scale scale;
    RowStats mean;    // averaged over the rows (and over the draws)
    RowStats spread;  // standard deviation over the draws of each draw's row average (0 for one draw)
    std::size_t draws = 1;
};
// For each d_k: one draw of `rows` queries against `keys` keys, all entries N(0, 1), softmax of the
// scaled scores under each of the three scales.
std::vector<ScalingResult> scaling_experiment(const std::vector<std::size_t>& dims, std::size_t keys, std::size_t rows,
                                              unsigned seed);
// The same, `draws` times (seeds seed, seed + 1, …): the mean over the draws, and their spread.
// One draw's row averages vary from draw to draw; the spread says by how much.
std::vector<ScalingResult> scaling_over_draws(const std::vector<std::size_t>& dims, std::size_t keys, std::size_t rows,
                                              std::size_t draws, unsigned seed);

// What the table says, found in it (so that the sentences printed under it follow from its numbers).
// For one scale: the mean entropy, largest weight and ‖J‖ at the first and the last d_k, and the
// d_k where ‖J‖ peaks.
// Whether the mean entropy changes with d_k is decided by entropy_change_threshold below.
struct ScalingTrend {
    Scale scale;
    ScalingResult first, last, peak_jacobian;
    ScalingResult lowest_entropy, highest_entropy;  // the d_k with the lowest and the highest mean entropy
    double min_entropy = 0, max_entropy = 0;        // those two means
    double entropy_threshold = 0;                   // entropy_change_threshold(lowest_entropy, highest_entropy)
    bool entropy_changes() const { return max_entropy - min_entropy > entropy_threshold; }
};
// Refuses results of fewer than 2 draws: one draw cannot tell a change from its own variation.
ScalingTrend scaling_trend(const std::vector<ScalingResult>& results, Scale scale);

// Exercise 1's one rule for "the entropy changes with d_k": two means over draws differ by more than
// `entropy_change_standard_errors` standard errors of their difference, √(se_a² + se_b²), where a
// mean's standard error is the sample standard deviation of its draws over √draws (= spread /
// √(draws − 1)). scripts/make_notebooks.py states the same rule and computes it the same way.
inline constexpr double entropy_change_standard_errors = 3;
double entropy_change_threshold(const ScalingResult& a, const ScalingResult& b);

// ---- confusions 1 to 4, and step 3's remark on Kᵀ -----------------------------------------------

// Step 3's remark: Q·K instead of Q·Kᵀ. Shape-valid only when n = d_k; entry (i, j) is then
// Σ_p Q_ip·K_pj — query i's features against feature j of every token, which compares nothing.
Matrix scores_without_transpose(const Matrix& Q, const Matrix& K);

// Confusion 1: S_ij = ‖q_i‖·‖k_j‖·cos θ_ij. The cosines: how far query i and key j point the same
// way (0 where either vector is zero).
Matrix cosines(const Matrix& Q, const Matrix& K);

// Confusion 1: the scores the same input gets from other projection weights, (X·W_Q)·(X·W_K)ᵀ: what
// counts as related is made by the weights, which training chooses.
Matrix scores_with_weights(const Matrix& X, const Matrix& W_Q, const Matrix& W_K);

// Confusion 2: the softmax taken down each column instead of along each row. Every column sums to
// 1, the rows do not: row i is no longer a distribution over what token i reads.
Matrix softmax_columns(const Matrix& S);

// Step 5 written out for one row of S': its maximum m, the e^(S'_j − m) and their sum, from which
// α_j = e^(S'_j − m) / sum (the walk and the pages show them; −∞ entries give e^−∞ = 0).
struct SoftmaxWrittenOut {
    float max = 0;
    std::vector<float> exponentials;
    float sum = 0;
};
SoftmaxWrittenOut softmax_written_out(std::span<const float> row);

// Each row's (or column's) sum: α's rows sum to 1, the column softmax's columns do.
std::vector<float> row_sums(const Matrix& M);
std::vector<float> column_sums(const Matrix& M);

// Confusion 4: with h heads of width d_k = d_model / h, the heads together cost what one head of
// width d_model would. Refuses h = 0 and an h that does not divide d_model.
std::size_t head_width(std::size_t d_model, std::size_t heads);

// ---- exercise 2: is S_ii the largest score of its row? ----------------------------------------

// Where the largest score of a row is (the first, on a tie): compared with i for row i.
std::size_t row_argmax(std::span<const float> row);

struct DiagonalResult {
    std::size_t draws = 0;
    double independent_fraction = 0;       // rows whose maximum is on the diagonal, W_Q and W_K drawn apart
    double tied_fraction = 0;              // the same with W_Q = W_K (S symmetric)
    std::size_t tied_pair_violations = 0;  // pairs with S_ij > max(S_ii, S_jj) when W_Q = W_K: always 0
};
// The lesson's X with random N(0, 1) weights (d_model × d_k), `draws` times.
DiagonalResult diagonal_experiment(std::size_t draws, std::size_t d_k, unsigned seed);

// ---- exercise 3: n² growth --------------------------------------------------------------------

struct GrowthPoint {
    std::size_t n = 0;
    std::size_t scores = 0;       // entries of S: n²
    std::size_t score_bytes = 0;  // bytes of the n×n matrix the call actually returned (0 for fused)
    double seconds = 0;           // one call of the core (a run's), or the median over the runs
    double ran = 0;               // of those seconds, the time the calling thread was on a core
};
// `runs` sweeps over every n, each timing one call of the core per n (d = 64, random inputs drawn
// once per n, and one untimed call per n first, so that no run pays for starting threads or first
// touching memory): a neighbour that slows the shared machine for a moment spoils one run, not every
// timing of one n. `progress` is told before each n of each run (counted from 1).
using GrowthRun = std::vector<GrowthPoint>;  // one point per n, `seconds` of a single call
std::vector<GrowthRun> growth_runs(const std::vector<std::size_t>& ns, Backend backend, std::size_t runs,
                                   const std::function<void(std::size_t run, std::size_t n)>& progress = {});
// Each n's median over the runs: one call can be slowed by a neighbour, the median of several rarely is.
std::vector<GrowthPoint> median_of_runs(const std::vector<GrowthRun>& runs);
// median_of_runs of `repeats` runs.
std::vector<GrowthPoint> growth_experiment(const std::vector<std::size_t>& ns, Backend backend, std::size_t repeats,
                                           const std::function<void(std::size_t n)>& progress = {});
// Slope of log y against log x by least squares: y ∝ x^slope.
double fitted_exponent(const std::vector<double>& x, const std::vector<double>& y);

// The time exponent of each run (fitted_exponent of its seconds against n): median, lowest, highest.
struct ExponentSpread {
    double median = 0, lowest = 0, highest = 0;
};
ExponentSpread time_exponents(const std::vector<GrowthRun>& runs);

// Whether the machine left the runs alone enough to fit an exponent, measured two ways at each n:
//  - the scatter of the repeated runs: moving the time of one n by a factor f moves a least-squares
//    slope over log n by (log n − mean log n) / Σ(log n − mean log n)² · ln f, so the runs' range
//    (fastest to slowest) alone could move a fitted exponent by that much;
//  - the time a call spent waiting for a core: a neighbour that holds the cores stops the calling
//    thread, or keeps a thread of its team from starting, and the call's time grows while the
//    thread does not run (its CPU time against the time it took, the median run's).
struct Busy {
    std::size_t n = 0;                // the n where the scatter could move an exponent the most
    double fastest = 0, slowest = 0;  // its runs' times, seconds
    double exponent_shift = 0;        // how far that scatter alone could move a fitted exponent
    std::size_t waited_n = 0;         // the n where calls waited longest
    double waited = 0;                // the median run's share of its time off a core there, 0 … 1
};
Busy how_busy(const std::vector<GrowthRun>& runs);
// A machine too busy to fit an exponent: a scatter that could move it by more than the margin, or
// calls that spent more than half their time waiting for a core (both read as printed: to two
// decimals, and in whole percent).
constexpr double busiest_wait = 0.5;
bool too_busy(const Busy& busy, double margin);

// What the runs say about the time exponent, read to two decimals as printed, with a margin. First,
// the machine must have been quiet enough to fit an exponent at all (too_busy). Then every run must
// agree: all within 2 ± margin (close to 2), all above 2 + margin, or all below 2 − margin; runs in
// more than one of those ranges do not decide.
enum class GrowthVerdict { close_to_2, above_2, below_2, undecided, too_busy };
constexpr double growth_margin = 0.15;  // "close to 2" is 1.85 to 2.15
GrowthVerdict growth_verdict(const ExponentSpread& exponents, const Busy& busy, double margin = growth_margin);

// ---- exercise 5: what the output of token 1 is made of -----------------------------------------

// o₁ − v₁ = Σ_j α₁ⱼ·v_j − v₁ = Σ_{j≠1} α₁ⱼ·(v_j − v₁), because Σ_j α₁ⱼ = 1. Returns that sum, term by
// term summed in double; `row` is the (0-based) query whose output is decomposed.
std::vector<double> context_contribution(const Matrix& weights, const Matrix& V, std::size_t row);

// The table both `attn walk` and `attn exercise 5` print, for query `row` of a trace: rows o_i, v_i,
// o_i − v_i and Σ_j α_ij·(v_j − v_i) (the last equals the one before, up to rounding), and ‖o_i − v_i‖.
struct OutputAgainstValue {
    Matrix rows;  // 4 × d_v
    double distance = 0;
};
OutputAgainstValue output_against_value(const AttentionTrace& trace, std::size_t row);

// ---- the variance argument --------------------------------------------------------------------

struct VarianceResult {
    std::size_t d_k = 0;
    double raw = 0;     // sample variance of q·k, q, k ~ N(0, I): theory d_k
    double scaled = 0;  // sample variance of q·k/√d_k: theory 1
};
std::vector<VarianceResult> variance_experiment(const std::vector<std::size_t>& dims, std::size_t samples,
                                                unsigned seed,
                                                const std::function<void(std::size_t d_k)>& progress = {});

}  // namespace attn::experiments
