"""A float64 NumPy model of torch.nn.functional.scaled_dot_product_attention, as PyTorch documents it,
and of its gradients: what tests/python/test_sdpa.py holds attention_cpp.scaled_dot_product_attention to.

    weights = softmax(scale · query · keyᵀ + bias),   output = weights · value

- query (N..., H, L, E), key (N..., H_kv, S, E), value (N..., H_kv, S, E_v); with enable_gqa, each
  key/value head is repeated H / H_kv times, so query head h reads key/value head h // (H / H_kv).
- scale: 1/√E when None.
- bias: a boolean attn_mask gives 0 where True (the key takes part) and −∞ where False; a float
  attn_mask is the bias itself, added after the scale; is_causal gives −∞ above the diagonal of
  tril(ones(L, S)), aligned top-left, for any L and S.
- A query row that no key may attend (every bias −∞) gets weights 0, so output 0 and gradients 0,
  as this library documents and PyTorch's SDPA gives from 2.5 on; before 2.5 its math path gave NaN
  there (0/0 in its softmax), as a softmax written out by hand still does.
"""
import math

import numpy as np


def bias_of(L, S, attn_mask=None, is_causal=False):
    """The additive term of the scores, broadcastable to (..., L, S)."""
    bias = np.zeros((L, S))
    if is_causal:
        bias = np.where(np.tril(np.ones((L, S), dtype=bool)), 0.0, -np.inf)
    if attn_mask is not None:
        mask = np.asarray(attn_mask)
        bias = bias + (np.where(mask, 0.0, -np.inf) if mask.dtype == bool else mask.astype(np.float64))
    return bias


def softmax_rows(scores):
    """softmax over the last axis; a row of −∞ only gives 0 everywhere."""
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def _heads(query, key, value, enable_gqa):
    """The operands in float64, key and value repeated to query's head count (enable_gqa)."""
    q, k, v = (np.asarray(t, dtype=np.float64) for t in (query, key, value))
    if enable_gqa and q.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        groups = q.shape[-3] // k.shape[-3]
        k, v = np.repeat(k, groups, axis=-3), np.repeat(v, groups, axis=-3)
    return q, k, v


def factor_of(query, scale):
    return 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)


