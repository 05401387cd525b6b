// simd/blocking.cpp — how big the blocks are, from the caches of the running CPU.
//
// The GEMM (simd/gemm.cpp) runs in one of two orders, and each keeps two things in two caches:
//
//   wide B (more than 4 panels: X·W, S = Q·Kᵀ, the 1024³ benchmark)
//   - a strip of A, MR × kc floats, reused by every panel of B → L1;
//   - the packed block of B, kc × nc floats, reused by every strip of A → L2;
//   and what does not stay anywhere, A and C, comes from L3 as few times as kc and nc allow;
//   narrow B (at most 4 panels: α·V with d_v = 64; only for tiles of one strip, see gemm_blocks)
//   - a panel of B, panel_kc × NR floats, reused by every strip of a block of A → L1;
//   - the block of A, panel_mc × panel_kc floats, reused by every panel → L2.
//
// What passes through once streams past them: in the wide order the B panels through L1 and the
// strips of A and rows of C through L2 (C is walked along its rows, tile after tile, which the
// hardware prefetchers follow); in the narrow order the strips of A through L1 and the panel
// through L2.
//
// After the analytical model of Low, Igual, Smith and Quintana-Ortí ("Analytical Modeling Is Enough
// for High-Performance BLIS", ACM TOMS 43(2), 2016), a cache of W ways is shared out by ways, not by
// bytes: what must stay gets whole ways, what streams through gets the rest, and one way is left
// for everything else (the C tile, the stack). With N = bytes / (W · line) sets, w ways hold
// w · N · line bytes.
//
//   L2 and L3 → kc and nc (wide). The B block stays while strips of A and rows of C pass; it gets
//   half of this core's share of L2, so kc · nc = L2 / 2 / 4 bytes = M floats. Everything else
//   comes from L3: every depth block reads and writes all of C (8 bytes an element, m·n·k / kc in
//   all) and every column block reads all of A (4 bytes, m·n·k / nc). With nc = M / kc that traffic
//   is m·n·k · (8/kc + 4·kc/M), least at kc = √(2M), rounded down to a multiple of 8 and capped so
//   that the A strip, R = tall_rows rows (6, or 12 with AVX-512), fits L1 but one way
//   (R · kc · 4 ≤ (W₁ − 1) · N₁ · line); nc = M / kc rounded down to NR. Zen 3 (512 KiB, AVX2:
//   NR = 16): M = 65536, √131072 = 362 → kc = 360, nc = 182 → 176.
//   (kc from the A strip's share of L1 alone, 168 here, would make a 1024³ product pass over C 7
//   times instead of 3; BM_tune times kc and nc around the model's choice.)
//
//   L1 → the narrow depth. What stays, the B panel, takes s = NR floats per step of p, what passes
//   it (a strip of A) p = MR; sharing W₁ − 1 ways in proportion s : p, the panel gets
//   w = ⌊(W₁ − 1) · s / (s + p)⌋ ways (at least 1), and its depth is w · N₁ · line / (s · 4 bytes),
//   rounded down to a multiple of 8. Zen 3 (32 KiB, 8 ways), AVX2: w = ⌊7 · 16/22⌋ = 5 →
//   panel_kc = 5 · 64 · 64 / 64 = 320.
//
//   L2 → panel_mc. The block of A stays; the panel passes through, taking ⌈panel_kc·NR·4 / (N₂·line)⌉
//   ways; one more way is left free:
//       w_A = W₂ − 1 − ⌈panel_kc·NR·4 / (N₂·line)⌉,  panel_mc = ⌊w_A · N₂ · line / (panel_kc · 4)⌋ rounded down to MR.
//   Zen 3 (512 KiB, 8 ways): the panel is 20 KiB = 1 way, w_A = 6 → 6 · 1024 · 64 / 1280 = 307 → 306.
//
// A core with L1d 48 KiB 12-way and L2 2 MiB 16-way, AVX-512 (NR = 32):
// M = 262144, √524288 = 724 → kc = 720, nc = 364 → 352; panel_kc: w = ⌊11 · 32/38⌋ = 9 →
// 9 · 64 · 64 / 128 = 288; the panel (36 KiB) takes 1 way of L2, w_A = 14 → panel_mc = 14 · 2048 · 64 /
// 1152 = 1592 → 1590.
//
// The fused kernel (simd/fused.cpp) is the narrow order with keys for depth: it takes a panel of V,
// BC × NR floats (read where it lies in V, or packed), and runs every strip of its block of scores,
// BR × BC, over it, so BC = panel_kc.
// (Its strips are TALL rows, 12 with AVX-512, where the L1 share above assumes MR: for them the
// depth is one way of L1 deeper than their own share, 288 keys instead of 256 on the 48 KiB L1
// above; BM_tune sweeps the keys a tile around the model's choice.)
// The score block is what stays in L2 between the three steps of a tile; it gets half of L2 (the
// other half holds the block's rows of Q and O and the panel being packed): BR = ⌊L2/2 / (BC · 4)⌋.
// Zen 3, AVX2: 262144 / 1280 = 204; the 2 MiB L2 above: 1048576 / 1152 = 910 → 906.
//
// `attn --version` prints the caches found and these sizes; `scripts/dev tune` times a grid of
// sizes around them and prints the best beside the model's choice.
#include "simd/blocking.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace attn::simd {

