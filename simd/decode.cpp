// simd/decode.cpp — decoding: a few query rows against a long cache of keys and values.
//
// A model that has read S tokens makes the next one: one query row per head (L = 1, or a few with
// speculative decoding) attends to the S cached keys and values. Each cached number is read once and
// used for two flops (one in q·k_j, one in the weighted sum), so memory, not arithmetic, sets the
// pace: the loops here are made to read the cache once, and to keep every thread reading.
//
// Grouped heads. The G query heads that share a key/value head are contiguous in the (B, H, L, E)
// layout, so their G·L rows form one matrix; every key and value row read is used at once for all of
// them (a group, below: `rows` = G·L query rows, one key/value head).
//
// Split the keys, merge the softmaxes. One group has too few rows to share over threads, so the keys
// are cut instead: blocks of blocking.decode_keys keys, and a unit of work is one (group, block).
// Each unit computes, for every query row, the online softmax's three numbers over its keys alone:
//     m_b = max_j s_j,   ℓ_b = Σ_j e^(s_j − m_b),   o_b = Σ_j e^(s_j − m_b)·v_j.
// Then the blocks of a group are merged, exactly as simd/fused.cpp merges one tile into the running
// sums: with m = max_b m_b, each block's terms e^(s_j − m_b) become e^(s_j − m) = e^(s_j − m_b)·e^(m_b − m),
// so rescaling ℓ_b and o_b by e^(m_b − m) and adding gives the sums of one pass over every key:
//     ℓ = Σ_b ℓ_b·e^(m_b − m),   o = Σ_b o_b·e^(m_b − m),   O = o / ℓ = softmax(s)·V.
// In symbols, for blocks $b$: $m = \max_b m_b$, $\ell = \sum_b \ell_b\, e^{m_b - m}$, $o = \sum_b o_b\, e^{m_b - m}$.
// It is the lesson's online softmax once more, with the blocks side by side instead of one after
// another. The merge adds the blocks in their order, whichever thread computed them, so the result
// is the same bits for any number of threads (only the rounding differs from one pass: float sums
// in another order). The scores stay in natural units, s = scale·q·k + term, the float naive adds up,
// and the exponentials take e^(s − m) (exp_and_sum): multiplying each score by log₂e first, to use
// the cheaper 2^ of simd/exp.hpp, would overflow a finite term past FLT_MAX/log₂e (2.4e38 becomes
// +∞, a row of float32's lowest value −∞), where naive's answer is finite. e^ takes four vector
// operations a batch more than 2^: a few a key, beside the 2·E cached numbers each key brings
// (BM_decode).
//
// Causal (top-left, as the rest of the library): row r of a group is position i = r mod L of its
// head and sees keys 0..i; a key it may not see gets the score −∞ (weight 0). A block no row of the
// group may see is skipped (m_b = −∞, ℓ_b = 0). Terms (a mask): each query row has its own pointer
// into the caller's mask (simd.hpp's DecodeProblem), added after the product is rounded, as naive
// adds them. A row whose every score is −∞ ends with ℓ = 0: output 0, L = −∞.
//
// The cache's type. A float cache is read in place. A 16-bit one is converted in registers as it
// is read, never stored as floats: 2·W numbers are loaded as W 32-bit lanes, each lane holding an
// even-numbered element in its low half and the next one in its high half. For bfloat16, the top
// 16 bits of a float, the even elements are the lanes shifted left by 16 and the odd ones the lanes
// with the low half cleared: two integer operations for 2·W floats. For float16, each half moved to
// the float's exponent and mantissa positions (sign to bit 31, the 15 other bits shifted left by
// 13) is a float 2¹¹² times too small (its exponent's bias is 15, a float's 127), subnormals
// included; one multiply by 2¹¹² makes it exact. A float16 ±∞ or NaN (exponent field 31) would come
// out finite, so those lanes get their exponent field raised to a float's 255 first (three integer
// operations): the kernel's norms then see them, and the caller refuses the cache. A converted row
// thus has its elements in "pair order": in each full chunk of 2·W, the W even ones, then the W odd
// ones; the tail after the last full chunk stays as it is. Dot products do not care about order as
// long as the query rows are put in the same order (once per unit), and the unnormalised outputs o
// are summed in pair order and put back in place by the merge. Most instruction sets also have one
// instruction that converts W float16 numbers to floats in place order, exactly, ±∞ and NaN kept
// (vcvtph2ps with AVX-512 or F16C, fcvtl on AArch64; simd/kernels.hpp's f16_instructions): where the
// kernels are built for it, a float16 step is two of those, its rows stay in place order as a float
// row's do, and the integer conversion above serves the others, SSE2 (BM_decode/f16).
//
// Tiles. A dot product ends in a sum across the lanes of its accumulator, as costly as several
// multiply-adds; the scores are therefore taken a tile of keys at a time, the tile's rows × keys
// accumulators filling W, and their W lane sums done at once (xsimd::haddp). The same for the norms
// below, W rows at a time.
//
// Checks. The caller must refuse a cache holding NaN or ±inf, or one whose products could leave the
// float range (attention/guards.cpp), before it trusts the result; reading the cache once more for
// that would double the memory traffic, so each unit also measures the largest norm of the key and
// value rows it reads (a float sum of squares, as each row is first read), and the call returns the
// largest per group. A block no row may see (causal) is still read for them.
//
// Scratch: per thread, a block's scores (rows × decode_keys), its o_b (rows × d_v) and, for a 16-bit
// cache, the group's queries in pair order; on the calling thread, each unit's (m, ℓ, o) for every
// row and its two norms. simd/scratch.hpp's decode_scratch, which decode_scratch_bytes budgets.
// BM_decode (bench/bench_decode.cpp) measures the kernel, in GB/s of cache read.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "matrix/norms.hpp"
#include "simd/batch.hpp"
#include "simd/bf16.hpp"
#include "simd/kernels.hpp"
#include "simd/score_terms.hpp"
#include "simd/scratch.hpp"
#include "simd/threads.hpp"

