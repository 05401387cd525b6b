// bench/bench_decode.cpp — decoding: one query row a head against a long key/value cache, and the
// memory bandwidth that bounds it, measured in the same process.
//
//   BM_read_bandwidth/threads:2                      the fastest of four ways to sum 1 GiB of floats
//   BM_decode/bf16/S:4096/H:32/H_kv:8/E:128/threads:2  B = 1, L = 1, keys and values cached as bfloat16
//
// Decoding reads every cached key and value once and does 4·E flops with each key/value pair (a dot
// product with the query, a multiply-add into the output): memory, not the FMA peak, bounds it.
// Counters:
//   GBps (both)        bytes read per second ÷ 1e9. BM_read_bandwidth: the buffer's bytes. BM_decode:
//                      the cache's, B·H_kv·S·(E + E_v)·(bytes per element: 4 for f32, 2 for bf16 and
//                      f16); Q and O (H·E floats each: 32 KiB together here) are not counted, under
//                      1% of the cache at S ≥ 4096.
//   cache_MiB          the K and V bytes of one call (BM_decode)
//   tokens_per_s       calls per second: one token decoded, one layer's attention (BM_decode)
//   threads_busy       CPU time ÷ wall time over the timed loop (bench/common.hpp) (BM_decode)
// The buffer of BM_read_bandwidth is far larger than any cache a CPU has, whatever a virtual machine
// reports as its last level; `threads` OpenMP threads sum it, each the share it first touched, in
// each of the ways of read_ways, and the fastest counts (GBps; each way's own rate in GBps_<way>):
// the machine's limit for a kernel that reads each byte once, which is what a decode rate is taken
// as a share of (its f32 case at S = 32768 reads far more than any cache holds). bench/peers/decode_peers.py runs it right before each
// decode case of the same thread count, so a decode rate is taken as a share of the bandwidth of that
// moment. The cache is built once outside the timed loop (attn::to_cache rounds float32 keys and
// values to the type); Backend::fused. Registered here, linked into bench_attention.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "attention/heads.hpp"
#include "bench/common.hpp"