namespace {

// A Zen 3 core, the project's reference machine: what is assumed when the OS says nothing.
Caches fallback() {
    return {
        .l1d = {32 << 10, 8, 64, 1}, .l2 = {512 << 10, 8, 64, 1}, .l3 = {32 << 20, 16, 64, 8}, .source = "fallback"};
}

std::string read_line(const std::string& path) {
    std::ifstream in(path);
    std::string s;
    std::getline(in, s);
    return s;
}

// "48K" → 49152, "2048K" → 2097152, "1M" → 1048576; 0 when unreadable.
std::size_t parse_size(const std::string& s) {
    std::size_t value = 0, k = 0;
    while (k < s.size() && s[k] >= '0' && s[k] <= '9') value = value * 10 + std::size_t(s[k++] - '0');
    if (k < s.size() && (s[k] == 'K' || s[k] == 'k')) value <<= 10;
    if (k < s.size() && s[k] == 'M') value <<= 20;
    return value;
}

// "0-1" → 2, "0,2,4" → 3, "5" → 1; anything unreadable counts as one CPU.
std::size_t count_cpus(const std::string& list) {
    std::size_t count = 0;
    std::stringstream in(list);
    for (std::string range; std::getline(in, range, ',');) {
        const auto dash = range.find('-');
        const std::size_t first = parse_size(range.substr(0, dash));
        const std::size_t last = dash == std::string::npos ? first : parse_size(range.substr(dash + 1));
        if (!range.empty()) count += last >= first ? last - first + 1 : 1;
    }
    return std::max<std::size_t>(count, 1);
}

bool from_sysfs(Caches& c) {
    bool any = false;
    for (int index = 0; index < 8; ++index) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
        const std::string level = read_line(dir + "level"), type = read_line(dir + "type");
        if (level.empty()) break;
        if (type == "Instruction") continue;
        CacheLevel* slot = level == "1" ? &c.l1d : level == "2" ? &c.l2 : level == "3" ? &c.l3 : nullptr;
        const std::size_t bytes = parse_size(read_line(dir + "size"));
        if (!slot || bytes == 0) continue;
        *slot = {bytes, parse_size(read_line(dir + "ways_of_associativity")),
                 parse_size(read_line(dir + "coherency_line_size")), count_cpus(read_line(dir + "shared_cpu_list"))};
        any = true;
    }
    return any;
}

bool from_sysconf([[maybe_unused]] Caches& c) {
#if defined(_SC_LEVEL1_DCACHE_SIZE)
    const auto get = [](int name) { return std::max(sysconf(name), 0L); };
    c.l1d = {std::size_t(get(_SC_LEVEL1_DCACHE_SIZE)), std::size_t(get(_SC_LEVEL1_DCACHE_ASSOC)),
             std::size_t(get(_SC_LEVEL1_DCACHE_LINESIZE)), 1};
    c.l2 = {std::size_t(get(_SC_LEVEL2_CACHE_SIZE)), std::size_t(get(_SC_LEVEL2_CACHE_ASSOC)),
            std::size_t(get(_SC_LEVEL2_CACHE_LINESIZE)), 1};
    c.l3 = {std::size_t(get(_SC_LEVEL3_CACHE_SIZE)), std::size_t(get(_SC_LEVEL3_CACHE_ASSOC)),
            std::size_t(get(_SC_LEVEL3_CACHE_LINESIZE)), std::size_t(std::max(sysconf(_SC_NPROCESSORS_ONLN), 1L))};
    return c.l1d.bytes > 0;
#else
    return false;
#endif
}

