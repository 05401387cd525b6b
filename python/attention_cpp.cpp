// python/attention_cpp.cpp — the library as a Python module (pybind11): NumPy arrays in, NumPy arrays
// out, the same chain, kernels and checks as `attn`, so a notebook can put the project beside its own
// PyTorch or NumPy code. This file only converts: arrays to Matrix and back, strings to options, the
// library's refusals to ValueError. It knows nothing of the kernels.
//
// Reading without a copy: a C-contiguous float32 array is read in place (Matrix::borrow), so the
// kernel reads the array's own buffer; any other array (float64, a transposed view, a slice with
// strides) is first converted by NumPy into a C-contiguous float32 copy. Results come back as arrays
// that own the Matrix the library filled, again without a copy. The GIL is released while the
// library runs, so other Python threads go on.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "attention/attention.hpp"
#include "attention/backends.hpp"
#include "lesson/json.hpp"
#include "lesson/walk.hpp"

namespace py = pybind11;

namespace {

using attn::Matrix;
// What every matrix argument is converted to: C-contiguous float32 (forcecast: from any numeric dtype).
using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

// A 2-D array as a Matrix over its own buffer.
const Matrix borrowed(const FloatArray& a, const char* name) {
    if (a.ndim() != 2)
        throw py::value_error(std::string(name) + " must be a 2-D array (rows × columns), got " +
                              std::to_string(a.ndim()) + " dimensions");
    return Matrix::borrow(a.data(), std::size_t(a.shape(0)), std::size_t(a.shape(1)));
}

// A Matrix handed to NumPy: the array owns it, nothing is copied.
py::array_t<float> to_numpy(Matrix&& m) {
    auto* owner = new Matrix(std::move(m));
    py::capsule release(owner, [](void* p) { delete static_cast<Matrix*>(p); });
    const auto rows = py::ssize_t(owner->rows()), cols = py::ssize_t(owner->cols());
    return py::array_t<float>({rows, cols}, {cols * py::ssize_t(sizeof(float)), py::ssize_t(sizeof(float))},
                              owner->data(), release);
}

attn::Backend backend_named(const std::string& name) {
    for (attn::Backend b : {attn::Backend::naive, attn::Backend::simd, attn::Backend::parallel, attn::Backend::fused})
        if (attn::to_string(b) == name) return b;
    throw py::value_error("backend must be naive, simd, parallel or fused, got '" + name + "'");
}

attn::Scale scale_named(const std::string& name) {
    for (attn::Scale s : {attn::Scale::sqrt_dk, attn::Scale::dk, attn::Scale::none})
        if (attn::to_string(s) == name) return s;
    throw py::value_error("scale must be sqrt, dk or none, got '" + name + "'");
}

attn::Dtype dtype_named(const std::string& name) {
    for (attn::Dtype d : {attn::Dtype::f32, attn::Dtype::bf16})
        if (attn::to_string(d) == name) return d;
    throw py::value_error("dtype must be f32 or bf16, got '" + name + "'");
}

attn::lesson::Lang lang_named(const std::string& name) {
    if (name == "en") return attn::lesson::Lang::en;
    if (name == "zh") return attn::lesson::Lang::zh;
    throw py::value_error("lang must be en or zh, got '" + name + "'");
}

// The options of one call, and the budget that max_memory (bytes) asks for: like attn run's
// --max-memory, every buffer the library allocates is charged before the first step, and a call
// that would not fit is refused by name. (The arrays passed in are the caller's, not charged.)
struct Call {
    attn::AttentionOptions options;
    std::optional<attn::MemoryBudget> budget;
    Call(const std::string& backend, const std::string& scale, bool causal, std::optional<std::uint64_t> max_memory) {
        options.backend = backend_named(backend);
        options.scale = scale_named(scale);
        options.causal = causal;
        if (max_memory) options.budget = &budget.emplace(*max_memory, "the max_memory limit");
    }
};

// The library's refusals (bad shapes, NaN, a range it cannot promise, a budget exceeded) as
// ValueError with the library's own message, the one attn prints after "attn: error: ".
template <class F>
auto refusals_as_value_error(F f) {
    try {
        py::gil_scoped_release unlocked;  // the arrays stay alive: the caller's frame holds them
        return f();
    } catch (const std::invalid_argument& e) {
        throw py::value_error(e.what());
    } catch (const std::overflow_error& e) {
        throw py::value_error(e.what());
    } catch (const std::length_error& e) {
        throw py::value_error(e.what());
    }
}

py::object weights_or_none(attn::AttentionResult& r, const attn::AttentionOptions& options) {
    if (options.backend == attn::Backend::fused) return py::none();  // the fused backend never forms α
    return to_numpy(std::move(r.weights));
}

py::tuple attention(const FloatArray& Q, const FloatArray& K, const FloatArray& V, const std::string& backend,
                    const std::string& scale, bool causal, const std::string& dtype,
                    std::optional<std::uint64_t> max_memory) {
    const Matrix q = borrowed(Q, "Q"), k = borrowed(K, "K"), v = borrowed(V, "V");
    Call call(backend, scale, causal, max_memory);
    call.options.dtype = dtype_named(dtype);
    attn::AttentionResult r =
        refusals_as_value_error([&] { return attn::scaled_dot_product_attention(q, k, v, call.options); });
    py::object alpha = weights_or_none(r, call.options);
    return py::make_tuple(to_numpy(std::move(r.output)), alpha);
}

py::tuple attention_backward(const FloatArray& Q, const FloatArray& K, const FloatArray& V, const FloatArray& dO,
                             const std::string& backend, const std::string& scale, bool causal,
                             std::optional<std::uint64_t> max_memory) {
    const Matrix q = borrowed(Q, "Q"), k = borrowed(K, "K"), v = borrowed(V, "V"), d = borrowed(dO, "dO");
    Call call(backend, scale, causal, max_memory);
    attn::AttentionPass pass =
        refusals_as_value_error([&] { return attn::attention_forward_backward(q, k, v, d, call.options); });
    return py::make_tuple(to_numpy(std::move(pass.gradients.dQ)), to_numpy(std::move(pass.gradients.dK)),
                          to_numpy(std::move(pass.gradients.dV)));
}

attn::SingleHeadAttention make_layer(const FloatArray& W_Q, const FloatArray& W_K, const FloatArray& W_V) {
    // the layer keeps copies of its weights: the arrays may change or go away afterwards
    const Matrix q = borrowed(W_Q, "W_Q"), k = borrowed(W_K, "W_K"), v = borrowed(W_V, "W_V");
    return refusals_as_value_error([&] { return attn::SingleHeadAttention(q, k, v); });
}

py::tuple project(const attn::SingleHeadAttention& layer, const FloatArray& X, const std::string& backend,
                  std::optional<std::uint64_t> max_memory) {
    const Matrix x = borrowed(X, "X");
    Call call(backend, "sqrt", false, max_memory);
    attn::SingleHeadAttention::Projections p = refusals_as_value_error([&] { return layer.project(x, call.options); });
    return py::make_tuple(to_numpy(std::move(p.Q)), to_numpy(std::move(p.K)), to_numpy(std::move(p.V)));
}

py::tuple forward(const attn::SingleHeadAttention& layer, const FloatArray& X, const std::string& backend,
                  const std::string& scale, bool causal, std::optional<std::uint64_t> max_memory) {
    const Matrix x = borrowed(X, "X");
    Call call(backend, scale, causal, max_memory);
    attn::AttentionResult r = refusals_as_value_error([&] { return layer.forward(x, call.options); });
    py::object alpha = weights_or_none(r, call.options);
    return py::make_tuple(to_numpy(std::move(r.output)), alpha);
}

py::dict layer_backward(const attn::SingleHeadAttention& layer, const FloatArray& X, const FloatArray& dO,
                        const std::string& backend, const std::string& scale, bool causal,
                        std::optional<std::uint64_t> max_memory) {
    const Matrix x = borrowed(X, "X"), d = borrowed(dO, "dO");
    Call call(backend, scale, causal, max_memory);
    attn::SingleHeadAttention::Pass pass =
        refusals_as_value_error([&] { return layer.forward_backward(x, d, call.options); });
    py::dict g;
    g["dX"] = to_numpy(std::move(pass.gradients.dX));
    g["dW_Q"] = to_numpy(std::move(pass.gradients.dW_Q));
    g["dW_K"] = to_numpy(std::move(pass.gradients.dW_K));
    g["dW_V"] = to_numpy(std::move(pass.gradients.dW_V));
    g["dQ"] = to_numpy(std::move(pass.gradients.qkv.dQ));
    g["dK"] = to_numpy(std::move(pass.gradients.qkv.dK));
    g["dV"] = to_numpy(std::move(pass.gradients.qkv.dV));
    return g;
}

py::object parsed(const std::string& json) { return py::module_::import("json").attr("loads")(json); }

// What `attn walk --format json [--grad]` prints, parsed: the same function writes both.
py::object walk(const std::string& lang, const std::string& scale, bool causal, bool grad) {
    const attn::lesson::Lang l = lang_named(lang);
    attn::AttentionOptions options;
    options.scale = scale_named(scale);
    options.causal = causal;
    const std::optional<attn::lesson::BackwardWalk> backward =
        grad ? std::optional(attn::lesson::backward_walk(options)) : std::nullopt;
    return parsed(attn::lesson::walk_json(attn::lesson::worked_example_walk(options), attn::lesson::example_tokens(l),
                                          l, backward ? &*backward : nullptr));
}

py::dict build_info() {
    const attn::BuildInfo b = attn::build_info();
    py::dict d;
    d["isa"] = b.isa;
    d["instruction_set"] = b.instruction_set;
    d["batch_width"] = b.batch_width;
    d["compiled"] = b.compiled;
    d["supported"] = b.supported;
    d["openmp"] = b.openmp;
    d["threads"] = b.threads;
    d["cpu"] = b.cpu;
    d["caches"] = b.caches;
    d["blocks"] = b.blocks;
    return d;
}

}  // namespace

