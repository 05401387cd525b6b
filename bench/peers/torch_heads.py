#!/usr/bin/python3
"""PyTorch as a reader of the lesson writes attention for many heads, timed on the CPU.

    /usr/bin/python3 bench/peers/torch_heads.py --threads 2 --min-time 0.5 --heads 32 [--keys S] [--dtype bfloat16] \
        L:E:H_kv:causal

One case per process (bench/peers/heads_peers.py starts it and measures the process's peak memory).
S = L unless --keys gives it (decoding: L = 1, bench/peers/decode_peers.py).
The expression is the lesson's chain on (1, H, L, E) float32 tensors (or, with --dtype bfloat16, the
same inputs rounded to bfloat16, everything computed in that type), as it reads in any PyTorch:

    torch.softmax(q @ k.transpose(-2, -1) * scale, -1) @ v

with `+ causal_mask` (L × S: 0 on and below the diagonal, −∞ above, made once outside the timing) before the
softmax when causal, and, when H_kv < H, k and v repeated to H heads inside the timed call
(repeat_interleave, what enable_gqa does), since the reader's expression needs as many key heads
as query heads. Every (L × S) score matrix of every head is materialised: this is the memory a
reader's version pays. torch.set_num_threads sets the threads.
Printed: one JSON line {engine, case, calls, seconds (mean per call), checksum}.
"""
import argparse
import json
import math
import time

import numpy
import torch


def input_values(t, shape):
    """heads_peers.py's input formula for tensor t (0 = Q, 1 = K, 2 = V), canonical order = this shape's."""
    i = numpy.arange(1, math.prod(shape) + 1, dtype=numpy.float64)
    return torch.from_numpy((numpy.mod(i * 0.6180339887498949 + t * 0.1, 1.0) * 2 - 1).astype(numpy.float32).reshape(shape))


def checksum(output):
    """heads_peers.py's checksum over O (1, H, L, E): Σ O[h, n, e] · ((31·h + 7·n + e) mod 13 − 6)."""
    _, heads, tokens, width = output.shape
    h, n, e = numpy.meshgrid(numpy.arange(heads), numpy.arange(tokens), numpy.arange(width), indexing="ij")
    weights = numpy.mod(31 * h + 7 * n + e, 13) - 6
    return float(numpy.sum(output[0].double().numpy() * weights))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", help="L:E:H_kv:causal (batch 1)")
    parser.add_argument("--keys", type=int, help="S, the keys and values of each head (default: L)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--min-time", type=float, default=0.5)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    args = parser.parse_args()
    L, E, kv_heads, causal = map(int, args.case.split(":"))
    S = args.keys or L
    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    q = input_values(0, (1, args.heads, L, E)).to(dtype)
    k = input_values(1, (1, kv_heads, S, E)).to(dtype)
    v = input_values(2, (1, kv_heads, S, E)).to(dtype)
    scale = 1.0 / math.sqrt(E)
    mask = torch.full((L, S), float("-inf"), dtype=dtype).triu(1) if causal else None
    group = args.heads // kv_heads

    def attention():
        keys, values = (k, v) if group == 1 else (k.repeat_interleave(group, 1), v.repeat_interleave(group, 1))
        scores = q @ keys.transpose(-2, -1) * scale
        if mask is not None:
            scores = scores + mask
        return torch.softmax(scores, -1) @ values

    with torch.no_grad():
        total = checksum(attention())  # untimed: the first call also warms the allocator
        calls, start, seconds = 0, time.perf_counter(), 0.0
        while calls == 0 or seconds < args.min_time:
            attention()
            calls += 1
            seconds = time.perf_counter() - start
    print(json.dumps({"engine": "torch", "case": args.case, "calls": calls, "seconds": seconds / calls,
                      "checksum": total, "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
