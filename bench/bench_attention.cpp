// bench/bench_attention.cpp — Google Benchmark: every kernel and the whole chain, per backend.
//
// Each kernel and the core are registered once per backend, which the name says:
// BM_core/parallel/n:2048/d:64. Arguments are n and d (or n and causal).
// Counters: GFLOPs (per second), bytes_per_second (distinct bytes touched), and the label names
// the backend. The machine's peak is measured in the same run (BM_peak_fma), so
// bench/tools/bench_report.py can show each result as a percentage of it. Every benchmark uses wall
// time: with OpenMP the CPU column would only see the main thread.
#include "attention/backends.hpp"
#include "bench/common.hpp"
#include "bench/gemm_steps.hpp"
#include "bench/ladder.hpp"
#include "bench/tuning.hpp"
#include "matrix/ops.hpp"

namespace {

using attn::Backend;
using attn::Matrix;
using bench::random_matrix;

std::size_t arg(const benchmark::State& st, int k) { return static_cast<std::size_t>(st.range(k)); }

// The peaks: twelve independent chains on registers only, never touching memory, enough to keep
// both pipes busy through the latency. pairs = false: FMAs (simd::fma_chains, 2·W flops each);
// pairs = true: vdpbf16ps (simd::pair_chains, two products a lane, 4·W flops), the ceiling of the
// fused kernel's bf16 mode, only where the kernels in use have it (the emulation runs at the FMA's rate).
void peak_chains(benchmark::State& st, bool pairs) {
    if (pairs && !attn::simd::bf16_instructions()) {
        st.SkipWithError(("no vdpbf16ps in the kernels in use (" + attn::simd::isa() + ")").c_str());
        return;
    }
    const int threads = static_cast<int>(st.range(0));
    constexpr std::size_t steps = 1 << 16, chains = 12;
    for (auto _ : st) {
#pragma omp parallel num_threads(threads)
        benchmark::DoNotOptimize(pairs ? attn::simd::pair_chains(steps) : attn::simd::fma_chains(steps));
    }
    const double flops = (pairs ? 4.0 : 2.0) * double(attn::simd::batch_width());
    st.counters["GFLOPs"] =
        benchmark::Counter(threads * chains * flops * steps / 1e9, benchmark::Counter::kIsIterationInvariantRate);
    st.SetLabel(std::to_string(threads) + " thread" + (threads > 1 ? "s" : "") + (pairs ? ", bf16 pairs" : ""));
}
void BM_peak_fma(benchmark::State& st) { peak_chains(st, false); }
void BM_peak_bf16(benchmark::State& st) { peak_chains(st, true); }

// The register tile with everything in L1: A is rows × 192, B one panel 192 × NR (24 KiB with AVX-512),
// C one tile, the same every call. Nothing comes from L2, so this is as fast as the products' tile
// runs on this machine, and its percentage of BM_peak_fma is the ceiling of every product's (each call
// pays its setup and its stores once per 192 steps, as the GEMM's calls of that depth do).
// rows = 6 is one strip; 12 is AVX-512's tall tile, or two one-strip tiles elsewhere. 1 thread.
void BM_tile_in_l1(benchmark::State& st) {
    const std::size_t rows = arg(st, 0), depth = 192, columns = attn::simd::tile_columns();
    const Matrix A = random_matrix(rows, depth, 1), B = random_matrix(depth, columns, 2);
    Matrix C;
    for (auto _ : st) {
        attn::simd::matmul_register_tile_into(A, B, C);
        benchmark::DoNotOptimize(C.data());
    }
    bench::set_counters(st, 2.0 * double(rows * depth * columns), double(rows * depth + depth * columns) * 4);
    st.SetLabel(std::to_string(rows) + "×" + std::to_string(columns) + ", in L1");
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
            case 4: attn::simd::matmul_register_tile_into(A, B, C); break;
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
//   scores = true:  Q·Kᵀ, (n×d)·(n×d)ᵀ, step 3 (the naive form builds Kᵀ, then multiplies).
// Both are 2·n·n·d flops over the same three matrices of data.
void product(benchmark::State& st, Backend b, bool scores) {
    const std::size_t n = arg(st, 0), d = arg(st, 1);
    const Matrix A = random_matrix(n, scores ? d : n, 1), B = random_matrix(n, d, 2);
    Matrix C;
    for (auto _ : st) {
        if (scores) attn::backends::matmul_transposed_into(A, B, C, b);
        else attn::backends::matmul_into(A, B, C, b);
        benchmark::DoNotOptimize(C.data());
    }
    bench::set_counters(st, 2.0 * n * n * d, (n * n + 2.0 * n * d) * 4);
    st.SetLabel(attn::to_string(b));
}
void BM_matmul(benchmark::State& st, Backend b) { product(st, b, false); }
void BM_matmul_transposed(benchmark::State& st, Backend b) { product(st, b, true); }

// What folding step 4 (S' = scale·S, scale = 1/√d) into step 5's kernel saves, on the fast backends:
// S = Q·Kᵀ and α = softmax_row(S'), with the scale either multiplied in as the softmax reads each
// score (folded = 1, as the chain runs) or by a pass of its own over S in between (folded = 0). The
// two give the same bits (simd/softmax.cpp). 1 thread.
void BM_scale_folding(benchmark::State& st) {
    const bool folded = st.range(0) != 0;
    const std::size_t n = arg(st, 1), d = 64;
    const Matrix Q = random_matrix(n, d, 1), K = random_matrix(n, d, 2);
    Matrix S;
    for (auto _ : st) {
        attn::simd::matmul_transposed_into(Q, K, 1.0f, S, attn::simd::Threads::one);
        if (!folded) attn::scale_in_place(S, 0.125f);
        attn::simd::softmax_rows_in_place(S, folded ? 0.125f : 1.0f, attn::simd::Threads::one);
        benchmark::DoNotOptimize(S.data());
    }
    bench::set_counters(st, 2.0 * n * n * d, (n * n + 2.0 * n * d) * 4);
    st.SetLabel(folded ? "scale folded into the softmax" : "separate scale pass");
}

// softmax_row over an n×n score matrix, step 5. Re-filled each iteration outside the timing.
void BM_softmax_rows(benchmark::State& st, Backend b) {
    const std::size_t n = arg(st, 0);
    const Matrix scores = random_matrix(n, n, 1);
    Matrix S = scores;
    for (auto _ : st) {
        st.PauseTiming();
        std::copy(scores.data(), scores.data() + scores.size(), S.data());
        st.ResumeTiming();
        attn::backends::softmax_rows_in_place({S, 1.0f}, b);
        benchmark::DoNotOptimize(S.data());
    }
    bench::set_counters(st, 0, 2.0 * n * n * 4);
    st.SetItemsProcessed(static_cast<int64_t>(n * n) * st.iterations());
    st.SetLabel(attn::to_string(b));
}

// The core softmax(Q·Kᵀ/√d)·V, writing into buffers reused from one call to the next: flops 4·n²·d
// (two products), halved when causal. One untimed call first, so the timed calls are the steady
// state of a caller that keeps its buffers (and, at n = 16384, not the first touch of a 1 GiB S).
// dtype bf16 (the fused backend only): the same flops, counted as done, on bfloat16 pairs.
void core_steady_state(benchmark::State& st, Backend b, std::size_t n, std::size_t d, bool causal,
                       attn::Dtype dtype = attn::Dtype::f32) {
    const Matrix Q = random_matrix(n, d, 1), K = random_matrix(n, d, 2), V = random_matrix(n, d, 3);
    const attn::AttentionOptions options{.causal = causal, .scale = attn::Scale::sqrt_dk, .backend = b, .dtype = dtype};
    attn::AttentionResult out;
    attn::scaled_dot_product_attention_into(Q, K, V, options, out);
    const bench::BusyThreads busy;
    for (auto _ : st) {
        attn::scaled_dot_product_attention_into(Q, K, V, options, out);
        benchmark::DoNotOptimize(out.output.data());
    }
    st.counters["threads_busy"] = busy();
    bench::set_counters(st, bench::core_flops(n, d) * (causal ? 0.5 : 1.0), bench::core_bytes(n, d));
    st.SetLabel(attn::to_string(b) + (dtype == attn::Dtype::bf16 ? ", bf16" : "") + (causal ? ", causal" : ""));
}

void BM_core(benchmark::State& st, Backend b) { core_steady_state(st, b, arg(st, 0), arg(st, 1), false); }

// The same core returning fresh matrices: every call allocates the n×n buffer and touches it
// for the first time. The difference to BM_core is the price of that first touch.
void BM_core_fresh(benchmark::State& st, Backend b) {
    const std::size_t n = arg(st, 0), d = arg(st, 1);
    const Matrix Q = random_matrix(n, d, 1), K = random_matrix(n, d, 2), V = random_matrix(n, d, 3);
    for (auto _ : st) {
        const auto out = attn::scaled_dot_product_attention(Q, K, V, {.backend = b});
        benchmark::DoNotOptimize(out.output.data());
    }
    bench::set_counters(st, bench::core_flops(n, d), bench::core_bytes(n, d));
    st.SetLabel(attn::to_string(b));
}

// The full layer: projections Q, K, V = X·W (d_model = d_k = d_v = d) and the core.
void BM_layer(benchmark::State& st, Backend b) {
    const std::size_t n = arg(st, 0), d = arg(st, 1);
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
void BM_core_small(benchmark::State& st, Backend b) { core_steady_state(st, b, arg(st, 0), 64, false); }

// Long sequences, materialised (parallel) against fused, causal or not, d = 64, with the process's
// peak resident memory while the benchmark ran (inputs, outputs and S included). The sweep starts
// at n = 256, where a causal core has only a few short blocks to share between the threads.
void BM_core_long(benchmark::State& st, Backend b) {
    bench::reset_peak_rss();
    core_steady_state(st, b, arg(st, 0), 64, st.range(1) != 0);
    st.counters["peak_rss_MiB"] = bench::peak_rss_mib();
}

// The fused kernel's bf16 mode (simd/fused.cpp), named as the backend with its dtype:
// BM_core/fused_bf16/n:2048/d:64 beside BM_core/fused/n:2048/d:64, and BM_core_long/fused_bf16.
void BM_core_bf16(benchmark::State& st) {
    core_steady_state(st, Backend::fused, arg(st, 0), arg(st, 1), false, attn::Dtype::bf16);
}
void BM_core_long_bf16(benchmark::State& st) {
    bench::reset_peak_rss();
    core_steady_state(st, Backend::fused, arg(st, 0), 64, st.range(1) != 0, attn::Dtype::bf16);
    st.counters["peak_rss_MiB"] = bench::peak_rss_mib();
}

// The backward of the core, dQ, dK, dV from dO (attention/backward.cpp), after one untimed forward that
// keeps what it needs, into buffers reused from one call to the next (one untimed call first). Flops: the materialised backends' four products (dV = αᵀ·dO, dα = dO·Vᵀ,
// dQ = dS·K, dK = dSᵀ·Q) are 8·n²·d; the fused one is counted 10·n²·d, those four and one recomputation
// of S (simd/fused_backward.cpp), the usual count for this algorithm. With the process's peak resident
// memory while it ran.
void BM_backward(benchmark::State& st, Backend b) {
    const std::size_t n = arg(st, 0), d = arg(st, 1);
    const Matrix Q = random_matrix(n, d, 1), K = random_matrix(n, d, 2), V = random_matrix(n, d, 3),
                 dO = random_matrix(n, d, 4);
    const attn::AttentionOptions options{.backend = b, .keep_for_backward = true};
    const attn::AttentionResult forward = attn::scaled_dot_product_attention(Q, K, V, options);
    bench::reset_peak_rss();
    attn::AttentionGradients g;  // reused, as a training loop would: the steady state, like BM_core
    attn::scaled_dot_product_attention_backward_into(Q, K, V, forward, dO, options, g);
    const bench::BusyThreads busy;
    for (auto _ : st) {
        attn::scaled_dot_product_attention_backward_into(Q, K, V, forward, dO, options, g);
        benchmark::DoNotOptimize(g.dQ.data());
    }
    st.counters["threads_busy"] = busy();
    st.counters["peak_rss_MiB"] = bench::peak_rss_mib();
    const double products = b == Backend::fused ? 10.0 : 8.0;
    bench::set_counters(st, products * double(n) * double(n) * double(d), bench::core_bytes(n, d) + 4.0 * n * d * 4);
    st.SetLabel(attn::to_string(b));
}

using Body = void (*)(benchmark::State&, Backend);
using Apply = void (*)(benchmark::internal::Benchmark*, Backend);

// One benchmark per backend, named for it: BM_core/fused/n:2048/d:64 (not a number to decode).
void per_backend(const std::string& family, Body body, std::initializer_list<Backend> backends, Apply arguments) {
    for (Backend b : backends) {
        auto* bm = benchmark::RegisterBenchmark((family + "/" + attn::to_string(b)).c_str(),
                                                [body, b](benchmark::State& st) { body(st, b); });
        arguments(bm, b);
        bm->UseRealTime();
    }
}

// Sizes: n ∈ {64, 256, 1024, 2048, 4096} with d = 64, and n = 1024 with d = 128. The naive
// backend stops at n = 1024 (its core at 4096 would take seconds per call).
void sizes(benchmark::internal::Benchmark* bm, Backend b) {
    for (int n : {64, 256, 1024, 2048, 4096})
        if (b != Backend::naive || n <= 1024) bm->Args({n, 64});
    bm->Args({1024, 128})->ArgNames({"n", "d"})->Unit(benchmark::kMicrosecond);
}

// BM_core_long's: n from 256 to 16384, causal or not, d = 64.
void long_sizes(benchmark::internal::Benchmark* bm, Backend) {
    bm->ArgsProduct({{256, 512, 1024, 2048, 4096, 8192, 16384}, {0, 1}})->ArgNames({"n", "causal"});
    bm->Unit(benchmark::kMillisecond);
}

constexpr auto kernel_backends = {Backend::naive, Backend::simd, Backend::parallel};  // one kernel: no fused form
constexpr auto all_backends = {Backend::naive, Backend::simd, Backend::parallel, Backend::fused};

void register_per_backend() {
    per_backend("BM_matmul_square", BM_matmul, kernel_backends, [](benchmark::internal::Benchmark* bm, Backend) {
        bm->Args({1024, 1024})->ArgNames({"n", "d"})->Unit(benchmark::kMillisecond);
    });
    per_backend("BM_matmul", BM_matmul, kernel_backends, sizes);
    per_backend("BM_matmul_transposed", BM_matmul_transposed, kernel_backends, sizes);
    per_backend("BM_softmax_rows", BM_softmax_rows, kernel_backends, sizes);
    per_backend("BM_core", BM_core, all_backends, sizes);
    per_backend("BM_core_fresh", BM_core_fresh, all_backends, sizes);
    per_backend("BM_layer", BM_layer, all_backends, sizes);
    per_backend("BM_backward", BM_backward, all_backends, [](benchmark::internal::Benchmark* bm, Backend b) {
        for (int n : {256, 1024, 2048, 4096, 16384})
            if ((b != Backend::naive || n <= 256) && (b == Backend::fused || n <= 4096)) bm->Args({n, 64});
        bm->ArgNames({"n", "d"})->Unit(benchmark::kMillisecond);
    });
    per_backend("BM_core_small", BM_core_small, {Backend::simd, Backend::parallel, Backend::fused},
                [](benchmark::internal::Benchmark* bm, Backend) {
                    bm->ArgsProduct({{16, 32, 48, 64, 96, 128, 192, 256, 384, 512}})->ArgNames({"n"});
                    bm->Unit(benchmark::kMicrosecond);
                });
    per_backend("BM_core_long", BM_core_long, {Backend::parallel, Backend::fused}, long_sizes);
    const std::string bf16 = attn::to_string(Backend::fused) + "_" + attn::to_string(attn::Dtype::bf16);
    auto* core = benchmark::RegisterBenchmark(("BM_core/" + bf16).c_str(), BM_core_bf16);
    sizes(core, Backend::fused);
    core->UseRealTime();
    auto* core_long = benchmark::RegisterBenchmark(("BM_core_long/" + bf16).c_str(), BM_core_long_bf16);
    long_sizes(core_long, Backend::fused);
    core_long->UseRealTime();
}

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
BENCHMARK(BM_peak_bf16)
    ->Apply([](benchmark::internal::Benchmark* bm) {
        bm->Arg(1);
        if (attn::build_info().openmp) bm->Arg(2);
    })
    ->ArgName("threads")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_tile_in_l1)->Arg(6)->Arg(12)->ArgName("rows")->UseRealTime()->Unit(benchmark::kNanosecond);
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

int main(int argc, char** argv) {
    const auto joined = [](const std::vector<std::string>& names) {
        std::string out;
        for (const std::string& name : names) out += (out.empty() ? "" : " ") + name;
        return out;
    };
    benchmark::AddCustomContext("simd_isa", attn::simd::isa());
    benchmark::AddCustomContext("simd_compiled", joined(attn::simd::compiled_isas()));
    benchmark::AddCustomContext("simd_supported", joined(attn::simd::supported_isas()));
    benchmark::AddCustomContext("simd_instruction_set", attn::simd::instruction_set());
    benchmark::AddCustomContext("simd_batch_floats", std::to_string(attn::simd::batch_width()));
    benchmark::AddCustomContext("openmp_threads", std::to_string(attn::simd::max_threads()));
    // The machine a number was taken on, and the block sizes the kernels used there.
    benchmark::AddCustomContext("cpu_model", attn::simd::cpu_model());
    benchmark::AddCustomContext("caches", attn::simd::describe(attn::simd::caches()));
    benchmark::AddCustomContext("blocks", attn::simd::describe(attn::simd::blocking()));
    register_per_backend();
    bench::register_tuning();
    bench::register_ladder();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