namespace attn::simd::ATTN_ISA {

namespace {

// How far ahead of its reading the norm pass asks for the cache's rows (prefetch_row), in bytes
// whatever the type: a 16-bit cache keeps as many bytes on their way as a float one (BM_decode).
constexpr std::size_t prefetch_bytes = 8192;

template <Storage type>
constexpr std::size_t element_bytes = type == Storage::f32 ? sizeof(float) : sizeof(std::uint16_t);
constexpr std::size_t pair_chunk = 2 * W;  // elements per chunk of the pair order

// Whether the kernel reads a row of this type in place order (a float row; float16 with f16_batch)
// rather than in pair order (simd/scratch.hpp).
template <Storage type>
constexpr bool in_place_order = !reads_in_pair_order(type, f16_instructions);

// The loops below take a cached row a step at a time: W floats of a float row, or one chunk of 2·W
// elements of a 16-bit one, converted in registers into two batches (its even and odd elements).
template <Storage type>
constexpr std::size_t parts = type == Storage::f32 ? 1 : 2;  // batches a step
template <Storage type>
constexpr std::size_t step = parts<type>* W;  // elements a step

using Buffer = ScratchBuffer;
using Lanes = xsimd::batch<std::uint32_t>;
using Halves = xsimd::batch<std::uint16_t>;

// One thread's scratch, kept from call to call.
struct Scratch {
    Buffer scores, queries, outputs;
    // outputs: a block's o (rows × d_v), summed here and written to the unit's place once
    void fit(const DecodeScratch<std::size_t>& size) {
        const auto grow = [](Buffer& b, std::size_t n) {
            if (b.size() < n) grow_exactly(b, n);
        };
        grow(scores, size.scores);
        grow(queries, size.rows);  // a float cache: none
        grow(outputs, size.outputs);
    }
};

// Where element k of an n-wide row lies in pair order: the even elements of its chunk first, then
// the odd ones; the tail after the last full chunk in place.
template <Storage type>
std::size_t pair_position(std::size_t k, std::size_t n) {
    if constexpr (in_place_order<type>) return k;
    const std::size_t chunk = k / pair_chunk * pair_chunk, t = k - chunk;
    if (chunk + pair_chunk > n) return k;
    return chunk + (t % 2 == 0 ? t / 2 : W + t / 2);
}

float from_bits(std::uint32_t bits) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}

// A float16's 15 bits below the sign, moved to a float's (<< 13): its exponent field 31 (±∞, NaN)
// raised to 255, which no multiply changes. Bit 28 is set by the add exactly when the field is 31.
template <class Bits>
Bits with_infinity(Bits magnitude) {
    const Bits carry = (magnitude + Bits(0x00800000u)) & Bits(0x10000000u);
    return magnitude | ((carry << 3) - carry);  // 7·2²⁸: the field + 224
}

// Element k of a cached row as a float: the scalar form of step_at, for the tail after its last step.
template <Storage type>
float element_at(const void* row, std::size_t k) {
    if constexpr (type == Storage::f32) return static_cast<const float*>(row)[k];
    const std::uint16_t h = static_cast<const std::uint16_t*>(row)[k];
    if constexpr (type == Storage::bf16) return from_bits(std::uint32_t{h} << 16);
    else
        return from_bits((std::uint32_t(h & 0x8000u) << 16) | with_infinity(std::uint32_t(h & 0x7FFFu) << 13)) *
               0x1p112f;
}

#ifdef ATTN_F16_INSTRUCTIONS
// W float16 numbers from `halves` as W floats, exactly (simd/kernels.hpp's f16_instructions).
Batch f16_batch(const std::uint16_t* halves) {
#if defined(__AVX512F__)
    return Batch(_mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(static_cast<const void*>(halves)))));
