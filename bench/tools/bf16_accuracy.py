#!/usr/bin/env python3
"""What the fused kernel's bf16 mode costs in accuracy, measured against a float64 forward.

    /usr/bin/python3 bench/tools/bf16_accuracy.py [--build build] [--into build/bench.json]

1. The lesson's worked example (attn walk): O in float32 (the walk's) and in bf16 (the fused kernel,
   dtype="bf16"), and how many of its 4-decimal numbers differ.
2. Random cases by n, d and the causal mask: Q, K, V with standard normal entries (so the scaled
   scores q·k/√d have variance 1, as the lesson's scaling intends), O in float32 and in bf16 on the
   fused backend, each against the float64 forward of the same inputs: the largest and the
   root-mean-square error of O's entries, divided by the largest |v|.
Both sides run through the library (the Python module of --build); the float64 forward is NumPy's.
It prints the figures as JSON; with --into it adds them to a benchmark run's JSON file as its
"bf16_accuracy", beside the run's timings (scripts/dev bench does), and bench/tools/bench_report.py
--page shows them with the rest of that run.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CASES = [(n, d, causal) for n in (256, 4096) for d in (16, 64, 128) for causal in (False, True)]


def float64_attention(Q, K, V, causal):
    S = Q.astype(np.float64) @ K.astype(np.float64).T / np.sqrt(Q.shape[1])
    if causal:
        S[np.triu_indices_from(S, k=1)] = -np.inf
    S -= S.max(axis=1, keepdims=True)
    P = np.exp(S)
    return (P / P.sum(axis=1, keepdims=True)) @ V.astype(np.float64)


def measure(ac):
    walk = ac.walk()
    Q, K, V = (np.array(walk[m], dtype=np.float32) for m in ("Q", "K", "V"))
    f32 = np.array(walk["output"], dtype=np.float32)
    bf16 = ac.attention(Q, K, V, backend="fused", dtype="bf16")[0]
    changed = int(sum(f"{a:.4f}" != f"{b:.4f}" for a, b in zip(f32.ravel(), bf16.ravel())))
    figures = {"worked_example": {"numbers": int(f32.size), "changed_at_4_decimals": changed,
                                  "largest_change": float(np.abs(f32 - bf16).max())}, "cases": []}
    rng = np.random.default_rng(2026)
    for n, d, causal in CASES:
        Q, K, V = (rng.standard_normal((n, d)).astype(np.float32) for _ in range(3))
        want = float64_attention(Q, K, V, causal)
        row = {"n": n, "d": d, "causal": causal}
        for dtype in ("f32", "bf16"):
            error = np.abs(ac.attention(Q, K, V, backend="fused", causal=causal, dtype=dtype)[0] - want) / np.abs(V).max()
            row[dtype] = {"max": float(error.max()), "rms": float(np.sqrt((error ** 2).mean()))}
        figures["cases"].append(row)
    return figures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="the build directory with the Python module")
    ap.add_argument("--into", help="add the figures to this benchmark JSON file as its \"bf16_accuracy\"")
    a = ap.parse_args()
    sys.path.insert(0, str((ROOT / a.build).resolve()))
    import attention_cpp as ac
    figures = measure(ac)
    print(json.dumps(figures, indent=1))
    if a.into:
        path = Path(a.into)
        data = json.loads(path.read_text(encoding="utf-8"))
        data["bf16_accuracy"] = figures
        path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")

if __name__ == "__main__":
    main()
