// io/io.hpp — reading matrices from .npy and .csv files and writing .npy, refusing bad input.
// A room of its own: file formats are not the Matrix (matrix/), and the Matrix does not need them.
//
// Every problem is reported as InputError with a message that starts with the file's name and says
// what is wrong and where: "x.csv: line 4 has 3 values, line 1 has 4". Sizes are checked against
// a memory limit before anything is allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
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

// A value that cannot be an input: not a number, beyond float32, infinite or NaN (and, in a typed
// cell, parse_cells: nothing at all, or a decimal comma). Besides the message, it says where the
// value is (1-based row and column of the matrix) and what is wrong, for a caller that shows the
// cell itself: the pages' editable example marks it and words the problem in the page's language.
struct CellError : InputError {
    enum class Problem { not_a_number, beyond_float32, infinite, nan, empty, decimal_comma };
    CellError(const std::string& message, std::string file, std::size_t row, std::size_t column, Problem problem,
              std::string text)
        : InputError(message),
          file(std::move(file)),
          row(row),
          column(column),
          problem(problem),
          text(std::move(text)) {}
    std::string file;         // the name the reader was given ("X" in the pages, a path from attn run)
    std::size_t row, column;  // of the matrix, from 1
    Problem problem;
    std::string text;  // the value as written (at most 40 bytes of it; empty for .npy)
};
// "not_a_number", "beyond_float32", "infinite", "nan", "empty", "decimal_comma"
std::string to_string(CellError::Problem problem);

// `text` with every control character (NUL, ESC, CR, a newline, DEL) written as \xNN: how a message
// quotes bytes from a file or a path, so that it stays one line, cannot rewrite a terminal, and is
// not cut short where it is read as a C string (std::exception::what) at a NUL.
std::string printable(std::string_view text);

struct ReadOptions {
    std::uint64_t max_bytes = std::uint64_t{8} << 30;  // the limit: refuse a matrix that would need more (8 GiB)
    std::uint64_t taken = 0;      // of the limit, what was taken before this read (attn run's earlier files)
    bool csv_header = false;      // a CSV's first line is a header to skip
    bool minus_infinity = false;  // −∞ is a value (an additive mask's "never"); +∞ is not
};

// An array's dimensions, outermost first, as NumPy's `shape`: {} for a scalar, {H, L, E} for heads.
using Shape = std::vector<std::size_t>;  // written as matrix/matrix.hpp's shape_string writes any shape

// A .npy file's array, of any rank, in C order. Float files ('<f4', '<f8') fill `values`: a Matrix
// of (every dimension but the last, multiplied) rows × (the last dimension) columns, which is the C
// order itself: a 2-D array is its matrix, and head h of an (H, L, E) array is rows h·L to h·L + L − 1
// (a scalar is 1×1). A boolean file ('|b1') fills `truth` instead, one bool per element, and leaves
// `values` empty.
struct Array {
    Shape shape;
    Matrix values;
    std::unique_ptr<bool[]> truth;
    bool boolean() const { return truth != nullptr; }
};

// By extension: .npy (NumPy format 1.0 or 2.0, dtype <f4, <f8 or |b1, any rank, C order) or .csv (one
// row per line, values separated by commas: a 2-D float array). Values must be finite and fit
// float32. Only regular files are read: a directory, FIFO or device is refused before it is opened.
Array read_array(const std::string& path, const ReadOptions& options = {});
// The same, refusing anything but a 2-D float array ("q.npy: 3-D array; a matrix must be 2-D").
Matrix read_matrix(const std::string& path, const ReadOptions& options = {});

// The same readers on bytes already in memory; `name` is used in messages (and by the fuzzers).
Array parse_npy_array(std::string_view bytes, const std::string& name, const ReadOptions& options = {});
Matrix parse_npy(std::string_view bytes, const std::string& name, const ReadOptions& options = {});
Matrix parse_csv(std::string_view text, const std::string& name, const ReadOptions& options = {});

// A matrix from cells as a person typed them, one string per cell (the pages' editable example).
// Each cell is read as one value of a .csv file is, once the forms a keyboard or a page gives a
// number besides ASCII are taken as ASCII: full-width digits, signs and points (１.５, －２, and the
// full-width comma) and the minus signs of typography (−, U+2212, and its kin). Refused as a .csv
// value is, and also a cell with nothing in it (Problem::empty) or with a comma where a decimal point
// belongs ("1,5": Problem::decimal_comma); rows of unequal length, or none, with InputError.
Matrix parse_cells(const std::vector<std::vector<std::string>>& cells, const std::string& name,
                   const ReadOptions& options = {});

// Float values under a shape as a .npy file: format 1.0, little-endian float32, C order. npy_header
// is the part before the data.
std::string npy_header(const Shape& shape);
std::string npy_bytes(const Matrix& m, const Shape& shape);
std::string npy_bytes(const Matrix& m);  // its own 2-D shape

// One file for write_npy_files: `values` read under `shape` (the matrix's own 2-D shape when none is
// given; the counts must agree, else std::invalid_argument), or null values: remove the file.
struct NpyOutput {
    NpyOutput(std::string path, const Matrix* values);
    NpyOutput(std::string path, const Matrix* values, Shape shape);
    std::string path;
    const Matrix* values;
    Shape shape;
};

// Writes every file as .npy, all or nothing (io/files.cpp); null values mean "remove this file if
// it exists", in the same all-or-nothing step:
//  - each directory is opened once, and everything below happens relative to that descriptor, so a
//    directory renamed or swapped for a symlink meanwhile is never written through;
//  - one writer at a time per directory (an flock on the directory, held to the last rename), so a
//    directory never holds one call's output beside another's;
//  - each goes first to a fresh temporary beside its target, ".<name>.tmp-XXXXXX", created with
//    O_CREAT|O_EXCL (never an existing file, never through a planted symlink), written, fsync'ed;
//  - only when all are written are they renamed into place, each over its target in one atomic
//    step (a reader sees the old file or the new one, never none), also where the filesystem cannot
//    swap two names; a replaced file keeps its permissions;
//  - if a rename fails, the targets already replaced or removed get their old contents back (kept
//    under a second name until the end: the swapped temporary, a hard link or a copy), or are
//    removed if they are new;
//  - a target that exists and is not a regular file (a directory, say) is refused before anything
//    is written.
// On failure InputError names the file; no temporary is left behind.
void write_npy_files(const std::vector<NpyOutput>& files);

// Installs handlers for SIGINT, SIGQUIT, SIGTERM and SIGHUP that delete the temporaries of a write
// in progress, then let the signal end the process as it would have; a signal ignored at start
// (`nohup`) stays ignored. SIGXFSZ is ignored, so a write past `ulimit -f` fails as a write error
// (the temporaries removed) instead of killing the process. For programs (cli/main.cpp); a library
// leaves signals alone unless asked.
void remove_temporaries_on_signals();

}  // namespace attn