#elif defined(__F16C__)
    return Batch(_mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(static_cast<const void*>(halves)))));
#else
    return Batch(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(halves))));  // AArch64: fcvtl
#endif
}
#endif

// The step of a cached row at element k, as floats in the kernel's order: a float row's W floats; a
// 16-bit row's 2·W elements, never stored: as the W even ones, then the W odd ones (pair order), or
// converted in place by one instruction (f16_batch).
template <Storage type>
std::array<Batch, parts<type>> step_at(const void* row, std::size_t k) {
    if constexpr (type == Storage::f32) {
        return {Batch::load_unaligned(static_cast<const float*>(row) + k)};
#ifdef ATTN_F16_INSTRUCTIONS
    } else if constexpr (in_place_order<type>) {  // float16 with f16_batch: elements k .. k + 2·W in place
        const std::uint16_t* halves = static_cast<const std::uint16_t*>(row) + k;
        return {f16_batch(halves), f16_batch(halves + W)};
#endif
    } else {
        // one load of 2·W halves, straight from the cache (a copy through the stack, which GCC makes in
        // two halves for AVX2, would be read back whole before the halves reach it: a stall a step)
        const Lanes u = xsimd::bitwise_cast<Lanes>(Halves::load_unaligned(static_cast<const std::uint16_t*>(row) + k));
        if constexpr (type == Storage::bf16) {
            return {xsimd::bitwise_cast<Batch>(u << 16), xsimd::bitwise_cast<Batch>(u & Lanes(0xFFFF0000u))};
        } else {
            const Batch scale(0x1p112f);
            const Lanes low = ((u & Lanes(0x8000u)) << 16) | with_infinity((u & Lanes(0x7FFFu)) << 13);
            const Lanes high = (u & Lanes(0x80000000u)) | with_infinity((u >> 3) & Lanes(0x0FFFE000u));
            return {xsimd::bitwise_cast<Batch>(low) * scale, xsimd::bitwise_cast<Batch>(high) * scale};
        }
    }
}

// Row j of group g of a cache of n-wide rows.
template <Storage type>
const void* row_at(const void* cache, std::size_t g, std::size_t keys, std::size_t j, std::size_t n) {
    return static_cast<const char*>(cache) + (g * keys + j) * n * element_bytes<type>;
}

// Ask for the cache lines of row j of group g ahead of their use: the unit reads its keys (then its
// values) as one stream, but spends long enough on each row that the hardware prefetchers alone do
// not keep enough lines in flight (BM_decode).
template <Storage type>
void prefetch_row(const void* cache, std::size_t g, std::size_t keys, std::size_t j, std::size_t n) {
    if (j >= keys) return;
    const char* row = static_cast<const char*>(row_at<type>(cache, g, keys, j, n));
    for (std::size_t at = 0; at < n * element_bytes<type>; at += 64) __builtin_prefetch(row + at);
}

// The rows of n elements prefetch_bytes span (at least one): how far ahead of row j the norm pass
// asks for a row. Computed once a unit: a division a row would cost more than the prefetch.
template <Storage type>
std::size_t rows_ahead(std::size_t n) {
    const std::size_t row_bytes = n * element_bytes<type>;
    return std::max<std::size_t>(1, (prefetch_bytes + row_bytes - 1) / row_bytes);
}

// A unit's place: group g, keys [j0, j0 + count), its (m, ℓ, o) for every row at `partial`.
struct Unit {
    std::size_t g, j0, count;
    float* partial;  // m[rows], then ℓ[rows], then o[rows × d_v]
    double* norms;   // the largest ‖k_j‖² and ‖v_j‖² of its keys and values
};

