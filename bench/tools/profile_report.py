#!/usr/bin/python3
"""Where the fused kernels' time goes: a sampled profile, one line per cost, for docs/performance.md.

    /usr/bin/python3 bench/tools/profile_report.py --bench build/bench_attention [--rounds 3]

For each case, each round: its peak on 2 threads (BM_peak_fma; BM_peak_bf16 for the bf16 mode), then
the case under `perf record -e cpu-clock` (a timer, not a hardware counter: it works in virtual
machines that expose none). Each sample is put in one bucket by the function it fell in (BUCKETS,
first match wins), and the table gives each bucket's share of the samples: the median over the
rounds, the lowest and highest in brackets. Its
first line is the case's GFLOP/s as a share of the peak of its round; its last one that share
divided by the register tile's share of the time, which is the rate of the FMAs while they run
(every flop the benchmark counts is done in the tile). Needs `perf` and a release build.

    /usr/bin/python3 bench/tools/profile_report.py --self-test --bench build/bench_attention

checks the bucketing and the arithmetic on a made-up report, and that every benchmark the profile
runs exists, and prints "N passed, M failed".
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from rounds import fmt, spread

# (title, benchmark, the peak it is a share of: BM_peak_fma, or BM_peak_bf16 for the bf16 mode)
CASES = [
    ("forward, n = 2048", "BM_core/fused/n:2048/d:64/", "fma"),
    ("forward, n = 16384", "BM_core_long/fused/n:16384/causal:0/", "fma"),
    ("forward bf16, n = 2048", "BM_core/fused_bf16/n:2048/d:64/", "bf16"),
    ("backward, n = 2048", "BM_backward/fused/n:2048/d:64/", "fma"),
    ("backward, n = 4096", "BM_backward/fused/n:4096/d:64/", "fma"),
]

# (bucket, pattern on "dso symbol"): the first that matches a sample's function takes it.
BUCKETS = [
    ("register tile (the FMAs)", r"microkernel"),
    ("exponentials", r"exp2?_and_sum|softmax_exp"),
    ("row maxima, sums, rescaling", r"row_max|scale_and_max|online_softmax_update|rescale_factors"),
    ("plain copies (memmove)", r"__mem(move|cpy)"),
    ("waiting for the other thread", r"^libgomp|sched_yield"),
    ("the rest of the kernel's loop: packing Kᵀ, bookkeeping (backward: its exponentials, dS)", r"attn::simd::"),
    ("everything else: the guards' norms, setup, the operating system", r""),
]


def run_json(bench, name, min_time, perf_data=None):
    command = [bench, f"--benchmark_filter=^{re.escape(name)}", f"--benchmark_min_time={min_time}",
               "--benchmark_format=json"]
    if perf_data:
        command = ["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000", "-o", perf_data] + command
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(out)["benchmarks"][0]["GFLOPs"]


def perf_report(perf_data):
    return subprocess.run(["perf", "report", "-i", perf_data, "--stdio", "--no-children", "--sort", "dso,sym",
                           "--percent-limit", "0"], capture_output=True, text=True, check=True).stdout


def bucket_shares(report):
    """Each bucket's share of the samples, from the lines of `perf report --sort dso,sym`."""
    shares = {name: 0.0 for name, _ in BUCKETS}
    for line in report.splitlines():
        m = re.match(r"^\s*([\d.]+)%\s+(\S+)\s+\[.\]\s+(.*?)\s*$", line)
        if not m:
            continue
        where = f"{m.group(2)} {m.group(3)}"
        name = next(n for n, pattern in BUCKETS if re.search(pattern, where))
        shares[name] += float(m.group(1))
    return shares


def cell(values, digits=0):
    return fmt(spread(values), digits, "%")


def self_test(bench):
    """The bucketing and the cells on a made-up report; and every benchmark it runs exists in `bench`."""
    report = """# Samples: 1K of event 'cpu-clock'
    70.00%  bench_attention   [.] attn::simd::avx512::microkernel<12ul, attn::simd::avx512::FmaStep>
     8.00%  bench_attention   [.] attn::simd::avx512::exp2_and_sum
     4.00%  bench_attention   [.] attn::simd::avx512::row_max
     3.00%  libc.so.6         [.] __memmove_avx512_unaligned_erms
     5.00%  libgomp.so.1.0.0  [.] 0x000000000001f7da
     1.00%  libc.so.6         [.] __sched_yield
     6.00%  bench_attention   [.] attn::simd::avx512::(anonymous namespace)::fused_attention<false>
     2.00%  [kernel.kallsyms] [k] clear_page_erms
     1.00%  bench_attention   [.] attn::max_row_norm
"""
    shares = bucket_shares(report)
    names = [name for name, _ in BUCKETS]
    checks = [
        shares[names[0]] == 70.0, shares[names[1]] == 8.0, shares[names[2]] == 4.0, shares[names[3]] == 3.0,
        shares[names[4]] == 6.0, shares[names[5]] == 6.0, shares[names[6]] == 3.0,
        abs(sum(shares.values()) - 100.0) < 1e-9,
        cell([64.0, 61.0, 70.0]) == "64% [61, 70]", cell([7.44, 7.51], 1) == "7.5% [7.4, 7.5]",
    ]
    listed = subprocess.run([bench, "--benchmark_list_tests"], capture_output=True, text=True, check=True).stdout
    checks += [any(line.startswith(name) for line in listed.splitlines())
               for name in ["BM_peak_fma/threads:2/", "BM_peak_bf16/threads:2/"] + [name for _, name, _ in CASES]]
    failed = checks.count(False)
    print(f"{len(checks) - failed} passed, {failed} failed")
    return failed == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("--bench", default="build/bench_attention")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-time", type=float, default=2.0)
    args = parser.parse_args()
    if args.self_test:
        sys.exit(0 if self_test(args.bench) else 1)
    columns = []
    with tempfile.TemporaryDirectory() as work:
        for title, name, kind in CASES:
            rounds = []
            for _ in range(args.rounds):
                peak = run_json(args.bench, f"BM_peak_{kind}/threads:2/", 0.5)
                data = str(Path(work) / "perf.data")
                rate = run_json(args.bench, name + "real_time", args.min_time, data)
                shares = bucket_shares(perf_report(data))
                tile = shares[BUCKETS[0][0]]
                rounds.append({"peak": 100 * rate / peak, "tile_rate": 100 * rate / peak / (tile / 100), **shares})
            columns.append((title, rounds))
    info = Path("/proc/cpuinfo").read_text()
    cpu = re.search(r"model name\s*:\s*(.*)", info)
    print(f"Machine: {cpu.group(1) if cpu else 'unknown CPU'}, {info.count('processor')} CPUs; 2 threads, d = 64; {args.rounds} rounds, each case right "
          "after its peak on 2 threads (`BM_peak_fma`; the bf16 column `BM_peak_bf16`); a cell is the median share of "
          "the samples [lowest, highest].\n")
    print("| | " + " | ".join(title for title, _ in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    print("| share of the peak (FMA; bf16: vdpbf16ps) | " + " | ".join(cell([r["peak"] for r in rs]) for _, rs in columns)
          + " |")
    for name, _ in BUCKETS:
        print(f"| {name} | " + " | ".join(cell([r[name] for r in rs], 1) for _, rs in columns) + " |")
    print("| the tile's rate while it runs | " + " | ".join(cell([r["tile_rate"] for r in rs]) for _, rs in columns)
          + " |")


if __name__ == "__main__":
    main()
