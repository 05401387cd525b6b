// python/attention_cpp.cpp — the library's extension module for Python, _attention_cpp (pybind11), under
// python/attention_cpp.py, which gives Python its functions with PyTorch's argument conventions. This
// file only converts: each array to a view of the library's one call (attention/call.hpp) — anything
// offering the buffer protocol (NumPy arrays) or DLPack (torch tensors) as it is, anything else as
// NumPy reads it — the results back to NumPy arrays that own the library's matrices, and the
// library's refusals to ValueError, in one place. The library decides everything else (shapes,
// element types, byte orders, masks and their broadcast, caches, threads, memory), as for attn.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "attention/attention.hpp"
#include "attention/backends.hpp"
#include "attention/kv_cache.hpp"
#include "attention/run.hpp"
#include "attention/views.hpp"
#include "lesson/json.hpp"
#include "lesson/walk.hpp"

namespace py = pybind11;
using namespace pybind11::literals;
using attn::Element;

namespace {

// ---- arrays in: a view, and what keeps its memory alive while the call reads it -------------------

struct Array {
    py::object owner;                         // the array, or its DLPack capsule
    std::shared_ptr<py::buffer_info> buffer;  // the buffer the view reads, held until the call is done
    std::vector<std::size_t> shape;
    std::vector<std::ptrdiff_t> strides;  // in elements
    attn::View view;
};

// An element of this kind ('f' floating, 'i' signed, 'u' unsigned, 'b' boolean, 'B' bfloat) and size.
Element element_of(char kind, std::size_t bits, const std::string& what) {
    const int k = bits == 8 ? 0 : bits == 16 ? 1 : bits == 32 ? 2 : bits == 64 ? 3 : 4;
    constexpr Element ints[] = {Element::i8, Element::i16, Element::i32, Element::i64};
    constexpr Element uints[] = {Element::u8, Element::u16, Element::u32, Element::u64};
    if (kind == 'i' && k < 4) return ints[k];
    if (kind == 'u' && k < 4) return uints[k];
    if (kind == 'f' && k > 0 && k < 4) return k == 1 ? Element::f16 : k == 2 ? Element::f32 : Element::f64;
    if (kind == 'b' && bits == 8) return Element::boolean;
    if (kind == 'B' && bits == 16) return Element::bf16;
    throw std::invalid_argument("an array of " + what + " elements; numbers are needed");
}

// Through the buffer protocol: a struct-module format ("<f", ">e", "?", "q", …) and byte strides.
Array from_buffer(const py::handle& x) {
    Array a{py::reinterpret_borrow<py::object>(x),
            std::make_shared<py::buffer_info>(py::reinterpret_borrow<py::buffer>(x).request()),
            {},
            {},
            {}};
    const py::buffer_info& info = *a.buffer;
    for (py::ssize_t k = 0; k < info.ndim; ++k) {
        if (info.strides[k] % info.itemsize != 0) throw std::invalid_argument("its strides are not whole elements");
        a.shape.push_back(std::size_t(info.shape[k])), a.strides.push_back(info.strides[k] / info.itemsize);
    }
    std::string format = info.format;
    const bool little = py::module_::import("sys").attr("byteorder").cast<std::string>() == "little";
    const bool swapped = !format.empty() && (format[0] == '<'                       ? !little
                                             : format[0] == '>' || format[0] == '!' ? little
                                                                                    : false);
    if (!format.empty() && std::string("@=<>!").find(format[0]) != std::string::npos) format.erase(0, 1);
    const std::string kinds = "fde?bhilqBHILQ", as = "fffbiiiiiuuuuu";
    const std::size_t k = format.size() == 1 ? kinds.find(format[0]) : std::string::npos;
    const Element element = element_of(k == std::string::npos ? 0 : as[k], 8 * std::size_t(info.itemsize),
                                       "'" + std::string(info.format) + "'");
    a.view = {info.ptr, a.shape, a.strides, element, swapped};
    return a;
}

// The start of a DLPack tensor, as the DLPack ABI lays it out (dlpack.h): what __dlpack__()'s capsule,
// named "dltensor", points at. The capsule is left unconsumed: when it goes, it releases the tensor.
struct DLPackTensor {
    void* data;
    std::int32_t device_type, device_id;  // device_type 1: the CPU
    std::int32_t ndim;
    std::uint8_t code, bits;  // code 0: int, 1: uint, 2: float, 4: bfloat, 6: bool
    std::uint16_t lanes;
    const std::int64_t* shape;
    const std::int64_t* strides;  // in elements; null: C order
    std::uint64_t byte_offset;
};

Array from_dlpack(const py::handle& x) {
    const py::capsule capsule = x.attr("__dlpack__")();
    const auto* t = static_cast<const DLPackTensor*>(capsule.get_pointer());
    if (t->device_type != 1) throw std::invalid_argument("a tensor outside the CPU's memory");
    Array a{capsule, nullptr, {t->shape, t->shape + t->ndim}, {}, {}};
    if (t->strides) a.strides.assign(t->strides, t->strides + t->ndim);
    const char kind = t->lanes != 1 ? 0 : std::string("iuf?B?b")[std::min<std::size_t>(t->code, 6)];
    const Element element = element_of(kind, t->bits, "DLPack type code " + std::to_string(t->code));
    a.view = {static_cast<const char*>(t->data) + t->byte_offset, a.shape, a.strides, element};
    return a;
}

// Any array-like argument as a view: through the buffer protocol, DLPack or NumPy, the first that
// reads it; when none does, a ValueError naming the argument with the last one's reason (torch's
// "requires grad", an array of objects, …).
Array array_of(const py::handle& x, const std::string& who, const std::string& name) {
    std::string why;
    const auto read = [&](auto how) -> std::optional<Array> {
        try {
            return how();
        } catch (const py::error_already_set& e) {
            why = py::str(e.value());
        } catch (const std::exception& e) {
            why = e.what();
        }
        return std::nullopt;
    };
    std::optional<Array> a;
    if (PyObject_CheckBuffer(x.ptr())) a = read([&] { return from_buffer(x); });
    if (!a && py::hasattr(x, "__dlpack__")) a = read([&] { return from_dlpack(x); });
    if (!a) a = read([&] { return from_buffer(py::module_::import("numpy").attr("asarray")(x)); });
    if (!a) throw py::value_error(who + ": " + name + ": " + why);
    return std::move(*a);
}

// ---- the call: its operands by role, its options; its results out ---------------------------------

// A result handed to NumPy: the array owns the library's Matrix, nothing is copied; None for a result
// the call did not form (α on the fused backend).
py::object to_numpy(attn::Result& r) {
    if (r.shape.empty()) return py::none();
    auto* owner = new attn::Matrix(std::move(r.values));
    const py::capsule release(owner, [](void* p) { delete static_cast<attn::Matrix*>(p); });
    return py::array_t<float>(std::vector<py::ssize_t>(r.shape.begin(), r.shape.end()), owner->data(), release);
}

// One call of the library: `operands` maps a role (Q, K, V, X, mask, dO) to an array, `names` a role
// to what messages call it; a layer gives its weights. Returns every result by name.
py::dict call(const std::string& task, const std::string& who, const py::dict& operands, const py::dict& names,
              const attn::SingleHeadAttention* layer, const std::string& backend, const std::string& scale,
              std::optional<float> explicit_scale, bool causal, const std::string& dtype,
              const std::optional<std::string>& kv_dtype, std::optional<int> threads,
              std::optional<std::uint64_t> max_memory, const attn::KvCache* cache) {
    attn::Call c;
    c.task = attn::task_from_string(task);
    attn::OperandNames& n = c.options.names;
    const std::tuple<const char*, std::optional<attn::View>*, std::string*> roles[] = {
        {"Q", &c.Q, &n.Q}, {"K", &c.K, &n.K},          {"V", &c.V, &n.V},
        {"X", &c.X, &n.X}, {"mask", &c.mask, &n.mask}, {"dO", &c.dO, &n.dO}};
    std::vector<Array> arrays;
    arrays.reserve(std::size(roles));  // the views point into them
    for (const auto& [role, view, name] : roles) {
        if (names.contains(role)) *name = names[role].cast<std::string>();
        if (operands.contains(role)) *view = arrays.emplace_back(array_of(operands[role], who, *name)).view;
    }
    std::optional<attn::MatrixView> W_Q, W_K, W_V;  // a layer's weights, as views of the matrices it keeps
    if (layer) c.W_Q = W_Q.emplace(layer->W_Q()).view, c.W_K = W_K.emplace(layer->W_K()).view;
    if (layer) c.W_V = W_V.emplace(layer->W_V()).view;
    c.options.backend = attn::backend_from_string(backend);
    c.options.scale = attn::scale_from_string(scale), c.options.explicit_scale = explicit_scale;
    c.options.causal = causal, c.options.dtype = attn::dtype_from_string(dtype);
    if (kv_dtype) c.kv_dtype = attn::kv_dtype_from_string(*kv_dtype, "kv_dtype");
    c.options.threads = threads.value_or(attn::every_core());
    std::optional<attn::MemoryBudget> budget;
    if (max_memory) c.options.budget = &budget.emplace(*max_memory, "the max_memory limit");
    attn::Results r;
    {
        const py::gil_scoped_release unlocked;  // the arrays stay alive: `arrays` holds them
        if (cache) cache->run(c, r);            // its keys and values are the tokens it holds
        else attn::run(c, r);
    }
    return py::dict("output"_a = to_numpy(r.output), "weights"_a = to_numpy(r.weights), "Q"_a = to_numpy(r.Q),
                    "K"_a = to_numpy(r.K), "V"_a = to_numpy(r.V), "dQ"_a = to_numpy(r.dQ), "dK"_a = to_numpy(r.dK),
                    "dV"_a = to_numpy(r.dV), "dX"_a = to_numpy(r.dX), "dW_Q"_a = to_numpy(r.dW_Q),
                    "dW_K"_a = to_numpy(r.dW_K), "dW_V"_a = to_numpy(r.dW_V));
}

py::object parsed(const std::string& json) { return py::module_::import("json").attr("loads")(json); }

// What `attn walk --format json [--grad]` prints, parsed: the same function writes both.
py::object walk(const std::string& lang, const std::string& scale, bool causal, bool grad) {
    const attn::lesson::Lang l = lang == "zh" ? attn::lesson::Lang::zh : attn::lesson::Lang::en;
    const attn::AttentionOptions options{.causal = causal, .scale = attn::scale_from_string(scale)};
    const std::optional<attn::lesson::BackwardWalk> backward =
        grad ? std::optional(attn::lesson::backward_walk(options)) : std::nullopt;
    return parsed(attn::lesson::walk_json(attn::lesson::worked_example_walk(options), attn::lesson::example_tokens(l),
                                          l, backward ? &*backward : nullptr));
}

py::dict build_info() {
    const attn::BuildInfo b = attn::build_info();
    py::list kv_dtypes;  // what kv_dtype= takes
    for (const attn::KvDtype type : attn::all_kv_dtypes) kv_dtypes.append(attn::to_string(type));
    return py::dict("isa"_a = b.isa, "instruction_set"_a = b.instruction_set, "batch_width"_a = b.batch_width,
                    "compiled"_a = b.compiled, "supported"_a = b.supported, "openmp"_a = b.openmp,
                    "threads"_a = attn::every_core(), "cores"_a = b.cores, "last_team"_a = b.last_team, "cpu"_a = b.cpu,
                    "caches"_a = b.caches, "blocks"_a = b.blocks, "kv_dtypes"_a = kv_dtypes);
}

}  // namespace

