// examples/decode_loop.cpp — generating tokens one at a time with a key/value cache, and what the
// cache saves. One attention layer with random weights (it is the cost that teaches, not the text):
//
//   each step t:  q, k, v = x_t·W_Q, x_t·W_K, x_t·W_V      the new token's projections (H heads of E)
//                 cache.append(k, v)                        the cache now holds tokens 0..t
//                 o = softmax(q·Kᵀ/√E)·V                    against every token held
//                 x_{t+1} = o·W_O, scaled to length 1       the next token's input
//
// Without a cache, each step projects the whole prefix again, K = X·W_K and V = X·W_V for t + 1
// tokens: O(t) projections a step, O(n²) for n tokens, against O(1) a step and O(n) with the cache
// (the attention itself reads every token held either way). Both loops run here on the same tokens;
// the program prints the time per token of each at a few prefix lengths, measured on this machine,
// and fails when their outputs differ by more than float rounding.
//
//   decode_loop [--tokens N]      (N = 256 unless given)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "attention/kv_cache.hpp"
#include "attention/run.hpp"
#include "matrix/ops.hpp"

namespace {

constexpr std::size_t d_model = 256, H = 4, E = 64;  // H heads of E numbers each: H·E = d_model

attn::Matrix random_weights(std::size_t rows, std::size_t cols, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(float(rows)));  // keeps x·W near length 1
    attn::Matrix W(rows, cols);
    for (std::size_t k = 0; k < W.size(); ++k) W.data()[k] = normal(rng);
    return W;
}

struct Layer {
    attn::Matrix W_Q, W_K, W_V, W_O;  // d_model × H·E, and H·E × d_model
};

// x·W_O scaled to length 1: the next token's input.
attn::Matrix next_input(const attn::Matrix& o, const Layer& layer) {
    attn::Matrix x = attn::matmul(o, layer.W_O);
    double square = 0.0;
    for (std::size_t k = 0; k < x.size(); ++k) square += double(x.data()[k]) * x.data()[k];
    attn::scale_in_place(x, float(1.0 / std::sqrt(std::max(square, 1e-30))));
    return x;
}

// A 1 × H·E row read as (1, H, 1, E): head h is columns h·E … h·E + E − 1.
attn::View as_heads(const attn::Matrix& row, std::size_t (&shape)[4]) {
    shape[0] = 1, shape[1] = H, shape[2] = 1, shape[3] = E;
    return {row.data(), shape};
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// With the cache: each step projects the new token alone. Fills every step's input X (n × d_model),
// its output O (n × H·E), and each step's time.
void with_cache(const Layer& layer, const attn::Matrix& x0, attn::Matrix& X, attn::Matrix& O,
                std::vector<double>& times) {
    const std::size_t n = X.rows();
    attn::KvCache cache(1, H, n, E, E);  // room for every token, allocated once
    attn::Matrix x = x0;
    for (std::size_t t = 0; t < n; ++t) {
        const Clock::time_point start = Clock::now();
        const attn::Matrix q = attn::matmul(x, layer.W_Q), k = attn::matmul(x, layer.W_K),
                           v = attn::matmul(x, layer.W_V);
        std::size_t q_shape[4], k_shape[4], v_shape[4];
        cache.append(as_heads(k, k_shape), as_heads(v, v_shape));
        attn::Call call{.Q = as_heads(q, q_shape)};  // one new query: it sees every token held
        call.options.backend = attn::Backend::fused;
        attn::Results r;
        cache.run(call, r);
        const attn::Matrix o = attn::Matrix::borrow(r.output.values.data(), 1, H * E);
        times.push_back(seconds_since(start));
        std::copy_n(x.data(), d_model, X.data() + t * d_model);
        std::copy_n(o.data(), H * E, O.data() + t * H * E);
        x = next_input(o, layer);
    }
}

// Without: each step projects the whole prefix X[0..t] again, then attends the newest query.
void recomputing(const Layer& layer, const attn::Matrix& X, attn::Matrix& O, std::vector<double>& times) {
    for (std::size_t t = 0; t < X.rows(); ++t) {
        const Clock::time_point start = Clock::now();
        const attn::Matrix prefix = attn::Matrix::borrow(X.data(), t + 1, d_model);
        const attn::Matrix K = attn::matmul(prefix, layer.W_K), V = attn::matmul(prefix, layer.W_V);  // (t+1) × H·E
        const attn::Matrix q = attn::matmul(attn::Matrix::borrow(X.data() + t * d_model, 1, d_model), layer.W_Q);
        // K and V, (t+1) × H·E, read as (1, H, t+1, E): head h of token j is at j·H·E + h·E
        const std::size_t kv_shape[4] = {1, H, t + 1, E};
        const std::ptrdiff_t kv_strides[4] = {std::ptrdiff_t((t + 1) * H * E), std::ptrdiff_t(E), std::ptrdiff_t(H * E),
                                              1};
        std::size_t q_shape[4];
        attn::Call call{.Q = as_heads(q, q_shape),
                        .K = attn::View{K.data(), kv_shape, kv_strides},
                        .V = attn::View{V.data(), kv_shape, kv_strides}};
        call.options.backend = attn::Backend::fused;
        attn::Results r;
        attn::run(call, r);
        times.push_back(seconds_since(start));
        std::copy_n(r.output.values.data(), H * E, O.data() + t * H * E);
    }
}

// The mean of times[first, last): one step's time, steadier than a single step's.
double mean(const std::vector<double>& times, std::size_t first, std::size_t last) {
    double sum = 0.0;
    for (std::size_t t = first; t < last; ++t) sum += times[t];
    return sum / double(last - first);
}

}  // namespace

