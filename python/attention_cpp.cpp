// python/attention_cpp.cpp — the library as a Python module (pybind11): NumPy arrays in, NumPy arrays
// out, the same chain, kernels and checks as `attn`, so a notebook can put the project beside its own
// PyTorch or NumPy code. This file only converts: arrays to Matrix and heads and back, strings to
// options, the library's refusals to ValueError. It knows nothing of the kernels.
//
// Reading without a copy: a C-contiguous float32 array is read in place (Matrix::borrow, HeadsView),
// so the kernel reads the array's own buffer; any other array (float64, a transposed view, a slice
// with strides) is first converted by NumPy into a C-contiguous float32 copy. Results come back as
// arrays that own the Matrix the library filled, again without a copy. The GIL is released while the
// library runs, so other Python threads go on.
//
// scaled_dot_product_attention takes PyTorch's arguments with PyTorch's meaning: (N..., H, L, E)
// arrays whose leading dimensions N... become the library's batch B, and attn_mask as a ScoreMask
// over NumPy's broadcast view of it. Its key and value are a key/value cache (CacheView): a float16
// array or a bfloat16 tensor is read in place as a 16-bit cache, and kv_dtype rounds float keys and
// values into one (attn::to_cache).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attention/attention.hpp"
#include "attention/backends.hpp"
#include "attention/heads.hpp"
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

// A Matrix handed to NumPy: the array owns it, nothing is copied. Its shape is rows × cols, or any
// shape of as many elements read in C order (a stack of heads).
py::array_t<float> to_numpy(Matrix&& m, std::vector<py::ssize_t> shape = {}) {
    auto* owner = new Matrix(std::move(m));
    py::capsule release(owner, [](void* p) { delete static_cast<Matrix*>(p); });
    if (shape.empty()) shape = {py::ssize_t(owner->rows()), py::ssize_t(owner->cols())};
    return py::array_t<float>(shape, owner->data(), release);
}

// An option read by the library's reader of its names (attention/options.hpp), its refusal a ValueError.
template <class Read>
auto option_named(Read read, const std::string& name, const std::string& option) {
    try {
        return read(name, option);
    } catch (const std::invalid_argument& e) {
        throw py::value_error(e.what());
    }
}

attn::Backend backend_named(const std::string& name) {
    return option_named(attn::backend_from_string, name, "backend");
}
attn::Scale scale_named(const std::string& name) { return option_named(attn::scale_from_string, name, "scale"); }
attn::Dtype dtype_named(const std::string& name) { return option_named(attn::dtype_from_string, name, "dtype"); }

attn::lesson::Lang lang_named(const std::string& name) {
    if (name == "en") return attn::lesson::Lang::en;
    if (name == "zh") return attn::lesson::Lang::zh;
    throw py::value_error("lang must be en or zh, got '" + name + "'");
}

