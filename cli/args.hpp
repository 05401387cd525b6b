// cli/args.hpp — the few pieces of argument parsing every subcommand shares.
#pragma once

#include <set>
#include <span>
#include <stdexcept>
#include <string>

#include "attention/attention.hpp"
#include "cli/text.hpp"

namespace attn::cli {

// Bad command line: main prints "attn: error: <what>" and exits 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// For "--name value" and "--name=value": when args[i] is this option, stores its value in `value`,
// advances i past it and returns true. Throws UsageError naming `command` when the value is missing.
inline bool option_value(std::span<const std::string> args, std::size_t& i, const std::string& name, std::string& value,
                         const std::string& command) {
    const std::string& arg = args[i];
    if (arg.starts_with(name + "=")) {
        value = arg.substr(name.size() + 1);
        return true;
    }
    if (arg != name) return false;
    if (i + 1 >= args.size()) throw UsageError(command + ": " + name + " needs a value");
    value = args[++i];
    return true;
}

// Called with each argument at the top of a parsing loop (after an option's value was consumed, the
// next argument is again an option): refuses an option given twice, since silently taking the last
// one hides a typo. Arguments that do not start with "--" are not options and pass.
void reject_repeated(std::set<std::string>& seen, const std::string& arg, const std::string& command);

// Option values shared by the subcommands, read by the library's readers of its option names
// (attention/options.hpp); `command` names the subcommand in the error message.
Scale parse_scale(const std::string& value, const std::string& command);       // sqrt | dk | none
Backend parse_backend(const std::string& value, const std::string& command);   // naive | simd | parallel | fused
Dtype parse_dtype(const std::string& value, const std::string& command);       // f32 | bf16
KvDtype parse_kv_dtype(const std::string& value, const std::string& command);  // f32 | bf16 | f16
int parse_precision(const std::string& value, const std::string& command);     // 0 … 8
Lang parse_lang(const std::string& value, const std::string& command);         // en | zh

}  // namespace attn::cli
