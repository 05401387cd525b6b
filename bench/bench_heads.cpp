// bench/bench_heads.cpp — many heads in one call (attention/heads.hpp), the prefill of a model's layer:
// batch 1, H = 32 query heads, L = S queries and keys, head width E, on the fused backend in float32.
//
//   BM_heads/fused/L:1024/E:128/H_kv:32/causal:0    every query head with its own key/value head
//   BM_heads/fused/L:1024/E:128/H_kv:8/causal:1     grouped-query attention: 4 query heads a key/value head
//   BM_one_head/fused/L:16384/E:64/H_kv:1/causal:0  one head (BM_core's d = 64 up to BM_core_long's
//                                                   16384), through the same call, so that the
//                                                   single-head core meets the peers as many heads do
//                                                   (bench/peers/heads_peers.py --heads 1)
//
// Counters, as BM_core counts them (bench/bench_attention.cpp): GFLOPs = 4·L·S·E per head, the two
// products; a causal call counts half of it, the products' share left of the diagonal, whatever the
// kernel skips. Its percentage is taken against BM_peak_fma of the same run (2 threads, the OpenMP
// default of a 2-core machine; bench/peers/heads_peers.py runs the peak right before each case).
// peak_rss_MiB is the process's peak resident memory while the case ran (bench/common.hpp), beside
// operands_MiB, the size of Q, K, V and O themselves: the fused backend's memory is O(B·H·(L + S)·E),
// so the two stay close, where an L×S score matrix per head would add H·L·S·4 bytes (2 GiB at L = 4096).
// heads is H, which the driver passes on to the peers. Registered here, linked into bench_attention
// beside BM_peak_fma.
#include "attention/heads.hpp"
#include "bench/common.hpp"

namespace {

// A (1, heads, rows, cols) block of uniform values on [−1, 1), one seed per operand, and its view.
struct RandomHeads {
    attn::Matrix values;
    attn::HeadsView view;
    RandomHeads(std::size_t heads, std::size_t rows, std::size_t cols, unsigned seed)
        : values(bench::random_matrix(heads * rows, cols, seed)), view{values.data(), {1, heads, rows, cols}} {}
};

// 4·L·S·E per head (Q·Kᵀ and α·V, 2·L·S·E each), halved when causal.
double heads_flops(std::size_t heads, std::size_t L, std::size_t S, std::size_t E, bool causal) {
    return 4.0 * double(heads) * double(L) * double(S) * double(E) * (causal ? 0.5 : 1.0);
}

void BM_heads(benchmark::State& st, attn::Backend backend, std::size_t query_heads) {
    const auto L = static_cast<std::size_t>(st.range(0)), E = static_cast<std::size_t>(st.range(1));
    const auto kv_heads = static_cast<std::size_t>(st.range(2));
    const bool causal = st.range(3) != 0;
    const RandomHeads Q(query_heads, L, E, 1), K(kv_heads, L, E, 2), V(kv_heads, L, E, 3);
    const attn::AttentionOptions options{.causal = causal, .backend = backend};
    bench::reset_peak_rss();
    benchmark::DoNotOptimize(attn::scaled_dot_product_attention(Q.view, K.view, V.view, options).output.values.data());
    const bench::BusyThreads busy;
    for (auto _ : st) {
        const attn::HeadsResult out = attn::scaled_dot_product_attention(Q.view, K.view, V.view, options);
        benchmark::DoNotOptimize(out.output.values.data());
    }
    st.counters["threads_busy"] = busy();
    st.counters["peak_rss_MiB"] = bench::peak_rss_mib();
    const double operand_bytes = double(2 * query_heads * L * E + 2 * kv_heads * L * E) * sizeof(float);
    st.counters["heads"] = double(query_heads);
    st.counters["operands_MiB"] = operand_bytes / (1024.0 * 1024.0);
    bench::set_counters(st, heads_flops(query_heads, L, L, E, causal), operand_bytes);
    st.SetLabel(attn::to_string(backend) + ", " + std::to_string(query_heads) + " heads" +
                (kv_heads < query_heads ? ", " + std::to_string(kv_heads) + " key/value heads" : "") +
                (causal ? ", causal" : ""));
}

// H = 32: L = S ∈ {256, 1024, 4096}, E ∈ {64, 128}, H_kv ∈ {32, 8}, causal or not; H = 1: L = S ∈ {1024,
// 2048, 4096, 16384}, E = 64.
benchmark::internal::Benchmark* register_heads(attn::Backend backend, std::size_t query_heads) {
    const std::string name = (query_heads == 1 ? "BM_one_head/" : "BM_heads/") + attn::to_string(backend);
    auto* bm = benchmark::RegisterBenchmark(
        name.c_str(), [backend, query_heads](benchmark::State& st) { BM_heads(st, backend, query_heads); });
    if (query_heads == 1) bm->ArgsProduct({{1024, 2048, 4096, 16384}, {64}, {1}, {0}});
    else bm->ArgsProduct({{256, 1024, 4096}, {64, 128}, {32, 8}, {0, 1}});
    return bm->ArgNames({"L", "E", "H_kv", "causal"})->UseRealTime()->Unit(benchmark::kMillisecond);
}

// Registered when the program starts, as BENCHMARK(…) registers bench_attention.cpp's own.
[[maybe_unused]] const auto* const registered = register_heads(attn::Backend::fused, 32);
[[maybe_unused]] const auto* const registered_one = register_heads(attn::Backend::fused, 1);

}  // namespace
