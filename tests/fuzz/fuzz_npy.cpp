// libFuzzer target: any bytes given to the .npy reader either parse into a matrix that writes back
// to the same values, or are refused with InputError. Anything else (a crash, a sanitizer report,
// another exception, a hang) is a bug. Run with scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "io/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    attn::ReadOptions options;
    options.max_bytes = std::uint64_t{64} << 20;  // keep a hostile shape from allocating gigabytes
    try {
        const attn::Matrix m =
            attn::parse_npy(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.npy", options);
        if (!(attn::parse_npy(attn::npy_bytes(m), "again.npy", options) == m)) std::abort();  // round trip
    } catch (const attn::InputError&) {}
    return 0;
}
