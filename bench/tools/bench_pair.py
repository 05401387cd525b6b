#!/usr/bin/python3
"""Compare two builds of the benchmark on a shared, noisy machine, by paired runs.

    /usr/bin/python3 bench/tools/bench_pair.py BASE NEW FILTER [--pairs N] [--min-time S]

BASE and NEW are two bench_attention executables (say /tmp/base/build/bench_attention, built from
another commit in a git worktree, and build/bench_attention). For each benchmark FILTER selects, the
two run one after the other, N times, for S seconds each, taking turns at going first. On the
machines of docs/performance.md the other tenants moved the 2-thread FMA peak between 277 and 425
GFLOP/s within minutes: two builds measured minutes apart differ by that much whatever their code.
A pair is measured within a second, so each pair's ratio NEW/BASE sees nearly the same neighbours,
and the median of the ratios (quartiles beside it) is what the change is worth. Printed per
benchmark: the median GFLOP/s of each build (runs per second where it counts no flops) and the median
ratio [first quartile, third quartile].
OMP_NUM_THREADS=1 in the environment measures one thread (quieter still).
"""
import argparse
import json
import statistics
import subprocess
import sys


def names(exe, pattern):
    listed = subprocess.run([exe, "--benchmark_list_tests", "--benchmark_filter=" + pattern], capture_output=True,
                            text=True, check=True).stdout
    return [line.strip() for line in listed.splitlines() if line.strip()]


def rate(exe, name, min_time):
    """GFLOP/s, or for a benchmark that counts no flops (BM_softmax_rows) runs per second."""
    out = subprocess.run([exe, "--benchmark_filter=^" + name + "$", "--benchmark_min_time=" + min_time,
                          "--benchmark_format=json"], capture_output=True, text=True, check=True).stdout
    result = json.loads(out)["benchmarks"][0]
    if "GFLOPs" in result:
        return result["GFLOPs"]
    seconds = result["real_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[result["time_unit"]]
    return 1.0 / seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("filter")
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--min-time", default="0.3")
    args = parser.parse_args()
    selected = names(args.new, args.filter)
    if not selected:
        sys.exit(f"bench_pair: no benchmark matches {args.filter!r}")
    for name in selected:
        base, new = [], []
        for i in range(args.pairs):
            order = [(args.base, base), (args.new, new)]
            for exe, results in order if i % 2 == 0 else reversed(order):
                results.append(rate(exe, name, args.min_time))
        ratios = sorted(n / b for b, n in zip(base, new))
        quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
        print(f"{name:50s} base {statistics.median(base):7.1f}  new {statistics.median(new):7.1f}  "
              f"new/base {statistics.median(ratios):.3f} [{quartiles[0]:.3f}, {quartiles[2]:.3f}]", flush=True)


if __name__ == "__main__":
    main()
