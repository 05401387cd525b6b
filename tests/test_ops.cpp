// The naive ops against values worked out by hand, their edge cases and their shape errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "matrix/norms.hpp"
#include "matrix/ops.hpp"

using attn::Matrix;
constexpr float inf = std::numeric_limits<float>::infinity();

TEST_CASE("matmul of small matrices equals the hand-computed product", "[ops][matmul]") {
    const Matrix A{{1, 2, 3}, {4, 5, 6}};
    const Matrix B{{7, 8}, {9, 10}, {11, 12}};
    // row 1: 1·7 + 2·9 + 3·11 = 58, 1·8 + 2·10 + 3·12 = 64; row 2: 139, 154
    CHECK(attn::matmul(A, B) == Matrix{{58, 64}, {139, 154}});
    CHECK(attn::matmul(Matrix{{2}}, Matrix{{3}}) == Matrix{{6}});
}

TEST_CASE("matmul_into reuses the output buffer", "[ops][matmul]") {
    Matrix C(10, 10);
    const float* before = C.data();
    attn::matmul_into(Matrix{{1, 2}}, Matrix{{3}, {4}}, C);
    CHECK(C == Matrix{{11}});
    CHECK(C.data() == before);
}

TEST_CASE("matmul with zero rows or a zero inner dimension", "[ops][matmul][edge]") {
    const Matrix C = attn::matmul(Matrix(0, 3), Matrix(3, 2));
    CHECK(C.rows() == 0);
    CHECK(C.cols() == 2);
    CHECK(attn::matmul(Matrix(2, 0), Matrix(0, 3)) == Matrix(2, 3, 0.0f));  // empty sums are 0
}

TEST_CASE("matmul names both shapes when the inner dimensions differ", "[ops][errors]") {
    CHECK_THROWS_AS(attn::matmul(Matrix(3, 4), Matrix(3, 3)), std::invalid_argument);
    CHECK_THROWS_WITH(attn::matmul(Matrix(3, 4), Matrix(3, 3)), "matmul: (3×4)·(3×3): inner dimensions 4 and 3 differ");
}

TEST_CASE("transpose swaps rows and columns", "[ops]") {
    CHECK(attn::transpose(Matrix{{1, 2, 3}, {4, 5, 6}}) == Matrix{{1, 4}, {2, 5}, {3, 6}});
    CHECK(attn::transpose(Matrix(0, 4)).rows() == 4);
}

TEST_CASE("scale multiplies every element", "[ops]") {
    CHECK(attn::scaled(Matrix{{2, -4}, {0.5f, 8}}, 0.5f) == Matrix{{1, -2}, {0.25f, 4}});
}

TEST_CASE("softmax_rows matches hand-computed values", "[ops][softmax]") {
    // Row [0, ln 2, ln 3]: e^x = [1, 2, 3], sum 6 → [1/6, 1/3, 1/2]. Row [5, 5] → [1/2, 1/2].
    const Matrix p = attn::softmax_rows(Matrix{{0.0f, std::log(2.0f), std::log(3.0f)}, {5.0f, 5.0f, -inf}});
    CHECK(p(0, 0) == Approx(1.0 / 6).epsilon(1e-6));
    CHECK(p(0, 1) == Approx(1.0 / 3).epsilon(1e-6));
    CHECK(p(0, 2) == Approx(1.0 / 2).epsilon(1e-6));
    CHECK(p(1, 0) == 0.5f);
    CHECK(p(1, 1) == 0.5f);
    CHECK(p(1, 2) == 0.0f);
}

TEST_CASE("softmax of a 1×1 matrix is 1, of a 0-row matrix is empty", "[ops][softmax][edge]") {
    CHECK(attn::softmax_rows(Matrix{{-123.0f}}) == Matrix{{1.0f}});
    CHECK(attn::softmax_rows(Matrix(0, 3)).rows() == 0);
}

TEST_CASE("a softmax row that is entirely -inf becomes all zeros, not NaN", "[ops][softmax][edge]") {
    const Matrix p = attn::softmax_rows(Matrix{{-inf, -inf, -inf}, {1.0f, -inf, 1.0f}});
    CHECK(p.row(0)[0] == 0.0f);
    CHECK(p.row(0)[1] == 0.0f);
    CHECK(p.row(0)[2] == 0.0f);
    CHECK(p(1, 0) == 0.5f);
    CHECK(p(1, 2) == 0.5f);
}