def forward(query, key, value, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """(output, weights) in float64: output (N..., H, L, E_v), weights (N..., H, L, S)."""
    q, k, v = _heads(query, key, value, enable_gqa)
    scores = factor_of(q, scale) * (q @ np.swapaxes(k, -1, -2)) + bias_of(q.shape[-2], k.shape[-2], attn_mask,
                                                                           is_causal)
    weights = softmax_rows(scores)
    return weights @ v, weights


def backward(query, key, value, grad_output, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """(dq, dk, dv) in float64 for ∂L/∂output = grad_output; a shared key/value head gets the sum of its
    group's gradients."""
    q, k, v = _heads(query, key, value, enable_gqa)
    _, weights = forward(query, key, value, attn_mask, is_causal, scale, enable_gqa)
    d_out = np.asarray(grad_output, dtype=np.float64)
    d_weights = d_out @ np.swapaxes(v, -1, -2)
    d_scores = weights * (d_weights - (d_weights * weights).sum(axis=-1, keepdims=True))
    factor = factor_of(q, scale)
    dq = factor * (d_scores @ k)
    dk = factor * (np.swapaxes(d_scores, -1, -2) @ q)
    dv = np.swapaxes(weights, -1, -2) @ d_out
    return dq, fold_groups(dk, np.shape(key)), fold_groups(dv, np.shape(value))


def magnitudes(query, key, value, grad_output, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """The same sums as forward() and backward(), over absolute values: (output, dq, dk, dv), each
    element the size of the terms its float sum adds, so that a float32 result may be off by a few
    roundings of it (where it is 0, so is the result: the row sees no key, or no term reaches it)."""
    q, k, v = _heads(query, key, value, enable_gqa)
    _, weights = forward(query, key, value, attn_mask, is_causal, scale, enable_gqa)
    d_out = np.abs(np.asarray(grad_output, dtype=np.float64))
    d_weights = d_out @ np.abs(np.swapaxes(v, -1, -2))
    d_scores = weights * (d_weights + (d_weights * weights).sum(axis=-1, keepdims=True))
    factor = factor_of(q, scale)
    output = weights @ np.abs(v)
    dq = factor * (d_scores @ np.abs(k))
    dk = factor * (np.swapaxes(d_scores, -1, -2) @ np.abs(q))
    dv = np.swapaxes(weights, -1, -2) @ d_out
    return output, dq, fold_groups(dk, np.shape(key)), fold_groups(dv, np.shape(value))


def fold_groups(per_query_head, shape):
    """Gradients per query head (..., H, S, ·) summed over each group into the key/value heads' shape."""
    if per_query_head.shape == tuple(shape):
        return per_query_head
    *lead, heads, rows, cols = per_query_head.shape
    kv_heads = shape[-3]
    return per_query_head.reshape(*lead, kv_heads, heads // kv_heads, rows, cols).sum(axis=-3)


BF16_UNIT = 2.0**-8  # bfloat16's rounding: 8 significant bits
FLOAT_UNIT = 2.0**-23  # a float's rounding, doubled


def bf16_bound(query, key, value, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """How far the bf16 fused output may be from forward()'s, element by element (tests/test_bf16.cpp
    derives it): with E_i = scale·(2u + u² + E·ε)·‖q_i‖·max_j ‖k_j‖ (plus ε of the scores' size, for
    the float addition of a mask), |Ô_ic − O_ic| ≤ max over the row's visible keys j of |v_jc| ·
    ((1 + u)²·e^(2E_i)·(1 + (S + 64)·ε) − 1)."""
    q, k, v = _heads(query, key, value, enable_gqa)
    u, eps = BF16_UNIT, FLOAT_UNIT
    factor = factor_of(q, scale)
    bias = np.broadcast_to(bias_of(q.shape[-2], k.shape[-2], attn_mask, is_causal),
                           q.shape[:-1] + (k.shape[-2],))
    longest_key = np.linalg.norm(k, axis=-1).max(axis=-1)[..., None, None]
    largest_score = factor * np.linalg.norm(q, axis=-1)[..., None] * longest_key
    largest_bias = np.where(np.isfinite(bias), np.abs(bias), 0.0).max(axis=-1, keepdims=True)
    E = factor * (2 * u + u * u + q.shape[-1] * eps) * np.linalg.norm(q, axis=-1)[..., None] * longest_key
    E = E + eps * (largest_score + largest_bias)
    spread = (1 + u) ** 2 * np.exp(2 * E) * (1 + (k.shape[-2] + 64) * eps) - 1
    visible = np.isfinite(bias)  # (N..., H, L, S)
    largest_v = np.zeros(q.shape[:-1] + v.shape[-1:])  # (N..., H, L, E_v), one key at a time
    for j in range(k.shape[-2]):
        largest_v = np.maximum(largest_v, np.where(visible[..., j, None], np.abs(v[..., j, None, :]), 0.0))
    return largest_v * spread


# A key/value cache's rounding (attn::to_cache): a number x is stored as x̂ with |x̂ − x| ≤ unit·|x| + floor.
# bfloat16 keeps 8 significant bits and flushes what lies below 2⁻¹²⁶ to 0; float16 keeps 11, and
# below 2⁻¹⁴ its subnormals step by 2⁻²⁴, so a number there moves by up to 2⁻²⁵ whatever its size.
CACHE_ROUNDING = {"f32": (0.0, 0.0), "bf16": (BF16_UNIT, 2.0**-126), "f16": (2.0**-11, 2.0**-25)}


def cache_bound(query, key, value, kv_dtype, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """How far forward() on the keys and values a kv_dtype cache holds may be from forward() on the
    unrounded ones, element by element (tests/test_decode.cpp derives it). A score moves by at most
    ε_ij = scale·Σ_p |q_ip|·(u·|k_jp| + η); with ε_i the largest over the keys row i sees, every weight
    moves by a factor within e^(±2ε_i), and a value by u·|v_jc| + η, so
        |Ô_ic − O_ic| ≤ (e^(2ε_i) − 1)·Σ_j α_ij·((1 + u)·|v_jc| + η) + Σ_j α_ij·(u·|v_jc| + η).
    The float32 arithmetic of a kernel comes on top (magnitudes() on the rounded cache bounds it)."""
    q, k, v = _heads(query, key, value, enable_gqa)
    u, floor = CACHE_ROUNDING[kv_dtype]
    _, weights = forward(query, key, value, attn_mask, is_causal, scale, enable_gqa)
    moves = factor_of(q, scale) * (u * np.abs(q) @ np.swapaxes(np.abs(k), -1, -2)
                                   + floor * np.abs(q).sum(axis=-1, keepdims=True))
    visible = np.isfinite(bias_of(q.shape[-2], k.shape[-2], attn_mask, is_causal))
    largest = np.where(visible, moves, 0.0).max(axis=-1, keepdims=True)
    return np.expm1(2 * largest) * (weights @ ((1 + u) * np.abs(v) + floor)) + weights @ (u * np.abs(v) + floor)
