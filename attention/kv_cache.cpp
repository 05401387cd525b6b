// attention/kv_cache.cpp — the key/value cache of attention/kv_cache.hpp.
//
// Storage: keys (B, H_kv, capacity, E) and values (B, H_kv, capacity, E_v) in the cache's type, one
// block allocated up front; token p of head (b, h) is row p of that head's block, so appending
// writes the new rows and moves nothing. A call reads the first `size` rows of each head: a view of
// shape (B, H_kv, size, E) whose head stride is capacity·E rows. With one head (or a full cache) that
// is C order and read in place; otherwise the call gathers it into one block first, charged by its
// plan like every conversion (attention/inputs.cpp).
//
// What appending costs: converting and checking the t new rows, and one norm per row, O(t·(E + E_v))
// per head; nothing already held is read again.
#include "attention/kv_cache.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "attention/inputs.hpp"
#include "attention/run.hpp"
#include "attention/views.hpp"
#include "matrix/norms.hpp"
#include "matrix/size.hpp"

namespace attn {

namespace {

const std::string who = "KvCache::append";

// Element k of a cache, as the value its bits hold.
float value_at(const Cache& cache, std::size_t k) {
    if (cache.type == KvDtype::f32) return cache.floats[k];
    return cache.type == KvDtype::bf16 ? from_bfloat16_bits(cache.halves[k]) : from_float16_bits(cache.halves[k]);
}

Cache empty_cache(KvDtype type, std::size_t elements) {
    Cache cache;
    cache.type = type;
    if (type == KvDtype::f32) cache.floats.resize(elements);
    else cache.halves.resize(elements);
    return cache;
}

// Rows [first, first + count) of `from` copied to rows [to, to + count) of `into`, rows of `cols`.
void copy_rows(const Cache& from, std::size_t first, Cache& into, std::size_t to, std::size_t count, std::size_t cols) {
    if (from.type == KvDtype::f32)
        std::copy_n(from.floats.begin() + std::ptrdiff_t(first * cols), count * cols,
                    into.floats.begin() + std::ptrdiff_t(to * cols));
    else
        std::copy_n(from.halves.begin() + std::ptrdiff_t(first * cols), count * cols,
                    into.halves.begin() + std::ptrdiff_t(to * cols));
}

// The new tokens of one operand, rounded into the cache's type and checked: every value finite, and
// each (batch, head)'s largest row norm, (B·H_kv) of them.
struct NewRows {
    Cache rows;  // (B, H_kv, t, cols)
    std::vector<double> largest;
    NewRows(const View& view, const std::string& name, KvDtype type, std::size_t heads, std::size_t t, std::size_t held)
        : rows(cache_from(view, type, who, name)), largest(heads, 0.0) {
        const std::size_t cols = view.shape[3];
        for (std::size_t row = 0; row < heads * t; ++row) {
            double sum = 0.0;
            for (std::size_t j = 0; j < cols; ++j) {
                const double x = value_at(rows, row * cols + j);
                if (!std::isfinite(x)) refuse(view, name, x, row, t, held);
                sum += x * x;
            }
            largest[row / t] = larger_norm(largest[row / t], std::sqrt(sum));
        }
    }
    [[noreturn]] static void refuse(const View& view, const std::string& name, double x, std::size_t row, std::size_t t,
                                    std::size_t held) {
        const std::size_t heads = view.shape[1], token = row % t, head = row / t % heads, batch = row / t / heads;
        throw std::invalid_argument(who + ": " + name + " (" + shape_string(view.shape) + ") holds " +
                                    (std::isnan(x) ? "NaN" : "±inf") + " in token " + std::to_string(token) +
                                    " (position " + std::to_string(held + token) + " of the cache), batch " +
                                    std::to_string(batch) + ", head " + std::to_string(head) +
                                    ": a cache holds finite numbers only");
    }
};

// The tokens held, (B, H_kv, size, cols) rows of a block of `capacity` rows per head.
struct Held {
    std::size_t shape[4];
    std::ptrdiff_t strides[4];
    View view;
    Held(const Cache& cache, std::size_t batch, std::size_t heads, std::size_t size, std::size_t capacity,
         std::size_t cols)
        : shape{batch, heads, size, cols},
          strides{std::ptrdiff_t(heads * capacity * cols), std::ptrdiff_t(capacity * cols), std::ptrdiff_t(cols), 1},
          view{cache.type == KvDtype::f32 ? static_cast<const void*>(cache.floats.data()) : cache.halves.data(), shape,
               strides, element_of(cache.type)} {}
};

// The causal triangle of L new queries against the S tokens held, aligned at the bottom-right: query i
// is token S − L + i and sees the keys j ≤ S − L + i. One byte a score, true where it may attend.
struct NewestCausal {
    std::size_t shape[2];
    std::vector<unsigned char> keep;
    View view;
    NewestCausal(std::size_t L, std::size_t S) : shape{L, S}, keep(checked_product(L, S, "the causal mask")) {
        for (std::size_t i = 0; i < L; ++i)
            for (std::size_t j = 0; j < S; ++j) keep[i * S + j] = j + L <= S + i;
        view = {keep.data(), shape, {}, Element::boolean};
    }
};

}  // namespace

KvCache::KvCache(std::size_t batch, std::size_t kv_heads, std::size_t capacity, std::size_t E, std::size_t E_v,
                 KvDtype type)
    : batch_(batch),
      kv_heads_(kv_heads),
      capacity_(capacity),
      E_(E),
      E_v_(E_v),
      type_(type),
      norms_(2 * checked_product(batch, kv_heads, "KvCache")) {
    const std::uint64_t rows = checked_product(checked_product(batch, kv_heads, "KvCache"), capacity, "KvCache");
    keys_ = empty_cache(type, checked_product(rows, E, "KvCache"));
    values_ = empty_cache(type, checked_product(rows, E_v, "KvCache"));
}

void KvCache::append(const View& K_new, const View& V_new, const std::string& k_name, const std::string& v_name) {
    const std::size_t shape[4] = {batch_, kv_heads_, capacity_, E_};
    const std::string both =
        k_name + " (" + shape_string(K_new.shape) + ") and " + v_name + " (" + shape_string(V_new.shape) + ")";
    const std::string cache = "the cache (" + shape_string(shape) + ", E_v = " + std::to_string(E_v_) + ")";
    const auto fits = [&](const View& view, std::size_t cols) {
        return view.shape.size() == 4 && view.shape[0] == batch_ && view.shape[1] == kv_heads_ && view.shape[3] == cols;
    };
    if (!fits(K_new, E_) || !fits(V_new, E_v_) || K_new.shape[2] != V_new.shape[2])
        throw std::invalid_argument(who + ": " + both +
                                    " must be (B, H_kv, t, E) and (B, H_kv, t, E_v), the same t, for " + cache);
    const std::size_t t = K_new.shape[2];
    if (t > capacity_ - size_)
        throw std::invalid_argument(who + ": " + both + " bring " + std::to_string(t) + " tokens to the " +
                                    std::to_string(size_) + " held, more than the capacity of " +
                                    std::to_string(capacity_) + " of " + cache);
    const std::size_t heads = batch_ * kv_heads_;
    const NewRows keys(K_new, k_name, type_, heads, t, size_), values(V_new, v_name, type_, heads, t, size_);
    for (std::size_t head = 0; head < heads; ++head) {  // every check passed: nothing is refused from here on
        copy_rows(keys.rows, head * t, keys_, head * capacity_ + size_, t, E_);
        copy_rows(values.rows, head * t, values_, head * capacity_ + size_, t, E_v_);
        norms_[2 * head] = larger_norm(norms_[2 * head], keys.largest[head]);
        norms_[2 * head + 1] = larger_norm(norms_[2 * head + 1], values.largest[head]);
    }
    size_ += t;
}

void KvCache::append(const HeadsView& K_new, const HeadsView& V_new) {
    append(HeadsAsView(K_new).view, HeadsAsView(V_new).view);
}

// A call against the cache: its queries, mask and options, the tokens held as its keys and values
// with the norms kept of them, and the causal triangle of the newest queries as its mask.
struct CallAgainstCache {
    Held keys, values;
    std::optional<NewestCausal> causal;
    Call call;
    CallAgainstCache(const KvCache& c, Call given)
        : keys(c.keys_, c.batch_, c.kv_heads_, c.size_, c.capacity_, c.E_),
          values(c.values_, c.batch_, c.kv_heads_, c.size_, c.capacity_, c.E_v_),
          call(std::move(given)) {
        if (call.K || call.V)
            throw std::invalid_argument("KvCache: a call against the cache takes its keys and values from the cache");
        call.K = keys.view, call.V = values.view, call.kv_dtype = c.type_;
        call.options.kv_norms = c.norms_.data();
        const std::size_t L = call.Q && call.Q->shape.size() >= 2 ? call.Q->shape[call.Q->shape.size() - 2] : 0;
        if (!call.options.causal || L == c.size_) return;  // with L = size the top-left triangle is the same
        if (call.mask)
            throw std::invalid_argument("KvCache: causal with a mask when the " + std::to_string(L) +
                                        " queries are not every token held (" + std::to_string(c.size_) +
                                        "): give the causal part in the mask");
        call.mask = causal.emplace(L, c.size_).view;
        call.options.causal = false;
    }
    CallAgainstCache(const CallAgainstCache&) = delete;  // the call's views point into it
    CallAgainstCache& operator=(const CallAgainstCache&) = delete;
};

void KvCache::run(Call call, Results& results) const {
    const CallAgainstCache c(*this, std::move(call));
    attn::run(c.call, results);
}

std::vector<Buffer> KvCache::plan(Call call) const {
    const CallAgainstCache c(*this, std::move(call));
    return attn::plan(c.call);
}

HeadsResult KvCache::attention(const HeadsView& Q, const AttentionOptions& options) const {
    const HeadsAsView q(Q);
    std::optional<MaskAsView> mask;
    if (options.mask) mask.emplace(*options.mask, Q.shape.batch, Q.shape.heads, Q.shape.rows, size_, 4);
    Call call{.Q = q.view, .options = options};
    if (mask) call.mask = mask->view;
    Results r;
    run(call, r);
    return {heads_of(std::move(r.output)), heads_of(std::move(r.log_sum_exp)), heads_of(std::move(r.weights))};
}

}  // namespace attn
