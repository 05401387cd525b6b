// io/checks.hpp — what the readers in io/ share: one way to fail, the size check, the finite check.
// Internal to io/: the public interface is io/io.hpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "io/io.hpp"
#include "matrix/size.hpp"

namespace attn::io_checks {

// Every message of the readers and the writer: the file, then what is wrong, control characters
// (from the file's bytes or its name) escaped.
[[noreturn]] inline void fail(const std::string& name, const std::string& what) {
    throw InputError(printable(name + ": " + what));
}

// rows × cols floats, refused when the count overflows or would need more than the limit.
inline void check_size(const std::string& name, std::uint64_t rows, std::uint64_t cols, const ReadOptions& options) {
    const std::string shape = "shape (" + std::to_string(rows) + ", " + std::to_string(cols) + ")";
    std::uint64_t bytes = 0;
    try {
        bytes = matrix_bytes(rows, cols);
    } catch (const std::length_error&) {
        fail(name, shape + " is too large to count");
    }
    if (bytes > options.max_bytes)
        fail(name, shape + " needs " + describe_bytes(bytes) + ", more than the --max-memory limit of " +
                       describe_bytes(options.max_bytes));
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

// The readers of files, by format (io/npy.cpp, io/csv.cpp); io/files.cpp picks one by extension.
Matrix read_npy_file(const std::string& path, const ReadOptions& options);
Matrix read_csv_file(const std::string& path, const ReadOptions& options);

}  // namespace attn::io_checks
