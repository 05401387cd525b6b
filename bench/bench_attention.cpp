// bench/bench_attention.cpp — Google Benchmark: every kernel and the whole chain, per backend.
//
// Arguments are {backend, n, d}, backend 0 = naive, 1 = simd, 2 = parallel, 3 = fused (the Backend
// enum).
// Counters: GFLOPs (per second), bytes_per_second (distinct bytes touched), and the label names
// the backend. The machine's peak is measured in the same run (BM_peak_fma), so
// scripts/bench_report.py can show each result as a percentage of it. Every benchmark uses wall
// time: with OpenMP the CPU column would only see the main thread.
#include <xsimd/xsimd.hpp>

#include "attention/backends.hpp"
#include "bench/common.hpp"
#include "bench/gemm_steps.hpp"
#include "matrix/ops.hpp"

namespace {

using attn::Backend;
using attn::Matrix;
using bench::random_matrix;

Backend backend_of(const benchmark::State& st) { return static_cast<Backend>(st.range(0)); }
std::size_t arg(const benchmark::State& st, int k) { return static_cast<std::size_t>(st.range(k)); }

// The peak: FMAs on registers only, never touching memory. Twelve independent accumulators keep
// both FMA pipes busy through the FMA latency; each FMA is 2·W flops.
void BM_peak_fma(benchmark::State& st) {
    using B = xsimd::batch<float>;
    const int threads = static_cast<int>(st.range(0));
    constexpr int steps = 1 << 16, chains = 12;
    for (auto _ : st) {
#pragma omp parallel num_threads(threads)
        {
            B acc[chains];
            for (int r = 0; r < chains; ++r) acc[r] = B(static_cast<float>(r));
            const B x(0.9999f), y(1e-6f);
            for (int s = 0; s < steps; ++s)
                for (int r = 0; r < chains; ++r) acc[r] = xsimd::fma(acc[r], x, y);
            float sum = 0;
            for (int r = 0; r < chains; ++r) sum += acc[r].get(0);
            benchmark::DoNotOptimize(sum);
        }
    }
    st.counters["GFLOPs"] = benchmark::Counter(threads * chains * 2.0 * B::size * steps / 1e9,
                                               benchmark::Counter::kIsIterationInvariantRate);
    st.SetLabel(std::to_string(threads) + " thread" + (threads > 1 ? "s" : ""));
}

// The GEMM story of simd/gemm.cpp, one step per argument, 1 thread, n×n×n:
// 1 i-j-k (naive) → 2 i-k-j scalar → 3 i-k-j with xsimd → 4 register tile → 5 packed and blocked.
void BM_gemm_steps(benchmark::State& st) {
    const auto step = st.range(0);
    const std::size_t n = arg(st, 1);
    const Matrix A = random_matrix(n, n, 1), B = random_matrix(n, n, 2);
    Matrix C;
    for (auto _ : st) {
        switch (step) {
            case 1: attn::matmul_into(A, B, C); break;
            case 2: bench::matmul_ikj_scalar(A, B, C); break;
            case 3: bench::matmul_ikj_simd(A, B, C); break;
            case 4: bench::matmul_register_tile(A, B, C); break;
            default: attn::simd::matmul_into(A, B, C, attn::simd::Threads::one); break;
        }
        benchmark::DoNotOptimize(C.data());
    }
    bench::set_counters(st, 2.0 * n * n * n, 3.0 * n * n * 4);
    static const char* const names[] = {
        "", "i-j-k", "i-k-j scalar", "i-k-j xsimd", "register tile", "tile+packing+blocks"};
    st.SetLabel(names[step]);
}

// The two products of the chain, on one backend, d = head width:
//   scores = false: α·V, (n×n)·(n×d), step 6 (and, with d = n, BM_matmul_square: the classic GEMM figure);
//   scores = true:  scale·Q·Kᵀ, (n×d)·(n×d)ᵀ, steps 3 and 4 (the naive form builds Kᵀ, multiplies, scales).
// Both are 2·n·n·d flops over the same three matrices of data.
void product(benchmark::State& st, bool scores) {
    const Backend b = backend_of(st);
    const std::size_t n = arg(st, 1), d = arg(st, 2);
    const Matrix A = random_matrix(n, scores ? d : n, 1), B = random_matrix(n, d, 2);
    Matrix C;
    for (auto _ : st) {
        if (scores) attn::backends::scaled_scores_into(A, B, attn::scale_factor(attn::Scale::sqrt_dk, d), C, b);
        else attn::backends::matmul_into(A, B, C, b);
        benchmark::DoNotOptimize(C.data());
    }
    bench::set_counters(st, 2.0 * n * n * d, (n * n + 2.0 * n * d) * 4);
    st.SetLabel(attn::to_string(b));
}
void BM_matmul(benchmark::State& st) { product(st, false); }
void BM_matmul_transposed(benchmark::State& st) { product(st, true); }

// What folding scale = 1/√d into the score kernel saves: the same S' = scale·Q·Kᵀ, either scaled as each
// tile leaves the registers (folded = 1) or by a separate pass over S afterwards (folded = 0). 1 thread.
void BM_scale_folding(benchmark::State& st) {
    const bool folded = st.range(0) != 0;
    const std::size_t n = arg(st, 1), d = 64;
    const Matrix Q = random_matrix(n, d, 1), K = random_matrix(n, d, 2);
    Matrix S;
    for (auto _ : st) {
        attn::simd::matmul_transposed_into(Q, K, folded ? 0.125f : 1.0f, S, attn::simd::Threads::one);
        if (!folded) attn::scale_in_place(S, 0.125f);
        benchmark::DoNotOptimize(S.data());
    }
    bench::set_counters(st, 2.0 * n * n * d, (n * n + 2.0 * n * d) * 4);
    st.SetLabel(folded ? "scale folded into the kernel" : "separate scale pass");
}

// softmax_row over an n×n score matrix, step 5. Re-filled each iteration outside the timing.
void BM_softmax_rows(benchmark::State& st) {
    const Backend b = backend_of(st);
    const std::size_t n = arg(st, 1);
    const Matrix scores = random_matrix(n, n, 1);
    Matrix S = scores;
    for (auto _ : st) {
        st.PauseTiming();
        std::copy(scores.data(), scores.data() + scores.size(), S.data());
        st.ResumeTiming();
        attn::backends::softmax_rows_in_place(S, b);
        benchmark::DoNotOptimize(S.data());
    }
    bench::set_counters(st, 0, 2.0 * n * n * 4);
    st.SetItemsProcessed(static_cast<int64_t>(n * n) * st.iterations());
    st.SetLabel(attn::to_string(b));
}

// The core softmax(Q·Kᵀ/√d)·V, writing into buffers reused from one call to the next: flops 4·n²·d
// (two products), halved when causal. One untimed call first, so the timed calls are the steady
// state of a caller that keeps its buffers (and, at n = 16384, not the first touch of a 1 GiB S).
void core_steady_state(benchmark::State& st, Backend b, std::size_t n, std::size_t d, bool causal) {
    const Matrix Q = random_matrix(n, d, 1), K = random_matrix(n, d, 2), V = random_matrix(n, d, 3);
    const attn::AttentionOptions options{.causal = causal, .scale = attn::Scale::sqrt_dk, .backend = b};
    attn::AttentionResult out;
    attn::scaled_dot_product_attention_into(Q, K, V, options, out);
    for (auto _ : st) {
        attn::scaled_dot_product_attention_into(Q, K, V, options, out);
        benchmark::DoNotOptimize(out.output.data());
    }
    bench::set_counters(st, bench::core_flops(n, d) * (causal ? 0.5 : 1.0), bench::core_bytes(n, d));
    st.SetLabel(attn::to_string(b) + (causal ? ", causal" : ""));
}

void BM_core(benchmark::State& st) { core_steady_state(st, backend_of(st), arg(st, 1), arg(st, 2), false); }

// The same core returning fresh matrices: every call allocates the n×n buffer and touches it
// for the first time. The difference to BM_core is the price of that first touch.
void BM_core_fresh(benchmark::State& st) {
    const Backend b = backend_of(st);
    const std::size_t n = arg(st, 1), d = arg(st, 2);
    const Matrix Q = random_matrix(n, d, 1), K = random_matrix(n, d, 2), V = random_matrix(n, d, 3);
    for (auto _ : st) {
        const auto out = attn::scaled_dot_product_attention(Q, K, V, {.backend = b});
        benchmark::DoNotOptimize(out.output.data());
    }
    bench::set_counters(st, bench::core_flops(n, d), bench::core_bytes(n, d));
    st.SetLabel(attn::to_string(b));
}

// The full layer: projections Q, K, V = X·W (d_model = d_k = d_v = d) and the core.
void BM_layer(benchmark::State& st) {
    const Backend b = backend_of(st);
    const std::size_t n = arg(st, 1), d = arg(st, 2);
    const Matrix X = random_matrix(n, d, 1);
    const attn::SingleHeadAttention layer(random_matrix(d, d, 2), random_matrix(d, d, 3), random_matrix(d, d, 4));
    for (auto _ : st) {
        const auto out = layer.forward(X, {.backend = b});
        benchmark::DoNotOptimize(out.output.data());
    }
    bench::set_counters(st, bench::core_flops(n, d) + 3 * 2.0 * n * d * d, bench::core_bytes(n, d) + 3.0 * d * d * 4);
    st.SetLabel(attn::to_string(b));
}

// Small cores, where starting a thread team may cost more than it saves (simd/threads.hpp decides
// when parallel runs on one thread): simd and parallel side by side, n from 16 to 512, d = 64.
void BM_core_small(benchmark::State& st) { core_steady_state(st, backend_of(st), arg(st, 1), 64, false); }

// Long sequences, materialised (parallel) against fused, causal or not, d = 64, with the process's
// peak resident memory while the benchmark ran (inputs, outputs and S included).
void BM_core_long(benchmark::State& st) {
    bench::reset_peak_rss();
    core_steady_state(st, backend_of(st), arg(st, 1), 64, st.range(2) != 0);
    st.counters["peak_rss_MiB"] = bench::peak_rss_mib();
}

// Sizes: n ∈ {64, 256, 1024, 2048, 4096} with d = 64, and n = 1024 with d = 128. The naive
// backend stops at n = 1024 (its core at 4096 would take seconds per call).
void sizes(benchmark::internal::Benchmark* bm, std::initializer_list<int> backends) {
    for (int backend : backends) {
        for (int n : {64, 256, 1024, 2048, 4096}) {
            if (backend == 0 && n > 1024) continue;
            bm->Args({backend, n, 64});
        }
        bm->Args({backend, 1024, 128});
    }
    bm->ArgNames({"backend", "n", "d"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}
void kernel_sizes(benchmark::internal::Benchmark* bm) { sizes(bm, {0, 1, 2}); }    // one kernel: no fused form
void chain_sizes(benchmark::internal::Benchmark* bm) { sizes(bm, {0, 1, 2, 3}); }  // the whole core

}  // namespace

// The 2-thread peak needs OpenMP (without it the pragma is ignored and one thread would be counted twice).
BENCHMARK(BM_peak_fma)
    ->Apply([](benchmark::internal::Benchmark* bm) {
        bm->Arg(1);
        if (attn::build_info().openmp) bm->Arg(2);
    })
    ->ArgName("threads")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul)
    ->Name("BM_matmul_square")
    ->ArgsProduct({{0, 1, 2}, {1024}, {1024}})
    ->ArgNames({"backend", "n", "d"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gemm_steps)
    ->ArgsProduct({{1, 2, 3, 4, 5}, {1024}})
    ->ArgNames({"step", "n"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_scale_folding)
    ->ArgsProduct({{0, 1}, {1024, 2048, 4096}})
    ->ArgNames({"folded", "n"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul)->Apply(kernel_sizes);
BENCHMARK(BM_matmul_transposed)->Apply(kernel_sizes);
BENCHMARK(BM_softmax_rows)->Apply(kernel_sizes);
BENCHMARK(BM_core)->Apply(chain_sizes);
BENCHMARK(BM_core_fresh)->Apply(chain_sizes);
BENCHMARK(BM_layer)->Apply(chain_sizes);
BENCHMARK(BM_core_small)
    ->ArgsProduct({{1, 2, 3}, {16, 32, 48, 64, 96, 128, 192, 256, 384, 512}})
    ->ArgNames({"backend", "n"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_core_long)
    ->ArgsProduct({{2, 3}, {1024, 2048, 4096, 8192, 16384}, {0, 1}})
    ->ArgNames({"backend", "n", "causal"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
    benchmark::AddCustomContext("simd_instruction_set", attn::simd::instruction_set());
    benchmark::AddCustomContext("simd_batch_floats", std::to_string(attn::simd::batch_width()));
    benchmark::AddCustomContext("openmp_threads", std::to_string(attn::simd::max_threads()));
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
