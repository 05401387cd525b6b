"""attention.cpp: scaled dot-product attention, the lesson's chain in C++, for one head or many.

Arrays: NumPy arrays, anything offering the buffer protocol or DLPack (torch CPU tensors as they are),
or what NumPy reads. A float32 array in C order is read in place, without a copy; any other (float64,
integers, float16 queries, strided, the other byte order) is converted first, charged to max_memory
like every buffer the call allocates. Bad input raises ValueError with the message attn prints.
max_memory (bytes) refuses a call whose buffers would not fit, before any work, as attn run
--max-memory does. Every call runs on every core this process may use (OMP_NUM_THREADS when set),
whatever another library such as torch set.

Each function describes one call of the library (its extension module, _attention_cpp, converts the
arrays and runs it); what is written here is the functions' Python form, and PyTorch's conventions
for its scaled_dot_product_attention.
"""
import _attention_cpp as _core

__all__ = ["attention", "attention_backward", "SingleHeadAttention", "scaled_dot_product_attention",
           "scaled_dot_product_attention_backward", "KvCache", "walk", "learn_defaults", "build_info"]


def _call(task, who, operands, *, names=None, layer=None, backend="fused", scale="sqrt", explicit_scale=None,
          causal=False, dtype="f32", kv_dtype=None, threads=None, max_memory=None, cache=None):
    return _core.call(task, who, operands, names or {}, layer, backend, scale, explicit_scale, causal, dtype, kv_dtype,
                      threads, max_memory, cache)


def attention(Q, K, V, *, backend="fused", scale="sqrt", causal=False, dtype="f32", max_memory=None):
    """O = softmax(scale·Q·Kᵀ)·V for Q (n×d_k), K (m×d_k), V (m×d_v). Returns (O, α); α is None on
    the fused backend, which never forms it. backend: naive | simd | parallel | fused; scale: sqrt |
    dk | none; dtype: f32 | bf16 (fused only: the products' operands rounded to bfloat16)."""
    r = _call("forward", "attention", dict(Q=Q, K=K, V=V), backend=backend, scale=scale, causal=causal, dtype=dtype,
              max_memory=max_memory)
    return r["output"], r["weights"]


def attention_backward(Q, K, V, dO, *, backend="fused", scale="sqrt", causal=False, max_memory=None):
    """The forward and its backward in one call: returns (dQ, dK, dV) for dO = ∂L/∂O (n×d_v)."""
    r = _call("forward_backward", "attention_backward", dict(Q=Q, K=K, V=V, dO=dO), backend=backend, scale=scale,
              causal=causal, max_memory=max_memory)
    return r["dQ"], r["dK"], r["dV"]


class SingleHeadAttention:
    """One attention head: X·W_Q, X·W_K, X·W_V, then the chain. Keeps copies of W_Q (d_model×d_k),
    W_K (d_model×d_k) and W_V (d_model×d_v), checked when it is made."""

    def __init__(self, W_Q, W_K, W_V):
        self._layer = _core.Layer(W_Q, W_K, W_V)

    def project(self, X, *, backend="fused", max_memory=None):
        """Steps 1–2: returns (Q, K, V) for X (n×d_model)."""
        r = _call("project", "SingleHeadAttention", dict(X=X), layer=self._layer, backend=backend,
                  max_memory=max_memory)
        return r["Q"], r["K"], r["V"]

    def forward(self, X, *, backend="fused", scale="sqrt", causal=False, max_memory=None):
        """The whole chain for X: returns (O, α); α is None on the fused backend."""
        r = _call("forward", "SingleHeadAttention", dict(X=X), layer=self._layer, backend=backend, scale=scale,
                  causal=causal, max_memory=max_memory)
        return r["output"], r["weights"]

    def backward(self, X, dO, *, backend="fused", scale="sqrt", causal=False, max_memory=None):
        """Forward and backward for X: a dict of dX, dW_Q, dW_K, dW_V and dQ, dK, dV."""
        r = _call("forward_backward", "SingleHeadAttention", dict(X=X, dO=dO), layer=self._layer, backend=backend,
                  scale=scale, causal=causal, max_memory=max_memory)
        return {name: r[name] for name in ("dX", "dW_Q", "dW_K", "dW_V", "dQ", "dK", "dV")}


_TORCH_NAMES = dict(Q="query", K="key", V="value", mask="attn_mask", dO="grad_output")


def _torch_rules(who, query, k, attn_mask, dropout_p, is_causal, enable_gqa):
    """PyTorch's rules of its arguments, which the library's call has no words for (k: key's shape)."""
    if dropout_p != 0.0:
        raise ValueError(f"{who}: dropout_p must be 0: this library has no dropout, got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise ValueError(f"{who}: attn_mask and is_causal=True cannot be given together (as in PyTorch); "
                         "write the causal triangle into the mask instead")
    q = _core.shape(query, who, "query")
    heads = [shape[-3] if len(shape) >= 3 else 1 for shape in (q, k)]
    if not enable_gqa and heads[0] != heads[1]:
        text = ["×".join(map(str, shape)) for shape in (q, k)]
        raise ValueError(f"{who}: query ({text[0]}) has {heads[0]} heads and key ({text[1]}) {heads[1]}: different "
                         "head counts need enable_gqa=True (grouped-query attention)")


