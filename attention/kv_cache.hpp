// attention/kv_cache.hpp — a key/value cache that grows a token at a time, for decoding: each new
// token's key and value are rounded into the cache's type and checked once, as they arrive, and each
// call attends new queries against every token held so far (attention/kv_cache.cpp).
//
//   attn::KvCache cache(B, H_kv, capacity, E, E_v, attn::KvDtype::bf16);
//   cache.append(k_new, v_new);                  // (B, H_kv, t, E) and (B, H_kv, t, E_v), any type
//   attn::HeadsResult next = cache.attention(q, {.backend = attn::Backend::fused});  // (B, H, L, E)
//
// A call against the cache is a call of the one path (attention/run.hpp) with the cache's filled
// part as its keys and values: the same shapes, masks, GQA, backends and bits as
// scaled_dot_product_attention given those keys and values. What the cache adds is what it knows:
// the largest norm of each head's keys and values, kept as the rows arrive, which the values step
// checks in place of measuring the cache again (AttentionOptions::kv_norms).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attention/call.hpp"
#include "attention/heads.hpp"

namespace attn {

class KvCache {
public:
    // Room for `capacity` tokens of B batches × H_kv key/value heads, keys of E numbers and values of
    // E_v, stored as `type` (float32, bfloat16 or float16), allocated at once. Holds no token yet.
    KvCache(std::size_t batch, std::size_t kv_heads, std::size_t capacity, std::size_t E, std::size_t E_v,
            KvDtype type = KvDtype::f32);

    // t new tokens after those held: K_new (B, H_kv, t, E) and V_new (B, H_kv, t, E_v), of any element
    // type, byte order and strides, rounded into the cache's type (nearest, ties to even). Refused
    // (std::invalid_argument naming both shapes) when the shapes do not fit the cache or the tokens
    // would pass its capacity; refused when a value is NaN or ±inf, or rounds to ±∞ in the cache's
    // type (std::invalid_argument, std::overflow_error, naming the token, batch and head). A refused
    // append changes nothing.
    // Messages name them `k_name` and `v_name`.
    void append(const View& K_new, const View& V_new, const std::string& k_name = "K_new",
                const std::string& v_name = "V_new");
    void append(const HeadsView& K_new, const HeadsView& V_new);  // floats

    std::size_t size() const { return size_; }  // the tokens held
    std::size_t capacity() const { return capacity_; }
    std::size_t batch() const { return batch_; }
    std::size_t kv_heads() const { return kv_heads_; }
    std::size_t E() const { return E_; }
    std::size_t E_v() const { return E_v_; }
    KvDtype type() const { return type_; }

    // Runs `call` (its queries Q, and any mask and options) against the tokens held, as keys and
    // values, through the one path into `results`. `causal` here means the queries are the newest L
    // tokens of the cache: query i sees the keys j ≤ size − L + i (the triangle aligned at the
    // bottom-right; with L = size, the top-left one of is_causal is the same). A call that gives its
    // own K or V, or `causal` with a mask when L ≠ size, is refused (std::invalid_argument).
    void run(Call call, Results& results) const;
    // What run(call) would allocate, buffer by buffer (attn::plan of the same call).
    std::vector<Buffer> plan(Call call) const;
    // The same for queries (B, H, L, E) of floats, options.mask read as the heads' entry point reads it.
    HeadsResult attention(const HeadsView& Q, const AttentionOptions& options = {}) const;

private:
    friend struct CallAgainstCache;  // the call run() and plan() describe (attention/kv_cache.cpp)
    std::size_t batch_, kv_heads_, capacity_, E_, E_v_;
    KvDtype type_;
    std::size_t size_ = 0;
    Cache keys_, values_;        // (B, H_kv, capacity, E) and (…, E_v), the first size_ tokens of each head filled
    std::vector<double> norms_;  // per (batch, key/value head): max‖k_j‖, max‖v_j‖ over the tokens held
};

}  // namespace attn
