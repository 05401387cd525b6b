// libFuzzer target for the whole of `attn run`, not only its readers: crafted bytes become Q, K, V
// (or X, W_Q, W_K, W_V) files, are read under a memory budget, charged for what the chain will
// allocate, and run through every backend. A bug is anything but a clean refusal or a result that
// agrees with the naive backend: a crash, a sanitizer report, a hang, an allocation past the budget
// (libFuzzer's -rss_limit_mb), backends that refuse differently, a non-finite output, or outputs
// further apart than the float32 bound below. The backward runs too, for L = ½‖O‖² (dO = O), under
// the same rules, and for the layer, through the projections back to X and the weights.
//
// Input layout: byte 0 = options (bit 0 causal, bits 1–2 scale, bit 3 CSV instead of .npy, bit 4
// full layer instead of core); then 3 or 4 files, each a 2-byte little-endian length and its bytes.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attention/attention.hpp"
#include "attention/run.hpp"
#include "io/io.hpp"
#include "matrix/bfloat16.hpp"
#include "matrix/norms.hpp"
#include "matrix/ops.hpp"
#include "matrix/size.hpp"

namespace {

using attn::Backend;
using attn::Matrix;

constexpr Backend fast_backends[] = {Backend::simd, Backend::parallel, Backend::fused};
constexpr double eps = std::numeric_limits<float>::epsilon();
// Inputs within the memory budget can still ask for billions of flops, legitimately (attn run would
// compute them): skipped here, where every execution should take milliseconds under ASan.
constexpr double max_flops = 2e7;

// The matrices of a call as its views (attention/call.hpp).
struct Views {
    std::vector<std::array<std::size_t, 2>> shapes;
    explicit Views(std::size_t count) { shapes.reserve(count); }
    attn::View operator()(const Matrix& M) {
        shapes.push_back({M.rows(), M.cols()});
        return {M.data(), shapes.back()};
    }
};

// Whether the call, as the library plans it (attn::plan), fits in what is left of the budget, as one
// attn run would; a call the library refuses by its shapes fits (it allocates nothing).
bool fits(const attn::Call& call, attn::MemoryBudget budget) {
    try {
        for (const attn::Buffer& buffer : attn::plan(call)) budget.charge(buffer.bytes, buffer.name);
    } catch (const std::length_error&) {
        return false;
    } catch (const std::invalid_argument&) {}
    return true;
}

[[noreturn]] void bug(const char* what) {
    std::fprintf(stderr, "fuzz_pipeline: %s\n", what);
    std::abort();
}

std::vector<std::string_view> split_files(std::string_view rest, std::size_t count) {
    std::vector<std::string_view> files;
    for (std::size_t k = 0; k < count; ++k) {
        if (rest.size() < 2) return {};
        const std::size_t length = static_cast<unsigned char>(rest[0]) | (static_cast<unsigned char>(rest[1]) << 8);
        rest.remove_prefix(2);
        if (length > rest.size()) return {};
        files.push_back(rest.substr(0, length));
        rest.remove_prefix(length);
    }
    return files;
}

// The outcome of one backend: its output, or the message it refused with.
struct Outcome {
    std::optional<Matrix> output;
    std::string refusal;
};

template <class F>
Outcome attempt(F f) {
    try {
        return {f(), ""};
    } catch (const std::invalid_argument& e) {
        return {std::nullopt, e.what()};
    } catch (const std::overflow_error& e) {
        return {std::nullopt, e.what()};
    } catch (const std::length_error& e) {
        return {std::nullopt, e.what()};
    }
}

bool all_finite(const Matrix& M) {
    return std::all_of(M.data(), M.data() + M.size(), [](float x) { return std::isfinite(x); });
}

// Some finite entry of M becomes ±∞ when rounded to bfloat16.
bool rounds_to_infinity(const Matrix& M) {
    return std::any_of(M.data(), M.data() + M.size(),
                       [](float x) { return std::isfinite(x) && std::isinf(attn::round_to_bfloat16(x)); });
}

// |a − b| ≤ tolerance element by element; both the same shape.
void check_close(const Matrix& a, const Matrix& b, double tolerance, const char* what) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) bug(what);
    for (std::size_t k = 0; k < a.size(); ++k) {
        if (!std::isfinite(a.data()[k]) || !std::isfinite(b.data()[k])) bug("non-finite output");
        if (std::fabs(double(a.data()[k]) - b.data()[k]) > tolerance) bug(what);
    }
}

