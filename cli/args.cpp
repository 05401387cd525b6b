// cli/args.cpp — reading options: values, numbers, languages, and refusing an option given twice.
#include "cli/args.hpp"

namespace attn::cli {

void reject_repeated(std::set<std::string>& seen, const std::string& arg, const std::string& command) {
    if (!arg.starts_with("--")) return;
    const std::string name = arg.substr(0, arg.find('='));
    if (!seen.insert(name).second) throw UsageError(command + ": " + name + " is given more than once");
}

Scale parse_scale(const std::string& v, const std::string& command) {
    for (Scale s : {Scale::sqrt_dk, Scale::dk, Scale::none})
        if (v == to_string(s)) return s;
    throw UsageError(command + ": --scale must be sqrt, dk or none, got '" + v + "'");
}

Backend parse_backend(const std::string& v, const std::string& command) {
    for (Backend b : {Backend::naive, Backend::simd, Backend::parallel, Backend::fused})
        if (v == to_string(b)) return b;
    throw UsageError(command + ": --backend must be naive, simd, parallel or fused, got '" + v + "'");
}

Dtype parse_dtype(const std::string& v, const std::string& command) {
    for (Dtype d : {Dtype::f32, Dtype::bf16})
        if (v == to_string(d)) return d;
    throw UsageError(command + ": --dtype must be f32 or bf16, got '" + v + "'");
}

KvDtype parse_kv_dtype(const std::string& v, const std::string& command) {
    for (KvDtype d : {KvDtype::f32, KvDtype::bf16, KvDtype::f16})
        if (v == to_string(d)) return d;
    throw UsageError(command + ": --kv-dtype must be f32, bf16 or f16, got '" + v + "'");
}

Lang parse_lang(const std::string& v, const std::string& command) {
    if (v != "en" && v != "zh") throw UsageError(command + ": --lang must be en or zh, got '" + v + "'");
    return v == "zh" ? Lang::zh : Lang::en;
}

int parse_precision(const std::string& v, const std::string& command) {
    if (v.size() != 1 || v[0] < '0' || v[0] > '8')
        throw UsageError(command + ": --precision must be a whole number from 0 to 8, got '" + v + "'");
    return v[0] - '0';
}

}  // namespace attn::cli