// The threads every call runs on (scaled_dot_product_attention's threads=None): every core this
// process may use, counted as OpenMP counts them before another library sets its own count:
// OMP_NUM_THREADS when set (its first number), else the CPUs this process may run on; at most
// OMP_THREAD_LIMIT.
int every_core() {
    const py::module_ os = py::module_::import("os");
    const auto number = [](const char* variable) {
        return std::getenv(variable) ? std::atoi(std::getenv(variable)) : 0;
    };
    int threads = number("OMP_NUM_THREADS");
    if (threads <= 0)
        threads = py::hasattr(os, "sched_getaffinity") ? int(py::len(os.attr("sched_getaffinity")(0)))
                                                       : os.attr("cpu_count")().cast<int>();
    const int limit = number("OMP_THREAD_LIMIT");
    return limit > 0 ? std::min(threads, limit) : threads;
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
        options.threads = every_core();
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

// ---- scaled_dot_product_attention: PyTorch's arguments, the library's heads ----

const std::string sdpa = "scaled_dot_product_attention: ";  // how its messages begin

// kv_dtype=None: the key and value arrays' own type; else a KvDtype's name.
std::optional<attn::KvDtype> kv_dtype_named(const std::optional<std::string>& name) {
    if (!name) return std::nullopt;
    return option_named(attn::kv_dtype_from_string, *name, "kv_dtype");
}

std::string shape_text(const py::handle& a) { return py::str(a.attr("shape")); }  // "(2, 8, 16, 64)"

// Anything array-like as NumPy reads it, without a copy where none is needed: whatever np.asarray
// takes (NumPy arrays, the buffer protocol, __array__ as a torch CPU tensor has), else DLPack; none
// when NumPy cannot read it (not an array, or a type NumPy lacks, such as bfloat16).
py::object numpy_view(const py::handle& x) {
    const py::module_ np = py::module_::import("numpy");
    const auto read_by = [&](const char* how) {
        try {
            py::object a = np.attr(how)(x);
            if (a.attr("dtype").attr("kind").cast<std::string>() != "O") return a;
        } catch (const py::error_already_set&) {}
        return py::object();
    };
    if (py::object a = read_by("asarray")) return a;
    return py::hasattr(x, "__dlpack__") ? read_by("from_dlpack") : py::object();
}

// What numpy_view(x) gave, when it is an array of numbers.
py::array numbers(const py::object& a, const py::handle& x, const std::string& name) {
    const std::string kind = a ? a.attr("dtype").attr("kind").cast<std::string>() : std::string();
    if (kind.empty() || std::string("biuf").find(kind) == std::string::npos)
        throw py::value_error(sdpa + name +
                              " must be an array of numbers (NumPy, the buffer protocol or DLPack), got " +
                              std::string(py::str(py::type::of(x).attr("__name__"))));
    return a;
}

py::array array_of(const py::handle& x, const std::string& name) { return numbers(numpy_view(x), x, name); }

// An operand (N..., H, rows, cols) read as heads: its leading dimensions N... are the batch, merged
// into one B; with only rows and columns it is a single head. Queries and grad_output are float32;
// keys and values are a cache of any KvDtype.
struct Operand {
    py::object owner;               // what view.data points into (an array, a DLPack capsule, a Cache)
    std::vector<py::ssize_t> dims;  // the shape the caller gave
    attn::CacheView view;           // (B, H, rows, cols) as the library reads it
    std::vector<py::ssize_t> leading() const {
        return {dims.begin(), dims.end() - std::min<py::ssize_t>(dims.size(), 3)};
    }
    attn::HeadsView floats() const { return {static_cast<const float*>(view.data), view.shape}; }  // an f32 operand
};

std::string shape_text(const std::vector<py::ssize_t>& dims) { return py::str(py::tuple(py::cast(dims))); }

Operand shaped(py::object owner, std::vector<py::ssize_t> dims, const void* data, attn::KvDtype type,
               const std::string& name) {
    const std::size_t rank = dims.size();
    if (rank < 2)
        throw py::value_error(sdpa + name + " must have at least 2 dimensions (..., L, E), got " + name + " " +
                              shape_text(dims));
    std::size_t batch = 1;
    for (std::size_t i = 0; i + 3 < rank; ++i) batch *= std::size_t(dims[i]);
    const std::size_t heads = rank >= 3 ? std::size_t(dims[rank - 3]) : 1;
    const attn::HeadsShape shape{batch, heads, std::size_t(dims[rank - 2]), std::size_t(dims[rank - 1])};
    return {std::move(owner), std::move(dims), attn::CacheView(data, shape, type)};
}

std::vector<py::ssize_t> dims_of(const py::array& a) { return {a.shape(), a.shape() + a.ndim()}; }

// ---- 16-bit arrays: float16 through NumPy, bfloat16 (which NumPy has no type for) through DLPack ----

// The start of a DLPack tensor, as the DLPack ABI lays it out (dlpack.h): what __dlpack__()'s capsule,
// named "dltensor", points at. Only a CPU tensor of bfloat16 is read from it.
struct DLPackTensor {
    void* data;
    std::int32_t device_type, device_id;  // device_type 1: the CPU
    std::int32_t ndim;
    std::uint8_t code, bits;  // code 4: bfloat
    std::uint16_t lanes;
    const std::int64_t* shape;
    const std::int64_t* strides;  // in elements; null: C-contiguous
    std::uint64_t byte_offset;
};

// A bfloat16 tensor offered through DLPack (torch.bfloat16 on the CPU), which NumPy cannot read, read
// in place; none for any other object. The capsule is left unconsumed: when it goes, it releases the
// tensor itself.
std::optional<Operand> bfloat16_operand(const py::handle& x, const std::string& name) {
    if (!py::hasattr(x, "__dlpack__")) return std::nullopt;
    const py::capsule capsule = x.attr("__dlpack__")();
    const auto* t = static_cast<const DLPackTensor*>(capsule.get_pointer());
    if (t->code != 4 || t->bits != 16 || t->lanes != 1) return std::nullopt;
    std::vector<py::ssize_t> dims(t->shape, t->shape + t->ndim);
    if (t->device_type != 1)
        throw py::value_error(sdpa + name + " " + shape_text(dims) + " is a bfloat16 tensor outside the CPU's memory");
    std::int64_t expected = 1;  // C order: each axis steps over all the axes after it
    for (std::int32_t i = t->ndim; t->strides && i-- > 0;) {
        if (t->shape[i] != 1 && t->strides[i] != expected)
            throw py::value_error(sdpa + name + " " + shape_text(dims) +
                                  " is a bfloat16 tensor that is not C-contiguous: it is read in place, so pass " +
                                  name + ".contiguous()");
        expected *= t->shape[i];
    }
    const void* data = static_cast<const char*>(t->data) + t->byte_offset;
    return shaped(py::make_tuple(x, capsule), std::move(dims), data, attn::KvDtype::bf16, name);
}

Operand operand(const py::handle& x, const std::string& name) {
    const py::object view = numpy_view(x);
    if (!view && bfloat16_operand(x, name))
        throw py::value_error(sdpa + name + " is a bfloat16 tensor; only key and value may be 16-bit (a cache), " +
                              name + " must be float32: pass " + name + ".float()");
    const FloatArray a = FloatArray::ensure(numbers(view, x, name));
    return shaped(a, dims_of(a), a.data(), attn::KvDtype::f32, name);
}

// A key or value array as the cache the library reads: a bfloat16 tensor or a float16 array in place
// (their own type), anything else as float32 (converted as the other operands are); then, when
// kv_dtype asks for a type, float keys and values rounded into it.
Operand cache_operand(const py::handle& x, const std::string& name, std::optional<attn::KvDtype> kv_dtype) {
    const py::object view = numpy_view(x);
    std::optional<Operand> own = view ? std::nullopt : bfloat16_operand(x, name);
    if (!own) {
        const py::array a = numbers(view, x, name);
        if (a.dtype().kind() == 'f' && a.itemsize() == 2) {
            const py::array c = py::module_::import("numpy").attr("ascontiguousarray")(a);
            own = shaped(c, dims_of(c), c.data(), attn::KvDtype::f16, name);
        } else {
            const FloatArray f = FloatArray::ensure(a);
            own = shaped(f, dims_of(f), f.data(), attn::KvDtype::f32, name);
        }
    }
    if (!kv_dtype || *kv_dtype == own->view.type) return *own;
    if (own->view.type != attn::KvDtype::f32)
        throw py::value_error(sdpa + name + " " + shape_text(own->dims) + " holds " + attn::to_string(own->view.type) +
                              " numbers, and kv_dtype='" + attn::to_string(*kv_dtype) +
                              "' asks for another type: a 16-bit array is read as it is (kv_dtype=None)");
    auto* rounded = new attn::Cache();
    const py::capsule owner(rounded, [](void* p) { delete static_cast<attn::Cache*>(p); });
    try {
        py::gil_scoped_release unlocked;  // own->owner keeps the floats alive
        *rounded = attn::to_cache(own->floats(), *kv_dtype, name);
    } catch (const std::overflow_error& e) {  // a float that kv_dtype can only hold as ±∞
        throw py::value_error(sdpa + e.what());
    }
    return {owner, own->dims, rounded->view()};
}

// "query (2, 8, 16, 64), key (2, 2, 16, 64) and value (2, 2, 16, 32)"
std::string named_shapes(const std::vector<std::pair<std::string, const Operand*>>& operands) {
    std::string text;
    for (std::size_t i = 0; i < operands.size(); ++i)
        text += (i == 0                     ? ""
                 : i + 1 == operands.size() ? " and "
                                            : ", ") +
                operands[i].first + " " + shape_text(operands[i].second->dims);
    return text;
}

// What the library's (B, H, rows, cols) no longer shows: the same rank and the same leading dimensions.
void check_same_batch(const std::vector<std::pair<std::string, const Operand*>>& operands) {
    const Operand& first = *operands.front().second;
    for (const auto& named : operands) {
        if (named.second->dims.size() != first.dims.size())
            throw py::value_error(sdpa + named_shapes(operands) + " must have the same number of dimensions");
        if (named.second->leading() != first.leading())
            throw py::value_error(sdpa + named_shapes(operands) + " must have the same leading (batch) dimensions");
    }
}

// attn_mask as the library reads it: a ScoreMask over NumPy's view of the mask broadcast to
// (N..., H, L, S), stride 0 along the axes it repeats. The view is read in place when its batch axes
// merge into one; otherwise only the mask is copied (at its own size, the batch axes written out).
struct Mask {
    py::array array;  // what mask.data points into, alive for the call
    attn::ScoreMask mask;
};

py::array mask_values(const py::handle& attn_mask) {
    const py::array a = array_of(attn_mask, "attn_mask");
    if (a.dtype().kind() == 'b') return a;
    if (a.dtype().kind() != 'f')
        throw py::value_error(sdpa + "attn_mask must be bool or floating point, got " +
                              std::string(py::str(a.dtype())));
    return a.attr("astype")("float32", py::arg("copy") = false);
}

// Strides in elements, 0 along an axis of one element; none when one is not a whole number of elements.
std::optional<std::vector<std::ptrdiff_t>> element_strides(const py::array& a) {
    std::vector<std::ptrdiff_t> strides;
    for (py::ssize_t i = 0; i < a.ndim(); ++i) {
        if (a.strides(i) % a.itemsize() != 0) return std::nullopt;
        strides.push_back(a.shape(i) == 1 ? 0 : a.strides(i) / a.itemsize());
    }
    return strides;
}

// The first `count` axes read as one: its stride, when each axis steps over the whole extent of the
// axes after it (axes of one element aside); none otherwise.
std::optional<std::ptrdiff_t> merged_stride(const py::array& a, const std::vector<std::ptrdiff_t>& strides,
                                            std::size_t count) {
    std::ptrdiff_t stride = 0, extent = 0;  // of the axes merged so far, the innermost first
    for (std::size_t i = count; i-- > 0;) {
        if (a.shape(i) == 1) continue;
        if (extent != 0 && strides[i] != stride * extent) return std::nullopt;
        if (extent == 0) stride = strides[i], extent = 1;
        extent *= a.shape(i);
    }
    return stride;
}

// The broadcast view copied: its last three axes keep one element where they repeat, its batch axes
// are written out.
py::array compact_copy(const py::array& view, const std::vector<std::ptrdiff_t>& strides, std::size_t batch_axes) {
    py::tuple index(view.ndim());
    for (py::ssize_t i = 0; i < view.ndim(); ++i)
        index[i] = py::slice(0, std::size_t(i) >= batch_axes && strides[i] == 0 ? 1 : view.shape(i), 1);
    return py::module_::import("numpy").attr("ascontiguousarray")(view[index]);
}

Mask score_mask(const py::handle& attn_mask, const Operand& q, const Operand& k) {
    const py::array values = mask_values(attn_mask);
    std::vector<py::ssize_t> target = q.leading();
    if (q.dims.size() >= 3) target.push_back(py::ssize_t(q.view.shape.heads));
    target.insert(target.end(), {py::ssize_t(q.view.shape.rows), py::ssize_t(k.view.shape.rows)});
    py::array view;
    try {
        view = py::module_::import("numpy").attr("broadcast_to")(values, py::tuple(py::cast(target)));
    } catch (const py::error_already_set&) {
        throw py::value_error(sdpa + "attn_mask " + shape_text(values) + " cannot be broadcast to (N..., H, L, S) = " +
                              std::string(py::str(py::tuple(py::cast(target)))) + " of query " + shape_text(q.dims) +
                              " and key " + shape_text(k.dims));
    }
    const std::size_t batch_axes = q.leading().size();
    auto strides = element_strides(view);
    auto batch_stride = strides ? merged_stride(view, *strides, batch_axes) : std::nullopt;
    if (!batch_stride) {
        view = compact_copy(view, strides.value_or(std::vector<std::ptrdiff_t>(view.ndim(), 1)), batch_axes);
        strides = element_strides(view);
        batch_stride = merged_stride(view, *strides, batch_axes);
    }
    const auto axis = [&](py::ssize_t from_end) {
        return from_end <= view.ndim() ? (*strides)[view.ndim() - from_end] : 0;
    };
    attn::ScoreMask mask;
    mask.kind = view.dtype().kind() == 'b' ? attn::ScoreMask::Kind::boolean : attn::ScoreMask::Kind::additive;
    mask.data = view.data();
    mask.batch_stride = *batch_stride;
    mask.head_stride = q.dims.size() >= 3 ? axis(3) : 0;
    mask.row_stride = axis(2);
    mask.col_stride = axis(1);
    return {view, mask};
}

int threads_for(std::optional<int> threads) {
    if (!threads) return every_core();
    if (*threads < 1)
        throw py::value_error(sdpa + "threads must be a positive number, or None for every core, got " +
                              std::to_string(*threads));
    return *threads;
}

// One call: its operands as heads, its mask and options, and the rank its results come back in.
struct HeadsCall {
    Operand q, k, v;
    std::optional<Mask> mask;
    attn::AttentionOptions options;

    HeadsCall(const py::object& query, const py::object& key, const py::object& value, const py::object& attn_mask,
              bool is_causal, std::optional<float> scale, bool enable_gqa, const std::string& backend,
              std::optional<int> threads, std::optional<attn::KvDtype> kv_dtype = std::nullopt)
        : q(operand(query, "query")),
          k(cache_operand(key, "key", kv_dtype)),
          v(cache_operand(value, "value", kv_dtype)) {
        check_same_batch({{"query", &q}, {"key", &k}, {"value", &v}});
        if (q.view.shape.heads != k.view.shape.heads && !enable_gqa)
            throw py::value_error(sdpa + "query " + shape_text(q.dims) + " has " + std::to_string(q.view.shape.heads) +
                                  " heads and key " + shape_text(k.dims) + " " + std::to_string(k.view.shape.heads) +
                                  ": different head counts need enable_gqa=True (grouped-query attention)");
        if (is_causal && !attn_mask.is_none())
            throw py::value_error(sdpa +
                                  "attn_mask and is_causal=True cannot be given together (as in PyTorch); "
                                  "write the causal triangle into the mask instead");
        if (!attn_mask.is_none()) options.mask = &mask.emplace(score_mask(attn_mask, q, k)).mask;
        options.causal = is_causal;
        options.explicit_scale = scale;
        options.backend = backend_named(backend);
        options.threads = threads_for(threads);
        options.names.Q = "query", options.names.K = "key", options.names.V = "value", options.names.dO = "grad_output";
    }

    // Heads the library computed, as an array of the operands' rank: (N..., heads, rows, cols).
    py::array_t<float> as_array(attn::Heads&& h) const {
        std::vector<py::ssize_t> shape = q.leading();
        if (q.dims.size() >= 3) shape.push_back(py::ssize_t(h.shape.heads));
        shape.insert(shape.end(), {py::ssize_t(h.shape.rows), py::ssize_t(h.shape.cols)});
        return to_numpy(std::move(h.values), shape);
    }
};

void refuse_dropout(double dropout_p) {
    if (dropout_p != 0.0)
        throw py::value_error(sdpa + "dropout_p must be 0: this library has no dropout, got " +
                              std::to_string(dropout_p));
}

py::array_t<float> scaled_dot_product_attention(const py::object& query, const py::object& key, const py::object& value,
                                                const py::object& attn_mask, double dropout_p, bool is_causal,
                                                std::optional<float> scale, bool enable_gqa, const std::string& backend,
                                                const std::string& dtype, std::optional<int> threads,
                                                const std::optional<std::string>& kv_dtype) {
    refuse_dropout(dropout_p);
    HeadsCall call(query, key, value, attn_mask, is_causal, scale, enable_gqa, backend, threads,
                   kv_dtype_named(kv_dtype));
    call.options.dtype = dtype_named(dtype);
    attn::HeadsResult r = refusals_as_value_error(
        [&] { return attn::scaled_dot_product_attention(call.q.floats(), call.k.view, call.v.view, call.options); });
    return call.as_array(std::move(r.output));
}

py::tuple scaled_dot_product_attention_backward(const py::object& query, const py::object& key, const py::object& value,
                                                const py::object& grad_output, const py::object& attn_mask,
                                                bool is_causal, std::optional<float> scale, bool enable_gqa,
                                                const std::string& backend, std::optional<int> threads) {
    HeadsCall call(query, key, value, attn_mask, is_causal, scale, enable_gqa, backend, threads);
    for (const auto& [name, cache] : {std::pair{"key", &call.k}, std::pair{"value", &call.v}})
        if (cache->view.type != attn::KvDtype::f32)
            throw py::value_error("scaled_dot_product_attention_backward: " + std::string(name) + " " +
                                  shape_text(cache->dims) + " holds " + attn::to_string(cache->view.type) +
                                  " numbers: a 16-bit key/value cache has no backward; pass float32 keys and values");
    const Operand dO = operand(grad_output, "grad_output");
    check_same_batch({{"query", &call.q}, {"grad_output", &dO}});
    call.options.keep_for_backward = true;
    attn::HeadsGradients g = refusals_as_value_error([&] {
        const attn::HeadsResult forward =
            attn::scaled_dot_product_attention(call.q.floats(), call.k.floats(), call.v.floats(), call.options);
        return attn::scaled_dot_product_attention_backward(call.q.floats(), call.k.floats(), call.v.floats(), forward,
                                                           dO.floats(), call.options);
    });
    return py::make_tuple(call.as_array(std::move(g.dQ)), call.as_array(std::move(g.dK)),
                          call.as_array(std::move(g.dV)));
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
    d["threads"] = b.openmp ? every_core() : 1;  // what threads=None runs on, whatever another library set
    d["last_team"] = b.last_team;                // threads the last fused forward or team of heads ran on
    d["cpu"] = b.cpu;
    d["caches"] = b.caches;
    d["blocks"] = b.blocks;
    py::list kv_dtypes;  // what kv_dtype= takes
    for (const attn::KvDtype type : {attn::KvDtype::f32, attn::KvDtype::bf16, attn::KvDtype::f16})
        kv_dtypes.append(attn::to_string(type));
    d["kv_dtypes"] = kv_dtypes;
    return d;
}

}  // namespace

