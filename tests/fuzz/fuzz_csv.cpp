// libFuzzer target for the CSV reader, with and without --csv-header: parse or refuse with
// InputError, nothing else. Run with scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "io/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    attn::ReadOptions options;
    options.max_bytes = std::uint64_t{64} << 20;
    options.csv_header = (data[0] & 1) != 0;  // the first byte also picks the header option
    try {
        attn::parse_csv(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1), "fuzz.csv", options);
    } catch (const attn::InputError&) {}
    return 0;
}