// How many of the unit's keys row r may see: causal, keys up to its position; else all.
std::size_t visible_keys(const DecodeProblem& p, const Unit& u, std::size_t r) {
    if (!p.causal) return u.count;
    const std::size_t last = r % p.positions;  // the row's position: it sees keys 0..last
    return last >= u.j0 ? std::min(u.count, last + 1 - u.j0) : 0;
}

// The group's query rows in the kernel's order: in place, or in pair order as the cache's rows.
template <Storage type>
const float* query_rows(const DecodeProblem& p, std::size_t g, Scratch& s) {
    const float* Q = p.Q + g * p.rows * p.d_k;
    if constexpr (in_place_order<type>) return Q;
    for (std::size_t r = 0; r < p.rows; ++r)
        for (std::size_t k = 0; k < p.d_k; ++k) s.queries[r * p.d_k + pair_position<type>(k, p.d_k)] = Q[r * p.d_k + k];
    return s.queries.data();
}

// The group's rows go past each key tile or value row in passes of at most this many: one
// accumulator per query row and key (or one row of o), each cached step loaded once per pass.
constexpr std::size_t rows_per_pass = 4;

// A tile of keys holds as many keys as make one batch of sums with the pass's N rows: W / N keys
// (4 keys × 4 rows at 16 floats a batch, 16 keys × 1 row; 1 × 4 at 4 floats: SSE2, NEON).
template <std::size_t N>
constexpr std::size_t keys_per_tile = std::max<std::size_t>(1, W / N);

// Where xsimd::haddp puts the sum of its batch i. It should be lane i, but xsimd 8.1's AVX-512
// version swaps lanes 2-3 with 4-5 in each eight; found once, by summing unit vectors, so the sums
// are read from wherever the xsimd at hand puts them.
const std::array<std::size_t, W>& haddp_lanes() {
    static const std::array<std::size_t, W> lanes = [] {
        Batch unit[W];
        for (std::size_t i = 0; i < W; ++i) {
            float lane0[W] = {};
            lane0[0] = float(i);
            unit[i] = Batch::load_unaligned(lane0);
        }
        float sums[W];
        xsimd::haddp(unit).store_unaligned(sums);
        std::array<std::size_t, W> where{};
        for (std::size_t lane = 0; lane < W; ++lane) where[std::size_t(sums[lane])] = lane;
        return where;
    }();
    return lanes;
}

// Every batch of acc set to 0 by W assignments, not a loop: GCC makes such a loop a memset of the
// array in memory (rep stos) before every tile of keys, though key_tile keeps acc in registers.
template <std::size_t... i>
void clear_accumulators(Batch (&acc)[W], std::index_sequence<i...>) {
    ((acc[i] = Batch(0.0f)), ...);
}

// One tile of the scores: out[r·stride + t] = q_r·k_t for rows [0, N) and the tile's keys, rows
// j .. j + count of group g (count ≤ keys_per_tile<N>; a short tile repeats its last key and drops
// those sums). Each sum is its accumulator's lanes added by one tree, the same for every row and
// key, then the tail after the last step in order: no sum depends on the rows or keys beside it.
template <Storage type, std::size_t N>
void key_tile(const DecodeProblem& p, const float* q, std::size_t g, std::size_t j, std::size_t count, float* out,
              std::size_t stride) {
    constexpr std::size_t T = keys_per_tile<N>;
    const std::size_t d = p.d_k;
    const void* key[T];
    for (std::size_t t = 0; t < T; ++t) key[t] = row_at<type>(p.K, g, p.keys, j + std::min(t, count - 1), d);
    Batch acc[W];  // acc[r·T + t]; those past N·T stay 0
    clear_accumulators(acc, std::make_index_sequence<W>{});
    std::size_t k = 0;
    for (; k + step<type> <= d; k += step<type>)
        for (std::size_t t = 0; t < T; ++t) {
            const auto kc = step_at<type>(key[t], k);
            for (std::size_t r = 0; r < N; ++r)
                for (std::size_t part = 0; part < parts<type>; ++part)
                    acc[r * T + t] =
                        xsimd::fma(Batch::load_unaligned(q + r * d + k + part * W), kc[part], acc[r * T + t]);
        }
    float sums[W];  // Σ lanes of acc[i] for every i at once, by one tree of shuffles and adds
    xsimd::haddp(acc).store_unaligned(sums);
    const std::array<std::size_t, W>& lane = haddp_lanes();
    for (std::size_t r = 0; r < N; ++r)
        for (std::size_t t = 0; t < count; ++t) {
            float sum = sums[lane[r * T + t]];
            for (std::size_t tail = k; tail < d; ++tail)
                sum = std::fma(q[r * d + tail], element_at<type>(key[t], tail), sum);
            out[r * stride + t] = sum;
        }
}

