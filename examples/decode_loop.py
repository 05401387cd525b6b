"""Generating tokens one at a time with a key/value cache, and what the cache saves.

One attention layer with random weights (it is the cost that teaches, not the text):

    each step t:  q, k, v = x_t·W_Q, x_t·W_K, x_t·W_V   the new token's projections, H heads of E
                  cache.append(k, v)                     the cache now holds tokens 0..t
                  o = softmax(q·Kᵀ/√E)·V                 against every token held
                  x_{t+1} = o·W_O, scaled to length 1    the next token's input

Without a cache each step projects the whole prefix again, K = X·W_K and V = X·W_V for t + 1 tokens:
O(t) work a step, O(n²) for n tokens, against O(1) a step with the cache (the attention reads every
token held either way). Both loops run on the same tokens; the time per token of each is printed at a
few prefix lengths, measured on this machine, and the program fails when their outputs differ by
more than float rounding.

    python3 examples/decode_loop.py [--tokens N]     (N = 256 unless given)
"""
import argparse
import sys
import time

import numpy as np

import attention_cpp as ac

D_MODEL, H, E = 256, 4, 64  # H heads of E numbers each: H·E = d_model


def next_input(o, W_O):
    """o·W_O scaled to length 1: the next token's input."""
    x = o.reshape(1, H * E) @ W_O
    return x / max(np.linalg.norm(x), 1e-30)


def with_cache(W_Q, W_K, W_V, W_O, x0, n):
    """Each step projects the new token alone. Returns the inputs, the outputs, each step's time."""
    cache = ac.KvCache(1, H, n, E, dtype="f32")  # room for every token, allocated once
    X, O, times = np.empty((n, D_MODEL), np.float32), np.empty((n, H * E), np.float32), []
    x = x0
    for t in range(n):
        start = time.perf_counter()
        heads = lambda row: row.reshape(1, H, 1, E)  # (1, H·E) as (1, H, 1, E): head h is columns h·E…
        q, k, v = heads(x @ W_Q), heads(x @ W_K), heads(x @ W_V)
        cache.append(k, v)
        o = cache.attention(q)  # one new query: it sees every token held
        times.append(time.perf_counter() - start)
        X[t], O[t] = x, o.reshape(H * E)
        x = next_input(o, W_O)
    return X, O, times


def recomputing(W_Q, W_K, W_V, X):
    """Each step projects the whole prefix X[0..t] again, then attends the newest query."""
    O, times = np.empty((len(X), H * E), np.float32), []
    for t in range(len(X)):
        start = time.perf_counter()
        prefix = X[:t + 1]
        K = (prefix @ W_K).reshape(t + 1, H, E).transpose(1, 0, 2)[None]  # (1, H, t+1, E)
        V = (prefix @ W_V).reshape(t + 1, H, E).transpose(1, 0, 2)[None]
        q = (X[t:t + 1] @ W_Q).reshape(1, H, 1, E)
        o = ac.scaled_dot_product_attention(q, K, V)
        times.append(time.perf_counter() - start)
        O[t] = o.reshape(H * E)
    return O, times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=256)
    n = parser.parse_args().tokens
    if n < 2:
        sys.exit("decode_loop.py: --tokens must be at least 2")
    rng = np.random.default_rng(2024)
    weights = lambda rows, cols: (rng.standard_normal((rows, cols)) / np.sqrt(rows)).astype(np.float32)
    W_Q, W_K, W_V, W_O = weights(D_MODEL, H * E), weights(D_MODEL, H * E), weights(D_MODEL, H * E), weights(H * E, D_MODEL)
    x0 = weights(1, D_MODEL)  # the first token's input, of length about 1

    X, O_cached, cached = with_cache(W_Q, W_K, W_V, W_O, x0, n)
    O_recomputed, recomputed = recomputing(W_Q, W_K, W_V, X)

    print(f"{n} tokens, one layer of {H} heads of {E} (d_model = {D_MODEL}), random weights")
    print(f"{'prefix':>10}  {'with cache (µs)':>16}  {'recompute (µs)':>16}  {'ratio':>8}")
    prefixes = [p for p in (8 << k for k in range(32)) if p < n] + [n]  # each row: the mean of steps (p/2, p]
    for p in prefixes:
        a, b = 1e6 * np.mean(cached[p // 2:p]), 1e6 * np.mean(recomputed[p // 2:p])
        print(f"{p:>10}  {a:16.1f}  {b:16.1f}  {b / a:7.1f}×")
    largest = float(np.max(np.abs(O_cached - O_recomputed)))
    print(f"largest difference between the two loops' outputs: {largest:.3g}")
    if not largest <= 1e-5:
        sys.exit(f"decode_loop.py: the cache's outputs differ from the recomputed ones by {largest:.3g}")


if __name__ == "__main__":
    main()
