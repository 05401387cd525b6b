// bench/ladder.cpp — what each vector width buys, measured in one run on one machine, and how fast
// memory is next to the arithmetic.
//
//   BM_ladder/naive/n:2048/d:64              the textbook loops (compiled for the baseline)
//   BM_ladder/simd/isa:avx2/n:2048/d:64      the core on one thread, with that instruction set's kernels
//   BM_ladder/parallel/isa:avx2/…, …/fused/… the same on every thread
//   BM_ladder/fused_bf16/isa:avx2/…          the fused kernel's bf16 mode: vdpbf16ps where the set has
//                                            it (avx512bf16), emulated with FMAs in every other set
//   BM_ladder_peak/isa:avx2/threads:1        that instruction set's own FMA peak, 1 and 2 threads
//   BM_ladder_peak_bf16/isa:avx512bf16/…     and its vdpbf16ps peak, where it has the instruction
//   BM_stream_triad/threads:1                a[i] = b[i] + s·c[i] over 3 × 128 MiB (more than any L3
//                                            seen here): the memory bandwidth the roofline uses
//
// Every instruction set the build compiled and this CPU runs gets its rungs (simd::set_isa before
// each benchmark, the default restored after), so the ladder compares widths in the same window
// instead of builds made with other flags at other times. bench/tools/bench_report.py --ladder prints
// the table and draws the ladder and the roofline.
#include "bench/ladder.hpp"

#include <memory>
#include <string>
#include <vector>

#include "attention/backends.hpp"
#include "bench/common.hpp"

namespace bench {

namespace {

using attn::Backend;
using attn::Matrix;

// Runs `body` with the kernels of `isa`, then puts back the ones that were in use.
template <class Body>
void with_isa(const std::string& isa, Body body) {
    const std::string before = attn::simd::isa();
    attn::simd::set_isa(isa);
    body();
    attn::simd::set_isa(before);
}

void core(benchmark::State& st, Backend b, std::size_t n, std::size_t d, attn::Dtype dtype = attn::Dtype::f32) {
    const Matrix Q = random_matrix(n, d, 1), K = random_matrix(n, d, 2), V = random_matrix(n, d, 3);
    const attn::AttentionOptions options{.backend = b, .dtype = dtype};
    attn::AttentionResult out;
    attn::scaled_dot_product_attention_into(Q, K, V, options, out);  // steady state: buffers reused
    for (auto _ : st) {
        attn::scaled_dot_product_attention_into(Q, K, V, options, out);
        benchmark::DoNotOptimize(out.output.data());
    }
    set_counters(st, core_flops(n, d), core_bytes(n, d));
    st.SetLabel(attn::to_string(b) + (b == Backend::naive ? "" : ", " + attn::simd::isa()) +
                (dtype == attn::Dtype::bf16 ? (attn::simd::bf16_instructions() ? ", bf16" : ", bf16 emulated") : ""));
}

// pairs: the vdpbf16ps chains (simd::pair_chains, two products a lane: 4·W flops an instruction)
// instead of the FMA's (2·W).
void peak(benchmark::State& st, int threads, bool pairs) {
    constexpr std::size_t steps = 1 << 16, chains = 12;  // 12 instructions a step
    for (auto _ : st) {
#pragma omp parallel num_threads(threads)
        benchmark::DoNotOptimize(pairs ? attn::simd::pair_chains(steps) : attn::simd::fma_chains(steps));
    }
    const double flops = (pairs ? 4.0 : 2.0) * double(attn::simd::batch_width());
    st.counters["GFLOPs"] =
        benchmark::Counter(threads * chains * flops * steps / 1e9, benchmark::Counter::kIsIterationInvariantRate);
    st.SetLabel(attn::simd::isa() + ", " + std::to_string(threads) + " thread" + (threads > 1 ? "s" : "") +
                (pairs ? ", bf16 pairs" : ""));
}

// STREAM's triad: 2 loads and 1 store of 4 bytes per element, 2 flops; the arrays are first touched
// by the threads that use them (same static schedule), so each thread's pages are its own.
void BM_stream_triad(benchmark::State& st) {
    const int threads = static_cast<int>(st.range(0));
    const std::ptrdiff_t n = std::ptrdiff_t{32} << 20;  // 32 Mi floats = 128 MiB per array
    const std::unique_ptr<float[]> a(new float[n]), b(new float[n]), c(new float[n]);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::ptrdiff_t i = 0; i < n; ++i) a[i] = 0.0f, b[i] = 1.0f, c[i] = 2.0f;
    const float s = 0.5f;
    for (auto _ : st) {
#pragma omp parallel for schedule(static) num_threads(threads)
        for (std::ptrdiff_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
        benchmark::DoNotOptimize(a.get());
        benchmark::ClobberMemory();
    }
    st.SetBytesProcessed(static_cast<int64_t>(3 * n * sizeof(float)) * st.iterations());
    st.SetLabel(std::to_string(threads) + " thread" + (threads > 1 ? "s" : ""));
}

}  // namespace

void register_ladder() {
    const bool openmp = attn::simd::openmp_built();
    constexpr std::size_t n = 2048, d = 64;
    const std::string size = "/n:" + std::to_string(n) + "/d:" + std::to_string(d);
    benchmark::RegisterBenchmark(("BM_ladder/naive" + size).c_str(),
                                 [](benchmark::State& st) { core(st, Backend::naive, n, d); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    for (const std::string& isa : attn::simd::supported_isas()) {
        bool pairs = false;  // whether this set multiplies bfloat16 pairs with vdpbf16ps
        with_isa(isa, [&] { pairs = attn::simd::bf16_instructions(); });
        for (const bool bf16 : {false, true}) {
            if (bf16 && !pairs) continue;
            for (int threads : {1, 2}) {
                if (threads == 2 && !openmp) continue;
                benchmark::RegisterBenchmark(
                    ((bf16 ? "BM_ladder_peak_bf16/isa:" : "BM_ladder_peak/isa:") + isa +
                     "/threads:" + std::to_string(threads))
                        .c_str(),
                    [isa, threads, bf16](benchmark::State& st) { with_isa(isa, [&] { peak(st, threads, bf16); }); })
                    ->UseRealTime()
                    ->Unit(benchmark::kMicrosecond);
            }
        }
        for (Backend b : {Backend::simd, Backend::parallel, Backend::fused}) {
            benchmark::RegisterBenchmark(("BM_ladder/" + attn::to_string(b) + "/isa:" + isa + size).c_str(),
                                         [isa, b](benchmark::State& st) { with_isa(isa, [&] { core(st, b, n, d); }); })
                ->UseRealTime()
                ->Unit(benchmark::kMillisecond);
        }
        const std::string bf16 = attn::to_string(Backend::fused) + "_" + attn::to_string(attn::Dtype::bf16);
        benchmark::RegisterBenchmark(
            ("BM_ladder/" + bf16 + "/isa:" + isa + size).c_str(),
            [isa](benchmark::State& st) { with_isa(isa, [&] { core(st, Backend::fused, n, d, attn::Dtype::bf16); }); })
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
    }
    auto* triad = benchmark::RegisterBenchmark("BM_stream_triad", BM_stream_triad)->Arg(1);
    if (openmp) triad->Arg(2);
    triad->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);
}

}  // namespace bench
