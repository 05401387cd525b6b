// io/checks.hpp — what the readers in io/ share: one way to fail, the size check, the finite check.
// Internal to io/: the public interface is io/io.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/io.hpp"
#include "matrix/size.hpp"

namespace attn::io_checks {

// Every message of the readers and the writer: the file, then what is wrong, control characters
// (from the file's bytes or its name) escaped.
[[noreturn]] inline void fail(const std::string& name, const std::string& what) {
    throw InputError(printable(name + ": " + what));
}

// Reading `what` needs `bytes`: refused when they do not fit in what is left of the limit, naming the
// limit as given and what the reading would need on top of what was taken already.
inline void check_limit(const std::string& name, const std::string& what, std::uint64_t bytes,
                        const ReadOptions& options) {
    if (bytes <= options.max_bytes - std::min(options.taken, options.max_bytes)) return;
    fail(name, what + " needs " + describe_bytes(bytes) +
                   (options.taken ? " on top of " + describe_bytes(options.taken) + " already taken" : "") +
                   ", more than the --max-memory limit of " + describe_bytes(options.max_bytes));
}

// An array of these dimensions with `item_bytes` bytes per value in memory, refused when the count
// overflows (or does not fit a size_t) or would need more than the limit. Returns the count.
inline std::uint64_t check_size(const std::string& name, const std::vector<std::uint64_t>& dims,
                                std::uint64_t item_bytes, const ReadOptions& options) {
    std::string text;
    for (const std::uint64_t d : dims) text += (text.empty() ? "" : ", ") + std::to_string(d);
    text = "shape (" + text + (dims.size() == 1 ? ",)" : ")");
    std::uint64_t count = 1, bytes = 0;
    try {
        for (const std::uint64_t d : dims) {
            count = checked_product(count, d, name);
            if (std::uint64_t(std::size_t(count)) != count || std::uint64_t(std::size_t(d)) != d)
                throw std::length_error(name);  // past a 32-bit size_t
        }
        bytes = checked_product(count, item_bytes, name);
    } catch (const std::length_error&) {
        fail(name, text + " is too large to count");
    }
    check_limit(name, text, bytes, options);
    return count;
}
inline void check_size(const std::string& name, std::uint64_t rows, std::uint64_t cols, const ReadOptions& options) {
    check_size(name, {rows, cols}, sizeof(float), options);
}

// A refused value at (row, col), counted from 0: CellError with the message "<name>: <what>".
[[noreturn]] inline void fail_cell(const std::string& name, const std::string& what, std::size_t row, std::size_t col,
                                   CellError::Problem problem, const std::string& text = "") {
    throw CellError(printable(name + ": " + what), name, row + 1, col + 1, problem, text);
}

inline void check_finite(const std::string& name, float value, std::size_t row, std::size_t col) {
    if (!std::isfinite(value))
        fail_cell(name,
                  std::string(std::isnan(value) ? "NaN" : "an infinite value") + " at row " + std::to_string(row + 1) +
                      ", column " + std::to_string(col + 1),
                  row, col, std::isnan(value) ? CellError::Problem::nan : CellError::Problem::infinite);
}

// A 2-D float array's matrix; anything else refused, naming the file.
Matrix matrix_of(Array a, const std::string& name);

// The readers of files, by format (io/npy.cpp, io/csv.cpp); io/files.cpp picks one by extension.
Array read_npy_file(const std::string& path, const ReadOptions& options);
Matrix read_csv_file(const std::string& path, const ReadOptions& options);

}  // namespace attn::io_checks