// Fields the OS left at 0 take the fallback's (a level of unknown ways is modelled as the fallback's).
void fill_gaps(CacheLevel& level, const CacheLevel& assumed) {
    if (level.bytes == 0) level = assumed;
    if (level.ways == 0) level.ways = assumed.ways;
    if (level.line == 0) level.line = assumed.line;
    if (level.shared_by == 0) level.shared_by = 1;
}

std::size_t round_down(std::size_t x, std::size_t unit) { return std::max(x / unit, std::size_t{1}) * unit; }

// ⌊√x⌋ in integers, so that the model gives the same blocks whatever the floating-point unit does.
std::size_t integer_sqrt(std::size_t x) {
    std::size_t r = 0;
    while ((r + 1) * (r + 1) <= x) ++r;
    return r;
}

std::size_t sets(const CacheLevel& c) {
    return std::max<std::size_t>(c.bytes / (std::max<std::size_t>(c.ways, 1) * std::max<std::size_t>(c.line, 1)), 1);
}

std::string kib(std::size_t bytes) {
    return bytes >= (1u << 20) && bytes % (1u << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                                          : std::to_string(bytes >> 10) + " KiB";
}

}  // namespace

const Caches& caches() {
    static const Caches found = [] {
        Caches c;
        if (from_sysfs(c)) c.source = "sysfs";
        else if (from_sysconf(c)) c.source = "sysconf";
        else return fallback();
        const Caches f = fallback();
        fill_gaps(c.l1d, f.l1d);
        fill_gaps(c.l2, f.l2);
        fill_gaps(c.l3, f.l3);
        return c;
    }();
    return found;
}

Blocking blocking_for(const Caches& c, const std::size_t NR) {
    constexpr std::size_t F = sizeof(float);
    // The largest blocks of rows, multiples of MR themselves: a cap of 1024 rows clamped a big L2's
    // block to a size the fused kernel refused (L1 32 KiB with L2 2 MiB at NR = 32 gave 1024 = 170·6 + 4).
    constexpr std::size_t most_mc = 4096 / MR * MR, most_rows = 1024 / MR * MR;
    // L1 → a depth: what stays (`resident` floats per step) gets its share of W₁ − 1 ways.
    const std::size_t l1_ways = std::max<std::size_t>(c.l1d.ways, 2), l1_way = sets(c.l1d) * c.l1d.line;
    const auto depth_from_l1 = [&](std::size_t resident, std::size_t passing) {
        const std::size_t ways = std::max<std::size_t>((l1_ways - 1) * resident / (resident + passing), 1);
        return std::clamp(round_down(ways * l1_way / (resident * F), 8), std::size_t{64}, std::size_t{1024});
    };
    const CacheLevel l2{c.l2.bytes / std::max<std::size_t>(c.l2.shared_by, 1), c.l2.ways, c.l2.line, 1};  // this core's
    const std::size_t l2_way = sets(l2) * l2.line;
    // Wide: the B block, kc × nc = M floats, takes half of L2; kc = √(2M) moves the least of A and C
    // through L3, as long as the A strip, tall_rows × kc, fits L1 but one way.
    const std::size_t block_floats = l2.bytes / 2 / F;
    const std::size_t strip_depth = (l1_ways - 1) * l1_way / (tall_rows(NR) * F);
    const std::size_t kc = std::clamp(round_down(std::min(integer_sqrt(2 * block_floats), strip_depth), 8),
                                      std::size_t{64}, std::size_t{1024});
    const std::size_t nc = std::min(round_down(block_floats / kc, NR), std::size_t{8192});
    // Narrow: the B panel stays in L1 while strips pass; the block of A takes what the passing
    // panel and one free way leave of L2.
    const std::size_t panel_kc = depth_from_l1(NR, MR);
    const std::size_t panel_ways = (panel_kc * NR * F + l2_way - 1) / l2_way;
    const std::size_t a_ways = l2.ways > panel_ways + 1 ? l2.ways - 1 - panel_ways : 1;
    const std::size_t panel_mc = std::clamp(round_down(a_ways * l2_way / (panel_kc * F), MR), MR, most_mc);
    // Fused: keys per tile as the narrow depth; BR × BC scores in half of L2.
    const std::size_t fused_rows = std::clamp(round_down(l2.bytes / 2 / (panel_kc * F), MR), MR, most_rows);
    return {kc, nc, panel_kc, panel_mc, fused_rows, Blocking{}.decode_keys};
}