// The backward of the same call on every backend, for dO = O (L = ½‖O‖²): charged first, refused alike,
// and dQ, dK, dV within a float32 bound of naive's. Each gradient sums at most max(n, m) + d terms,
// each bounded by the norms of the rows it multiplies (attention/guards.cpp), and every weight
// carries the scores' relative error 2δ: compared where δ is small, like the forward.
void backward_on_every_backend(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO,
                               const attn::AttentionOptions& base, const attn::MemoryBudget& budget) {
    const std::size_t n = Q.rows(), m = K.rows(), d_k = Q.cols(), d_v = V.cols();
    if (2.0 * double(n) * double(m) * (2.0 * double(d_k) + 3.0 * double(d_v) + 8.0) > max_flops) return;
    Views view(4);
    attn::Call call{.task = attn::Task::forward_backward, .Q = view(Q), .K = view(K), .V = view(V), .dO = view(dO)};
    for (Backend b : {Backend::naive, Backend::simd, Backend::parallel, Backend::fused}) {
        call.options.backend = b;
        if (!fits(call, budget)) return;
    }
    struct Gradients {
        std::optional<attn::AttentionGradients> g;
        std::string refusal;
    };
    const auto run = [&](Backend b) -> Gradients {
        attn::AttentionOptions o = base;
        o.backend = b;
        try {
            return {attn::attention_forward_backward(Q, K, V, dO, o).gradients, ""};
        } catch (const std::exception& e) {
            return {std::nullopt, e.what()};
        }
    };
    const Gradients naive = run(Backend::naive);
    const double c = attn::scale_factor(base.scale, d_k);
    const double q = attn::max_row_norm(Q), k = attn::max_row_norm(K), v = attn::max_row_norm(V),
                 g = attn::max_row_norm(dO);
    const double delta = 2.0 * (double(d_k) + 2) * eps * q * k * c;
    const double terms = double(std::max(n, m) + std::max(d_k, d_v)) + 8;
    const double error = 8.0 * delta + 8.0 * terms * eps;  // relative to each gradient's bound below
    // Below float32's normal range a product's rounding is absolute, up to 2⁻¹⁴⁹, not relative: each of
    // a gradient's terms may carry that much from dP = dO·vᵀ and dS, before it is multiplied by a key
    // (dQ) or a query (dK), which can be near FLT_MAX.
    const double underflow = 0x1p-149 * 2.0 * terms;
    for (Backend b : fast_backends) {
        const Gradients got = run(b);
        if (naive.g.has_value() != got.g.has_value() || naive.refusal != got.refusal)
            bug("backends refuse the backward differently");
        if (!naive.g) continue;
        for (const Matrix* gradient : {&got.g->dQ, &got.g->dK, &got.g->dV, &naive.g->dQ, &naive.g->dK, &naive.g->dV})
            if (!all_finite(*gradient)) bug("non-finite gradient");  // whatever the rounding, within range
        if (delta > 0.01) continue;
        const double dQ_bound = error * 2.0 * double(m) * g * v * k * c + underflow * double(m) * k * c;
        const double dK_bound = error * 2.0 * double(n) * g * v * q * c + underflow * double(n) * q * c;
        check_close(got.g->dV, naive.g->dV, error * double(n) * g + underflow * double(n) + 1e-30,
                    "dV disagrees with naive");
        check_close(got.g->dQ, naive.g->dQ, dQ_bound + 1e-30, "dQ disagrees with naive");
        check_close(got.g->dK, naive.g->dK, dK_bound + 1e-30, "dK disagrees with naive");
    }
}

