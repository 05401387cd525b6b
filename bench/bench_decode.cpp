// bench/bench_decode.cpp — decoding: one query row a head against a long key/value cache, and the
// memory bandwidth that bounds it, measured in the same process.
//
//   BM_read_bandwidth/threads:2                      a streaming sum over 1 GiB of floats
//   BM_decode/bf16/S:4096/H:32/H_kv:8/E:128/threads:2  B = 1, L = 1, keys and values cached as bfloat16
//
// Decoding reads every cached key and value once and does 4·E flops with each key/value pair (a dot
// product with the query, a multiply-add into the output): memory, not the FMA peak, bounds it.
// Counters:
//   GBps (both)        bytes read per second ÷ 1e9. BM_read_bandwidth: the buffer's bytes. BM_decode:
//                      the cache's, B·H_kv·S·(E + E_v)·(bytes per element: 4 for f32, 2 for bf16 and
//                      f16); Q and O (H·E floats each, 32 KiB here) are not counted, well under 1% of
//                      the cache at S ≥ 4096.
//   cache_MiB          the K and V bytes of one call (BM_decode)
//   tokens_per_s       calls per second: one token decoded, one layer's attention (BM_decode)
//   threads_busy       CPU time ÷ wall time over the timed loop (bench/common.hpp) (BM_decode)
// The buffer of BM_read_bandwidth is far larger than any cache a CPU has, whatever a virtual machine
// reports as its last level; `threads` OpenMP threads sum it with the static schedule that first
// touched it, in the library's widest vectors. bench/peers/decode_peers.py runs it right before each
// decode case of the same thread count, so a decode rate is taken as a share of the bandwidth of that
// moment. The cache is built once outside the timed loop (attn::to_cache rounds float32 keys and
// values to the type); Backend::fused. Registered here, linked into bench_attention.
#include <cstdint>
#include <memory>
#include <vector>

#include "attention/heads.hpp"
#include "bench/common.hpp"

namespace {

// 1 GiB of floats, first touched by the static schedule of two threads (the 1-thread sum reads both
// halves alike: one socket); values that no compiler can fold.
const float* read_buffer(std::ptrdiff_t n) {
    static const std::unique_ptr<float[]> buffer = [n] {
        std::unique_ptr<float[]> b(new float[std::size_t(n)]);
#pragma omp parallel for schedule(static)
        for (std::ptrdiff_t i = 0; i < n; ++i) b[i] = float(i % 1024) * 0x1p-10f;
        return b;
    }();
    return buffer.get();
}

// Σ values[i] over the buffer in chunks of 2048 floats, each a dot product with a row of ones that
// stays in L1 (simd::dot: the widest vectors this CPU runs, several sums in flight), so only the
// buffer streams from memory. A plain loop compiled for the baseline (SSE2) adds too slowly to
// keep up with one core's share of the bandwidth.
void BM_read_bandwidth(benchmark::State& st) {
    const int threads = static_cast<int>(st.range(0));
    constexpr std::ptrdiff_t n = std::ptrdiff_t{1} << 28, chunk = 2048;  // 2^28 floats = 1 GiB
    const float* values = read_buffer(n);
    const std::vector<float> ones(chunk, 1.0f);
    for (auto _ : st) {
        float sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum) num_threads(threads)
        for (std::ptrdiff_t i = 0; i < n; i += chunk) sum += attn::simd::dot(values + i, ones.data(), chunk);
        benchmark::DoNotOptimize(sum);
    }
    st.counters["GBps"] =
        benchmark::Counter(double(n) * sizeof(float) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
    st.SetLabel(std::to_string(threads) + " thread" + (threads > 1 ? "s" : ""));
}

}  // namespace

BENCHMARK(BM_read_bandwidth)
    ->Apply([](benchmark::internal::Benchmark* bm) {
        bm->Arg(1);
        if (attn::simd::openmp_built()) bm->Arg(2);
    })
    ->ArgName("threads")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