TEST_CASE("softmax is unchanged by adding a constant to a row", "[ops][softmax][property]") {
    const Matrix S{{0.3f, -1.2f, 2.5f, 0.0f}};
    for (float shift : {-1000.0f, -7.5f, 3.0f, 80.0f, 1000.0f}) {
        Matrix shifted = S;
        for (float& v : shifted.row(0)) v += shift;
        const Matrix a = attn::softmax_rows(S), b = attn::softmax_rows(shifted);
        for (std::size_t j = 0; j < 4; ++j) CHECK(b(0, j) == Approx(a(0, j)).epsilon(1e-4).margin(1e-6));
    }
}

TEST_CASE("softmax of scores of ±1e4 is finite and sums to 1", "[ops][softmax][property]") {
    const Matrix p = attn::softmax_rows(Matrix{{1e4f, -1e4f, 9999.0f}, {-1e4f, -1e4f, -1e4f}});
    for (std::size_t i = 0; i < 2; ++i) {
        float sum = 0.0f;
        for (float v : p.row(i)) {
            CHECK(std::isfinite(v));
            sum += v;
        }
        CHECK(sum == Approx(1.0f).epsilon(1e-6));
    }
    CHECK(p(0, 0) == Approx(1.0 / (1.0 + std::exp(-1.0))).epsilon(1e-6));
    CHECK(p(1, 1) == Approx(1.0 / 3).epsilon(1e-6));
}

TEST_CASE("causal_mask puts -inf strictly above the diagonal and keeps the rest", "[ops][mask]") {
    const Matrix m = attn::causal_mask(Matrix{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}});
    CHECK(m == Matrix{{1, -inf, -inf}, {4, 5, -inf}, {7, 8, 9}});
    CHECK(attn::causal_mask(Matrix{{4}}) == Matrix{{4}});
}

TEST_CASE("causal_mask on n×m keeps the triangle at the top-left corner", "[ops][mask]") {
    CHECK(attn::causal_mask(Matrix{{1, 2, 3}, {4, 5, 6}}) == Matrix{{1, -inf, -inf}, {4, 5, -inf}});
    CHECK(attn::causal_mask(Matrix{{1, 2}, {3, 4}, {5, 6}}) == Matrix{{1, -inf}, {3, 4}, {5, 6}});
}

TEST_CASE("max_row_norm is the largest row length, summed in float only where that is safe", "[ops][norm]") {
    // ordinary entries: the float sum is kept, within d·2⁻²⁴ of the double one (d = 70: a tail past 8 lanes)
    Matrix m(5, 70);
    for (std::size_t i = 0; i < m.rows(); ++i)
        for (std::size_t j = 0; j < m.cols(); ++j) m(i, j) = std::sin(float(7 * i + j)) * float(i + 1);
    double exact = 0.0;
    for (std::size_t i = 0; i < m.rows(); ++i) exact = std::max(exact, attn::norm(m.row(i)));
    CHECK(attn::max_row_norm(m) == Approx(exact).epsilon(70 * 0x1p-24));
    // squares that overflow float, and squares below its normal range: summed again in double, exactly
    Matrix huge{{3e30f, 4e30f}, {1.0f, 2.0f}}, tiny{{3e-25f, 4e-25f}, {1e-26f, 0.0f}};
    CHECK(attn::max_row_norm(huge) == attn::norm(huge.row(0)));
    CHECK(attn::max_row_norm(tiny) == attn::norm(tiny.row(0)));
    CHECK(attn::max_row_norm(tiny) == Approx(5e-25).epsilon(1e-6));
    // NaN and ±inf are reported, wherever they are; an empty or all-zero matrix has length 0
    CHECK(std::isnan(attn::max_row_norm(Matrix{{1e30f, 1.0f}, {std::nanf(""), 0.0f}})));
    CHECK(attn::max_row_norm(Matrix{{1.0f, -inf}, {2.0f, 0.0f}}) == inf);
    CHECK(attn::max_row_norm(Matrix(3, 4)) == 0.0);
    CHECK(attn::max_row_norm(Matrix(3, 0)) == 0.0);
}