// Σ x_e² over the steps of a cached row before element k, lane by lane. A bfloat16 row, where the
// CPU has vdpbf16ps (simd/bf16.hpp), is squared as it is stored, two elements a lane and no
// conversion: each product is exact, a subnormal reads as 0 (which the checks, looking at the top of
// the float range, never miss), and the two of a lane are added odd first.
template <Storage type>
Batch row_squares(const void* row, std::size_t k) {
    Batch squares(0.0f);
#ifdef __AVX512BF16__
    if constexpr (type == Storage::bf16) {
        for (std::size_t e = 0; e < k; e += step<type>) {  // W lanes of two elements a step, as stored
            const Batch x =
                xsimd::bitwise_cast<Batch>(Halves::load_unaligned(static_cast<const std::uint16_t*>(row) + e));
            squares = PairStep::apply(x, x, squares);
        }
        return squares;
    }
#endif
    for (std::size_t e = 0; e < k; e += step<type>)
        for (const Batch x : step_at<type>(row, e)) squares = xsimd::fma(x, x, squares);
    return squares;
}

// The largest ‖x‖² of rows j .. j + count (count ≤ W) of group g of a cache of n-wide rows, for the
// caller's checks: each row's squares summed by row_squares, then across lanes (a short tile
// repeats its last row), a sum past the float range (±∞, NaN, or squares above FLT_MAX) summed again
// in double, so that the caller sees what the row holds. The first to read these rows: each is read
// from start to end, one stream, and the row `ahead` rows further (rows_ahead) is asked for as it is.
template <Storage type>
double largest_square(const void* cache, std::size_t g, std::size_t keys, std::size_t j, std::size_t count,
                      std::size_t n, std::size_t ahead) {
    const auto row = [&](std::size_t t) { return row_at<type>(cache, g, keys, j + std::min(t, count - 1), n); };
    Batch acc[W];
    const std::size_t k = n / step<type> * step<type>;  // where the tail starts
    for (std::size_t t = 0; t < W; ++t) {
        if (t < count) prefetch_row<type>(cache, g, keys, j + t + ahead, n);
        acc[t] = row_squares<type>(row(t), k);
    }
    const Batch total = xsimd::haddp(acc);  // the W sums, as key_tile's
    float sums[W];
    total.store_unaligned(sums);
    if (k == n && xsimd::all(xsimd::isfinite(total)))  // the common case: the largest of the W (repeats too)
        return *std::max_element(sums, sums + W);
    double largest = 0.0;
    for (std::size_t t = 0; t < count; ++t) {
        const auto x = [&](std::size_t e) { return element_at<type>(row(t), e); };
        float sum = sums[haddp_lanes()[t]];
        for (std::size_t tail = k; tail < n; ++tail) sum = std::fma(x(tail), x(tail), sum);
        double square = sum;
        if (!std::isfinite(sum)) {
            square = 0.0;
            for (std::size_t e = 0; e < n; ++e) square += double(x(e)) * x(e);
        }
        largest = larger_norm(largest, square);
    }
    return largest;
}

// pass<N>(r0) for the rows in passes of rows_per_pass, the last one shorter.
template <class Pass>
void in_passes(std::size_t rows, Pass&& pass) {
    std::size_t r0 = 0;
    for (; r0 + rows_per_pass <= rows; r0 += rows_per_pass)
        pass(std::integral_constant<std::size_t, rows_per_pass>{}, r0);
    switch (rows - r0) {
        case 3: return pass(std::integral_constant<std::size_t, 3>{}, r0);
        case 2: return pass(std::integral_constant<std::size_t, 2>{}, r0);
        case 1: return pass(std::integral_constant<std::size_t, 1>{}, r0);
        default: return;
    }
}

