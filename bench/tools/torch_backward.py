#!/usr/bin/env python3
"""Time PyTorch's autograd of the attention core's backward, as BM_backward times attention.cpp's.

    /usr/bin/python3 bench/tools/torch_backward.py --into build/bench.json [--threads 2] [--n 1024 2048 4096]

The expression is the one the lesson writes, O = softmax(Q·Kᵀ/√d)·V with float32 Q, K, V of n×64
that require gradients; each timed call is O.backward(dO) alone, on a graph built (untimed) just
before it, so it measures what BM_backward measures: dQ, dK and dV from dO. Each size runs 3
repetitions of at least 0.5 s of calls; the median of the three is added to the Google Benchmark
JSON file given with --into as BM_torch_backward/n:N/d:64 (its GFLOPs counted as the materialised
backward's four products, 8·n²·d), so that bench_report.py puts it beside BM_backward of the same
run. Run it right after bench_attention, in the same window. Exits 0 without writing anything, and
says so, when torch cannot be imported (Debian: python3-torch).
"""
import argparse
import json
import statistics
import sys
import time

try:
    import torch
except ImportError as e:
    print(f"torch_backward: skipped, PyTorch cannot be imported ({e}); install python3-torch")
    sys.exit(0)


def one_repetition(n, d, min_seconds):
    """Mean seconds of one backward over calls adding up to at least min_seconds."""
    g = torch.Generator().manual_seed(n)
    Q, K, V = ((torch.rand(n, d, generator=g) * 2 - 1).requires_grad_() for _ in range(3))
    dO = torch.rand(n, d, generator=g) * 2 - 1
    spent, calls = 0.0, 0
    while spent < min_seconds or calls < 2:
        O = torch.softmax(Q @ K.T / d ** 0.5, dim=-1) @ V
        start = time.perf_counter()
        O.backward(dO)
        spent += time.perf_counter() - start
        calls += 1
        Q.grad = K.grad = V.grad = None
    return spent / calls


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--into", required=True, help="the Google Benchmark JSON file to add the results to")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n", type=int, nargs="+", default=[1024, 2048, 4096])
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    with open(a.into, encoding="utf-8") as f:
        report = json.load(f)
    d = 64
    for n in a.n:
        one_repetition(n, d, 0.1)  # warm-up: first-touch and thread start-up
        seconds = statistics.median(one_repetition(n, d, 0.5) for _ in range(3))
        report["benchmarks"].append({
            "name": f"BM_torch_backward/n:{n}/d:{d}/real_time_median", "run_type": "aggregate",
            "aggregate_name": "median", "real_time": seconds * 1e3, "time_unit": "ms",
            "GFLOPs": 8.0 * n * n * d / seconds / 1e9,
            "label": f"PyTorch {torch.__version__} autograd, {a.threads} threads"})
        print(f"BM_torch_backward/n:{n}/d:{d}: {seconds * 1e3:.2f} ms")
    with open(a.into, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
