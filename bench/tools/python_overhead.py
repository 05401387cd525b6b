#!/usr/bin/env python3
"""What calling the library through Python costs, measured.

    /usr/bin/python3 bench/tools/python_overhead.py [--build build] [--rounds 5]

1. The lesson's example (3 tokens, d_k = d_v = 3) through attention_cpp.attention, per backend:
   microseconds per call, the median of 9 batches of 2000 calls. At this size nearly all of it is the
   crossing: argument conversion, the library's checks, two result arrays.
2. The fused kernel at n = 2048, d = 64 through Python against the C++ benchmark's
   BM_core/fused/n:2048/d:64, in the same window: the two alternate for --rounds rounds (each side the
   median of 5 runs), and the ratio C++ time / Python time is reported per round and as the median
   (1.0 = no overhead; the target is ≥ 0.95). Both count 4·n²·d flops.
Run it on a quiet machine (check `ps` first); it prints, and records nothing.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def median_seconds(call, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, args.build)
    import attention_cpp as ac

    info = ac.build_info()
    print(f"cpu: {info['cpu']}; kernels: {info['isa']}; threads: {info['threads']}")

    walk = ac.walk()
    Q, K, V = (np.array(walk[k], dtype=np.float32) for k in ("Q", "K", "V"))
    for backend in ("naive", "simd", "parallel", "fused"):
        calls = 2000
        per_call = median_seconds(lambda: [ac.attention(Q, K, V, backend=backend) for _ in range(calls)], 9) / calls
        print(f"the lesson's 3×3 example, backend {backend}: {per_call * 1e6:.2f} µs per call")

    n, d = 2048, 64
    rng = np.random.default_rng(1)
    Qn, Kn, Vn = (rng.standard_normal((n, d)).astype(np.float32) for _ in range(3))
    flops = 4.0 * n * n * d
    bench = [str(Path(args.build) / "bench_attention"), "--benchmark_filter=^BM_core/fused/n:2048/d:64/real_time$",
             "--benchmark_repetitions=5", "--benchmark_format=json"]
    ratios = []
    for r in range(args.rounds):
        python = median_seconds(lambda: ac.attention(Qn, Kn, Vn, backend="fused"), 5)
        report = json.loads(subprocess.run(bench, capture_output=True, text=True, check=True).stdout)
        runs = [b for b in report["benchmarks"] if b.get("run_type") == "iteration"]
        cpp = statistics.median(b["real_time"] for b in runs) * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[
            runs[0]["time_unit"]]
        ratios.append(cpp / python)
        print(f"round {r + 1}: fused n = {n}, d = {d}: Python {python * 1e3:.2f} ms ({flops / python / 1e9:.0f} GFLOP/s), "
              f"C++ {cpp * 1e3:.2f} ms ({flops / cpp / 1e9:.0f} GFLOP/s): {cpp / python:.3f}×")
    print(f"median over {args.rounds} rounds: Python reaches {statistics.median(ratios):.3f}× the C++ benchmark "
          f"(target ≥ 0.95)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
