// Reading and writing matrices: NumPy's own files, round trips, and every way a file can be wrong.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <tuple>

#include "io/io.hpp"
#include "matrix/random.hpp"

using attn::random_matrix;

using attn::Matrix;
using Catch::Contains;

namespace {

const std::string data_dir = std::string(TESTS_DIR) + "/data/";

// value(i, j) = (i·cols + j)/8 − 1, as tests/data/make_fixtures.py wrote it.
void check_grid(const Matrix& m, std::size_t rows, std::size_t cols) {
    REQUIRE(m.rows() == rows);
    REQUIRE(m.cols() == cols);
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) CHECK(m(i, j) == float(i * cols + j) / 8.0f - 1.0f);
}

// A .npy file's bytes with the header given literally (format 1.0) and `data_bytes` bytes of data.
std::string npy_with_header(const std::string& header, std::size_t data_bytes) {
    std::string h = header + "\n";
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(h.size() & 0xFF);
    out += static_cast<char>(h.size() >> 8);
    return out + h + std::string(data_bytes, '\0');
}

// The InputError a reader raises on these bytes (named t.npy or t.csv), or "(no error)".
std::string reader_error(bool csv, const std::string& bytes, const attn::ReadOptions& options) {
    try {
        if (csv) attn::parse_csv(bytes, "t.csv", options);
        else attn::parse_npy(bytes, "t.npy", options);
    } catch (const attn::InputError& e) {
        return e.what();
    }
    return "(no error)";
}
std::string error_of(const std::string& bytes, const attn::ReadOptions& options = {}) {
    return reader_error(false, bytes, options);
}
std::string csv_error_of(const std::string& text, const attn::ReadOptions& options = {}) {
    return reader_error(true, text, options);
}

}  // namespace

TEST_CASE("files written by NumPy read correctly: float32, float64, format 1.0 and 2.0", "[io][npy]") {
    check_grid(attn::read_matrix(data_dir + "numpy_f4_v1.npy"), 3, 4);
    check_grid(attn::read_matrix(data_dir + "numpy_f8_v1.npy"), 2, 5);
    check_grid(attn::read_matrix(data_dir + "numpy_f4_v2.npy"), 4, 3);
    check_grid(attn::read_matrix(data_dir + "numpy_empty_rows.npy"), 0, 3);
}

TEST_CASE("arrays written by the project read back bit-exact", "[io][npy]") {
    std::mt19937 rng(31);
    Matrix m = random_matrix(7, 5, rng, -1e6f, 1e6f);
    m(0, 0) = -0.0f;
    m(1, 1) = std::numeric_limits<float>::denorm_min();
    m(2, 2) = std::numeric_limits<float>::max();
    CHECK(attn::parse_npy(attn::npy_bytes(m), "m.npy") == m);
    CHECK(attn::npy_bytes(m).size() % 64 == 7 * 5 * 4 % 64);  // header padded to 64 bytes

    const auto dir = std::filesystem::temp_directory_path() / ("attn-io-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const Matrix n = random_matrix(3, 9, rng);
    attn::write_npy_files({{(dir / "m.npy").string(), &m}, {(dir / "n.npy").string(), &n}});
    CHECK(attn::read_matrix((dir / "m.npy").string()) == m);
    CHECK(attn::read_matrix((dir / "n.npy").string()) == n);
    CHECK(std::distance(std::filesystem::directory_iterator(dir), {}) == 2);  // no temporaries left
    std::filesystem::remove_all(dir);
}

TEST_CASE("a failed write leaves no file behind", "[io][npy]") {
    const Matrix m(2, 2, 1.0f);
    const auto dir = std::filesystem::temp_directory_path() / ("attn-io-fail-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string good = (dir / "good.npy").string(), bad = (dir / "missing-dir" / "bad.npy").string();
    CHECK_THROWS_WITH(attn::write_npy_files({{good, &m}, {bad, &m}}), Contains("bad.npy: cannot write"));
    CHECK(std::filesystem::is_empty(dir));
    std::filesystem::remove_all(dir);
}

TEST_CASE("bad .npy files are refused with the file and the reason", "[io][npy][errors]") {
    const std::string ok_header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    CHECK(error_of(npy_with_header(ok_header, 24)) == "(no error)");
    CHECK_THAT(error_of(""), Contains("t.npy: empty file"));
    CHECK_THAT(error_of("PK\x03\x04 not numpy at all"), Contains("not a .npy file"));
    std::string v3 = npy_with_header(ok_header, 24);
    v3[6] = 3;
    CHECK_THAT(error_of(v3), Contains("format version 3.0 is not supported"));
    CHECK_THAT(error_of(std::string("\x93NUMPY\x01\x00\x10", 9)), Contains("ends inside the header length"));
    CHECK_THAT(error_of(std::string("\x93NUMPY\x01\x00\xff\xff", 10)), Contains("header of 65535 bytes is larger"));
    CHECK_THAT(error_of(std::string("\x93NUMPY\x01\x00\x40\x00{'descr'", 18)), Contains("ends inside the header"));
    // header text, data bytes, what the error must say
    const std::tuple<std::string, std::size_t, std::string> bad_headers[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", 24, "malformed header"},
        {"{'descr': '<f4', 'shape': (2, 3), }", 24, "needs the keys"},
        {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 3), }", 24, "fortran_order must be True or False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", 24, "shape must be a tuple of whole numbers"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", 24, "dtype '<i4' is not supported"},
        {"{'descr': '>f8', 'fortran_order': False, 'shape': (2, 3), }", 48, "big-endian"},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24, "Fortran"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", 24, "1-D array; a matrix must be 2-D"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 3), }", 24, "3-D array"},
    };
    for (const auto& [header, data_bytes, message] : bad_headers) {
        INFO(header);
        CHECK_THAT(error_of(npy_with_header(header, data_bytes)), Contains(message));
    }
    CHECK_THAT(error_of(npy_with_header(ok_header, 20)),
               Contains("shorter than the header says: 24 bytes expected, 20 found"));
    CHECK_THAT(error_of(npy_with_header(ok_header, 28)), Contains("longer than the header says"));
}

