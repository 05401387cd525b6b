// bench/peers/ggml_heads.cpp — ggml's ggml_flash_attn_ext on many heads, timed on its CPU backend.
//
//   ggml_heads --kv f32|f16|bf16 --threads 2 --min-time 0.5 --heads 32 [--keys S] L:E:H_kv:causal
//
// Built by bench/peers/heads_peers.py against ggml's static CPU libraries (never part of the
// project's build), one case per process. In ggml's order of dimensions (fastest first): q [E, L, H, 1]
// float32, k and v [E, S, H_kv, 1] in float32, float16 (llama.cpp's default cache type) or bfloat16;
// S = L unless --keys gives it (decoding: L = 1, bench/peers/decode_peers.py). ggml broadcasts the
// H_kv key/value heads over the H query heads. Causal: an F16 mask [S, L], 0 where key j ≤ query i,
// −∞ elsewhere. The graph is planned once and computed again and again on
// `threads` threads with one work buffer, as a caller that keeps its graph does.
// Inputs follow heads_peers.py's formula in the canonical (head, token, width) order, which is ggml's
// own here; the output is [E, H, L, 1] (ggml permutes it), read back in canonical order for the
// checksum. Printed: one JSON line {engine, case, calls, seconds (mean per call), checksum}.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ggml-cpu.h"
#include "ggml.h"

namespace {

struct Arguments {
    std::string kv = "f32", text;
    int threads = 2, heads = 32, L = 0, S = 0, E = 0, kv_heads = 0, causal = 0;
    double min_time = 0.5;
};

Arguments parse(int argc, char** argv) {
    Arguments a;
    for (int i = 1; i < argc; ++i) {
        const std::string word = argv[i];
        const auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
        if (word == "--kv") a.kv = next();
        else if (word == "--threads") a.threads = std::atoi(next().c_str());
        else if (word == "--min-time") a.min_time = std::atof(next().c_str());
        else if (word == "--heads") a.heads = std::atoi(next().c_str());
        else if (word == "--keys") a.S = std::atoi(next().c_str());
        else a.text = word;
    }
    if (std::sscanf(a.text.c_str(), "%d:%d:%d:%d", &a.L, &a.E, &a.kv_heads, &a.causal) != 4 || a.L <= 0 || a.E <= 0 ||
        a.kv_heads <= 0 || a.heads % a.kv_heads != 0 || (a.kv != "f32" && a.kv != "f16" && a.kv != "bf16") || a.S < 0) {
        std::fprintf(stderr,
                     "usage: ggml_heads --kv f32|f16|bf16 --threads N --min-time S --heads H [--keys S] "
                     "L:E:H_kv:causal\n");
        std::exit(2);
    }
    if (a.S == 0) a.S = a.L;
    return a;
}

// heads_peers.py's input formula: value t (0 = Q, 1 = K, 2 = V) at canonical index i.
float input_value(int t, std::size_t i) {
    return static_cast<float>(std::fmod((double(i) + 1) * 0.6180339887498949 + t * 0.1, 1.0) * 2 - 1);
}

// A tensor [width, tokens, heads] of type `type`, filled in canonical order.
ggml_tensor* filled(ggml_context* ctx, ggml_type type, int t, int width, int tokens, int heads) {
    ggml_tensor* x = ggml_new_tensor_3d(ctx, type, width, tokens, heads);
    std::vector<float> values(ggml_nelements(x));
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = input_value(t, i);
    if (type == GGML_TYPE_F16) {
        ggml_fp32_to_fp16_row(values.data(), static_cast<ggml_fp16_t*>(x->data), ggml_nelements(x));
    } else if (type == GGML_TYPE_BF16) {
        ggml_fp32_to_bf16_row(values.data(), static_cast<ggml_bf16_t*>(x->data), ggml_nelements(x));
    } else {
        std::memcpy(x->data, values.data(), values.size() * sizeof(float));
    }
    return x;
}

// The causal mask [S, L]: row i lets query i see keys 0..i.
ggml_tensor* causal_mask(ggml_context* ctx, int L, int S) {
    ggml_tensor* mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, S, L);
    auto* m = static_cast<ggml_fp16_t*>(mask->data);
    const ggml_fp16_t zero = ggml_fp32_to_fp16(0.0f), minus_infinity = ggml_fp32_to_fp16(-INFINITY);
    for (int i = 0; i < L; ++i)
        for (int j = 0; j < S; ++j) m[std::size_t(i) * S + j] = j <= i ? zero : minus_infinity;
    return mask;
}

// heads_peers.py's checksum: Σ O[h, n, e] · ((31·h + 7·n + e) mod 13 − 6), O read from [E, H, L].
double checksum(const ggml_tensor* out, const Arguments& a) {
    const auto* o = static_cast<const float*>(out->data);
    double sum = 0;
    for (int h = 0; h < a.heads; ++h)
        for (int n = 0; n < a.L; ++n)
            for (int e = 0; e < a.E; ++e)
                sum += double(o[(std::size_t(n) * a.heads + h) * a.E + e]) * ((31 * h + 7 * n + e) % 13 - 6);
    return sum;
}

}  // namespace

int main(int argc, char** argv) {
    const Arguments a = parse(argc, argv);
    const ggml_type kv_type = a.kv == "f16" ? GGML_TYPE_F16 : a.kv == "bf16" ? GGML_TYPE_BF16 : GGML_TYPE_F32;
    const std::size_t queries = std::size_t(a.L) * a.E, keys = std::size_t(a.S) * a.E;
    const std::size_t bytes = queries * a.heads * 4 * 2 + keys * a.kv_heads * ggml_type_size(kv_type) * 2 +
                              (a.causal ? std::size_t(a.L) * a.S * 2 : 0) + 16 * ggml_tensor_overhead() +
                              ggml_graph_overhead() + (1 << 20);
    ggml_context* ctx = ggml_init({bytes, nullptr, false});
    ggml_tensor* q = filled(ctx, GGML_TYPE_F32, 0, a.E, a.L, a.heads);
    ggml_tensor* k = filled(ctx, kv_type, 1, a.E, a.S, a.kv_heads);
    ggml_tensor* v = filled(ctx, kv_type, 2, a.E, a.S, a.kv_heads);
    ggml_tensor* mask = a.causal ? causal_mask(ctx, a.L, a.S) : nullptr;
    ggml_tensor* out = ggml_flash_attn_ext(ctx, q, k, v, mask, 1.0f / std::sqrt(float(a.E)), 0.0f, 0.0f);
    ggml_cgraph* graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, out);
    ggml_cplan plan = ggml_graph_plan(graph, a.threads, nullptr);
    std::vector<std::uint8_t> work(plan.work_size);
    plan.work_data = work.data();

    ggml_graph_compute(graph, &plan);  // untimed: the first call touches the work buffer's pages
    const double sum = checksum(out, a);
    int calls = 0;
    double seconds = 0;
    const auto start = std::chrono::steady_clock::now();
    while (calls == 0 || seconds < a.min_time) {
        ggml_graph_compute(graph, &plan);
        ++calls;
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    std::printf("{\"engine\": \"ggml_%s\", \"case\": \"%s\", \"calls\": %d, \"seconds\": %.9g, \"checksum\": %.17g}\n",
                a.kv.c_str(), a.text.c_str(), calls, seconds / calls, sum);
    ggml_free(ctx);
    return 0;
}
