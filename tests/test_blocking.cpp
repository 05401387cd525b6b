// The block sizes of simd/blocking.cpp: the cache model on the reference machine's caches (the
// numbers its comment derives by hand), its invariants on any caches, the balance of row blocks
// between threads, and that row blocks change no result.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <random>
#include <vector>

#include "matrix/random.hpp"
#include "simd/simd.hpp"

using attn::Matrix;
using attn::simd::Blocking;
using attn::simd::Caches;
using attn::simd::MR;

namespace {

const Caches zen3{
    .l1d = {32 << 10, 8, 64, 1}, .l2 = {512 << 10, 8, 64, 1}, .l3 = {32 << 20, 16, 64, 8}, .source = "test"};
const Caches xeon{
    .l1d = {48 << 10, 12, 64, 1}, .l2 = {2 << 20, 16, 64, 1}, .l3 = {260 << 20, 20, 64, 2}, .source = "test"};
const Caches neoverse{
    .l1d = {64 << 10, 4, 64, 1}, .l2 = {1 << 20, 8, 64, 1}, .l3 = {32 << 20, 16, 64, 64}, .source = "test"};

bool same_bits(const Matrix& a, const Matrix& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("the cache model gives the sizes derived by hand, for every tile width", "[simd][blocking]") {
    // simd/blocking.cpp derives the NR = 16 (AVX2) figures on Zen 3 and the NR = 32 (AVX-512) ones
    // on the Xeon; NR = 8 (NEON, SSE) on Zen 3: kc = 360 as for AVX2 (it does not depend on NR),
    // nc = 65536/360 = 182 → 176; the B panel gets ⌊7·8/14⌋ = 4 ways → panel_kc = 4·64·64/32 =
    // 512, its 16 KiB take 1 way of L2 → panel_mc = 6·65536/2048 = 192; BR = 256 KiB/2048 = 128 → 126.
    // Every width is checked whatever this build or CPU runs: the model is a pure function.
    for (const std::size_t NR : {8, 16, 32}) {
        const Caches& c = NR == 32 ? xeon : zen3;
        const Blocking b = attn::simd::blocking_for(c, NR);
        INFO("NR = " << NR << ": " << attn::simd::describe(b));
        const Blocking want =
            NR == 16   ? Blocking{.kc = 360, .nc = 176, .panel_kc = 320, .panel_mc = 306, .fused_rows = 204}
            : NR == 32 ? Blocking{.kc = 720, .nc = 352, .panel_kc = 288, .panel_mc = 1590, .fused_rows = 906}
                       : Blocking{.kc = 360, .nc = 176, .panel_kc = 512, .panel_mc = 192, .fused_rows = 126};
        CHECK(b.kc == want.kc);
        CHECK(b.nc == want.nc);
        CHECK(b.panel_mc == want.panel_mc);
        CHECK(b.fused_rows == want.fused_rows);
        CHECK(b.panel_kc == want.panel_kc);
    }
}

// Cache shapes from small cores to large ones: L1d 16–128 KiB of 4–16 ways, L2 256 KiB–8 MiB of
// 4–20 ways, L3 absent or shared by 2–8 cores. The CI host read its caches through sysconf under
// qemu (L1d 32 KiB, L2 2 MiB) and found a BR the fused kernel refused; this grid holds that case, so
// the verdict is the commit's, whatever caches the machine that runs it has.
std::vector<Caches> cache_grid() {
    std::vector<Caches> grid{zen3, xeon, neoverse, attn::simd::caches()};
    for (std::size_t l1 : {16, 32, 48, 64, 128})
        for (std::size_t l1_ways : {4, 8, 12, 16})
            for (std::size_t l2 : {256, 512, 1024, 1280, 2048, 4096, 8192})
                for (std::size_t l2_ways : {4, 8, 16, 20})
                    for (std::size_t l3_sharers : {0, 2, 8})
                        grid.push_back(
                            {.l1d = {l1 << 10, l1_ways, 64, 1},
                             .l2 = {l2 << 10, l2_ways, 64, 1},
                             .l3 = {l3_sharers ? 32u << 20 : 0u, 16, 64, std::max<std::size_t>(l3_sharers, 1)},
                             .source = "test"});
    return grid;
}

TEST_CASE("the cache model's sizes fit the caches they were derived from, on any caches", "[simd][blocking]") {
    const std::vector<Caches> grid = cache_grid();
    for (const std::size_t NR : {8, 16, 32}) {
        for (const Caches& c : grid) {
            INFO("NR = " << NR << ", " << attn::simd::describe(c));
            const Blocking b = attn::simd::blocking_for(c, NR);
            INFO(attn::simd::describe(b));
            CHECK_NOTHROW(attn::simd::check_blocking("blocking_for", b, NR));  // every kernel takes them
            CHECK(attn::simd::tall_rows(NR) * b.kc * sizeof(float) <=
                  c.l1d.bytes * (c.l1d.ways - 1) / c.l1d.ways);  // the A strip
            CHECK(b.nc % NR == 0);
            if (b.nc > NR) CHECK(b.kc * b.nc * sizeof(float) <= c.l2.bytes / 2);  // the B block (≥ one panel)
            CHECK(b.panel_kc * NR * sizeof(float) <=
                  c.l1d.bytes * (c.l1d.ways - 1) / c.l1d.ways);  // the V panel, one way free
            CHECK(b.panel_mc % MR == 0);
            CHECK(b.panel_mc * b.panel_kc * sizeof(float) <=
                  c.l2.bytes * (c.l2.ways - 1) / c.l2.ways);  // the block of A, one way free
            CHECK(b.fused_rows % MR == 0);
            CHECK(b.fused_rows * b.panel_kc * sizeof(float) <= c.l2.bytes / 2);
        }
    }
}

TEST_CASE("the caches found here are complete and printed", "[simd][blocking]") {
    const Caches& c = attn::simd::caches();
    for (const auto* level : {&c.l1d, &c.l2, &c.l3}) {
        CHECK(level->bytes > 0);
        CHECK(level->ways > 0);
        CHECK(level->line > 0);
    }
    CHECK((c.source == "sysfs" || c.source == "sysconf" || c.source == "fallback"));
    CHECK_THAT(attn::simd::describe(c), Catch::Contains("L1d ") && Catch::Contains("L2 ") && Catch::Contains("L3 "));
    CHECK_THAT(attn::simd::describe(attn::simd::blocking()), Catch::StartsWith("wide: kc "));
}

TEST_CASE("row blocks: each thread gets the same number, at most `most` rows each", "[simd][blocking]") {
    // n = 1024 cut into whole 192-row blocks would be 6 blocks, the last of 64 rows: one of two threads
    // would do 576 rows and the other 448. Balanced, the blocks are of 174 rows.
    CHECK(attn::simd::balanced_rows(1024, 192, 2, 1) == 174);  // 6 blocks: 3 × 174 = 522 and 2 × 174 + 154 = 502
    for (std::size_t n : {1, 5, 6, 7, 100, 1000, 1024, 2048, 4097}) {
        for (std::size_t most : {6, 48, 192, 906}) {
            for (std::size_t threads : {1, 2, 3}) {
                for (std::size_t per : {1, 4}) {
                    const std::size_t rows = attn::simd::balanced_rows(n, most, threads, per);
                    INFO("n=" << n << " most=" << most << " threads=" << threads << " per=" << per << " → " << rows);
                    CHECK(rows % MR == 0);
                    CHECK(rows >= MR);
                    CHECK(rows <= most);
                    const std::size_t blocks = (n + rows - 1) / rows;
                    // Enough blocks for every thread whenever there are rows enough.
                    if (n >= threads * per * MR && (n + most - 1) / most <= threads * per) CHECK(blocks >= threads);
                }
            }
        }
    }
}

TEST_CASE("the GEMM's loop order follows the width of B and the height of the tile", "[simd][blocking]") {
    // A B of at most 4 panels (α·V: d_v = 64 is 4 panels at NR = 16, 2 at NR = 32) is narrow for
    // one-strip tiles, NR = 8 and 16, with the L1 panel's depth; AVX-512's 12-row tile (NR = 32)
    // runs it in the wide order with the wide depth. A B of more than 4 panels is wide for every tile.
    for (const std::size_t NR : {8, 16, 32}) {
        INFO("NR = " << NR);
        const Blocking b = attn::simd::blocking_for(xeon, NR);
        const attn::simd::GemmBlocks alpha_v = attn::simd::gemm_blocks(b, 2048, 4 * NR, NR);
        const bool tall = attn::simd::tall_rows(NR) > MR;
        CHECK(tall == (NR == 32));
        CHECK(alpha_v.narrow == !tall);
        CHECK(alpha_v.kc <= (tall ? b.kc : b.panel_kc));
        CHECK(!attn::simd::gemm_blocks(b, 2048, 5 * NR, NR).narrow);
    }
}

TEST_CASE("block sizes change no bit of the products or of fused attention", "[simd][blocking]") {
    // A product's element is one FMA chain over p in order, whatever the depth, column and row
    // blocks; a fused row's result does not depend on the block of rows it falls in. Both loop
    // orders of the GEMM: B of 20 columns is narrow for one-strip tiles (at most 4 panels; AVX-512's
    // tall tile runs it wide), of 200 wide (more than 4 even at NR = 32).
    std::mt19937 rng(31);
    const Matrix A = attn::random_matrix(301, 70, rng), narrow = attn::random_matrix(70, 20, rng),
                 wide = attn::random_matrix(70, 200, rng);
    const Matrix Q = attn::random_matrix(333, 24, rng), K = attn::random_matrix(333, 24, rng),
                 V = attn::random_matrix(333, 20, rng);
    const std::size_t NR = attn::simd::tile_columns();
    const Blocking blocks = attn::simd::blocking();
    std::vector<Matrix> first;
    for (const auto [kc, panels, rows] : {std::array<std::size_t, 3>{8, 1, MR},
                                          {16, 2, 8 * MR},
                                          {40, 3, 32 * MR},
                                          {blocks.kc, blocks.nc / NR, 151 * MR}}) {
        INFO("kc = panel kc (products) = " << kc << ", nc " << panels * NR << ", rows per block ≤ " << rows);
        // (The fused kernel keeps its keys per tile: they change its rounding, its softmax being summed
        // tile by tile.)
        Blocking products = blocks, fused = blocks;
        products.kc = products.panel_kc = kc;
        products.nc = panels * NR;
        products.panel_mc = fused.fused_rows = rows;
        std::vector<Matrix> results(4);
        attn::simd::matmul_into(A, narrow, results[0], attn::simd::Threads::all, products);
        attn::simd::matmul_into(A, wide, results[1], attn::simd::Threads::all, products);
        for (int causal = 0; causal < 2; ++causal)
            attn::simd::fused_attention_into(Q, K, V, 0.2f, causal, results[2 + causal], nullptr,
                                             attn::simd::Threads::all, fused);
        if (first.empty()) {
            first = results;
            continue;
        }
        for (std::size_t r = 0; r < results.size(); ++r) {
            INFO((r == 0 ? "A·B, B narrow" : r == 1 ? "A·B, B wide" : r == 2 ? "fused" : "fused, causal"));
            CHECK(same_bits(results[r], first[r]));
        }
    }
}

TEST_CASE("block sizes the kernels cannot use are refused, naming the kernel", "[simd][blocking][errors]") {
    const Matrix A(12, 8, 1.0f), B(8, 12, 1.0f);
    Matrix C;
    Blocking bad = attn::simd::blocking();
    bad.kc = 0;
    CHECK_THROWS_AS(attn::simd::matmul_transposed_into(A, A, 1.0f, C, attn::simd::Threads::one, bad),
                    std::invalid_argument);
    bad = attn::simd::blocking();
    bad.nc = attn::simd::tile_columns() + 1;
    CHECK_THROWS_WITH(attn::simd::matmul_into(A, B, C, attn::simd::Threads::one, bad),
                      Catch::StartsWith("matmul: block sizes") && Catch::Contains("multiple of NR"));
    bad = attn::simd::blocking();
    bad.panel_mc = MR + 1;
    CHECK_THROWS_WITH(attn::simd::matmul_into(A, B, C, attn::simd::Threads::one, bad),
                      Catch::StartsWith("matmul: block sizes") && Catch::Contains("multiples of MR"));
    bad = attn::simd::blocking();
    bad.fused_rows = MR + 1;
    CHECK_THROWS_WITH(attn::simd::fused_attention_into(A, A, A, 1.0f, false, C, nullptr, attn::simd::Threads::one, bad),
                      Catch::StartsWith("fused_attention: block sizes") && Catch::Contains("multiples of MR"));
}