// [decode scores] s_rj = scale·q_r·k_j (+ term) for the unit's keys, every row of the
// group against each tile of keys as it is read; −∞ where the row may not look (causal). W keys at a
// time: their norms first (which brings them into L1), then their tiles.
template <Storage type>
void block_scores(const DecodeProblem& p, const Unit& u, const float* q, Scratch& s) {
    double largest = 0.0;  // kept here, stored once: units side by side share the cache line of u.norms
    const std::size_t ahead = rows_ahead<type>(p.d_k);
    for (std::size_t j0 = 0; j0 < u.count; j0 += W) {
        const std::size_t rows = std::min(W, u.count - j0);
        largest = larger_norm(largest, largest_square<type>(p.K, u.g, p.keys, u.j0 + j0, rows, p.d_k, ahead));
        in_passes(p.rows, [&](auto N, std::size_t r0) {
            for (std::size_t jj = j0; jj < j0 + rows; jj += keys_per_tile<N>)
                key_tile<type, N>(p, q + r0 * p.d_k, u.g, u.j0 + jj, std::min(keys_per_tile<N>, j0 + rows - jj),
                                  s.scores.data() + r0 * u.count + jj, u.count);
        });
    }
    u.norms[0] = largest;
    for (std::size_t r = 0; r < p.rows; ++r) {
        float* row = s.scores.data() + r * u.count;
        const std::size_t visible = visible_keys(p, u, r);
        for (std::size_t jj = 0; jj < visible; ++jj) row[jj] *= p.scale;
        std::fill(row + visible, row + u.count, neg_inf);
    }
    if (!p.row_terms) return;
    for (std::size_t r = 0; r < p.rows; ++r) {
        const ScoreTerms& terms = p.row_terms[u.g * p.rows + r];
        add_terms(s.scores.data() + r * u.count, visible_keys(p, u, r), terms,
                  static_cast<std::ptrdiff_t>(u.j0) * terms.col_stride, terms.col_stride, 1.0f);
    }
}

// [decode softmax] The block's m_b and ℓ_b per row; its scores become the weights e^(s − m_b).
void block_softmax(const DecodeProblem& p, const Unit& u, Scratch& s) {
    float *m = u.partial, *l = u.partial + p.rows;
    for (std::size_t r = 0; r < p.rows; ++r) {
        const std::span<float> row(s.scores.data() + r * u.count, u.count);
        m[r] = row_max(row);
        l[r] = m[r] == neg_inf ? 0.0f : exp_and_sum(row, m[r]);  // a row that sees nothing: ℓ_b = 0
        if (m[r] == neg_inf) std::fill(row.begin(), row.end(), 0.0f);
    }
}

// Rows [0, N) of o gain Σ_t w_rt·v_t over a tile of `count` value rows from `first`, o_r held in
// registers across the tile: each step of o is loaded and stored once a tile, not once a key, and
// each step of a value row loaded (and converted) once for the N rows. Every element adds its keys
// in their order.
template <Storage type, std::size_t N>
void value_tile(const float* weights, std::size_t weight_stride, const void* first, std::size_t count, std::size_t d,
                float* o) {
    const auto row = [&](std::size_t t) { return static_cast<const char*>(first) + t * d * element_bytes<type>; };
    std::size_t k = 0;
    for (; k + step<type> <= d; k += step<type>) {
        Batch acc[N][parts<type>];
        for (std::size_t r = 0; r < N; ++r)
            for (std::size_t part = 0; part < parts<type>; ++part)
                acc[r][part] = Batch::load_unaligned(o + r * d + k + part * W);
        for (std::size_t t = 0; t < count; ++t) {
            const auto v = step_at<type>(row(t), k);
            for (std::size_t r = 0; r < N; ++r)
                for (std::size_t part = 0; part < parts<type>; ++part)
                    acc[r][part] = xsimd::fma(Batch(weights[r * weight_stride + t]), v[part], acc[r][part]);
        }
        for (std::size_t r = 0; r < N; ++r)
            for (std::size_t part = 0; part < parts<type>; ++part)
                acc[r][part].store_unaligned(o + r * d + k + part * W);
    }
    for (; k < d; ++k)
        for (std::size_t r = 0; r < N; ++r)
            for (std::size_t t = 0; t < count; ++t)
                o[r * d + k] = std::fma(weights[r * weight_stride + t], element_at<type>(row(t), k), o[r * d + k]);
}