def _sdpa(who, query, key, value, grad_output, attn_mask, dropout_p, is_causal, scale, enable_gqa, **options):
    _torch_rules(who, query, _core.shape(key, who, "key"), attn_mask, dropout_p, is_causal, enable_gqa)
    operands = dict(Q=query, K=key, V=value)
    if attn_mask is not None:
        operands["mask"] = attn_mask
    if grad_output is not None:
        operands["dO"] = grad_output
    return _call("forward" if grad_output is None else "forward_backward", who, operands, names=_TORCH_NAMES,
                 explicit_scale=scale, causal=is_causal, **options)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False, *, backend="fused", dtype="f32", threads=None, kv_dtype=None,
                                 max_memory=None):
    """torch.nn.functional.scaled_dot_product_attention's arguments and meaning, every head by the
    lesson's chain. query (N..., H, L, E), key (N..., H_kv, S, E), value (N..., H_kv, S, E_v), any
    number of leading dimensions N... (the same for all three; 2-D arrays are one head); returns
    (N..., H, L, E_v) float32. H ≠ H_kv needs enable_gqa=True: query head h reads key/value head
    h // (H // H_kv). attn_mask, broadcastable to (N..., H, L, S): bool (True = may attend) or float
    (added after the scale). is_causal: query i sees keys j ≤ i (top-left, also for L ≠ S); not together
    with attn_mask. A query no key may attend gets 0. scale: None = 1/√E. dropout_p must be 0.
    threads: None = every core this process may use (OMP_NUM_THREADS when set), whatever torch set; a
    count above the CPUs this process may run on runs that many (build_info()['cores']).
    kv_dtype: the type key and value are read in, a key/value cache (build_info()['kv_dtypes']):
    None = their own (a float16 array or a bfloat16 tensor is a cache of that type, read in place; any
    other is read as float32); 'f32', 'bf16' or 'f16': key and value are rounded into that type first,
    a pass over the cache on every call. A 16-bit cache has no backward."""
    r = _sdpa("scaled_dot_product_attention", query, key, value, None, attn_mask, dropout_p, is_causal, scale,
              enable_gqa, backend=backend, dtype=dtype, threads=threads, kv_dtype=kv_dtype, max_memory=max_memory)
    return r["output"]


def scaled_dot_product_attention_backward(query, key, value, grad_output, attn_mask=None, is_causal=False, scale=None,
                                          enable_gqa=False, *, backend="fused", threads=None, max_memory=None):
    """The forward and its backward in one call, with the forward's arguments: returns (dq, dk, dv) for
    grad_output = ∂L/∂O (N..., H, L, E_v); a key/value head shared by a group of query heads gets their
    sum. key and value must be float (a float16 array or bfloat16 tensor is a cache: no backward)."""
    r = _sdpa("scaled_dot_product_attention_backward", query, key, value, grad_output, attn_mask, 0.0, is_causal,
              scale, enable_gqa, backend=backend, threads=threads, max_memory=max_memory)
    return r["dQ"], r["dK"], r["dV"]


class KvCache:
    """A key/value cache that grows a token at a time, for decoding: room for `capacity` tokens of
    batch × kv_heads heads, keys of E numbers and values of E_v (None: E), stored as dtype ('f32',
    'bf16' or 'f16'). append(k, v) adds t tokens, k (batch, kv_heads, t, E) and v (…, E_v) of any
    type, rounded into the cache's type and checked once (NaN, ±inf, past the capacity: ValueError).
    attention(query, …) attends query (batch, H, L, E) against every token held, with
    scaled_dot_product_attention's arguments and bits, the keys and values being the tokens held;
    is_causal=True: the L queries are the newest L tokens held (query i sees keys j ≤ size − L + i)."""

    def __init__(self, batch, kv_heads, capacity, E, E_v=None, dtype="f32"):
        sizes = dict(batch=batch, kv_heads=kv_heads, capacity=capacity, E=E, E_v=E if E_v is None else E_v)
        for name, n in sizes.items():
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise ValueError(f"KvCache: {name} must be a whole number ≥ 0, got {n!r}")
        self._cache = _core.KvCache(*sizes.values(), dtype)
        self._heads = (batch, kv_heads, E)

    def append(self, k, v):
        self._cache.append(k, v)

    @property
    def size(self):
        return self._cache.size

    @property
    def capacity(self):
        return self._cache.capacity

    def __len__(self):
        return self._cache.size

    def attention(self, query, is_causal=False, attn_mask=None, scale=None, enable_gqa=False, *, backend="fused",
                  dtype="f32", threads=None, max_memory=None):
        who = "KvCache.attention"
        batch, kv_heads, E = self._heads
        held = (batch, kv_heads, self._cache.size, E)  # the keys' shape, as a call on them would see it
        _torch_rules(who, query, held, attn_mask, 0.0, is_causal, enable_gqa)
        operands = dict(Q=query) if attn_mask is None else dict(Q=query, mask=attn_mask)
        return _call("forward", who, operands, names=_TORCH_NAMES, explicit_scale=scale, causal=is_causal,
                     backend=backend, dtype=dtype, threads=threads, max_memory=max_memory, cache=self._cache)["output"]


def walk(*, lang="en", scale="sqrt", causal=False, grad=False):
    """The worked example's every intermediate as a dict: what `attn walk --format json` prints (with
    grad=True, `attn walk --grad --format json`)."""
    if lang not in ("en", "zh"):
        raise ValueError(f"lang must be one of en and zh, got '{lang}'")
    return _core.walk(lang, scale, causal, grad)


def learn_defaults():
    """attn learn's defaults as a dict: task, steps, lr (Adam's step size) and seed."""
    return _core.learn_defaults()


def build_info():
    """What this build runs: instruction set, caches and block sizes; threads: what threads=None runs
    on; cores: the most threads a call runs on; kv_dtypes: the cache types kv_dtype takes."""
    return _core.build_info()


def _read_address(A):
    """For the tests: the address at which the library reads A as a key or value, 0 when it converts A
    first (a C-contiguous float32, float16 or bfloat16 array of this machine's byte order is read where
    it is)."""
    return _core.read_address(A)