PYBIND11_MODULE(attention_cpp, m) {
    using namespace pybind11::literals;
    m.doc() =
        "attention.cpp: scaled dot-product attention, the lesson's chain in C++, for one head or many.\n\n"
        "attention() and the layer take 2-D NumPy arrays; scaled_dot_product_attention takes PyTorch's shapes. "
        "C-contiguous float32 arrays are read in place, without a copy; "
        "any other array (float64, transposed, strided) is converted to a C-contiguous float32 copy first. "
        "Bad input raises ValueError with the message attn prints. max_memory (bytes) refuses a call whose "
        "buffers would not fit, before any work, as attn run --max-memory does. Every call runs on every core "
        "this process may use (OMP_NUM_THREADS when set), whatever another library such as torch set.";
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
        "_read_address",
        [](const py::object& A) { return std::uintptr_t(cache_operand(A, "A", std::nullopt).view.data); }, "A"_a,
        "For the tests: the address at which the library reads A as a key or value, any array of at least 2 "
        "dimensions (A's own buffer when it is a C-contiguous float32 or float16 array or a bfloat16 tensor).");
    const auto none = py::none();
    const auto no_scale = std::optional<float>();
    const auto every_core = std::optional<int>();
    m.def(
        "scaled_dot_product_attention", &scaled_dot_product_attention, "query"_a, "key"_a, "value"_a,
        "attn_mask"_a = none, "dropout_p"_a = 0.0, "is_causal"_a = false, "scale"_a = no_scale, "enable_gqa"_a = false,
        py::kw_only(), "backend"_a = "fused", "dtype"_a = "f32", "threads"_a = every_core, "kv_dtype"_a = none,
        "torch.nn.functional.scaled_dot_product_attention's arguments and meaning, every head by the lesson's chain.\n"
        "query (N..., H, L, E), key (N..., H_kv, S, E), value (N..., H_kv, S, E_v), any number of leading\n"
        "dimensions N... (the same for all three; 2-D arrays are one head); returns (N..., H, L, E_v) float32.\n"
        "H ≠ H_kv needs enable_gqa=True: query head h reads key/value head h // (H // H_kv).\n"
        "attn_mask, broadcastable to (N..., H, L, S): bool (True = may attend) or float (added after the scale).\n"
        "is_causal: query i sees keys j ≤ i (top-left, also for L ≠ S); not together with attn_mask.\n"
        "A query no key may attend gets 0. scale: None = 1/√E. dropout_p must be 0 (no dropout here).\n"
        "Arrays: NumPy, the buffer protocol or DLPack (torch CPU tensors as they are).\n"
        "threads: None = every core this process may use (OMP_NUM_THREADS when set), whatever torch set.\n"
        "kv_dtype: the type key and value are read in, a key/value cache (build_info()['kv_dtypes']):\n"
        "None = their own: a float16 array (NumPy) is an f16 cache and a torch.bfloat16 CPU tensor (DLPack)\n"
        "a bf16 one, both read in place; any other array is converted to float32 (f32). 'f32', 'bf16' or\n"
        "'f16': float keys and values are rounded into that type first, which costs a pass over the cache\n"
        "on every call; pass a 16-bit array instead to keep the cache as it is (a 16-bit array with another\n"
        "kv_dtype is refused). key and value must have the same type; queries stay float32. A 16-bit cache\n"
        "has no backward.");
    m.def("scaled_dot_product_attention_backward", &scaled_dot_product_attention_backward, "query"_a, "key"_a,
          "value"_a, "grad_output"_a, "attn_mask"_a = none, "is_causal"_a = false, "scale"_a = no_scale,
          "enable_gqa"_a = false, py::kw_only(), "backend"_a = "fused", "threads"_a = every_core,
          "The forward and its backward in one call, with the forward's arguments: returns (dq, dk, dv) for\n"
          "grad_output = ∂L/∂O (N..., H, L, E_v); a key/value head shared by a group of query heads gets their sum.\n"
          "key and value must be float (a float16 array or bfloat16 tensor is a cache, which has no backward).");
    m.def("build_info", &build_info,
          "What this build runs: instruction set, caches and block sizes; threads: what threads=None runs on;\n"
          "kv_dtypes: the key/value cache types scaled_dot_product_attention's kv_dtype takes.");
}
