// attention/options.cpp — the names of the options, both ways: to_string, and X_from_string, which
// refuses an unknown name with the list of the known ones. Every front end (attn, the Python module,
// the WebAssembly page) reads its options through these, so a name means the same everywhere.
#include <span>
#include <stdexcept>
#include <string>

#include "attention/call.hpp"
#include "attention/options.hpp"

namespace attn {

namespace {

// The option of `choices` named `name`; else std::invalid_argument listing them all, under the name
// the caller gives the option.
template <class Option>
Option named(const std::string& name, const std::string& option, std::span<const Option> choices) {
    std::string known;
    for (std::size_t k = 0; k < choices.size(); ++k) {
        if (to_string(choices[k]) == name) return choices[k];
        known += (k == 0 ? "" : k + 1 == choices.size() ? " and " : ", ") + to_string(choices[k]);
    }
    throw std::invalid_argument(option + " must be one of " + known + ", got '" + name + "'");
}

}  // namespace

std::string to_string(Scale scale) {
    switch (scale) {
        case Scale::sqrt_dk: return "sqrt";
        case Scale::dk: return "dk";
        case Scale::none: return "none";
    }
    return "?";
}

std::string to_string(Backend backend) {
    switch (backend) {
        case Backend::naive: return "naive";
        case Backend::simd: return "simd";
        case Backend::parallel: return "parallel";
        case Backend::fused: return "fused";
    }
    return "?";
}

std::string to_string(Dtype dtype) { return dtype == Dtype::bf16 ? "bf16" : "f32"; }

std::string to_string(KvDtype type) {
    switch (type) {
        case KvDtype::f32: return "f32";
        case KvDtype::bf16: return "bf16";
        case KvDtype::f16: return "f16";
    }
    return "?";
}

std::string to_string(Task task) {
    switch (task) {
        case Task::forward: return "forward";
        case Task::forward_backward: return "forward_backward";
        case Task::backward: return "backward";
        case Task::project: return "project";
    }
    return "?";
}

Scale scale_from_string(const std::string& name, const std::string& option) {
    return named<Scale>(name, option, all_scales);
}

Backend backend_from_string(const std::string& name, const std::string& option) {
    return named<Backend>(name, option, all_backends);
}

Dtype dtype_from_string(const std::string& name, const std::string& option) {
    return named<Dtype>(name, option, all_dtypes);
}

KvDtype kv_dtype_from_string(const std::string& name, const std::string& option) {
    return named<KvDtype>(name, option, all_kv_dtypes);
}

Task task_from_string(const std::string& name, const std::string& option) {
    return named<Task>(name, option, all_tasks);
}

}  // namespace attn