// [decode values] o_b = Σ_j e^(s_j − m_b)·v_j per row, each value row read once for the group, W
// rows a tile: their norms first (which brings them into L1), then the tile (a masked key's weight
// is 0 and adds exactly nothing: the values are finite, or refused after). o_b is summed in the
// thread's scratch and written to the unit's place once: the units side by side in the calling
// thread's buffer share cache lines, which two threads storing a tile at a time would pass back and
// forth (BM_decode, one head on 2 threads).
template <Storage type>
void block_values(const DecodeProblem& p, const Unit& u, Scratch& s) {
    float* o = s.outputs.data();
    std::fill(o, o + p.rows * p.d_v, 0.0f);
    double largest = 0.0;  // stored once, as block_scores does
    const std::size_t ahead = rows_ahead<type>(p.d_v);
    for (std::size_t j0 = 0; j0 < u.count; j0 += W) {
        const std::size_t count = std::min(W, u.count - j0);
        const void* first = row_at<type>(p.V, u.g, p.keys, u.j0 + j0, p.d_v);
        largest = larger_norm(largest, largest_square<type>(p.V, u.g, p.keys, u.j0 + j0, count, p.d_v, ahead));
        in_passes(p.rows, [&](auto N, std::size_t r0) {
            value_tile<type, N>(s.scores.data() + r0 * u.count + j0, u.count, first, count, p.d_v, o + r0 * p.d_v);
        });
    }
    std::copy(o, o + p.rows * p.d_v, u.partial + 2 * p.rows);
    u.norms[1] = largest;
}

// A block no row may see (causal): m_b = −∞, ℓ_b = 0, o_b = 0, and its rows read only for their norms.
template <Storage type>
void unseen_block(const DecodeProblem& p, const Unit& u) {
    std::fill(u.partial, u.partial + p.rows, neg_inf);
    std::fill(u.partial + p.rows, u.partial + 2 * p.rows + p.rows * p.d_v, 0.0f);
    double keys = 0.0, values = 0.0;  // stored once, as block_scores does
    const std::size_t key_ahead = rows_ahead<type>(p.d_k), value_ahead = rows_ahead<type>(p.d_v);
    for (std::size_t j0 = 0; j0 < u.count; j0 += W) {
        const std::size_t count = std::min(W, u.count - j0);
        keys = larger_norm(keys, largest_square<type>(p.K, u.g, p.keys, u.j0 + j0, count, p.d_k, key_ahead));
        values = larger_norm(values, largest_square<type>(p.V, u.g, p.keys, u.j0 + j0, count, p.d_v, value_ahead));
    }
    u.norms[0] = keys;
    u.norms[1] = values;
}

// One unit, start to finish, on one thread.
template <Storage type>
void attend_block(const DecodeProblem& p, const Unit& u, Scratch& s) {
    u.norms[0] = u.norms[1] = 0.0;
    bool seen = false;  // whether any row of the group may see any of the keys (causal skips the rest)
    for (std::size_t r = 0; r < p.rows && !seen; ++r) seen = visible_keys(p, u, r) > 0;
    if (!seen) return unseen_block<type>(p, u);
    block_scores<type>(p, u, query_rows<type>(p, u.g, s), s);
    block_softmax(p, u, s);
    block_values<type>(p, u, s);
}

// [decode merge] Row r of group g from its blocks' (m_b, ℓ_b, o_b), in block order:
// m = max_b m_b, ℓ = Σ_b ℓ_b·e^(m_b − m), o = Σ_b o_b·e^(m_b − m), then O = o / ℓ and L = m + ln ℓ.
template <Storage type>
void merge_row(const DecodeProblem& p, const float* partials, std::size_t blocks, std::size_t unit_floats,
               std::size_t g, std::size_t r, float* sum) {
    const auto block = [&](std::size_t b) { return partials + (g * blocks + b) * unit_floats; };
    float m = neg_inf;
    for (std::size_t b = 0; b < blocks; ++b) m = std::max(m, block(b)[r]);
    float* out = p.O + (g * p.rows + r) * p.d_v;
    float* o = in_place_order<type> ? out : sum;  // an o in pair order is summed aside
    std::fill(o, o + p.d_v, 0.0f);
    float l = 0.0f;
    if (m != neg_inf)
        for (std::size_t b = 0; b < blocks; ++b) {
            const float m_b = block(b)[r], l_b = block(b)[p.rows + r];
            if (l_b == 0.0f) continue;               // a block this row saw nothing of
            const float factor = std::exp(m_b - m);  // 0 where m_b − m overflows to −∞
            l += l_b * factor;
            axpy(factor, block(b) + 2 * p.rows + r * p.d_v, o, p.d_v);
        }
    const float inverse = l > 0.0f ? 1.0f / l : 0.0f;  // a row that saw nothing (ℓ = 0) stays 0
    for (std::size_t k = 0; k < p.d_v; ++k) out[k] = o[pair_position<type>(k, p.d_v)] * inverse;
    if (p.log_sum_exp) {  // L = m + ln ℓ, and what its float leaves out (simd/score_terms.hpp)
        const LogSumExp L = log_sum_exp(m, l);
        p.log_sum_exp[(g * p.rows + r) * log_sum_exp_floats] = L.L;
        p.log_sum_exp[(g * p.rows + r) * log_sum_exp_floats + 1] = L.remainder;
    }
}

