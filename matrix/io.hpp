// matrix/io.hpp — reading matrices from .npy and .csv files and writing .npy, refusing bad input.
//
// Every problem is reported as InputError with a message that starts with the file's name and says
// what is wrong and where: "x.csv: line 4 has 3 values, line 1 has 4". Sizes are checked against
// a memory limit before anything is allocated.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "matrix/matrix.hpp"

namespace attn {

struct InputError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct ReadOptions {
    std::uint64_t max_bytes = std::uint64_t{8} << 30;  // refuse a matrix that would need more (8 GiB)
    bool csv_header = false;                            // a CSV's first line is a header to skip
};

// By extension: .npy (NumPy format 1.0 or 2.0, dtype <f4 or <f8, 2-D, C order) or .csv (one row per
// line, values separated by commas). Values must be finite.
Matrix read_matrix(const std::string& path, const ReadOptions& options = {});

// The same readers on bytes already in memory; `name` is used in messages (and by the fuzzers).
Matrix parse_npy(std::string_view bytes, const std::string& name, const ReadOptions& options = {});
Matrix parse_csv(std::string_view text, const std::string& name, const ReadOptions& options = {});

// A matrix as a .npy file: format 1.0, little-endian float32, C order.
std::string npy_bytes(const Matrix& m);

// Writes every (path, matrix) as .npy. Each goes to a temporary file beside its target first; only
// when all were written are they renamed into place, so a failure leaves no partial or new file.
void write_npy_files(const std::vector<std::pair<std::string, const Matrix*>>& files);

}  // namespace attn