TEST_CASE("shapes that overflow or exceed --max-memory are refused before allocating", "[io][npy][errors]") {
    CHECK_THAT(
        error_of(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 0)),
        Contains("too large to count"));
    CHECK_THAT(error_of(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }", 0)),
               Contains("needs 37 GiB, more than the --max-memory limit of 8 GiB"));
    attn::ReadOptions small;
    small.max_bytes = 1000;
    CHECK_THAT(error_of(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (20, 20), }", 1600), small),
               Contains("needs 1 KiB, more than the --max-memory limit of 1000 bytes"));
    CHECK_THAT(csv_error_of("1,2,3\n4,5,6\n", small), Contains("(no error)"));
    small.max_bytes = 16;
    CHECK_THAT(csv_error_of("1,2,3\n4,5,6\n", small), Contains("more than the --max-memory limit"));
}

TEST_CASE("NaN and infinities in an input are refused with row and column", "[io][errors]") {
    Matrix m(2, 3, 1.0f);
    m(1, 2) = std::numeric_limits<float>::quiet_NaN();
    CHECK_THAT(error_of(attn::npy_bytes(m)), Contains("t.npy: NaN at row 2, column 3"));
    m(1, 2) = -std::numeric_limits<float>::infinity();
    CHECK_THAT(error_of(attn::npy_bytes(m)), Contains("an infinite value at row 2, column 3"));
    CHECK_THAT(csv_error_of("1,2\n3,inf\n"), Contains("infinite value at row 2, column 2"));
    CHECK_THAT(csv_error_of("nan,2\n"), Contains("NaN at row 1, column 1"));
}

TEST_CASE("CSV files: numbers, spaces, CRLF, header, and what is refused", "[io][csv]") {
    const Matrix m = attn::parse_csv("1, 2.5 ,-3e-2\r\n+4,5,6\n", "t.csv");
    CHECK(m == Matrix{{1.0f, 2.5f, -0.03f}, {4.0f, 5.0f, 6.0f}});
    attn::ReadOptions with_header;
    with_header.csv_header = true;
    CHECK(attn::parse_csv("a,b\n1,2\n", "t.csv", with_header) == Matrix{{1.0f, 2.0f}});
    CHECK_THAT(csv_error_of("a,b\n1,2\n"),
               Contains("line 1 is not numeric ('a'); if it is a header, pass --csv-header"));
    CHECK_THAT(csv_error_of("a,b\n", with_header), Contains("no data rows after the header"));
    CHECK_THAT(csv_error_of(""), Contains("t.csv: empty file"));
    CHECK_THAT(csv_error_of("1,2,3\n4,5,6\n7,8\n"), Contains("line 3 has 2 values, line 1 has 3"));
    CHECK_THAT(csv_error_of("1,2\n3,x\n"), Contains("line 2, value 2 is not a number: 'x'"));
    CHECK_THAT(csv_error_of("1,2\n\n3,4\n"), Contains("line 2 is empty"));
    CHECK_THAT(csv_error_of("1,,2\n"), Contains("value 2 is not a number"));
}

TEST_CASE("read_matrix names missing files and unknown extensions", "[io][errors]") {
    CHECK_THROWS_WITH(attn::read_matrix("/nonexistent/q.npy"), Contains("/nonexistent/q.npy: cannot open"));
    CHECK_THROWS_WITH(attn::read_matrix("/nonexistent/q.csv"), Contains("/nonexistent/q.csv: cannot open"));
    CHECK_THROWS_WITH(attn::read_matrix("q.txt"), Contains("q.txt: unknown file type; use .npy or .csv"));
}
