// bench/tuning.cpp — the tuning sweep: the GEMM and the fused core timed over a small grid of block
// sizes around the ones simd/blocking.cpp derives from this CPU's caches, so that anyone can check
// the model on their machine (`scripts/dev tune` runs it and prints the best beside the model).
//
//   BM_tune_gemm/kc:K/nc:N      C = A·B, 1024³, one thread: kc varied at the model's nc, and nc at its kc
//   BM_tune_core/kc:K/nc:N      the materialised core (S = scale·Q·Kᵀ, softmax, α·V), n = 2048, d = 64,
//                               all threads: the same two sweeps, which reach its wide product S = Q·Kᵀ
//                               (α·V, narrow, uses panel_kc and panel_mc)
//   BM_tune_fused/rows:R/keys:C the fused core, n = 2048, d = 64, all threads: the same for its two sizes
//                               (fused_rows, and panel_kc as its keys per tile)
//
// The model's own choice carries the label "model". `rows` is the cap the kernel balances under
// (simd::balanced_rows), as in normal calls.
#include "bench/tuning.hpp"

#include <set>

#include "bench/common.hpp"
#include "simd/blocking.hpp"

namespace bench {

namespace {

using attn::Matrix;
using attn::simd::Blocking;

void gemm_with(benchmark::State& st, Blocking b, bool model) {
    const std::size_t n = 1024;
    const Matrix A = random_matrix(n, n, 1), B = random_matrix(n, n, 2);
    Matrix C;
    for (auto _ : st) {
        attn::simd::matmul_into(A, B, C, attn::simd::Threads::one, b);
        benchmark::DoNotOptimize(C.data());
    }
    set_counters(st, 2.0 * n * n * n, 3.0 * n * n * 4);
    st.SetLabel(model ? "model" : "");
}

void core_with(benchmark::State& st, Blocking b, bool model) {
    using attn::simd::Threads;
    const std::size_t n = 2048, d = 64;
    const Matrix Q = random_matrix(n, d, 1), K = random_matrix(n, d, 2), V = random_matrix(n, d, 3);
    Matrix S, O;
    const auto core = [&] {
        attn::simd::matmul_transposed_into(Q, K, 1.0f, S, Threads::all, b);
        attn::simd::softmax_rows_in_place(S, 0.125f, Threads::all);
        attn::simd::matmul_into(S, V, O, Threads::all, b);
    };
    core();
    for (auto _ : st) {
        core();
        benchmark::DoNotOptimize(O.data());
    }
    set_counters(st, core_flops(n, d), core_bytes(n, d));
    st.SetLabel(model ? "model" : "");
}

void fused_with(benchmark::State& st, Blocking b, bool model) {
    const std::size_t n = 2048, d = 64;
    const Matrix Q = random_matrix(n, d, 1), K = random_matrix(n, d, 2), V = random_matrix(n, d, 3);
    Matrix O;
    const float scale = 0.125f;
    attn::simd::fused_attention_into(Q, K, V, scale, false, O, nullptr, attn::simd::Threads::all, b);
    for (auto _ : st) {
        attn::simd::fused_attention_into(Q, K, V, scale, false, O, nullptr, attn::simd::Threads::all, b);
        benchmark::DoNotOptimize(O.data());
    }
    set_counters(st, core_flops(n, d), core_bytes(n, d));
    st.SetLabel(model ? "model" : "");
}

// The grid: powers of two and their halves between lo and hi, plus the model's own value.
std::set<std::size_t> around(std::size_t model, std::size_t lo, std::size_t hi, std::size_t unit) {
    std::set<std::size_t> values{model};
    for (std::size_t v = lo; v <= hi; v *= 2) {
        values.insert(v / unit * unit);
        if (v + v / 2 <= hi) values.insert((v + v / 2) / unit * unit);
    }
    return values;
}

using Body = void (*)(benchmark::State&, Blocking, bool);

// One block size of the sweep: its name in the benchmark's name, its field, and its grid.
struct Size {
    const char* name;
    std::size_t Blocking::*field;
    std::size_t lo, hi, unit;
};

// Two one-dimensional sweeps through the model's choice: `first` varied with `second` at the
// model's value, then `second` varied with `first` at the model's (the model's point once).
void sweep(const std::string& family, Body body, Size first, Size second) {
    const Blocking model = attn::simd::blocking();
    const auto add = [&](std::size_t a, std::size_t b) {
        Blocking blocks = model;
        blocks.*first.field = a;
        blocks.*second.field = b;
        const bool is_model = a == model.*first.field && b == model.*second.field;
        const std::string name =
            family + "/" + first.name + ":" + std::to_string(a) + "/" + second.name + ":" + std::to_string(b);
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) { body(st, blocks, is_model); })
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
    };
    for (std::size_t a : around(model.*first.field, first.lo, first.hi, first.unit)) add(a, model.*second.field);
    for (std::size_t b : around(model.*second.field, second.lo, second.hi, second.unit))
        if (b != model.*second.field) add(model.*first.field, b);
}

}  // namespace

void register_tuning() {
    using attn::simd::MR;
    const Size kc{"kc", &Blocking::kc, 64, 768, 8}, nc{"nc", &Blocking::nc, 64, 4096, attn::simd::tile_columns()};
    sweep("BM_tune_gemm", gemm_with, kc, nc);
    sweep("BM_tune_core", core_with, kc, nc);
    sweep("BM_tune_fused", fused_with, {"rows", &Blocking::fused_rows, 24, 1024, MR},
          {"keys", &Blocking::panel_kc, 64, 768, 8});
}

}  // namespace bench
