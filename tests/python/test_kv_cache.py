"""attention_cpp.KvCache: a key/value cache that grows a token at a time.

Its attention is held to the slice-passing call, scaled_dot_product_attention(q, K[..., :size, :],
V[..., :size, :]) with the same kv_dtype, bit for bit: every cache type, every backend, several sizes
(a prompt of several tokens, then one token at a time), grouped heads, is_causal for a block of the
newest queries (against the bottom-right triangle given as a mask) and masks. Then its refusals, each
a ValueError naming the argument.
"""
import numpy as np
import pytest

import attention_cpp as ac

B, H, H_KV, E, E_V, CAPACITY = 2, 4, 2, 8, 6, 24
KV_DTYPES = ["f32", "bf16", "f16"]
BACKENDS = ["naive", "simd", "parallel", "fused"]
STEPS = [4, 1, 1, 3, 1, 8]  # tokens appended at a time: a prompt, then decoding


def newest_causal(L, S):
    """The queries as the newest L of S tokens: query i sees keys j ≤ S − L + i."""
    return np.arange(S)[None, :] <= S - L + np.arange(L)[:, None]


@pytest.mark.parametrize("kv_dtype", KV_DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_attention_is_the_slice_call_bit_for_bit(kv_dtype, backend):
    rng = np.random.default_rng(74)
    K = rng.standard_normal((B, H_KV, CAPACITY, E), dtype=np.float32)
    V = rng.standard_normal((B, H_KV, CAPACITY, E_V), dtype=np.float32)
    cache = ac.KvCache(B, H_KV, CAPACITY, E, E_V, dtype=kv_dtype)
    for t in STEPS:
        size = len(cache)
        cache.append(K[:, :, size:size + t], V[:, :, size:size + t])
        size += t
        assert cache.size == size and len(cache) == size
        keys, values = K[..., :size, :], V[..., :size, :]
        for L in sorted({1, 3, size}):
            q = rng.standard_normal((B, H, L, E), dtype=np.float32)
            common = dict(enable_gqa=True, backend=backend)

            def slice_call(**options):
                return ac.scaled_dot_product_attention(q, keys, values, kv_dtype=kv_dtype, **common, **options)

            assert np.array_equal(cache.attention(q, **common), slice_call())
            causal = slice_call(is_causal=True) if L == size else slice_call(attn_mask=newest_causal(L, size))
            assert np.array_equal(cache.attention(q, is_causal=True, **common), causal)
            mask = np.where(rng.random((L, size)) < 0.2, -np.inf, rng.standard_normal((L, size))).astype(np.float32)
            assert np.array_equal(cache.attention(q, attn_mask=mask, scale=0.3, **common),
                                  slice_call(attn_mask=mask, scale=0.3))
    assert cache.capacity == CAPACITY and len(cache) == sum(STEPS)


def test_any_array_type_is_rounded_into_the_cache():
    rng = np.random.default_rng(1)
    k = rng.standard_normal((1, 1, 5, 4))  # float64
    cache = ac.KvCache(1, 1, 8, 4, dtype="f16")
    cache.append(k, k.astype(">f4"))  # and the other byte order
    q = rng.standard_normal((1, 1, 1, 4), dtype=np.float32)
    assert np.array_equal(cache.attention(q), ac.scaled_dot_product_attention(q, k, k, kv_dtype="f16"))


def test_refusals_name_the_argument():
    cache = ac.KvCache(1, 2, 3, 4, 5)
    k, v = np.zeros((1, 2, 2, 4), np.float32), np.zeros((1, 2, 2, 5), np.float32)
    cache.append(k, v)
    with pytest.raises(ValueError, match=r"k \(1×2×2×4\) and v \(1×2×2×5\) bring 2 tokens to the 2 held, more than "
                                         r"the capacity of 3"):
        cache.append(k, v)
    with pytest.raises(ValueError, match=r"k \(1×2×1×3\) and v \(1×2×1×5\) must be"):
        cache.append(np.zeros((1, 2, 1, 3)), np.zeros((1, 2, 1, 5)))
    bad = np.zeros((1, 2, 1, 5), np.float32)
    bad[0, 1, 0, 2] = np.nan
    with pytest.raises(ValueError, match=r"v \(1×2×1×5\) holds NaN in token 0 \(position 2 of the cache\), batch 0, "
                                         r"head 1"):
        cache.append(np.zeros((1, 2, 1, 4)), bad)
    assert len(cache) == 2
    with pytest.raises(ValueError, match=r"KvCache.append: k: "):
        cache.append("not numbers", v)
    with pytest.raises(ValueError, match=r"capacity must be a whole number ≥ 0, got -1"):
        ac.KvCache(1, 1, -1, 4)
    with pytest.raises(ValueError, match=r"dtype must be one of"):
        ac.KvCache(1, 1, 4, 4, dtype="f64")
    q = np.zeros((1, 4, 1, 4), np.float32)
    with pytest.raises(ValueError, match=r"KvCache.attention: query \(1×4×1×4\) has 4 heads and key \(1×2×2×4\) 2"):
        cache.attention(q)
    with pytest.raises(ValueError, match=r"attn_mask and is_causal=True cannot be given together"):
        cache.attention(q, is_causal=True, attn_mask=np.ones((1, 2), bool), enable_gqa=True)
    with pytest.raises(ValueError, match=r"query \(1×4×1×3\)"):
        cache.attention(np.zeros((1, 4, 1, 3), np.float32), enable_gqa=True)