PYBIND11_MODULE(attention_cpp, m) {
    using namespace pybind11::literals;
    m.doc() =
        "attention.cpp: single-head scaled dot-product attention, the lesson's chain in C++.\n\n"
        "Matrices are 2-D NumPy arrays. C-contiguous float32 arrays are read in place, without a copy; "
        "any other array (float64, transposed, strided) is converted to a C-contiguous float32 copy first. "
        "Bad input raises ValueError with the message attn prints. max_memory (bytes) refuses a call whose "
        "buffers would not fit, before any work, as attn run --max-memory does.";
    const auto no_memory_limit = std::optional<std::uint64_t>();
    m.def("attention", &attention, "Q"_a, "K"_a, "V"_a, py::kw_only(), "backend"_a = "fused", "scale"_a = "sqrt",
          "causal"_a = false, "dtype"_a = "f32", "max_memory"_a = no_memory_limit,
          "O = softmax(scale·Q·Kᵀ)·V. Returns (O, α); α is None on the fused backend, which never forms it.\n"
          "Q (n×d_k), K (m×d_k), V (m×d_v); backend: naive | simd | parallel | fused; scale: sqrt | dk | none;\n"
          "dtype: f32 | bf16 (fused only: the products' operands rounded to bfloat16, summed in float32).");
    m.def("attention_backward", &attention_backward, "Q"_a, "K"_a, "V"_a, "dO"_a, py::kw_only(), "backend"_a = "fused",
          "scale"_a = "sqrt", "causal"_a = false, "max_memory"_a = no_memory_limit,
          "The forward and its backward in one call: returns (dQ, dK, dV) for dO = ∂L/∂O (n×d_v).");
    py::class_<attn::SingleHeadAttention>(m, "SingleHeadAttention",
                                          "One attention head: X·W_Q, X·W_K, X·W_V, then the chain. Keeps copies "
                                          "of W_Q (d_model×d_k), W_K (d_model×d_k) and W_V (d_model×d_v).")
        .def(py::init(&make_layer), "W_Q"_a, "W_K"_a, "W_V"_a)
        .def("project", &project, "X"_a, py::kw_only(), "backend"_a = "fused", "max_memory"_a = no_memory_limit,
             "Steps 1–2: returns (Q, K, V) for X (n×d_model).")
        .def("forward", &forward, "X"_a, py::kw_only(), "backend"_a = "fused", "scale"_a = "sqrt", "causal"_a = false,
             "max_memory"_a = no_memory_limit, "The whole chain for X: returns (O, α); α is None on the fused backend.")
        .def("backward", &layer_backward, "X"_a, "dO"_a, py::kw_only(), "backend"_a = "fused", "scale"_a = "sqrt",
             "causal"_a = false, "max_memory"_a = no_memory_limit,
             "Forward and backward for X: a dict of dX, dW_Q, dW_K, dW_V and dQ, dK, dV.");
    m.def("walk", &walk, py::kw_only(), "lang"_a = "en", "scale"_a = "sqrt", "causal"_a = false, "grad"_a = false,
          "The worked example's every intermediate as a dict: what `attn walk --format json` prints "
          "(with grad=True, `attn walk --grad --format json`).");
    m.def(
        "learn_defaults", [] { return parsed(attn::lesson::learn_defaults_json()); },
        "attn learn's defaults as a dict: task, steps, lr (Adam's step size) and seed.");
    m.def(
        "_read_address", [](const FloatArray& A) { return std::uintptr_t(borrowed(A, "A").data()); }, "A"_a,
        "For the tests: the address at which the library reads A (A's own buffer when it is a C-contiguous "
        "float32 array).");
    m.def("build_info", &build_info, "What this build runs: instruction set, threads, caches and block sizes.");
}
