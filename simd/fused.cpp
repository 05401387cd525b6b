// simd/fused.cpp — attention without the n×n matrix.
//
// The materialised path writes all of S (n×m floats: 1 GiB at n = 16384), then reads it back for
// the softmax and again for α·V. Here a block of BR query rows stays put while K and V stream past in
// tiles of BC keys; each tile's scores live only in a BR×BC scratch block, and α is never stored.
//
// Online softmax. For query row i, after tiles 1..t let
//     m  = max of the scores seen so far,   ℓ = Σ_j e^(s_j − m),   o = Σ_j e^(s_j − m)·v_j.
// A new tile with scores s'_j raises the maximum to m' = max(m, max_j s'_j). Every old term
// e^(s_j − m) becomes e^(s_j − m') = e^(s_j − m)·e^(m − m'), so multiplying ℓ and o by the one factor
// e^(m − m') makes them exactly what they would have been had m' been used from the start; then
// the tile's own terms e^(s'_j − m') are added. Nothing is approximated: after the last tile,
//     o / ℓ = Σ_j e^(s_j − m)·v_j / Σ_j e^(s_j − m) = Σ_j softmax(s)_j·v_j,
// the lesson's O = softmax(Q·Kᵀ/√d_k)·V, row by row. (Only the rounding differs: float sums in
// another order.)
//
// The same update in symbols, for a tile with scores $s'_j$:
//   $m' = \max(m, \max_j s'_j)$,  $\ell' = \ell\, e^{m - m'} + \sum_j e^{s'_j - m'}$,  $o' = o\, e^{m - m'} + \sum_j e^{s'_j - m'} v_j$
//
// In base 2, where no term can overflow. Without a caller's terms, the kernel keeps its scores
// multiplied by log₂e: with t = s·log₂e, e^(s − m) = 2^(t − m·log₂e), so every e^ above is a 2^ of
// scores that carry the factor already, one subtraction from the exponent's range reduction. The
// factor rides on the multiply by the scale that the score tile does anyway (BM_core/fused). That is
// safe because attention/guards.cpp keeps every score below FLT_MAX/2, whose log₂e-multiple is still
// a float. (Multiplied into Q instead, it could overflow where the product would not: a huge q
// against a tiny k.) A caller's term may be any
// finite float, though: s·log₂e would overflow past FLT_MAX/log₂e ≈ 2.4·10³⁸ (a term of 2.4·10³⁸ would
// give NaN, a row of float32's lowest value, −3.4·10³⁸, weight 0 where the softmax gives it the mean
// of V). With terms, the scores stay in their own units and every e^(s − m) is taken as the lesson
// takes it, the difference first, then 2^((s − m)·log₂e) (simd/exp.hpp's exp_of_difference): one
// operation more a batch. ℓ and o are the same sums either way.
//
// Each tile in three steps, each a loop over the block that is a tile of the GEMM or a pass on rows:
// 1. the scores, by the register tile (simd/microkernel.hpp), whose epilogue also keeps each row's
//    largest score, lane by lane, on the registers the tile leaves them in (RowMaxima): the maximum
//    takes no pass over the scores of its own;
// 2. the softmax, a pass over each row (simd/tile_softmax.cpp): m', the factor e^(m − m') for ℓ and
//    o, and the weights e^(s − m') with their sum;
// 3. o += weights·V, by the register tile again.
// K and V are packed once per call, in the layouts the register tile reads (panels of Kᵀ, NR keys
// wide; panels of V, NR columns wide, in pairs for bf16): no block packs them again (BM_core/fused,
// BM_core_long). float32 reads a full-width panel of V where it lies (values_in_place). Each panel
// is packed on demand, by the first thread whose tile reads it (ensure_packed): no pass of packing
// and no barrier come before the first tile, so a short call's threads start on their tiles at once
// (BM_core/fused/n:256).
//
// Causal: a block's keys end at its last row, so the tiles wholly in its future (about half of all
// tiles) are never visited. In the tiles that cross the diagonal nothing is masked with −∞: each
// row takes its maximum and exponentials only up to its own diagonal and gives the keys after it
// weight 0, a strip of rows skips the panels of keys all in its future, and P·V stops at the
// strip's last diagonal. The results are bit for bit those of masking the whole tile (the skipped
// work only ever added zeros); BM_core_long with causal:1 measures what the skipping saves.
//
// Terms (a caller's mask or bias, simd.hpp's ScoreTerms): added to each tile of scores as soon as it is
// written, only where its row may look (the causal mask applies as well), in the same pass that
// takes each row's maximum. A −∞ term is one more score of weight 0. A row that has seen only −∞
// keeps m = −∞, ℓ = 0 and o = 0 (rescale_factors gives it the factor 1, never e^(−∞ − (−∞)), and its
// tile is zeroed, not exponentiated); its first finite score makes the factor e^(−∞) = 0 against sums
// that are 0. A row that never sees one ends with ℓ = 0: its output row stays 0 and its L is −∞.
// Without terms the only cost is one test per tile.
//
// bf16. fused_attention_bf16_into runs the same blocks with the two products on bfloat16 pairs
// (simd/bf16.hpp): each block's rows of Q and the packed K and V are rounded to bfloat16, and the
// register tile steps with vdpbf16ps (or its emulation). The softmax is one pass per row: the
// exponentials, to bfloat16's grade (simd/exp.hpp: the weights are rounded to 8 significant bits
// anyway), are summed into ℓ as computed and written as pairs straight from the registers (that
// rounding is one more error of at most 2⁻⁸ of each weight, which tests/test_bf16.cpp's bound counts,
// with the exponential's own). A tile holds twice the keys of the float32 kernel's (scratch.hpp's
// fused_tile): a panel of V in pairs takes half the bytes a key. BM_core/fused_bf16 measures it.
//
// Extra memory: per thread, the score block (BR×BC), each row's lane maxima (W floats) and four
// floats per row (m, ℓ, the new m and e^(m − m')); bf16 adds the block's rows of Q in pairs and four
// keys' rows while K is packed: fused_scratch in simd/scratch.hpp, which fused_scratch_bytes(d_k,
// dtype) budgets, whatever n, m or d_v. On the calling thread, K and V packed (fused_packed, budgeted
// by fused_packed_bytes): about the size of K and V (half in pairs), kept for the next call.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#include "matrix/shape_checks.hpp"
#include "simd/bf16.hpp"
#include "simd/exp.hpp"
#include "simd/kernels.hpp"
#include "simd/microkernel.hpp"
#include "simd/packing.hpp"
#include "simd/score_terms.hpp"
#include "simd/scratch.hpp"
#include "simd/threads.hpp"
#include "simd/tile_softmax.hpp"

