// cli/args.cpp — reading options: values, numbers, languages, and refusing an option given twice.
#include "cli/args.hpp"

namespace attn::cli {

void reject_repeated(std::set<std::string>& seen, const std::string& arg, const std::string& command) {
    if (!arg.starts_with("--")) return;
    const std::string name = arg.substr(0, arg.find('='));
    if (!seen.insert(name).second) throw UsageError(command + ": " + name + " is given more than once");
}

namespace {

// An option's value read by the library's own reader of its names (attention/options.cpp), its
// refusal told as a usage error of `command`.
template <class Read>
auto read_option(Read read, const std::string& value, const std::string& flag, const std::string& command) {
    try {
        return read(value, flag);
    } catch (const std::invalid_argument& e) {
        throw UsageError(command + ": " + e.what());
    }
}

}  // namespace

Scale parse_scale(const std::string& v, const std::string& command) {
    return read_option(scale_from_string, v, "--scale", command);
}

Backend parse_backend(const std::string& v, const std::string& command) {
    return read_option(backend_from_string, v, "--backend", command);
}

Dtype parse_dtype(const std::string& v, const std::string& command) {
    return read_option(dtype_from_string, v, "--dtype", command);
}

KvDtype parse_kv_dtype(const std::string& v, const std::string& command) {
    return read_option(kv_dtype_from_string, v, "--kv-dtype", command);
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
