// bench/bench_openblas.cpp — the same attention core with OpenBLAS doing both products, for
// comparison with a professional BLAS: cblas_sgemm computes S = scale·Q·Kᵀ and O = α·V, our
// vectorised softmax_rows sits between them. Built only when Meson finds OpenBLAS.
#include <cblas.h>

#include "bench/common.hpp"

namespace {

using attn::Matrix;

// OpenBLAS's own threads (openblas_set_num_threads) and our softmax's OpenMP threads both follow
// the benchmark's argument.
void BM_core_openblas(benchmark::State& st) {
    const int threads = static_cast<int>(st.range(0));
    const auto n = static_cast<std::size_t>(st.range(1)), d = static_cast<std::size_t>(st.range(2));
    const Matrix Q = bench::random_matrix(n, d, 1), K = bench::random_matrix(n, d, 2),
                 V = bench::random_matrix(n, d, 3);
    Matrix S(n, n), O(n, d);
    const int N = static_cast<int>(n), D = static_cast<int>(d);
    const float c = 1.0f / std::sqrt(static_cast<float>(d));
    openblas_set_num_threads(threads);
    const auto softmax_threads = threads > 1 ? attn::simd::Threads::all : attn::simd::Threads::one;
    for (auto _ : st) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, N, D, c, Q.data(), D, K.data(), D, 0.0f, S.data(), N);
        attn::simd::softmax_rows_in_place(S, 1.0f, softmax_threads);  // the scale c went into the product
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, D, N, 1.0f, S.data(), N, V.data(), D, 0.0f, O.data(),
                    D);
        benchmark::DoNotOptimize(O.data());
    }
    bench::set_counters(st, bench::core_flops(n, d), bench::core_bytes(n, d));
    st.SetLabel("openblas, " + std::to_string(threads) + " thread" + (threads > 1 ? "s" : ""));
}

}  // namespace

BENCHMARK(BM_core_openblas)
    ->ArgsProduct({{1, 2}, {64, 256, 1024, 2048, 4096}, {64}})
    ->Args({1, 1024, 128})
    ->Args({2, 1024, 128})
    ->ArgNames({"threads", "n", "d"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