// The whole layer's backward (attention, then grad 2 and grad 1 through the projections) on every
// backend, for the same dO: each either refuses or returns finite dX, dW_Q, dW_K and dW_V. Each
// backend checks the range against its own projections, so borderline refusals may differ; the
// values are compared by the core's checks above.
void layer_backward_on_every_backend(const std::vector<Matrix>& m, const Matrix& dO, const attn::AttentionOptions& base,
                                     attn::MemoryBudget budget) {
    const Matrix& X = m[0];
    const std::size_t n = X.rows(), d_model = X.cols(), d_k = m[1].cols(), d_v = m[3].cols();
    const double flops = 2.0 * double(n) * double(n) * (2.0 * double(d_k) + 3.0 * double(d_v) + 8.0) +
                         6.0 * double(n) * double(d_model) * (2.0 * double(d_k) + double(d_v));
    if (flops > max_flops) return;
    Views view(5);
    attn::Call call{.task = attn::Task::forward_backward,
                    .X = view(X),
                    .W_Q = view(m[1]),
                    .W_K = view(m[2]),
                    .W_V = view(m[3]),
                    .dO = view(dO)};
    for (Backend b : {Backend::naive, Backend::simd, Backend::parallel, Backend::fused}) {
        call.options.backend = b;
        if (!fits(call, budget)) return;
    }
    const attn::SingleHeadAttention layer(m[1], m[2], m[3]);
    for (Backend b : {Backend::naive, Backend::simd, Backend::parallel, Backend::fused}) {
        try {
            attn::AttentionOptions o = base;
            o.backend = b;
            const auto pass = layer.forward_backward(X, dO, o);
            for (const Matrix* g :
                 {&pass.gradients.dX, &pass.gradients.dW_Q, &pass.gradients.dW_K, &pass.gradients.dW_V})
                if (!all_finite(*g)) bug("non-finite gradient through the projections");
        } catch (const std::invalid_argument&) {  // a clean refusal
        } catch (const std::overflow_error&) {    // a clean refusal of a range the bounds cannot promise
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::uint8_t flags = data[0];
    const bool layer = flags & 16;
    const attn::AttentionOptions base{.causal = (flags & 1) != 0,
                                      .scale = static_cast<attn::Scale>(((flags >> 1) & 3) % 3)};
    const auto files = split_files(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1), layer ? 4 : 3);
    if (files.empty()) return 0;

    // Reading, as attn run does: each file against what is left of a 64 MiB budget.
    attn::MemoryBudget budget(std::uint64_t{64} << 20, "the fuzzer's 64 MiB budget");
    std::vector<Matrix> m;
    try {
        for (std::size_t k = 0; k < files.size(); ++k) {
            attn::ReadOptions options;
            options.max_bytes = budget.limit();
            options.taken = budget.used();
            const std::string name = "file" + std::to_string(k);
            m.push_back(flags & 8 ? attn::parse_csv(files[k], name + ".csv", options)
                                  : attn::parse_npy(files[k], name + ".npy", options));
            budget.charge(attn::matrix_bytes(m.back().rows(), m.back().cols()), name);
        }
    } catch (const attn::InputError&) {
        return 0;
    } catch (const std::length_error&) {
        return 0;
    }

    // Steps 1–2 for the layer: each backend's projections within the dot-product error bound of
    // the naive ones; the attention below then runs on the naive Q, K, V for every backend.
    Matrix Q, K, V;
    if (layer) {
        const Matrix& X = m[0];
        const auto project = [&](Backend b) {
            const auto p = attn::SingleHeadAttention(m[1], m[2], m[3]).project(X, {.backend = b});
            return std::vector<Matrix>{p.Q, p.K, p.V};
        };
        std::optional<std::vector<Matrix>> naive;
        std::string naive_refusal;
        if (2.0 * double(X.rows()) * double(X.cols()) * (2.0 * double(m[1].cols()) + double(m[3].cols())) > max_flops)
            return 0;
        Views view(4);  // every backend's projections, as the library plans them
        attn::Call call{
            .task = attn::Task::project, .X = view(X), .W_Q = view(m[1]), .W_K = view(m[2]), .W_V = view(m[3])};
        for (Backend b : {Backend::naive, Backend::simd, Backend::parallel, Backend::fused}) {
            call.options.backend = b;
            if (!fits(call, budget)) return 0;
        }
        try {
            naive = project(Backend::naive);
        } catch (const std::exception& e) {
            naive_refusal = e.what();
        }
        for (Backend b : fast_backends) {
            std::string refusal;
            try {
                const auto got = project(b);
                if (!naive) bug("a fast backend projected what naive refused");
                const double x = attn::max_row_norm(X);
                for (int k = 0; k < 3; ++k)
                    check_close(got[k], (*naive)[k],
                                2.0 * (double(X.cols()) + 2) * eps * x * attn::max_col_norm(m[1 + k]) + 1e-30,
                                "projections differ beyond the dot-product error bound");
            } catch (const std::exception& e) {
                if (naive || naive_refusal != e.what()) bug("backends refuse the projection differently");
            }
        }
        if (!naive) return 0;
        Q = (*naive)[0], K = (*naive)[1], V = (*naive)[2];
    } else {
        Q = m[0], K = m[1], V = m[2];
    }

    // Steps 3–6 on every backend, charged first as attn run charges them.
    if (2.0 * double(Q.rows()) * double(K.rows()) * (double(Q.cols()) + double(V.cols()) + 8.0) > max_flops) return 0;
    Views view(3);  // each backend's run must fit in what is left, as one attn run would
    attn::Call call{.Q = view(Q), .K = view(K), .V = view(V)};
    for (Backend b : {Backend::naive, Backend::simd, Backend::parallel, Backend::fused}) {
        call.options.backend = b;
        if (!fits(call, budget)) return 0;
    }
    const Outcome naive = attempt([&] { return attn::scaled_dot_product_attention(Q, K, V, base).output; });
    for (Backend b : fast_backends) {
        attn::AttentionOptions o = base;
        o.backend = b;
        const Outcome got = attempt([&] { return attn::scaled_dot_product_attention(Q, K, V, o).output; });
        if (naive.output.has_value() != got.output.has_value() || naive.refusal != got.refusal)
            bug("backends refuse differently");
        if (!naive.output) continue;
        // Each score carries a rounding error of at most δ ≈ (d_k + 2)·ε·‖q‖·‖k‖·c, which moves a
        // weight by a factor within e^{±2δ}; compare only where that is small, to within what it
        // and the sums of step 6 can explain.
        const double c = attn::scale_factor(base.scale, Q.cols());
        const double delta = 2.0 * (double(Q.cols()) + 2) * eps * attn::max_row_norm(Q) * attn::max_row_norm(K) * c;
        if (delta > 0.01) continue;
        const double v = attn::max_row_norm(V);  // ≥ every |v_jk|
        check_close(*got.output, *naive.output, v * (4.0 * delta + 4.0 * (double(K.rows()) + 8) * eps) + 1e-30,
                    "a backend disagrees with naive beyond the float32 bound");
    }
    // The bf16 mode (attn run --backend fused --dtype bf16): refused where naive is, and besides
    // exactly where an entry of Q or K rounds to ±∞ in bfloat16; finite where it runs, and within the
    // bound of tests/test_bf16.cpp (operands rounded by up to u = 2⁻⁸).
    attn::AttentionOptions bf16 = base;
    bf16.backend = Backend::fused;
    bf16.dtype = attn::Dtype::bf16;
    const Outcome rounded = attempt([&] { return attn::scaled_dot_product_attention(Q, K, V, bf16).output; });
    const bool past_bfloat16 = naive.output && (rounds_to_infinity(Q) || rounds_to_infinity(K));
    if (past_bfloat16) {
        if (rounded.output || rounded.refusal.find("rounds to ±∞ in bfloat16") == std::string::npos)
            bug("the bf16 mode takes an entry that rounds to ±∞, or refuses it with another reason");
    } else if (naive.output.has_value() != rounded.output.has_value() || naive.refusal != rounded.refusal) {
        bug("the bf16 mode refuses differently from naive");
    }
    if (rounded.output) {
        if (!all_finite(*rounded.output)) bug("the bf16 mode's output is not finite");
        // with η = 2⁻¹²⁶ for what bfloat16 and vdpbf16ps flush to 0 (tests/test_bf16.cpp derives both)
        const double u = 0x1p-8, eta = 0x1p-126, c = attn::scale_factor(base.scale, Q.cols());
        const double d = double(Q.cols()), m = double(K.rows()), q = attn::max_row_norm(Q), k = attn::max_row_norm(K);
        const double E = c * ((2 * u + u * u + (d + 2) * eps) * q * k + (1 + u) * eta * std::sqrt(d) * (q + k) +
                              d * eta * eta + (d + 2) * eta);
        if (E <= 1.0) {
            const double factor = (1 + u) * (1 + u) * std::exp(2 * E) * (1 + (m + 64) * eps) - 1;
            const double v = attn::max_row_norm(V);
            const double flushed = (1 + u) * eta * (m * v + 2) + m * eta * eta + (m + 1) * eta;
            check_close(*rounded.output, *naive.output, v * (factor + 4.0 * E) + (1 + factor) * flushed + 1e-30,
                        "the bf16 mode is further from naive than its rounding allows");
        }
    }
    if (!naive.output) return 0;
    backward_on_every_backend(Q, K, V, *naive.output, base, budget);
    if (layer) layer_backward_on_every_backend(m, *naive.output, base, budget);
    return 0;
}
