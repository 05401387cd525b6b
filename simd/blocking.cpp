// simd/blocking.cpp — how big the blocks are, from the caches of the running CPU.
//
// The GEMM (simd/gemm.cpp) keeps three things in three caches while the microkernel runs:
//
//   - a micro-panel of B, kc × NR floats, reused by every MR-row strip of the A block → L1;
//   - the block of A, mc × kc floats, reused by every micro-panel of B → L2;
//   - the packed block of B, kc × nc floats, reused by every block of A → L3.
//
// After the analytical model of Low, Igual, Smith and Quintana-Ortí ("Analytical Modeling Is Enough
// for High-Performance BLIS", ACM TOMS 43(2), 2016), a cache of W ways is shared out by ways, not by
// bytes: what must stay gets whole ways, what streams through gets the rest, and one way is left
// for everything else (the C tile, the stack). With N = bytes / (W · line) sets, w ways hold
// w · N · line bytes.
//
//   L1 → kc. The B micro-panel (NR floats per step of p) must survive while an A strip (MR floats
//   per step) streams past it. Sharing W₁ − 1 ways in proportion NR : MR, B gets
//       w_B = ⌊(W₁ − 1) / (1 + MR/NR)⌋ ways,  so  kc = w_B · N₁ · line / (NR · 4 bytes).
//   Zen 3 (32 KiB, 8 ways, AVX2: NR = 16): w_B = ⌊7 / 1.375⌋ = 5 → kc = 5 · 64 · 64 / 64 = 320.
//
//   L2 → mc. The A block stays; the micro-panel of B passes through, taking ⌈kc·NR·4 / (N₂·line)⌉
//   ways; one more way is left free:
//       w_A = W₂ − 1 − ⌈kc·NR·4 / (N₂·line)⌉,  mc = ⌊w_A · N₂ · line / (kc · 4)⌋ rounded down to MR.
//   Zen 3 (512 KiB, 8 ways): the panel is 20 KiB = 1 way, w_A = 6 → mc = 6 · 1024 · 64 / 1280 = 306.
//
//   L3 → nc. L3 is shared by the cores (and, on a cloud machine, by neighbours the OS does not show):
//   the B block gets half of this core's share, nc = ⌊L3 / sharers / 2 / (kc · 4)⌋ rounded down to NR.
//
// The Intel Xeon of docs/performance.md (L1d 48 KiB 12-way, L2 2 MiB 16-way, AVX-512: NR = 32):
// w_B = ⌊11 · 32/38⌋ = 9 → kc = 9 · 64 · 64 / 128 = 288; the panel (36 KiB) takes 1 way of L2, w_A = 14
// → mc = 14 · 2048 · 64 / 1152 = 1592 → 1590.
//
// The fused kernel (simd/fused.cpp) multiplies a block of scores by a panel of V, BC × NR floats:
// the same situation as a micro-panel of B with keys for depth, so BC = kc. Its block of scores,
// BR × BC floats, is what stays in L2 between the three steps of a tile; it gets half of L2 (the
// other half holds the block's rows of Q and O and the panel being packed): BR = ⌊L2/2 / (BC · 4)⌋.
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
    // The largest mc and BR, multiples of MR themselves: a cap of 1024 rows clamped a big L2's BR
    // to a size the fused kernel refuses (L1 32 KiB with L2 2 MiB at NR = 32 gave 1024 = 170·6 + 4).
    constexpr std::size_t most_mc = 4096 / MR * MR, most_rows = 1024 / MR * MR;
    // L1 → kc: the B micro-panel gets its share of W₁ − 1 ways, in proportion NR : MR.
    const std::size_t l1_ways = std::max<std::size_t>(c.l1d.ways, 2);
    const std::size_t b_ways = std::max<std::size_t>((l1_ways - 1) * NR / (NR + MR), 1);
    const std::size_t kc =
        std::clamp(round_down(b_ways * sets(c.l1d) * c.l1d.line / (NR * F), 8), std::size_t{64}, std::size_t{1024});
    // L2 → mc: the A block gets what the passing B panel and one free way leave.
    const CacheLevel l2{c.l2.bytes / std::max<std::size_t>(c.l2.shared_by, 1), c.l2.ways, c.l2.line, 1};
    const std::size_t way2 = sets(l2) * l2.line;
    const std::size_t panel_ways = (kc * NR * F + way2 - 1) / way2;
    const std::size_t a_ways = l2.ways > panel_ways + 1 ? l2.ways - 1 - panel_ways : 1;
    const std::size_t mc = std::clamp(round_down(a_ways * way2 / (kc * F), MR), MR, most_mc);
    // L3 → nc: half of this core's share.
    const std::size_t l3_share = c.l3.bytes / std::max<std::size_t>(c.l3.shared_by, 1) / 2;
    const std::size_t nc = std::clamp(round_down(l3_share / (kc * F), NR), 8 * NR, std::size_t{8192});
    // The fused kernel: BC = kc (a panel of V in L1), BR × BC scores in half of L2.
    const std::size_t rows = std::clamp(round_down(l2.bytes / 2 / (kc * F), MR), MR, most_rows);
    return {kc, mc, nc, rows, kc};
}

void check_blocking(const char* who, const Blocking& b, const std::size_t NR) {
    const auto fail = [&](const std::string& what) {
        throw std::invalid_argument(std::string(who) + ": block sizes " + describe(b) + ": " + what);
    };
    if (b.kc == 0 || b.fused_keys == 0) fail("kc and the keys per tile must be at least 1");
    if (b.mc == 0 || b.mc % MR || b.fused_rows == 0 || b.fused_rows % MR)
        fail("mc and the query rows per block must be positive multiples of MR = " + std::to_string(MR));
    if (b.nc == 0 || b.nc % NR) fail("nc must be a positive multiple of NR = " + std::to_string(NR));
}

std::size_t balanced_rows(std::size_t rows, std::size_t most, std::size_t threads, std::size_t blocks_per_thread) {
    threads = std::max<std::size_t>(threads, 1);
    std::size_t blocks = std::max((rows + most - 1) / most, threads * blocks_per_thread);
    blocks = (blocks + threads - 1) / threads * threads;
    const std::size_t size = ((rows + blocks - 1) / blocks + MR - 1) / MR * MR;
    return std::clamp(size, MR, most);
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
    return "kc " + std::to_string(b.kc) + ", mc " + std::to_string(b.mc) + ", nc " + std::to_string(b.nc) +
           "; fused: " + std::to_string(b.fused_rows) + " query rows × " + std::to_string(b.fused_keys) + " keys";
}

}  // namespace attn::simd