namespace {

// The read bandwidth. How fast memory delivers depends on how it is asked: a thread reading one
// stream has the hardware prefetchers alone, which stop at each 4 KiB page and keep only so many
// lines on their way; software prefetch ahead of the reads (as the decode kernel's), or several
// streams at once, keep more in flight. So every iteration reads the whole buffer once each way
// (ReadWay) and counts the fastest (manual time): a rate that no kernel reading each byte once can
// beat, whichever of these ways it reads.
struct ReadWay {
    std::size_t streams;   // parts of a thread's share read side by side, a line of each in turn
    std::size_t prefetch;  // bytes ahead of its reading each stream asks for its lines (0: none)
    const char* name;      // the counter of its own rate, GBps_<name>
};
constexpr ReadWay read_ways[] = {
    {1, 0, "1_stream"}, {1, 8192, "1_stream_prefetch_8K"}, {4, 0, "4_streams"}, {4, 8192, "4_streams_prefetch_8K"}};
constexpr std::size_t line_floats = 64 / sizeof(float);

// Σ of `count` floats from `first` (a multiple of `streams` lines, 64-byte aligned), read `way`:
// per line, one batch per accumulator (four at 4 lanes: SSE2 or NEON, the baseline this file is
// compiled for, which adds far faster than memory delivers), its lines asked for ahead.
float read_share(const float* first, std::size_t count, const ReadWay& way) {
    using Floats = xsimd::batch<float>;
    constexpr std::size_t lanes = Floats::size, batches = line_floats / lanes;
    Floats acc[batches];
    for (Floats& a : acc) a = Floats(0.0f);
    const std::size_t part = count / way.streams, ahead = way.prefetch / sizeof(float);
    for (std::size_t at = 0; at < part; at += line_floats)
        for (std::size_t s = 0; s < way.streams; ++s) {
            const float* line = first + s * part + at;
            if (way.prefetch && at + ahead < part) __builtin_prefetch(line + ahead);
            for (std::size_t b = 0; b < batches; ++b) acc[b] += Floats::load_aligned(line + b * lanes);
        }
    Floats sum(0.0f);
    for (const Floats& a : acc) sum += a;
    return xsimd::hadd(sum);
}

// 1 GiB of floats (a Matrix: 64-byte aligned, on huge pages where the system grants them), first
// touched by the threads that read it, each its share, as the reads below divide it; values that
// no compiler can fold. Made for each run and freed after it: a buffer kept for the whole process
// would stay in the peak resident set of every benchmark after it (BM_core_long's column).
void BM_read_bandwidth(benchmark::State& st) {
    const int threads = static_cast<int>(st.range(0));
    constexpr std::size_t n = std::size_t{1} << 28;  // 2^28 floats = 1 GiB
    attn::Matrix buffer;
    buffer.resize_for_overwrite(n / 1024, 1024);
    float* values = buffer.data();
    const std::size_t share = n / std::size_t(threads);         // a multiple of 4 lines: n is a power of 2
#pragma omp parallel for schedule(static) num_threads(threads)  // share t on thread t, as the reads below
    for (int t = 0; t < threads; ++t)
        for (std::size_t i = std::size_t(t) * share; i < std::size_t(t + 1) * share; ++i)
            values[i] = float(i % 1024) * 0x1p-10f;
    double seconds[std::size(read_ways)] = {};
    for (auto _ : st) {
        double fastest = 0.0;
        for (std::size_t w = 0; w < std::size(read_ways); ++w) {
            const auto start = std::chrono::steady_clock::now();
            float sum = 0.0f;
#pragma omp parallel for schedule(static) num_threads(threads) reduction(+ : sum)
            for (int t = 0; t < threads; ++t) sum += read_share(values + std::size_t(t) * share, share, read_ways[w]);
            benchmark::DoNotOptimize(sum);
            const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            seconds[w] += took;
            fastest = w == 0 ? took : std::min(fastest, took);
        }
        st.SetIterationTime(fastest);
    }
    const double gigabytes = double(n) * sizeof(float) / 1e9;
    st.counters["GBps"] = benchmark::Counter(gigabytes, benchmark::Counter::kIsIterationInvariantRate);
    for (std::size_t w = 0; w < std::size(read_ways); ++w)
        st.counters[std::string("GBps_") + read_ways[w].name] = gigabytes * double(st.iterations()) / seconds[w];
    st.SetLabel(std::to_string(threads) + " thread" + (threads > 1 ? "s" : ""));
}

// Keys or values (1, heads, S, E) uniform on [−1, 1), one seed per operand, stored as `type`; the
// floats are freed once rounded.
attn::Cache random_cache(std::size_t heads, std::size_t S, std::size_t E, unsigned seed, attn::KvDtype type) {
    const attn::Matrix floats = bench::random_matrix(heads * S, E, seed);
    return attn::to_cache({floats.data(), {1, heads, S, E}}, type);
}

// The bytes of keys and values one call reads: H_kv·S·(E + E_v)·(bytes an element).
double cache_bytes(std::size_t kv_heads, std::size_t S, std::size_t E, attn::KvDtype type) {
    return double(kv_heads * S * 2 * E) * (type == attn::KvDtype::f32 ? 4.0 : 2.0);
}

void BM_decode(benchmark::State& st, attn::KvDtype type) {
    const auto S = static_cast<std::size_t>(st.range(0)), heads = static_cast<std::size_t>(st.range(1)),
               kv_heads = static_cast<std::size_t>(st.range(2)), E = static_cast<std::size_t>(st.range(3));
    const int threads = static_cast<int>(st.range(4));
    const attn::Matrix q = bench::random_matrix(heads, E, 1);
    const attn::HeadsView Q{q.data(), {1, heads, 1, E}};
    const attn::Cache K = random_cache(kv_heads, S, E, 2, type), V = random_cache(kv_heads, S, E, 3, type);
    const attn::AttentionOptions options{.threads = threads, .backend = attn::Backend::fused};
    benchmark::DoNotOptimize(attn::scaled_dot_product_attention(Q, K.view(), V.view(), options).output.values.data());
    const bench::BusyThreads busy;
    for (auto _ : st) {
        const attn::HeadsResult out = attn::scaled_dot_product_attention(Q, K.view(), V.view(), options);
        benchmark::DoNotOptimize(out.output.values.data());
    }
    st.counters["threads_busy"] = busy();
    const double bytes = cache_bytes(kv_heads, S, E, type);
    st.counters["GBps"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
    st.counters["tokens_per_s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
    st.counters["cache_MiB"] = bytes / (1024.0 * 1024.0);
    const auto count = [](std::size_t n, const std::string& what) {
        return std::to_string(n) + " " + what + (n > 1 ? "s" : "");
    };
    st.SetLabel(attn::to_string(type) + " cache, " + count(heads, "head") + ", " + count(kv_heads, "key/value head") +
                ", " + count(std::size_t(threads), "thread"));
}

// S ∈ {4096, 32768}, E = 128: H = 32 over H_kv = 8, and one head. On 1 thread, and on 2 where OpenMP
// is built.
void register_decode(attn::KvDtype type) {
    const std::vector<std::int64_t> threads =
        attn::simd::openmp_built() ? std::vector<std::int64_t>{1, 2} : std::vector<std::int64_t>{1};
    auto* bm = benchmark::RegisterBenchmark(("BM_decode/" + attn::to_string(type)).c_str(),
                                            [type](benchmark::State& st) { BM_decode(st, type); });
    bm->ArgsProduct({{4096, 32768}, {32}, {8}, {128}, threads})->ArgsProduct({{4096, 32768}, {1}, {1}, {128}, threads});
    bm->ArgNames({"S", "H", "H_kv", "E", "threads"})->UseRealTime()->Unit(benchmark::kMillisecond);
}

// Registered when the program starts, as BENCHMARK(…) registers bench_attention.cpp's own.
[[maybe_unused]] const bool registered = [] {
    for (const attn::KvDtype type : {attn::KvDtype::f32, attn::KvDtype::bf16, attn::KvDtype::f16})
        register_decode(type);
    return true;
}();

}  // namespace

BENCHMARK(BM_read_bandwidth)
    ->Apply([](benchmark::internal::Benchmark* bm) {
        bm->Arg(1);
        if (attn::simd::openmp_built()) bm->Arg(2);
    })
    ->ArgName("threads")
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