int main(int argc, char** argv) {
    std::size_t n = 256;
    for (int i = 1; i + 1 < argc; i += 2)
        if (std::strcmp(argv[i], "--tokens") == 0) n = std::strtoul(argv[i + 1], nullptr, 10);
    if (n < 2) {
        std::fprintf(stderr, "decode_loop: --tokens must be at least 2\n");
        return 2;
    }
    std::mt19937 rng(2024);
    const Layer layer{random_weights(d_model, H * E, rng), random_weights(d_model, H * E, rng),
                      random_weights(d_model, H * E, rng), random_weights(H * E, d_model, rng)};
    const attn::Matrix x0 = random_weights(1, d_model, rng);  // the first token's input, of length about 1
    attn::Matrix X(n, d_model), O_cached(n, H * E), O_recomputed(n, H * E);
    std::vector<double> cached, recomputed;
    with_cache(layer, x0, X, O_cached, cached);
    recomputing(layer, X, O_recomputed, recomputed);

    double largest = 0.0;  // the two loops' outputs: the same numbers, up to float rounding
    for (std::size_t k = 0; k < O_cached.size(); ++k)
        largest = std::max(largest, double(std::fabs(O_cached.data()[k] - O_recomputed.data()[k])));
    std::printf("%zu tokens, one layer of %zu heads of %zu (d_model = %zu), random weights\n", n, H, E, d_model);
    std::printf("%10s  %16s  %16s  %8s\n", "prefix", "with cache (µs)", "recompute (µs)", "ratio");
    std::vector<std::size_t> prefixes;  // 8, 16, 32, … and n: each row the mean of the steps (p/2, p]
    for (std::size_t p = 8; p < n; p *= 2) prefixes.push_back(p);
    prefixes.push_back(n);
    for (const std::size_t p : prefixes) {
        const double a = 1e6 * mean(cached, p / 2, p), b = 1e6 * mean(recomputed, p / 2, p);
        std::printf("%10zu  %16.1f  %16.1f  %7.1f×\n", p, a, b, b / a);
    }
    std::printf("largest difference between the two loops' outputs: %.3g\n", largest);
    if (!(largest <= 1e-5)) {
        std::fprintf(stderr, "decode_loop: the cache's outputs differ from the recomputed ones by %.3g\n", largest);
        return 1;
    }
    return 0;
}