namespace attn::simd::ATTN_ISA {

namespace {

using Buffer = ScratchBuffer;

// One thread's scratch space, kept from call to call (first touch of fresh memory is slow).
struct Scratch {
    Buffer scores;                    // the block's scores, then its weights (bf16: in pairs, from the row's start)
    Buffer q_pairs;                   // bf16: the block's rows of Q, rounded to pairs
    Buffer key_rows;                  // bf16: four keys' rows, rounded, while K is packed
    Buffer lane_max;                  // per row, W floats: its largest score of the tile so far, lane by lane
    Buffer running_max, running_sum;  // m and ℓ per row of the block
    Buffer tile_max, correction;      // per row, for the tile at hand: max(m, the tile's maximum) and e^(m − m')
    // Each buffer at least the size simd/scratch.hpp gives it (the per-row ones are read W rows at a time).
    void fit(const FusedScratch<std::size_t>& size) {
        const auto grow = [](Buffer& b, std::size_t n) {
            if (b.size() < n) grow_exactly(b, n);
        };
        grow(scores, size.scores);
        grow(q_pairs, size.q_pairs);
        grow(key_rows, size.key_rows);
        grow(lane_max, size.lane_max);
        for (Buffer* per_row : {&running_max, &running_sum, &tile_max, &correction}) grow(*per_row, size.per_row);
    }
};

// Block sizes (simd/scratch.hpp's fused_tile, from simd/blocking.cpp): BR query rows per block, at
// most the tile's rows and fewer when that leaves a thread idle; BC keys per tile. K and V are
// packed once per call (pack_key_panel), so a block costs little beyond its own rows (BM_tune sweeps
// BR and BC around the cache model's choice).
struct Problem {
    const Matrix &Q, &K, &V;
    float factor;  // the scores' factor: scale·log₂e in base 2 (no terms), else scale
    bool natural;  // the scores are in their own units (with terms), not in base 2
    bool causal;
    Matrix& O;
    float* log_sum_exp;       // per row L and its remainder (simd/score_terms.hpp), for the backward; or nullptr
    std::size_t BR, BC;       // query rows per block, keys per tile (the score block's row stride)
    const ScoreTerms* terms;  // added to the scores (nullptr: none)
    float* keys;              // K packed: the panel of Kᵀ of keys g·NR … at keys + g·depth·NR
    float* values;  // V packed: the panel of V's columns q·NR … at values + q·value_panel, a row a key (pair)
    std::size_t value_panel;                 // floats of one panel of V
    std::atomic<std::uint8_t>* panel_state;  // per panel of keys: PanelState (ensure_packed)
};

void scale_row(float* x, std::size_t n, float factor) {
    for (std::size_t k = 0; k < n; ++k) x[k] *= factor;
}

// How many of the tile's keys row i0 + r may see: with the mask, keys j0 .. i0 + r (none when the
// tile starts after the row); without it, all `cols`.
std::size_t visible_keys(const Problem& p, std::size_t i0, std::size_t r, std::size_t j0, std::size_t cols) {
    if (!p.causal) return cols;
    return i0 + r + 1 > j0 ? std::min(cols, i0 + r + 1 - j0) : 0;
}

// float32: a full-width panel of V is read where it lies in V, its rows NR floats d_v apart, which the
// register tile reads as fast as a packed copy: copying it would only move bytes (BM_core/fused at
// n = 256, where the copy is a tenth of the work). A narrower last panel is packed, zeros past d_v;
// bf16 packs pairs.
template <bool bf16>
bool values_in_place(std::size_t width) {
    return !bf16 && width == NR;
}

// Packing, once per call: the keys [g·NR, g·NR + NR): their panel of Kᵀ, and their rows of every
// panel of V (bf16: rounded to pairs as they are packed). The keys of one panel are a tile's first
// or a tile's next: a tile of BC keys starts at a panel, since BC is a multiple of NR.
template <bool bf16>
void pack_key_panel(const Problem& p, std::size_t g, Scratch& s) {
    const std::size_t d_k = p.K.cols(), d_v = p.V.cols(), j0 = g * NR, cols = std::min(NR, p.K.rows() - j0);
    float* k_panel = p.keys + g * depth_of<bf16>(d_k) * NR;
    if constexpr (bf16) pack_key_pairs(p.K, j0, cols, k_panel, s.key_rows.data());
    else pack_panel(p.K, BLayout::transposed, 0, d_k, j0, cols, k_panel);
    for (std::size_t q = 0; q * NR < d_v; ++q) {
        const std::size_t width = std::min(NR, d_v - q * NR);
        float* v_rows = p.values + q * p.value_panel + depth_of<bf16>(j0) * NR;  // j0 is even: pair j0/2 on
        if constexpr (bf16) pack_value_pairs(p.V, j0, cols, q * NR, width, v_rows);
        else if (!values_in_place<bf16>(width)) pack_panel(p.V, BLayout::k_by_n, j0, cols, q * NR, width, v_rows);
    }
}

// Where a panel of keys stands: not packed, being packed by one thread, or ready to read.
enum PanelState : std::uint8_t { unpacked, packing, ready };

// The panels [first, last) of keys that the tile at hand reads, packed on demand. A thread claims each
// panel no one has claimed yet (one compare-and-swap) and packs it; then it waits for the ones
// another thread is packing, one panel's work at most. Two threads on the same tile so share its
// panels, and a panel is packed once, whoever packs it: the bits are the same for any thread count.
// The release store makes the packed floats visible to the acquire load that sees `ready`.
template <bool bf16>
void ensure_packed(const Problem& p, std::size_t first, std::size_t last, Scratch& s) {
    for (std::size_t g = first; g < last; ++g) {
        std::uint8_t expected = unpacked;
        if (p.panel_state[g].load(std::memory_order_acquire) == unpacked &&
            p.panel_state[g].compare_exchange_strong(expected, packing, std::memory_order_acquire)) {
            pack_key_panel<bf16>(p, g, s);
            p.panel_state[g].store(ready, std::memory_order_release);
        }
    }
    for (std::size_t g = first; g < last; ++g)
        while (p.panel_state[g].load(std::memory_order_acquire) != ready) std::this_thread::yield();
}

// The score tile's epilogue (simd/microkernel.hpp): each row's largest score among the keys of the
// panel it sees, kept lane by lane in W floats a row, from the registers the tile leaves the scores
// in. The softmax then takes m' from W lanes a row instead of a pass over the whole row of the
// block, which lives in L2 (BM_core/fused). Lanes past what a row sees (the tile's last keys, the
// causal diagonal) do not count.
struct RowMaxima {
    float* lane_max;          // row r's W floats at lane_max + r·W
    const std::size_t* seen;  // keys of the panel row r sees: NR for all of them
    void row(std::size_t r, Batch lo, Batch hi) const {
        if (seen[r] < NR) [[unlikely]] {
            const Batch k = lane_numbers(), count = Batch(float(seen[r]));
            lo = xsimd::select(k < count, lo, Batch(neg_inf));
            hi = xsimd::select(k + Batch(float(W)) < count, hi, Batch(neg_inf));
        }
        float* slot = lane_max + r * W;
        xsimd::max(Batch::load_aligned(slot), xsimd::max(lo, hi)).store_aligned(slot);
    }
    RowMaxima rows_down(std::size_t k) const { return {lane_max + k * W, seen + k}; }
};

// [fused scores] S_tile = scale·Q[i0..i0+rows)·K[j0..j0+cols)ᵀ, into the BR×BC score block (row stride BC),
// and each row's largest score into lane_max. Strips of TALL rows (12 with AVX-512, 6 otherwise:
// microkernel.hpp). Causal: a strip of rows skips the panels of keys that all lie in its future;
// those scores are never read (online_softmax_update stops each row at its diagonal). Without terms
// the tile's factor is scale·log₂e: the scores in base 2.
// bf16: the rows are the block's rows of Q in pairs (attend_block rounds them), and so is the panel.
template <bool bf16>
void tile_scores(const Problem& p, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols, Scratch& s) {
    const std::size_t depth = depth_of<bf16>(p.Q.cols());
    const float* q_rows = bf16 ? s.q_pairs.data() : p.Q.row(i0).data();  // row r at q_rows + r·depth
    std::fill(s.lane_max.begin(), s.lane_max.begin() + std::ptrdiff_t(rows * W), neg_inf);
    for (std::size_t q = 0; q * NR < cols; ++q) {
        const std::size_t width = std::min(NR, cols - q * NR);
        const float* panel = p.keys + (j0 / NR + q) * depth * NR;
        for (std::size_t r = 0; r < rows; r += TALL) {
            const std::size_t strip = std::min(TALL, rows - r);
            std::size_t seen[TALL];  // keys of this panel each row of the strip sees
            for (std::size_t k = 0; k < strip; ++k) {
                const std::size_t visible = visible_keys(p, i0, r + k, j0, cols);
                seen[k] = visible > q * NR ? std::min(width, visible - q * NR) : 0;
            }
            if (seen[strip - 1] == 0) continue;  // causal: all in the strip's future
            run_strip_microkernel<StepOf<bf16>>(strip, depth, q_rows + r * depth, depth, panel, NR,
                                                s.scores.data() + r * p.BC + q * NR, p.BC, width, true, true, p.factor,
                                                RowMaxima{s.lane_max.data() + r * W, seen});
        }
    }
}

// The caller's terms, added to each score of the tile its row may see, after the product was rounded
// (as the materialised path adds them to S'), with each row's largest score taken in the same pass:
// the tile's epilogue took it before the terms. A −∞ term gives the key weight 0, as the causal mask does.
void add_tile_terms(const Problem& p, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols, Scratch& s) {
    const ScoreTerms& terms = *p.terms;
    for (std::size_t r = 0; r < rows; ++r)
        s.tile_max[r] = add_terms(s.scores.data() + r * p.BC, visible_keys(p, i0, r, j0, cols), terms,
                                  term_index(terms, i0 + r, j0), terms.col_stride, 1.0f);
}

// [fused softmax] The online-softmax step for each row of the block: new max, rescale ℓ and o,
// exponentiate the tile (simd/tile_softmax.cpp). The new maxima and the factors e^(m − m') are computed
// W rows at a time: one vector exp instead of a call to std::exp per row and tile.
// Causal: each row's weights stop at its diagonal; the keys after it get weight 0, which is what
// e^(−∞) would give them.
template <bool bf16>
void online_softmax_update(const Problem& p, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols,
                           Scratch& s) {
    const std::size_t d_v = p.V.cols(), end = round_up(cols, 2 * W);  // ≤ BC: a multiple of NR = 2W
    if (!p.terms)  // the W lanes the tile's epilogue kept (with terms, add_tile_terms took the maxima)
        for (std::size_t r = 0; r < rows; ++r) s.tile_max[r] = row_max({s.lane_max.data() + r * W, W});
    rescale_factors(s.running_max.data(), s.tile_max.data(), s.correction.data(), rows, p.natural);  // padded
    std::swap(s.running_max, s.tile_max);                                                            // m ← m'
    for (std::size_t r = 0; r < rows; ++r) {
        float* row = s.scores.data() + r * p.BC;
        const std::size_t visible = s.running_max[r] == neg_inf ? 0 : visible_keys(p, i0, r, j0, cols);
        if (visible == 0) {  // masked, or nothing visible yet: weight 0
            std::fill(row, row + end, 0.0f);
            continue;
        }
        const float m = s.running_max[r];
        s.running_sum[r] =
            s.running_sum[r] * s.correction[r] +
            (bf16 ? row_weight_pairs(row, visible, end, m, p.natural) : row_weights(row, visible, end, m, p.natural));
        // unmoved max: skip; the first tile's products overwrite o, so there is nothing to rescale yet
        if (j0 > 0 && s.correction[r] != 1.0f) scale_row(p.O.row(i0 + r).data(), d_v, s.correction[r]);
    }
}

// [fused values] o_i += Σ_j e^(s_ij − m_i)·v_j for the tile: (rows×cols)·(cols×d_v) added into O;
// the first tile (j0 = 0) writes O instead, so no pass of zeros over O comes before it.
// Causal: a strip stops at its last row's diagonal; the weights after it are 0 for every row of the
// strip, and adding 0·v_j would change no bit of o (v_j is finite: attention/guards.cpp refuses
// NaN and ±inf before any work).
// bf16: the weights are in pairs (online_softmax_update wrote them so), and so are V's panels.
template <bool bf16>
void accumulate_values(const Problem& p, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols,
                       Scratch& s) {
    const std::size_t d_v = p.V.cols();
    for (std::size_t q = 0; q * NR < d_v; ++q) {
        const std::size_t width = std::min(NR, d_v - q * NR);
        const bool in_place = values_in_place<bf16>(width);
        const float* panel =
            in_place ? p.V.row(j0).data() + q * NR : p.values + q * p.value_panel + depth_of<bf16>(j0) * NR;
        for (std::size_t r = 0; r < rows; r += TALL) {
            const std::size_t strip = std::min(TALL, rows - r), keys = visible_keys(p, i0, r + strip - 1, j0, cols);
            if (keys == 0) continue;
            run_strip_microkernel<StepOf<bf16>>(strip, depth_of<bf16>(keys), s.scores.data() + r * p.BC, p.BC, panel,
                                                in_place ? d_v : NR, p.O.row(i0 + r).data() + q * NR, d_v, width,
                                                j0 == 0, false, 1.0f);
        }
    }
}

// Rows [i0, i0+rows) of O, start to finish, on one thread.
template <bool bf16>
void attend_block(const Problem& p, std::size_t i0, std::size_t rows, Scratch& s) {
    const std::size_t m_keys = p.K.rows(), d_v = p.V.cols(), d_k = p.Q.cols();
    if constexpr (bf16)  // the block's queries in pairs, once for all its tiles
        for (std::size_t r = 0; r < rows; ++r)
            round_to_pairs(p.Q.row(i0 + r).data(), d_k, s.q_pairs.data() + r * depth_of<true>(d_k));
    std::fill(s.running_max.begin(), s.running_max.begin() + std::ptrdiff_t(rows), neg_inf);
    std::fill(s.running_sum.begin(), s.running_sum.begin() + std::ptrdiff_t(rows), 0.0f);
    const std::size_t end = p.causal ? std::min(m_keys, i0 + rows) : m_keys;  // causal: no key past the block
    if (end == 0) std::fill(p.O.row(i0).data(), p.O.row(i0).data() + rows * d_v, 0.0f);  // no key: o = 0
    for (std::size_t j0 = 0; j0 < end; j0 += p.BC) {
        const std::size_t cols = std::min(p.BC, end - j0);
        ensure_packed<bf16>(p, j0 / NR, (j0 + cols + NR - 1) / NR, s);
        tile_scores<bf16>(p, i0, rows, j0, cols, s);
        if (p.terms) add_tile_terms(p, i0, rows, j0, cols, s);
        online_softmax_update<bf16>(p, i0, rows, j0, cols, s);
        accumulate_values<bf16>(p, i0, rows, j0, cols, s);
    }
    for (std::size_t r = 0; r < rows; ++r) {  // o / ℓ; a row that saw nothing (ℓ = 0) stays 0
        const float l = s.running_sum[r];
        if (l > 0.0f) scale_row(p.O.row(i0 + r).data(), d_v, 1.0f / l);
        if (p.log_sum_exp) {  // L = m + log ℓ, m in the scores' own units, and what L leaves out (score_terms.hpp)
            const LogSumExp L = log_sum_exp(p.natural ? s.running_max[r] : s.running_max[r] * 0.693147181f, l);
            p.log_sum_exp[2 * (i0 + r)] = L.L;
            p.log_sum_exp[2 * (i0 + r) + 1] = L.remainder;
        }
    }
}

// bf16: the CPU's handling of subnormals set as vdpbf16ps has it, on every thread (simd/bf16.hpp).
struct KeepModes {};
template <bool bf16>
using ModesOf = std::conditional_t<bf16, FlushSubnormals, KeepModes>;

// The deleter of the panel states: a type of this instruction set's own, so that their
// std::unique_ptr is this copy's alone, not one template every copy of the kernels defines under
// the same name (tests/checks/check_isa_symbols.py).
struct DeletePanelStates {
    void operator()(std::atomic<std::uint8_t>* states) const { delete[] states; }
};

// The calling thread's panel states for a call of `panels` panels, all `unpacked`, kept from call to
// call (a byte a panel of NR keys).
std::atomic<std::uint8_t>* unpacked_panels(std::size_t panels) {
    thread_local std::unique_ptr<std::atomic<std::uint8_t>[], DeletePanelStates> states;
    thread_local std::size_t capacity = 0;
    if (capacity < panels) {
        states.reset(new std::atomic<std::uint8_t>[panels]);
        capacity = panels;
    }
    for (std::size_t g = 0; g < panels; ++g) states[g].store(unpacked, std::memory_order_relaxed);
    return states.get();
}

// The calling thread's packed K and V (simd/scratch.hpp's fused_packed), kept from call to call as
// each thread's scratch is: shared by the team of the call.
Buffer& packed_operands(std::size_t floats) {
    thread_local Buffer packed;
    if (packed.size() < floats) grow_exactly(packed, floats);
    return packed;
}

template <bool bf16>
void fused_attention(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal, Matrix& O,
                     float* log_sum_exp, Threads threads, const Blocking& blocking, const ScoreTerms* terms) {
    check_matmul_transposed_shapes("fused_attention", Q, K);
    check_blocking("fused_attention", blocking, NR);
    check_same_rows("fused_attention", "K", K, "V", V);
    O.resize_for_overwrite(Q.rows(), V.cols());
    const std::size_t n = Q.rows(), m = K.rows(), pair = bf16 ? floats_per_pair : 0;
    [[maybe_unused]] const bool team =
        use_team(threads, 2.0 * double(n) * double(m) * double(Q.cols() + V.cols()), (n + MR - 1) / MR);
    // Balance: as many blocks as threads, or a multiple: otherwise a last, short block leaves a
    // thread idle (192-row blocks cut n = 1024 into 6, so one thread did 576 rows and the other
    // 448). Causal blocks cost more
    // the lower they are (block b visits b + 1 diagonals' worth of tiles), so a team cuts them 8 per
    // thread and hands them out dynamically, the most expensive first: whoever finishes early takes
    // the cheap ones at the end. But no causal block is cut below 256 rows (rounded up to MR) while
    // that leaves 2 a thread: each block reads every K and V tile up to its diagonal, and blocks of
    // a few dozen rows spend more on that than the finer split saves (BM_core_long, causal:1, at
    // n = 256 to 1024). A row's result does not depend
    // on the block it falls in: tiles start at multiples of BC, and a key in its future adds exactly 0.
    const std::size_t threads_used = team ? std::size_t(max_threads()) : 1;
    const FusedTile tile = fused_tile(blocking, NR, bf16);
    // Keys that fit one tile (BM_core/fused/n:256): 2 blocks a thread, each one short pass, so that
    // a thread the team wakes late finds the other has taken three blocks, not waits for its one.
    const std::size_t per_thread = team && causal ? 8 : team && m <= tile.keys ? 2 : 1;
    std::size_t rows = balanced_rows(n, tile.rows, threads_used, per_thread);
    if (causal) rows = std::max(rows, std::min(round_up(256, MR), balanced_rows(n, tile.rows, threads_used, 2)));
    const FusedPacked<std::size_t> packed = fused_packed<std::size_t>(m, Q.cols(), V.cols(), NR, pair);
    float* keys = packed_operands(packed.total()).data();
    const std::size_t value_panel = fused_depth<std::size_t>(m, pair) * NR;  // a panel of V's NR columns
    const Problem p{Q,
                    K,
                    V,
                    terms ? scale : scale * log2_e,
                    terms != nullptr,
                    causal,
                    O,
                    log_sum_exp,
                    rows,
                    tile.keys,
                    terms,
                    keys,
                    keys + packed.keys,
                    value_panel,
                    unpacked_panels((m + NR - 1) / NR)};
    const auto blocks = static_cast<std::ptrdiff_t>((n + rows - 1) / rows);
    // No more threads than blocks: each thread that starts allocates its scratch, and
    // fused_team_size (what a caller budgets) counts at most one per block of MR rows.
    [[maybe_unused]] const int team_size = static_cast<int>(std::min<std::ptrdiff_t>(max_threads(), blocks));
#pragma omp parallel if (team) num_threads(team_size)
    {
        [[maybe_unused]] const ModesOf<bf16> modes;
        record_team_size();
        thread_local Scratch scratch;
        scratch.fit(fused_scratch<std::size_t>(Q.cols(), p.BR, p.BC, W, pair));
#pragma omp for schedule(dynamic)
        for (std::ptrdiff_t b = blocks - 1; b >= 0; --b) {  // the bottom (causal: largest) block first
            const std::size_t i0 = static_cast<std::size_t>(b) * p.BR;
            attend_block<bf16>(p, i0, std::min(p.BR, n - i0), scratch);
        }
    }
}

}  // namespace

void fused_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal, Matrix& O,
                          float* log_sum_exp, Threads threads, const Blocking& blocking, const ScoreTerms* terms) {
    fused_attention<false>(Q, K, V, scale, causal, O, log_sum_exp, threads, blocking, terms);
}

void fused_attention_bf16_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal, Matrix& O,
                               Threads threads, const Blocking& blocking, const ScoreTerms* terms) {
    fused_attention<true>(Q, K, V, scale, causal, O, nullptr, threads, blocking, terms);
}

}  // namespace attn::simd::ATTN_ISA
