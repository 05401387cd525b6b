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

// A .npy file's bytes with the header given literally (format 1.0), then `data`.
std::string npy_with_data(const std::string& header, const std::string& data) {
    std::string h = header + "\n";
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(h.size() & 0xFF);
    out += static_cast<char>(h.size() >> 8);
    return out + h + data;
}
// The same with `data_bytes` zero bytes of data.
std::string npy_with_header(const std::string& header, std::size_t data_bytes) {
    return npy_with_data(header, std::string(data_bytes, '\0'));
}

// The bytes of these values as NumPy stores them: float32 or float64, little-endian.
template <class T>
std::string raw_bytes(const std::vector<T>& values) {
    return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)};
}

std::string header_of(const std::string& descr, const std::string& shape) {
    return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
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
// The InputError of the N-D reader on these bytes (named m.npy), or "(no error)".
std::string array_error(const std::string& bytes, const attn::ReadOptions& options = {}) {
    try {
        attn::parse_npy_array(bytes, "m.npy", options);
    } catch (const attn::InputError& e) {
        return e.what();
    }
    return "(no error)";
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

// A header is a claim; the file's length is the fact. A claim of 2⁴² floats (16 TiB) over 24 bytes of
// data, with no memory limit, is refused as short before anything is allocated: allocating first
// would throw std::bad_alloc here (or, for a claim that does fit in memory, take and touch all of it
// before the refusal), so a crafted file could make a reader take whatever the limit allows.
TEST_CASE("a .npy header's shape is checked against the file's length before anything is allocated",
          "[io][npy][errors][limits]") {
    const std::string claim = npy_with_header(header_of("<f4", "(2097152, 2097152)"), 24);
    attn::ReadOptions unlimited;
    unlimited.max_bytes = std::numeric_limits<std::uint64_t>::max();
    const std::string short_data = "shorter than the header says: 17592186044416 bytes expected, 24 found";
    CHECK_THAT(array_error(claim, unlimited), Contains("m.npy: the data is " + short_data));
    const auto dir = std::filesystem::temp_directory_path() / ("attn-io-claim-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "claim.npy").string();
    std::ofstream(path, std::ios::binary) << claim;
    CHECK_THROWS_WITH(attn::read_array(path, unlimited), Contains(short_data));
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
               Contains("needs 37.25 GiB, more than the --max-memory limit of 8 GiB"));
    attn::ReadOptions small;
    small.max_bytes = 1000;
    CHECK_THAT(error_of(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (20, 20), }", 1600), small),
               Contains("needs 1.56 KiB, more than the --max-memory limit of 1000 bytes"));
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

TEST_CASE("typed cells: read as CSV values once full-width forms and typographic minus signs are ASCII",
          "[io][cells]") {
    const Matrix m = attn::parse_cells({{" 1.5", "−0.2", "－0.2"}, {"１．５", "2e3", "‐7"}}, "X");
    CHECK(m == Matrix{{1.5f, -0.2f, -0.2f}, {1.5f, 2000.0f, -7.0f}});
    // where each refused cell is, what is wrong with it, and the cell as typed
    const auto refused = [](const std::string& typed) {
        try {
            attn::parse_cells({{"0", "0"}, {"0", typed}}, "W_Q");
        } catch (const attn::CellError& e) {
            CHECK((e.file == "W_Q" && e.row == 2 && e.column == 2));
            return attn::to_string(e.problem) + " " + e.text + ": " + e.what();
        }
        return std::string("accepted");
    };
    CHECK(refused("") == "empty : W_Q: row 2, column 2 is empty");
    CHECK(refused("   ") == "empty : W_Q: row 2, column 2 is empty");
    CHECK_THAT(refused("1,5"), Contains("decimal_comma 1,5: W_Q: row 2, column 2 ('1,5') is not a number: a comma"));
    CHECK_THAT(refused("1，5"), Contains("decimal_comma 1，5:"));
    CHECK(refused("abc") == "not_a_number abc: W_Q: row 2, column 2 ('abc') is not a number");
    CHECK_THAT(refused("1e40"), Contains("beyond_float32 1e40: W_Q: row 2, column 2 ('1e40') is outside the range"));
    CHECK(refused("−inf") == "infinite −inf: W_Q: row 2, column 2 ('−inf') is infinite");
    CHECK(refused("nan") == "nan nan: W_Q: row 2, column 2 ('nan') is NaN");
    CHECK_THROWS_WITH(attn::parse_cells({{"1", "2"}, {"3"}}, "X"), Contains("X: row 2 has 1 values, row 1 has 2"));
    CHECK_THROWS_WITH(attn::parse_cells({}, "X"), Contains("X: no values"));
}

TEST_CASE("read_matrix names missing files and unknown extensions", "[io][errors]") {
    CHECK_THROWS_WITH(attn::read_matrix("/nonexistent/q.npy"), Contains("/nonexistent/q.npy: cannot open"));
    CHECK_THROWS_WITH(attn::read_matrix("/nonexistent/q.csv"), Contains("/nonexistent/q.csv: cannot open"));
    CHECK_THROWS_WITH(attn::read_matrix("q.txt"), Contains("q.txt: unknown file type; use .npy or .csv"));
}

TEST_CASE("arrays of any rank read in C order: 3-D float32, 4-D float64, a scalar and 1-D", "[io][npy][heads]") {
    std::vector<float> f4(24);
    for (std::size_t k = 0; k < f4.size(); ++k) f4[k] = float(k) / 4.0f - 2.0f;
    const attn::Array three =
        attn::parse_npy_array(npy_with_data(header_of("<f4", "(2, 3, 4)"), raw_bytes(f4)), "h.npy");
    CHECK(three.shape == attn::Shape{2, 3, 4});
    CHECK_FALSE(three.boolean());
    REQUIRE(three.values.rows() == 6);  // (2·3) rows of the last dimension
    REQUIRE(three.values.cols() == 4);
    CHECK(three.values(4, 1) == f4[4 * 4 + 1]);  // element [1, 1, 1]
    std::vector<double> f8(24);
    for (std::size_t k = 0; k < f8.size(); ++k) f8[k] = double(k) * 0.5;
    const attn::Array four =
        attn::parse_npy_array(npy_with_data(header_of("<f8", "(1, 2, 3, 4)"), raw_bytes(f8)), "b.npy");
    CHECK(four.shape == attn::Shape{1, 2, 3, 4});
    CHECK(four.values.rows() == 6);
    CHECK(four.values(5, 3) == 11.5f);  // element [0, 1, 2, 3], the last: 23 · 0.5
    const attn::Array scalar =
        attn::parse_npy_array(npy_with_data(header_of("<f4", "()"), raw_bytes(std::vector{1.5f})), "s.npy");
    CHECK(scalar.shape.empty());
    CHECK(scalar.values == Matrix{{1.5f}});
    const attn::Array row = attn::parse_npy_array(
        npy_with_data(header_of("<f4", "(3,)"), raw_bytes(std::vector{1.0f, 2.0f, 3.0f})), "r.npy");
    CHECK(row.shape == attn::Shape{3});
    CHECK(row.values == Matrix{{1.0f, 2.0f, 3.0f}});
    CHECK(attn::shape_string(four.shape) == "1×2×3×4");
    CHECK(attn::shape_string(scalar.shape) == "scalar");
}

TEST_CASE("N-D arrays written by the project read back bit-exact with their shape", "[io][npy][heads]") {
    std::mt19937 rng(33);
    const Matrix m = random_matrix(2 * 3 * 5, 4, rng);
    for (const attn::Shape& shape : {attn::Shape{30, 4}, attn::Shape{6, 5, 4}, attn::Shape{2, 3, 5, 4}}) {
        INFO(attn::shape_string(shape));
        const attn::Array a = attn::parse_npy_array(attn::npy_bytes(m, shape), "m.npy");
        CHECK(a.shape == shape);
        CHECK(a.values == m);
    }
    CHECK_THROWS_AS(attn::npy_bytes(m, {2, 3, 4, 4}), std::invalid_argument);  // 96 values, not 120
    CHECK_THROWS_AS(attn::NpyOutput("x.npy", &m, {7, 4}), std::invalid_argument);
    const auto dir = std::filesystem::temp_directory_path() / ("attn-io-nd-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    attn::write_npy_files({{(dir / "o.npy").string(), &m, {2, 3, 5, 4}}, {(dir / "p.npy").string(), &m}});
    const attn::Array o = attn::read_array((dir / "o.npy").string());
    CHECK(o.shape == attn::Shape{2, 3, 5, 4});
    CHECK(o.values == m);
    CHECK(attn::read_array((dir / "p.npy").string()).shape == attn::Shape{30, 4});
    std::filesystem::remove_all(dir);
}

TEST_CASE("boolean arrays ('|b1') read as bools; any byte but 0 or 1 is refused", "[io][npy][heads]") {
    const std::string bits("\x01\x00\x00\x01\x01\x01", 6);
    const attn::Array mask = attn::parse_npy_array(npy_with_data(header_of("|b1", "(1, 2, 3)"), bits), "m.npy");
    REQUIRE(mask.boolean());
    CHECK(mask.shape == attn::Shape{1, 2, 3});
    CHECK(mask.values.empty());
    for (std::size_t k = 0; k < bits.size(); ++k) CHECK(mask.truth[k] == (bits[k] == 1));
    std::string two = bits;
    two[4] = 2;
    CHECK_THAT(error_of(npy_with_data(header_of("|b1", "(1, 2, 3)"), two)),
               Contains("t.npy: byte 2 at index [0, 1, 1] is not a boolean (0 or 1)"));
    // a bool takes one byte of the limit, a float four
    attn::ReadOptions hundred;
    hundred.max_bytes = 100;
    CHECK(array_error(npy_with_header(header_of("|b1", "(10, 10)"), 100), hundred) == "(no error)");
    CHECK_THAT(array_error(npy_with_header(header_of("<f4", "(5, 5, 2)"), 200), hundred),
               Contains("shape (5, 5, 2) needs 200 bytes, more than the --max-memory limit of 100 bytes"));
    // a matrix is float: a boolean or 3-D file is refused where a matrix is read
    CHECK_THAT(error_of(npy_with_data(header_of("|b1", "(2, 3)"), bits)),
               Contains("t.npy: boolean array ('|b1'); a matrix must be float32 ('<f4') or float64 ('<f8')"));
}

TEST_CASE("−∞ is read only where the options allow it (an additive mask); NaN and +∞ never", "[io][npy][heads]") {
    const float inf = std::numeric_limits<float>::infinity();
    const std::string minus =
        npy_with_data(header_of("<f4", "(2, 1, 3)"), raw_bytes(std::vector{0.f, 0.f, 0.f, 1.f, -inf, 2.f}));
    attn::ReadOptions mask;
    mask.minus_infinity = true;
    CHECK(attn::parse_npy_array(minus, "m.npy", mask).values(1, 1) == -inf);
    CHECK_THAT(array_error(minus), Contains("m.npy: an infinite value at index [1, 0, 1]"));
    const std::string plus = npy_with_data(header_of("<f4", "(3,)"), raw_bytes(std::vector{0.f, inf, 0.f}));
    CHECK_THAT(array_error(plus, mask), Contains("m.npy: +∞ (only −∞ masks a score) at index [1]"));
    const std::string nan = npy_with_data(header_of("<f8", "(1, 1, 1, 2)"),
                                          raw_bytes(std::vector{0.0, std::numeric_limits<double>::quiet_NaN()}));
    CHECK_THAT(array_error(nan, mask), Contains("m.npy: NaN at index [0, 0, 0, 1]"));
}

TEST_CASE("malformed N-D headers are refused with the reason", "[io][npy][heads][errors]") {
    const std::pair<std::string, std::string> bad_headers[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4}", "malformed header: expected ')'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3, 4), }", "shape must be a tuple of whole numbers"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,, 4), }", "shape must be a tuple of whole numbers"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3) 4, }", "malformed header"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3, 4], }", "malformed header: expected '('"},
        {"{'descr': '<b1', 'fortran_order': False, 'shape': (2, 3, 4), }", "dtype '<b1' is not supported"},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3, 4), }", "or, for a mask, bool ('|b1')"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 65536, 65536, 65536), }", "too large to count"},
    };
    for (const auto& [header, message] : bad_headers) {
        INFO(header);
        CHECK_THAT(error_of(npy_with_header(header, 0)), Contains(message));
    }
    std::string many = "(";
    for (int k = 0; k < 33; ++k) many += "1, ";
    CHECK_THAT(error_of(npy_with_header(header_of("<f4", many + ")"), 4)), Contains("shape has too many dimensions"));
    CHECK_THAT(error_of(npy_with_header(header_of("<f4", "(2, 3, 4)"), 90)),
               Contains("shorter than the header says: 96 bytes expected, 90 found"));
    CHECK_THAT(error_of(npy_with_header(header_of("|b1", "(2, 3, 4)"), 25)),
               Contains("longer than the header says: 24 bytes expected, 25 found"));
}
