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
// in another order). As in simd/fused.cpp the scores carry the factor log₂e (s·log₂e, multiplied in
// with the scale), so every e^ above is a 2^ (simd/exp.hpp), and m is in the same units.
//
// Causal (top-left, as the rest of the library): row r of a group is position i = r mod L of its
// head and sees keys 0..i; a key it may not see gets the score −∞ (weight 0). A block no row of the
// group may see is skipped (m_b = −∞, ℓ_b = 0). Terms (a mask): each query row has its own pointer
// into the caller's mask (simd.hpp's DecodeProblem), added times log₂e after the product is rounded,
// as simd/fused.cpp adds them. A row whose every score is −∞ ends with ℓ = 0: output 0, L = −∞.
//
// The cache's type. A float cache is read in place. A 16-bit one is converted a row at a time, and
// the conversion is the cheap part of the trick: 2·W numbers are loaded as W 32-bit lanes, each lane
// holding an even-numbered element in its low half and the next one in its high half. For bfloat16,
// the top 16 bits of a float, the even elements are the lanes shifted left by 16 and the odd ones the
// lanes with the low half cleared: two integer operations for 2·W floats. For float16, each half
// moved to the float's exponent and mantissa positions (sign to bit 31, the 15 other bits shifted
// left by 13) is a float 2¹¹² times too small (its exponent's bias is 15, a float's 127), subnormals
// included; one multiply by 2¹¹² makes it exact. A float16 ±∞ or NaN (exponent field 31) would come
// out finite, so those lanes get their exponent field raised to a float's 255 first (three integer
// operations): the kernel's norms then see them, and the caller refuses the cache. The converted row thus has its elements in
// "pair order": in each full chunk of 2·W, the W even ones, then the W odd ones; the tail after the
// last full chunk stays as it is. Dot products do not care about order as long as the query rows are
// put in the same order (once per unit), and the unnormalised outputs o are summed in pair order and
// put back in place by the merge. (F16C and AVX-512 have an instruction that converts float16 in
// place order; this one conversion serves every instruction set instead, and costs as little.)
//
// Checks. The caller must refuse a cache holding NaN or ±inf, or one whose products could leave the
// float range (attention/guards.cpp), before it trusts the result; reading the cache once more for
// that would double the memory traffic, so each unit also measures the largest norm of the key and
// value rows it reads (a float sum of squares, from data already in L1), and the call returns the
// largest per group. A block no row may see (causal) is still read for them.
//
// Scratch: per thread, a block's scores (rows × decode_keys) and, for a 16-bit cache, one key and one
// value row as floats and the group's queries in pair order; on the calling thread, each unit's
// (m, ℓ, o) for every row and its two norms. simd/scratch.hpp's decode_scratch, which decode_scratch_bytes budgets.
// BM_decode (bench/bench_decode.cpp) measures the kernel, in GB/s of cache read.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "simd/batch.hpp"
#include "simd/kernels.hpp"
#include "simd/score_terms.hpp"
#include "simd/scratch.hpp"
#include "simd/threads.hpp"