template <Storage type>
void decode(const DecodeProblem& p, Threads threads, const Blocking& blocking) {
    const std::size_t block = std::min(blocking.decode_keys, p.keys), blocks = (p.keys + block - 1) / block;
    const std::size_t units = p.groups * blocks, unit_floats = p.rows * (p.d_v + 2);
    const auto size = decode_scratch<std::size_t>(p.rows, block, units, p.d_k, p.d_v, !in_place_order<type>);
    thread_local Buffer partials;  // the calling thread's: every unit's (m, ℓ, o), then one row for the merge
    if (partials.size() < size.partials) grow_exactly(partials, size.partials);
    thread_local std::vector<double, ScratchAllocator<double>> norms;  // each unit's largest ‖k‖² and ‖v‖²
    if (const std::size_t doubles = size.norms * sizeof(float) / sizeof(double); norms.size() < doubles) {
        norms.reserve(doubles);
        norms.resize(doubles);
    }
    float* const results = partials.data();  // (a thread_local is not captured: each thread would see its own)
    double* const unit_norms = norms.data();
    [[maybe_unused]] const std::size_t team_size =
        threads == Threads::all ? decode_team(units, p.groups, p.rows, p.keys, p.d_k, p.d_v) : 1;
    // An OpenMP loop written here, not simd::for_each_in_team: its std::function would put code
    // compiled with this set's flags where the baseline's calls can reach it (check_isa_symbols).
#pragma omp parallel if (team_size > 1) num_threads(int(team_size))
    {
        record_team_size();
        thread_local Scratch scratch;
        scratch.fit(size);
#pragma omp for schedule(dynamic)
        for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(units); ++i) {
            const std::size_t g = std::size_t(i) / blocks, j0 = std::size_t(i) % blocks * block;
            attend_block<type>(
                p, {g, j0, std::min(block, p.keys - j0), results + std::size_t(i) * unit_floats, unit_norms + 2 * i},
                scratch);
        }
    }
    for (std::size_t g = 0; g < p.groups; ++g)
        for (std::size_t r = 0; r < p.rows; ++r)
            merge_row<type>(p, results, blocks, unit_floats, g, r, results + units * unit_floats);
    if (!p.largest_norms) return;
    for (std::size_t g = 0; g < p.groups; ++g) {  // the group's largest norms: the largest of its blocks'
        double key = 0.0, value = 0.0;
        for (std::size_t b = 0; b < blocks; ++b) {
            key = larger_norm(key, unit_norms[2 * (g * blocks + b)]);
            value = larger_norm(value, unit_norms[2 * (g * blocks + b) + 1]);
        }
        p.largest_norms[2 * g] = std::sqrt(key);
        p.largest_norms[2 * g + 1] = std::sqrt(value);
    }
}

}  // namespace

void decode_attention_into(const DecodeProblem& p, Threads threads, const Blocking& blocking) {
    check_blocking("decode_attention", blocking, 2 * W);  // NR = 2·W: the tile width the block sizes were made for
    if (p.groups == 0 || p.rows == 0 || p.d_v == 0) return;
    if (p.keys == 0) {  // no key at all: every row sees nothing
        std::fill(p.O, p.O + p.groups * p.rows * p.d_v, 0.0f);
        for (std::size_t r = 0; p.log_sum_exp && r < p.groups * p.rows; ++r) {
            p.log_sum_exp[r * log_sum_exp_floats] = neg_inf;  // L = −∞, and nothing left out
            p.log_sum_exp[r * log_sum_exp_floats + 1] = 0.0f;
        }
        return;
    }
    switch (p.type) {
        case Storage::f32: return decode<Storage::f32>(p, threads, blocking);
        case Storage::bf16: return decode<Storage::bf16>(p, threads, blocking);
        case Storage::f16: return decode<Storage::f16>(p, threads, blocking);
    }
}

}  // namespace attn::simd::ATTN_ISA
