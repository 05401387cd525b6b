// Matrix storage, shapes and the text printer.
#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#if __has_include(<sys/mman.h>)
#include <sys/mman.h>
#endif

#include "matrix/matrix.hpp"
#include "matrix/print.hpp"

using attn::Matrix;

TEST_CASE("Matrix from nested lists is row-major with the lesson's shape", "[matrix]") {
    const Matrix X{{1.0f, 0.5f, -0.2f, 0.8f}, {0.3f, -0.6f, 1.2f, 0.1f}, {0.7f, 0.9f, 0.4f, -0.5f}};
    CHECK(X.rows() == 3);
    CHECK(X.cols() == 4);
    CHECK(X(1, 2) == 1.2f);
    CHECK(X.data()[1 * 4 + 2] == 1.2f);  // element (i, j) at i·cols + j
    CHECK(X.row(2)[3] == -0.5f);
    CHECK(X.row(2).size() == 4);
    CHECK(attn::shape_string(X) == "3×4");
}

TEST_CASE("Matrix storage is 64-byte aligned, also after resize_for_overwrite", "[matrix]") {
    Matrix m(5, 7, 2.0f);
    CHECK(reinterpret_cast<std::uintptr_t>(m.data()) % 64 == 0);
    CHECK(m(4, 6) == 2.0f);
    m.resize_for_overwrite(100, 33);
    CHECK(m.rows() == 100);
    CHECK(m.cols() == 33);
    CHECK(reinterpret_cast<std::uintptr_t>(m.data()) % 64 == 0);
}

// The operating system's flags of the memory mapping that holds `address` (the VmFlags line of
// /proc/self/smaps: "hg" is the huge-page hint), or "" where there is no such file.
std::string mapping_flags(const void* address) {
    std::ifstream smaps("/proc/self/smaps");
    const auto at = reinterpret_cast<std::uintptr_t>(address);
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        std::uintptr_t start = 0, end = 0;
        char dash = 0;
        std::istringstream range(line);
        if (range >> std::hex >> start >> dash >> end && dash == '-') inside = start <= at && at < end;
        else if (inside && line.rfind("VmFlags:", 0) == 0) return line;
    }
    return "";
}

// Whether this system records a huge-page hint where /proc/self/smaps shows it: a control mapping
// of 4 MiB given the hint directly. Not under an emulator such as qemu-user, which accepts the
// madvise and drops it, nor where the kernel has no transparent huge pages.
bool hints_are_recorded() {
#ifdef MADV_HUGEPAGE
    const std::size_t bytes = std::size_t{4} << 20;
    void* control = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (control == MAP_FAILED) return false;
    const bool recorded = madvise(control, bytes, MADV_HUGEPAGE) == 0 &&
                          mapping_flags(static_cast<char*>(control) + bytes / 2).find(" hg") != std::string::npos;
    munmap(control, bytes);
    return recorded;
#else
    return false;
#endif
}

TEST_CASE("a block of 32 MiB or more is offered huge pages and holds its values", "[matrix]") {
    const std::size_t rows = attn::fresh_block_bytes / sizeof(float) / 1024 + 1;  // just past the threshold
    Matrix big(rows, 1024, 0.5f);
    CHECK(reinterpret_cast<std::uintptr_t>(big.data()) % 64 == 0);
    CHECK(big(0, 0) == 0.5f);
    CHECK(big(rows - 1, 1023) == 0.5f);
    big.resize_for_overwrite(rows, 1024);  // the same size: the same block, values unspecified
    big(rows / 2, 7) = 3.0f;
    CHECK(big(rows / 2, 7) == 3.0f);
    // Where the system records the hint (the control above), the middle of the block carries it.
    if (hints_are_recorded()) {
        const std::string flags = mapping_flags(big.data() + big.size() / 2);
        INFO(flags);
        CHECK(flags.find(" hg") != std::string::npos);
    }
}

TEST_CASE("resize_for_overwrite to a smaller shape keeps the allocation", "[matrix]") {
    Matrix m(64, 64);
    const float* before = m.data();
    m.resize_for_overwrite(8, 8);
    CHECK(m.data() == before);
    CHECK(m.size() == 64);
}