PYBIND11_MODULE(_attention_cpp, m) {
    // The library's refusals (shapes, values, ranges, option names, the memory limit), from every call:
    // ValueError with the library's own message, the one attn prints after "attn: error: ".
    py::register_exception_translator([](std::exception_ptr refused) {
        try {
            if (refused) std::rethrow_exception(refused);
        } catch (const std::logic_error& e) {  // std::invalid_argument, std::length_error
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const std::overflow_error& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        }
    });
    m.doc() = "The library's one call, for python/attention_cpp.py: import attention_cpp instead.";
    m.def("call", &call, "task"_a, "who"_a, "operands"_a, "names"_a, "layer"_a, "backend"_a, "scale"_a,
          "explicit_scale"_a, "causal"_a, "dtype"_a, "kv_dtype"_a, "threads"_a, "max_memory"_a, "cache"_a);
    py::class_<attn::SingleHeadAttention>(m, "Layer").def(py::init([](py::object W_Q, py::object W_K, py::object W_V) {
        const std::string who = "SingleHeadAttention";
        const Array q = array_of(W_Q, who, "W_Q"), k = array_of(W_K, who, "W_K"), v = array_of(W_V, who, "W_V");
        return attn::SingleHeadAttention(attn::to_matrix(q.view), attn::to_matrix(k.view), attn::to_matrix(v.view));
    }));
    py::class_<attn::KvCache>(m, "KvCache")
        .def(py::init([](std::size_t batch, std::size_t kv_heads, std::size_t capacity, std::size_t E, std::size_t E_v,
                         const std::string& dtype) {
            return attn::KvCache(batch, kv_heads, capacity, E, E_v, attn::kv_dtype_from_string(dtype, "dtype"));
        }))
        .def("append",
             [](attn::KvCache& cache, py::object k, py::object v) {
                 const Array keys = array_of(k, "KvCache.append", "k"), values = array_of(v, "KvCache.append", "v");
                 cache.append(keys.view, values.view, "k", "v");
             })
        .def_property_readonly("size", &attn::KvCache::size)
        .def_property_readonly("capacity", &attn::KvCache::capacity);
    m.def("shape", [](py::object x, const std::string& who, const std::string& name) {
        return py::tuple(py::cast(array_of(x, who, name).shape));
    });
    m.def("read_address", [](py::object x) {
        const Array a = array_of(x, "_read_address", "A");
        return attn::read_in_place(a.view) ? std::uintptr_t(a.view.data) : std::uintptr_t(0);
    });
    m.def("walk", &walk);
    m.def("learn_defaults", [] { return parsed(attn::lesson::learn_defaults_json()); });
    m.def("build_info", &build_info);
}
