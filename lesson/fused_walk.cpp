// lesson/fused_walk.cpp — the online softmax, key by key, on the walk's numbers (lesson/fused_walk.hpp).
#include "lesson/fused_walk.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attn::lesson {

namespace {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

OnlineState nothing_seen(std::size_t d_v) { return {neg_inf, 0.0f, std::vector<float>(d_v, 0.0f)}; }

// e^(a − b), and 0 for a = −∞: a state that has seen no key adds nothing.
float rescale_factor(float a, float b) { return a == neg_inf ? 0.0f : std::exp(a - b); }

// o/ℓ: the row of O as far as the keys taken in go (0 while none is).
std::vector<float> normalised(const OnlineState& s) {
    std::vector<float> out(s.o.size(), 0.0f);
    if (s.l > 0.0f)
        for (std::size_t k = 0; k < out.size(); ++k) out[k] = s.o[k] / s.l;
    return out;
}

// The keys row `scores` may see: every key whose score the mask left finite.
std::vector<std::size_t> visible(std::span<const float> scores) {
    std::vector<std::size_t> keys;
    for (std::size_t j = 0; j < scores.size(); ++j)
        if (scores[j] != neg_inf) keys.push_back(j);
    return keys;
}

// The row's keys one at a time, each step starting where the last one left off.
std::vector<KeyStep> in_steps(std::span<const float> scores, const Matrix& V,
                              const std::vector<std::vector<std::size_t>>& steps) {
    std::vector<KeyStep> out;
    OnlineState state = nothing_seen(V.cols());
    for (const auto& keys : steps) {
        out.push_back(take_in(state, scores, V, keys));
        state = out.back().after;
    }
    return out;
}

std::vector<std::vector<std::size_t>> grouped(const std::vector<std::size_t>& keys, std::size_t size) {
    std::vector<std::vector<std::size_t>> groups;
    for (std::size_t k = 0; k < keys.size(); k += size)
        groups.emplace_back(keys.begin() + k, keys.begin() + std::min(keys.size(), k + size));
    return groups;
}

// How often the running maximum of the row's scores moves after its first key.
std::size_t moves(std::span<const float> scores) {
    std::size_t count = 0;
    float m = neg_inf;
    for (const std::size_t j : visible(scores)) {
        count += m != neg_inf && scores[j] > m;
        m = std::max(m, scores[j]);
    }
    return count;
}

OnlineState final_state(std::span<const float> scores, const Matrix& V, const std::vector<std::size_t>& keys) {
    const std::vector<KeyStep> steps = in_steps(scores, V, grouped(keys, 1));
    return steps.empty() ? nothing_seen(V.cols()) : steps.back().after;
}

Merge merge_halves(std::span<const float> scores, const Matrix& V, const OnlineState& one_pass) {
    const std::vector<std::size_t> keys = visible(scores);
    const std::size_t split = (keys.size() + 1) / 2;
    Merge h;
    h.first_keys.assign(keys.begin(), keys.begin() + split);
    h.second_keys.assign(keys.begin() + split, keys.end());
    h.first = final_state(scores, V, h.first_keys);
    h.second = final_state(scores, V, h.second_keys);
    const float m = std::max(h.first.m, h.second.m);  // [decode merge]: m = max(m₁, m₂)
    h.first_factor = rescale_factor(h.first.m, m);
    h.second_factor = rescale_factor(h.second.m, m);
    h.merged = {m, h.first_factor * h.first.l + h.second_factor * h.second.l, std::vector<float>(V.cols())};
    for (std::size_t k = 0; k < V.cols(); ++k)
        h.merged.o[k] = h.first_factor * h.first.o[k] + h.second_factor * h.second.o[k];
    h.output = normalised(h.merged);
    h.largest_difference =
        std::max(std::fabs(double(h.merged.m) - one_pass.m), std::fabs(double(h.merged.l) - one_pass.l));
    for (std::size_t k = 0; k < V.cols(); ++k)
        h.largest_difference = std::max(h.largest_difference, std::fabs(double(h.merged.o[k]) - one_pass.o[k]));
    return h;
}

}  // namespace

KeyStep take_in(const OnlineState& start, std::span<const float> scores, const Matrix& V,
                const std::vector<std::size_t>& keys) {
    KeyStep step{keys, {}, start.m, 0.0f, start, {}};
    float m = start.m;
    for (const std::size_t j : keys) {
        step.scores.push_back(scores[j]);
        m = std::max(m, scores[j]);  // [fused softmax]: m' = max(m, the new scores)
    }
    if (m == neg_inf) {  // no key here the row may see: nothing changes
        step.output = normalised(start);
        return step;
    }
    step.rescale = rescale_factor(start.m, m);  // e^(m − m'): what was summed against m, now against m'
    OnlineState& s = step.after;
    s.m = m;
    s.l = start.l * step.rescale;
    for (float& o : s.o) o *= step.rescale;
    for (const std::size_t j : keys) {
        const float weight = rescale_factor(scores[j], m);  // e^(s_j − m')
        s.l += weight;                                      // ℓ' = ℓ·e^(m − m') + Σ e^(s_j − m')
        for (std::size_t k = 0; k < V.cols(); ++k) s.o[k] += weight * V(j, k);  // [fused values]: o += e^(s_j − m')·v_j
    }
    step.output = normalised(s);
    return step;
}

FusedWalk fused_walk(const Matrix& softmax_input, const Matrix& V, const Matrix& output) {
    FusedWalk w;
    const std::size_t n = softmax_input.rows();
    for (std::size_t i = 0; i < n; ++i)  // the row that rescales most often shows the most
        if (const std::size_t count = moves(softmax_input.row(i)); i == 0 || count > w.moves)
            w.row = i, w.moves = count;
    const std::span<const float> scores = softmax_input.row(w.row);
    w.one_at_a_time = in_steps(scores, V, grouped(visible(scores), 1));
    w.in_tiles = in_steps(scores, V, grouped(visible(scores), 2));
    w.output = Matrix(n, V.cols());
    for (std::size_t i = 0; i < n; ++i) {
        const std::vector<float> row = normalised(final_state(softmax_input.row(i), V, visible(softmax_input.row(i))));
        std::copy(row.begin(), row.end(), w.output.row(i).begin());
    }
    for (std::size_t k = 0; k < w.output.size(); ++k)
        w.largest_difference = std::max(w.largest_difference, std::fabs(double(w.output.data()[k]) - output.data()[k]));
    w.halves = merge_halves(scores, V, w.one_at_a_time.empty() ? nothing_seen(V.cols()) : w.one_at_a_time.back().after);
    return w;
}

}  // namespace attn::lesson