TEST_CASE("a borrowed matrix reads the caller's memory in place; its copies own their values", "[matrix]") {
    float memory[6] = {1, 2, 3, 4, 5, 6};
    const Matrix view = Matrix::borrow(memory, 2, 3);
    CHECK(view.data() == memory);  // nothing copied
    CHECK(view(1, 0) == 4.0f);
    CHECK(view.row(1).data() == memory + 3);
    memory[5] = 60.0f;  // the caller's changes are seen
    CHECK(view(1, 2) == 60.0f);

    Matrix copy = view;  // a copy owns a copy of the values
    CHECK(copy.data() != memory);
    CHECK(copy == view);
    copy(0, 0) = -1.0f;
    CHECK(memory[0] == 1.0f);
    copy.resize_for_overwrite(4, 4);
    CHECK(memory[0] == 1.0f);

    Matrix moved = Matrix(view);  // moving an owned matrix takes its storage along
    const float* storage = moved.data();
    Matrix taken = std::move(moved);
    CHECK(taken.data() == storage);
    CHECK(taken(1, 2) == 60.0f);
    CHECK(moved.empty());
    CHECK_THROWS_AS(Matrix::borrow(memory, std::size_t{1} << 62, 8), std::length_error);
}

TEST_CASE("ragged nested lists are rejected with the row that differs", "[matrix][errors]") {
    CHECK_THROWS_WITH((Matrix{{1.0f, 2.0f}, {3.0f}}), Catch::Contains("row 2 has 1 values, row 1 has 2"));
}

TEST_CASE("empty and 0-row matrices are valid", "[matrix]") {
    const Matrix none;
    CHECK(none.empty());
    const Matrix zero_rows(0, 5);
    CHECK(zero_rows.rows() == 0);
    CHECK(zero_rows.cols() == 5);
    CHECK(zero_rows.size() == 0);
    CHECK(attn::format_matrix(zero_rows).empty());
}

TEST_CASE("equality is shape plus bit-identical elements", "[matrix]") {
    CHECK(Matrix{{1.0f, 2.0f}} == Matrix{{1.0f, 2.0f}});
    CHECK_FALSE(Matrix{{1.0f, 2.0f}} == Matrix{{1.0f}, {2.0f}});
    CHECK_FALSE(Matrix{{0.0f}} == Matrix{{-0.0f}});
}

TEST_CASE("display width counts CJK as two columns and escapes as none", "[print]") {
    CHECK(attn::display_width("cat") == 3);
    CHECK(attn::display_width("猫") == 2);
    CHECK(attn::display_width("地毯 mat") == 8);
    CHECK(attn::display_width("α₁") == 2);
    CHECK(attn::display_width("\x1b[48;5;240mab\x1b[0m") == 2);
    CHECK(attn::pad_right("猫", 4) == "猫  ");
    CHECK(attn::pad_left("坐", 3) == " 坐");
}

TEST_CASE("numbers print with fixed precision, infinities by name, no negative zero", "[print]") {
    CHECK(attn::format_number(1.31f, 4) == "1.3100");
    CHECK(attn::format_number(-0.31f, 2) == "-0.31");
    CHECK(attn::format_number(-0.00001f, 3) == "0.000");
    CHECK(attn::format_number(-std::numeric_limits<float>::infinity(), 4) == "-inf");
}

TEST_CASE("a number for a table: the decimals the float holds, or its shortest decimal", "[print]") {
    CHECK(attn::table_number(0.2f, 4) == "0.2000");  // the float is 0.2000000030: 4 decimals are its own
    CHECK(attn::table_number(0.48384625f, 4) == "0.4838");
    CHECK(attn::table_number(12345.678f, 4) == "12345.678");  // spacing 0.00098: no fourth decimal
    CHECK(attn::table_number(99999.99f, 4) == "99999.99");    // spacing 0.0078
    CHECK(attn::table_number(-0.00001f, 4) == "-1e-05");      // below 0.001: the shortest decimal
    CHECK(attn::table_number(-0.0004f, 4) == "-0.0004");
    CHECK(attn::table_number(-0.0f, 4) == "0.0000");  // no sign on 0
    CHECK(attn::table_number(3e19f, 4) == "3e+19");   // beyond 1e5: the shortest decimal
    CHECK(attn::table_number(-2.5e-7f, 4) == "-2.5e-07");
    CHECK(attn::table_number(std::numeric_limits<float>::infinity(), 4) == "inf");
}

TEST_CASE("printed rows line up when labels mix CJK and ASCII", "[print]") {
    attn::PrintOptions p;
    p.precision = 2;
    p.row_labels = {"猫", "地毯", "x"};
    p.col_labels = {"a", "b"};
    const std::string text = attn::format_matrix(Matrix{{1.0f, -2.0f}, {10.5f, 0.0f}, {3.0f, 4.0f}}, p);
    std::vector<std::size_t> widths;
    std::size_t start = 0;
    for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
        widths.push_back(attn::display_width(text.substr(start, end - start)));
    REQUIRE(widths.size() == 4);
    CHECK(widths[0] + 2 == widths[1]);  // the header has no closing " ]"
    CHECK(widths[2] == widths[1]);
    CHECK(widths[3] == widths[1]);
    CHECK(text.find("地毯 [ 10.50  0.00 ]") != std::string::npos);
}