GemmBlocks gemm_blocks(const Blocking& b, std::size_t k, std::size_t n, const std::size_t NR) {
    // A B of at most 4 panels (α·V) runs in the narrow order, unless the tile is tall (AVX-512):
    // in a 12-row tile B's rows from L2 feed 24 FMAs each, and the wide order, which reads α once
    // in strips instead of keeping a block of it in L2, is the faster one there (BM_matmul).
    const bool narrow = n <= 4 * NR && tall_rows(NR) == MR;
    const std::size_t most = std::max<std::size_t>(narrow ? b.panel_kc : b.kc, 1);
    // Depth blocks of equal size, at most `most`: k = 2048 with 288 makes 8 blocks of 256 rather
    // than 7 of 288 and a last one of 32, which would pay a full pass over C for 1/9 of the work.
    const std::size_t blocks = std::max<std::size_t>((k + most - 1) / most, 1);
    const std::size_t kc = std::min(round_up((k + blocks - 1) / blocks, 8), most);
    // The packed block of B keeps its size, kc·nc floats: a shallower one is wider (S = Q·Kᵀ has
    // k = d_k = 64: at kc = 360, nc = 176 becomes 990 → 976, so S's rows are walked in longer runs).
    // (k = 0 makes kc = 0: an empty product, whose scratch the budget still asks for.)
    const std::size_t nc = narrow ? std::max<std::size_t>(n, 1)
                                  : std::max<std::size_t>(b.kc * b.nc / std::max<std::size_t>(kc, 1) / NR, 1) * NR;
    return {narrow, kc, nc};
}

void check_blocking(const char* who, const Blocking& b, const std::size_t NR) {
    const auto fail = [&](const std::string& what) {
        throw std::invalid_argument(std::string(who) + ": block sizes " + describe(b) + ": " + what);
    };
    if (b.kc == 0 || b.panel_kc == 0) fail("the depths must be at least 1");
    if (b.panel_mc == 0 || b.panel_mc % MR || b.fused_rows == 0 || b.fused_rows % MR)
        fail("the rows per block must be positive multiples of MR = " + std::to_string(MR));
    if (b.nc == 0 || b.nc % NR) fail("nc must be a positive multiple of NR = " + std::to_string(NR));
    if (b.decode_keys == 0) fail("decode_keys must be at least 1");
}

std::size_t balanced_rows(std::size_t rows, std::size_t most, std::size_t threads, std::size_t blocks_per_thread) {
    threads = std::max<std::size_t>(threads, 1);
    std::size_t blocks = std::max((rows + most - 1) / most, threads * blocks_per_thread);
    blocks = (blocks + threads - 1) / threads * threads;
    const std::size_t size = ((rows + blocks - 1) / blocks + MR - 1) / MR * MR;
    return std::clamp(size, MR, most);
}

std::size_t fused_backward_keys_per_block(std::size_t m, const Blocking& b) {
    return balanced_rows(m, b.fused_rows, dq_lanes, 1);
}

std::string describe(const Caches& c) {
    const auto level = [](const char* name, const CacheLevel& l) {
        std::string s = std::string(name) + " " + kib(l.bytes) + " " + std::to_string(l.ways) + "-way";
        if (l.shared_by > 1) s += " shared by " + std::to_string(l.shared_by);
        return s;
    };
    return level("L1d", c.l1d) + ", " + level("L2", c.l2) + ", " + level("L3", c.l3) + " (" + c.source + ")";
}

std::string describe(const Blocking& b) {
    return "wide: kc " + std::to_string(b.kc) + ", nc " + std::to_string(b.nc) +
           "; narrow: " + std::to_string(b.panel_mc) + " rows × " + std::to_string(b.panel_kc) +
           " deep; fused: " + std::to_string(b.fused_rows) + " query rows × " + std::to_string(b.panel_kc) +
           " keys; decode: " + std::to_string(b.decode_keys) + " keys per block";
}

}  // namespace attn::simd