namespace attn::simd::ATTN_ISA {

namespace {

constexpr float log2e = 1.44269504f;
constexpr std::size_t prefetch_rows = 8;  // how far ahead prefetch_row asks, in cached rows

template <Storage type>
constexpr std::size_t element_bytes = type == Storage::f32 ? sizeof(float) : sizeof(std::uint16_t);
constexpr std::size_t pair_chunk = 2 * W;  // elements per chunk of the pair order

using Buffer = ScratchBuffer;
using Lanes = xsimd::batch<std::uint32_t>;

// One thread's scratch, kept from call to call.
struct Scratch {
    Buffer scores, key, value, queries;
    void fit(const DecodeScratch<std::size_t>& size, std::size_t d_k, std::size_t d_v) {
        const auto grow = [](Buffer& b, std::size_t n) {
            if (b.size() < n) grow_exactly(b, n);
        };
        grow(scores, size.scores);
        if (size.rows == 0) return;  // a float cache: nothing converted
        grow(key, d_k);
        grow(value, decode_value_tile * d_v);
        grow(queries, size.rows - d_k - decode_value_tile * d_v);
    }
};

// Where element k of an n-wide row lies in pair order: the even elements of its chunk first, then
// the odd ones; the tail after the last full chunk in place.
std::size_t pair_position(std::size_t k, std::size_t n) {
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

// One 16-bit element as a float, the scalar form of the lane tricks above.
template <Storage type>
float widened(std::uint16_t h) {
    if constexpr (type == Storage::bf16) return from_bits(std::uint32_t{h} << 16);
    else
        return from_bits((std::uint32_t(h & 0x8000u) << 16) | with_infinity(std::uint32_t(h & 0x7FFFu) << 13)) *
               0x1p112f;
}

// 2·W elements from `from` as two batches of floats: the even elements and the odd ones.
template <Storage type>
void widen_chunk(const std::uint16_t* from, float* even, float* odd) {
    std::uint32_t lanes[W];
    std::memcpy(lanes, from, sizeof lanes);  // one unaligned load of 2·W halves
    const Lanes u = Lanes::load_unaligned(lanes);
    if constexpr (type == Storage::bf16) {
        xsimd::bitwise_cast<Batch>(u << 16).store_unaligned(even);
        xsimd::bitwise_cast<Batch>(u & Lanes(0xFFFF0000u)).store_unaligned(odd);
    } else {
        const Batch scale(0x1p112f);
        const Lanes low = ((u & Lanes(0x8000u)) << 16) | with_infinity((u & Lanes(0x7FFFu)) << 13);
        const Lanes high = (u & Lanes(0x80000000u)) | with_infinity((u >> 3) & Lanes(0x0FFFE000u));
        (xsimd::bitwise_cast<Batch>(low) * scale).store_unaligned(even);
        (xsimd::bitwise_cast<Batch>(high) * scale).store_unaligned(odd);
    }
}

// A 16-bit row of n elements as floats in pair order.
template <Storage type>
void widen_row(const std::uint16_t* from, std::size_t n, float* to) {
    std::size_t k = 0;
    for (; k + pair_chunk <= n; k += pair_chunk) widen_chunk<type>(from + k, to + k, to + k + W);
    for (; k < n; ++k) to[k] = widened<type>(from[k]);
}

// Ask for the cache lines of row j of group g (n elements of `bytes` each) ahead of their use: the
// unit reads its keys (then its values) as one stream, but spends long enough on each row that the
// hardware prefetchers alone do not keep enough lines in flight (BM_decode).
void prefetch_row(const void* cache, std::size_t g, std::size_t keys, std::size_t j, std::size_t n, std::size_t bytes) {
    if (j >= keys) return;
    const char* row = static_cast<const char*>(cache) + (g * keys + j) * n * bytes;
    for (std::size_t at = 0; at < n * bytes; at += 64) __builtin_prefetch(row + at);
}

// Row j of group g of a cache of n-wide rows, as floats in the kernel's order: a float cache's row in
// place, a 16-bit one converted into `buffer`.
template <Storage type>
const float* cached_row(const void* cache, std::size_t g, std::size_t keys, std::size_t j, std::size_t n,
                        float* buffer) {
    const std::size_t at = (g * keys + j) * n;
    if constexpr (type == Storage::f32) return static_cast<const float*>(cache) + at;
    widen_row<type>(static_cast<const std::uint16_t*>(cache) + at, n, buffer);
    return buffer;
}

// A unit's place: group g, keys [j0, j0 + count), its (m, ℓ, o) for every row at `partial`.
struct Unit {
    std::size_t g, j0, count;
    float* partial;  // m[rows], then ℓ[rows], then o[rows × d_v]
    double* norms;   // the largest ‖k_j‖² and ‖v_j‖² of its keys and values
};

// The larger of a and b, a NaN winning: it is to be reported, never passed over.
double larger(double a, double b) { return std::isnan(a) || a >= b ? a : b; }

// How many of the unit's keys row r may see: causal, keys up to its position; else all.
std::size_t visible_keys(const DecodeProblem& p, const Unit& u, std::size_t r) {
    if (!p.causal) return u.count;
    const std::size_t last = r % p.positions;  // the row's position: it sees keys 0..last
    return last >= u.j0 ? std::min(u.count, last + 1 - u.j0) : 0;
}

// The group's query rows in the kernel's order: in place for a float cache, else in pair order.
template <Storage type>
const float* query_rows(const DecodeProblem& p, std::size_t g, Scratch& s) {
    const float* Q = p.Q + g * p.rows * p.d_k;
    if constexpr (type == Storage::f32) return Q;
    for (std::size_t r = 0; r < p.rows; ++r)
        for (std::size_t k = 0; k < p.d_k; ++k) s.queries[r * p.d_k + pair_position(k, p.d_k)] = Q[r * p.d_k + k];
    return s.queries.data();
}

// The group's rows go past each key or value row in passes of at most this many: one accumulator
// (or one row of o) per query row, and the cached row loaded once per pass, not once per query row.
// Four passes' worth of registers stay free for the loads at every width (SSE2 and NEON have 16).
constexpr std::size_t rows_per_pass = 4;

// Rows [0, N) of q against one key: out[r] = q_r·k, and ‖k‖² added to `norm`, reading k once. Each
// row's sum runs in the same order whatever N is, so a row's score does not depend on the rows beside it.
template <std::size_t N>
void key_pass(const float* q, std::size_t d, const float* key, float* out, std::size_t out_stride, float& norm) {
    Batch acc[N], squares(0.0f);
    for (Batch& a : acc) a = Batch(0.0f);
    std::size_t k = 0;
    for (; k + W <= d; k += W) {
        const Batch kc = Batch::load_unaligned(key + k);
        squares = xsimd::fma(kc, kc, squares);
        for (std::size_t r = 0; r < N; ++r) acc[r] = xsimd::fma(Batch::load_unaligned(q + r * d + k), kc, acc[r]);
    }
    float tail_squares = xsimd::hadd(squares);
    for (std::size_t r = 0; r < N; ++r) {
        float sum = xsimd::hadd(acc[r]);
        for (std::size_t t = k; t < d; ++t) sum = std::fma(q[r * d + t], key[t], sum);
        out[r * out_stride] = sum;
    }
    for (std::size_t t = k; t < d; ++t) tail_squares = std::fma(key[t], key[t], tail_squares);
    norm = tail_squares;
}

// Rows [0, N) of o gain Σ_t w_rt·v_t over a tile of `count` value rows, o_r held in registers
// across the tile: each W-wide piece of o is loaded and stored once a tile, not once a key, and
// each value piece is loaded once for the N rows. Every element adds its keys in their order.
template <std::size_t N>
void value_tile(const float* weights, std::size_t weight_stride, const float* const* values, std::size_t count,
                std::size_t d, float* o) {
    std::size_t k = 0;
    for (; k + W <= d; k += W) {
        Batch acc[N];
        for (std::size_t r = 0; r < N; ++r) acc[r] = Batch::load_unaligned(o + r * d + k);
        for (std::size_t t = 0; t < count; ++t) {
            const Batch v = Batch::load_unaligned(values[t] + k);
            for (std::size_t r = 0; r < N; ++r) acc[r] = xsimd::fma(Batch(weights[r * weight_stride + t]), v, acc[r]);
        }
        for (std::size_t r = 0; r < N; ++r) acc[r].store_unaligned(o + r * d + k);
    }
    for (; k < d; ++k)
        for (std::size_t r = 0; r < N; ++r)
            for (std::size_t t = 0; t < count; ++t)
                o[r * d + k] = std::fma(weights[r * weight_stride + t], values[t][k], o[r * d + k]);
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

// ‖x‖² from `fast`, the float sum of squares, while that is finite; else summed again in double (a
// square past FLT_MAX, ±∞ or NaN), so the caller's checks see what the row holds.
double checked_square(float fast, const float* x, std::size_t n) {
    if (std::isfinite(fast)) return fast;
    double sum = 0.0;
    for (std::size_t k = 0; k < n; ++k) sum += double(x[k]) * double(x[k]);
    return sum;
}

double squared_norm(const float* x, std::size_t n) { return checked_square(dot(x, x, n), x, n); }

// [decode scores] s_rj = scale·log₂e·q_r·k_j (+ log₂e·term) for the unit's keys, every row of the
// group against each key as it is read; −∞ where the row may not look (causal).
template <Storage type>
void block_scores(const DecodeProblem& p, const Unit& u, const float* q, Scratch& s) {
    const float factor = p.scale * log2e;
    double largest = 0.0;  // kept here, stored once: units side by side share the cache line of u.norms
    for (std::size_t jj = 0; jj < u.count; ++jj) {
        prefetch_row(p.K, u.g, p.keys, u.j0 + jj + prefetch_rows, p.d_k, element_bytes<type>);
        const float* key = cached_row<type>(p.K, u.g, p.keys, u.j0 + jj, p.d_k, s.key.data());
        float norm = 0.0f;
        in_passes(p.rows, [&](auto N, std::size_t r0) {
            key_pass<N>(q + r0 * p.d_k, p.d_k, key, s.scores.data() + r0 * u.count + jj, u.count, norm);
        });
        largest = larger(largest, checked_square(norm, key, p.d_k));  // for the caller's checks
        for (std::size_t r = 0; r < p.rows; ++r) {
            float& score = s.scores[r * u.count + jj];
            score = jj < visible_keys(p, u, r) ? score * factor : neg_inf;
        }
    }
    u.norms[0] = largest;
    if (!p.row_terms) return;
    for (std::size_t r = 0; r < p.rows; ++r) {
        const ScoreTerms& terms = p.row_terms[u.g * p.rows + r];
        add_terms(s.scores.data() + r * u.count, visible_keys(p, u, r), terms,
                  static_cast<std::ptrdiff_t>(u.j0) * terms.col_stride, terms.col_stride, log2e);
    }
}

// [decode softmax] The block's m_b and ℓ_b per row; its scores become the weights 2^(s − m_b).
void block_softmax(const DecodeProblem& p, const Unit& u, Scratch& s) {
    float *m = u.partial, *l = u.partial + p.rows;
    for (std::size_t r = 0; r < p.rows; ++r) {
        const std::span<float> row(s.scores.data() + r * u.count, u.count);
        m[r] = row_max(row);
        l[r] = m[r] == neg_inf ? 0.0f : exp2_and_sum(row, m[r]);  // a row that sees nothing: ℓ_b = 0
        if (m[r] == neg_inf) std::fill(row.begin(), row.end(), 0.0f);
    }
}

// [decode values] o_b = Σ_j 2^(s_j − m_b)·v_j per row, each value row read once for the group (a
// masked key's weight is 0 and adds exactly nothing: the values are finite, or refused after).
template <Storage type>
void block_values(const DecodeProblem& p, const Unit& u, Scratch& s) {
    float* o = u.partial + 2 * p.rows;
    std::fill(o, o + p.rows * p.d_v, 0.0f);
    double largest = 0.0;  // stored once, as block_scores does
    const float* values[decode_value_tile];
    for (std::size_t j0 = 0; j0 < u.count; j0 += decode_value_tile) {
        const std::size_t count = std::min(decode_value_tile, u.count - j0);
        for (std::size_t t = 0; t < count; ++t) {
            prefetch_row(p.V, u.g, p.keys, u.j0 + j0 + t + prefetch_rows, p.d_v, element_bytes<type>);
            values[t] = cached_row<type>(p.V, u.g, p.keys, u.j0 + j0 + t, p.d_v,
                                         type == Storage::f32 ? nullptr : s.value.data() + t * p.d_v);  // f32: none
            largest = larger(largest, squared_norm(values[t], p.d_v));
        }
        in_passes(p.rows, [&](auto N, std::size_t r0) {
            value_tile<N>(s.scores.data() + r0 * u.count + j0, u.count, values, count, p.d_v, o + r0 * p.d_v);
        });
    }
    u.norms[1] = largest;
}

// A block no row may see (causal): m_b = −∞, ℓ_b = 0, o_b = 0, and its rows read only for their norms.
template <Storage type>
void unseen_block(const DecodeProblem& p, const Unit& u, Scratch& s) {
    std::fill(u.partial, u.partial + p.rows, neg_inf);
    std::fill(u.partial + p.rows, u.partial + 2 * p.rows + p.rows * p.d_v, 0.0f);
    double keys = 0.0, values = 0.0;  // stored once, as block_scores does
    for (std::size_t jj = 0; jj < u.count; ++jj) {
        keys = larger(keys, squared_norm(cached_row<type>(p.K, u.g, p.keys, u.j0 + jj, p.d_k, s.key.data()), p.d_k));
        values =
            larger(values, squared_norm(cached_row<type>(p.V, u.g, p.keys, u.j0 + jj, p.d_v, s.value.data()), p.d_v));
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
    if (!seen) return unseen_block<type>(p, u, s);
    block_scores<type>(p, u, query_rows<type>(p, u.g, s), s);
    block_softmax(p, u, s);
    block_values<type>(p, u, s);
}

// [decode merge] Row r of group g from its blocks' (m_b, ℓ_b, o_b), in block order:
// m = max_b m_b, ℓ = Σ_b ℓ_b·2^(m_b − m), o = Σ_b o_b·2^(m_b − m), then O = o / ℓ and L = ln(ℓ·2^m).
template <Storage type>
void merge_row(const DecodeProblem& p, const float* partials, std::size_t blocks, std::size_t unit_floats,
               std::size_t g, std::size_t r, float* sum) {
    const auto block = [&](std::size_t b) { return partials + (g * blocks + b) * unit_floats; };
    float m = neg_inf;
    for (std::size_t b = 0; b < blocks; ++b) m = std::max(m, block(b)[r]);
    float* out = p.O + (g * p.rows + r) * p.d_v;
    float* o = type == Storage::f32 ? out : sum;  // a 16-bit cache's o is in pair order: summed aside
    std::fill(o, o + p.d_v, 0.0f);
    float l = 0.0f;
    if (m != neg_inf)
        for (std::size_t b = 0; b < blocks; ++b) {
            const float m_b = block(b)[r], l_b = block(b)[p.rows + r];
            if (l_b == 0.0f) continue;  // a block this row saw nothing of
            const float factor = std::exp2(m_b - m);
            l += l_b * factor;
            axpy(factor, block(b) + 2 * p.rows + r * p.d_v, o, p.d_v);
        }
    const float inverse = l > 0.0f ? 1.0f / l : 0.0f;  // a row that saw nothing (ℓ = 0) stays 0
    for (std::size_t k = 0; k < p.d_v; ++k) out[k] = o[type == Storage::f32 ? k : pair_position(k, p.d_v)] * inverse;
    // L = ln(ℓ·2^m) = (m + log₂ℓ)·ln 2, back in natural units (m is in log₂ units)
    if (p.log_sum_exp) p.log_sum_exp[g * p.rows + r] = (m + std::log2(l)) * 0.693147181f;
}

template <Storage type>
void decode(const DecodeProblem& p, Threads threads, const Blocking& blocking) {
    const std::size_t block = std::min(blocking.decode_keys, p.keys), blocks = (p.keys + block - 1) / block;
    const std::size_t units = p.groups * blocks, unit_floats = p.rows * (p.d_v + 2);
    const auto size = decode_scratch<std::size_t>(p.rows, block, units, p.d_k, p.d_v, type != Storage::f32);
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
        scratch.fit(size, p.d_k, p.d_v);
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
            key = larger(key, unit_norms[2 * (g * blocks + b)]);
            value = larger(value, unit_norms[2 * (g * blocks + b) + 1]);
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
        if (p.log_sum_exp) std::fill(p.log_sum_exp, p.log_sum_exp + p.groups * p.rows, neg_inf);
        return;
    }
    switch (p.type) {
        case Storage::f32: return decode<Storage::f32>(p, threads, blocking);
        case Storage::bf16: return decode<Storage::bf16>(p, threads, blocking);
        case Storage::f16: return decode<Storage::f16>(p, threads, blocking);
    }
}

}  // namespace attn::simd::ATTN_ISA
