// bench/bench_attention.cpp — Google Benchmark: every kernel and the whole chain, per backend.
//
// Counters: GFLOPs (per second; 2·m·n·k for a product, 4·n²·d for the attention core), bytes
// touched per second, and the machine's own FMA peak measured in the same run (BM_peak_fma), so a
// script can show every result as a percentage of what this CPU can do. All parallel benchmarks use
// real (wall) time: the CPU column would only see the main thread.
#include <benchmark/benchmark.h>

#include <omp.h>

#include <random>
#include <xsimd/xsimd.hpp>

#include "attention/attention.hpp"
#include "matrix/ops.hpp"
#include "simd/simd.hpp"

namespace {

using attn::Backend;
using attn::Matrix;

Matrix random_matrix(std::size_t rows, std::size_t cols, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    Matrix m(rows, cols);
    for (std::size_t k = 0; k < m.size(); ++k) m.data()[k] = dist(rng);
    return m;
}

Backend backend_arg(const benchmark::State& st) { return static_cast<Backend>(st.range(0)); }

void set_counters(benchmark::State& st, double flops, double bytes) {
    st.counters["GFLOPs"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
    st.SetBytesProcessed(static_cast<int64_t>(bytes) * st.iterations());
    st.SetLabel(attn::to_string(backend_arg(st)));
}

// The machine's peak: FMAs on registers only, no memory. 12 independent accumulators hide the
// 4-cycle FMA latency on both FMA pipes; each FMA is 2·W flops.
void BM_peak_fma(benchmark::State& st) {
    using B = xsimd::batch<float>;
    const int threads = static_cast<int>(st.range(0));
    constexpr int steps = 1 << 16;
    for (auto _ : st) {
#pragma omp parallel num_threads(threads)
        {
            B acc[12];
            for (int r = 0; r < 12; ++r) acc[r] = B(static_cast<float>(r + omp_get_thread_num()));
            const B x(0.9999f), y(1e-6f);
            for (int s = 0; s < steps; ++s) {
                for (int r = 0; r < 12; ++r) acc[r] = xsimd::fma(acc[r], x, y);
            }
            float sum = 0;
            for (int r = 0; r < 12; ++r) sum += acc[r].get(0);
            benchmark::DoNotOptimize(sum);
        }
    }
    st.counters["GFLOPs"] = benchmark::Counter(threads * 12.0 * 2 * B::size * steps / 1e9,
                                               benchmark::Counter::kIsIterationInvariantRate);
    st.counters["threads"] = threads;
}
BENCHMARK(BM_peak_fma)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Square C = A·B, the classic GEMM benchmark (1024³ for the 1-thread target).
void BM_matmul_square(benchmark::State& st) {
    const auto n = static_cast<std::size_t>(st.range(1));
    const Matrix A = random_matrix(n, n, 1), B = random_matrix(n, n, 2);
    Matrix C;
    for (auto _ : st) {
        if (backend_arg(st) == Backend::naive) attn::matmul_into(A, B, C);
        else attn::simd::matmul(A, B, C, backend_arg(st) == Backend::parallel ? attn::simd::Threads::all : attn::simd::Threads::one);
        benchmark::DoNotOptimize(C.data());
    }
    set_counters(st, 2.0 * n * n * n, 3.0 * n * n * 4);
}

// The attention core softmax(Q·Kᵀ/√d)·V on reused buffers: flops 4·n²·d (two products).
void BM_core(benchmark::State& st) {
    const auto n = static_cast<std::size_t>(st.range(1)), d = static_cast<std::size_t>(st.range(2));
    const Matrix Q = random_matrix(n, d, 1), K = random_matrix(n, d, 2), V = random_matrix(n, d, 3);
    attn::AttentionResult out;
    for (auto _ : st) {
        attn::scaled_dot_product_attention_into(Q, K, V, {.backend = backend_arg(st)}, out);
        benchmark::DoNotOptimize(out.output.data());
    }
    set_counters(st, 4.0 * n * n * d, (4.0 * n * d + 3.0 * n * n) * 4);
}

}  // namespace

BENCHMARK(BM_matmul_square)->ArgsProduct({{1, 2}, {1024}})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_core)->ArgsProduct({{1, 2}, {1024, 2048}, {64}})->UseRealTime()->Unit(benchmark::kMillisecond);
