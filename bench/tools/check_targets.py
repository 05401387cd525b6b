#!/usr/bin/python3
"""Measure the project's speed targets on this machine: each as a percentage of the FMA peak of the same moment.

    /usr/bin/python3 bench/tools/check_targets.py [--bench build/bench_attention] [--rounds 5] [--min-time 0.5]
                                              [--isa avx2] [--json out.json]
    /usr/bin/python3 bench/tools/check_targets.py --self-test [--bench build/bench_attention]

The targets are percentages of the FMA peak (BM_peak_fma: register-only FMAs, the most this CPU can
do), never absolute times, so they mean the same on any machine, and they must be measured on the
machine that claims them. On a shared host the peak itself moves by up to 1.5× within minutes, so
one peak for the whole run would be wrong for most of it. Here every benchmark runs in one process
right after the peak of its own thread count (Google Benchmark runs BM_peak_fma first), and its
percentage is taken against that peak. Each round does this once for every target; a target's
figure is the median over the rounds of those percentages, printed with the lowest and highest.
"met" means the median is at or above the target.

Below the targets, two rows with no target: the register tile alone with all its data in L1
(BM_tile_in_l1, 6 and 12 rows), measured the same way against the 1-thread peak. No product can run
faster than its tile, and on a shared host that ceiling itself moves from one hour to the next: a
target above the ceiling of the hour it was measured in says more about the hour than about the code.

The first lines name the machine as the benchmark binary saw it (CPU model, instruction set,
caches, block sizes): a percentage says nothing about a CPU it was not measured on.

Two targets whose shares must stay close (GAPS: n = 16384 within 3 points of n = 4096) are judged
on the medians of the same rounds.

The bf16 mode's targets are shares of its own peak, BM_peak_bf16 (vdpbf16ps: two products a lane per
instruction, twice the FMA's flops), and speed-ups over the float32 fused kernel: both benchmarks in
one process, one right after the other, their time ratio per round (RATIOS). Where the kernels have no
vdpbf16ps, BM_peak_bf16 is skipped and so are these rows, saying so.

--isa sets ATTN_ISA, so that the same build measures, say, its AVX2 kernels on an AVX-512 CPU, against
the AVX2 peak (BM_peak_fma is dispatched like every kernel). --json writes every round's numbers.
--self-test checks the arithmetic on made-up rounds and, given --bench, that every target's
benchmark exists in that binary; it prints "N passed, M failed" for CI.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Target:
    what: str        # how the target is worded
    benchmark: str   # the Google Benchmark name, without /real_time
    threads: int     # OMP_NUM_THREADS for the run, and which peak it is measured against
    percent: float | None  # at least this share of the peak; None: a ceiling, measured beside them
    peak: str = "fma"      # the peak: BM_peak_fma, or "bf16": BM_peak_bf16


# The targets: shares of the peak (d = 64, or E = 128 for many heads; causal cores count the flops
# they do: half).
TARGETS = [
    Target("fused core, n = 1024", "BM_core/fused/n:1024/d:64", 2, 80),
    Target("fused core, n = 2048", "BM_core/fused/n:2048/d:64", 2, 83),
    Target("fused core, n = 4096", "BM_core/fused/n:4096/d:64", 2, 83),
    Target("fused core, n = 16384", "BM_core_long/fused/n:16384/causal:0", 2, 83),
    Target("fused core, n = 16384, causal", "BM_core_long/fused/n:16384/causal:1", 2, 83),
    Target("materialised core, n = 2048", "BM_core/parallel/n:2048/d:64", 2, 70),
    Target("GEMM 1024³", "BM_matmul_square/simd/n:1024/d:1024", 1, 90),
    Target("fused backward, n = 2048", "BM_backward/fused/n:2048/d:64", 2, 75),
    Target("fused backward, n = 4096", "BM_backward/fused/n:4096/d:64", 2, 75),
    Target("materialised backward, n = 2048", "BM_backward/parallel/n:2048/d:64", 2, 45),
    Target("many heads, H = 32, E = 128, L = 1024", "BM_heads/fused/L:1024/E:128/H_kv:32/causal:0", 2, 85),
    Target("many heads, H = 32, E = 128, L = 4096", "BM_heads/fused/L:4096/E:128/H_kv:32/causal:0", 2, 85),
]

# Two targets' shares that must stay close: the median of the first at most `points` above the second's.
@dataclass(frozen=True)
class Gap:
    what: str
    higher: str  # the benchmark that may be ahead …
    lower: str   # … of this one, by at most
    points: float


GAPS = [Gap("fused core: n = 16384 within 3 points of n = 4096", "BM_core/fused/n:4096/d:64",
            "BM_core_long/fused/n:16384/causal:0", 3.0)]
BF16_TARGETS = [
    Target("fused core bf16, n = 2048", "BM_core/fused_bf16/n:2048/d:64", 2, 78, "bf16"),
    Target("fused core bf16, n = 4096", "BM_core/fused_bf16/n:4096/d:64", 2, 78, "bf16"),
    Target("fused core bf16, n = 16384", "BM_core_long/fused_bf16/n:16384/causal:0", 2, 78, "bf16"),
]


@dataclass(frozen=True)
class Ratio:
    what: str
    faster: str      # the benchmark that must be faster …
    slower: str      # … than this one, run right after it in the same process
    threads: int
    at_least: float  # slower's time ÷ faster's time, at least this


RATIOS = [Ratio(f"bf16 ÷ float32 fused core, n = {n}", f"BM_core{s}/fused_bf16/{args}", f"BM_core{s}/fused/{args}", 2, 1.8)
          for n, s, args in ((1024, "", "n:1024/d:64"), (2048, "", "n:2048/d:64"), (4096, "", "n:4096/d:64"),
                             (16384, "_long", "n:16384/causal:0"))]

# What the products' register tile reaches with nothing to fetch from L2 (12 rows: AVX-512's tall
# tile, or two 6-row tiles elsewhere).
CEILINGS = [
    Target("ceiling: the register tile in L1, 6 rows", "BM_tile_in_l1/rows:6", 1, None),
    Target("ceiling: the register tile in L1, 12 rows", "BM_tile_in_l1/rows:12", 1, None),
]
MEASURED = TARGETS + CEILINGS + BF16_TARGETS


def peak_name(threads, kind="fma"):
    return f"BM_peak_{kind}/threads:{threads}"


def run_benchmarks(exe, names, threads, min_time, env):
    """One process running `names` (Google Benchmark runs them in registration order). Returns
    {name: run} and the benchmark's context (machine, instruction set, caches); a skipped run (an
    error_occurred, as BM_peak_bf16 without vdpbf16ps) is left out."""
    pattern = "^(" + "|".join(names) + ")/real_time$"
    out = subprocess.run([exe, "--benchmark_filter=" + pattern, "--benchmark_min_time=" + str(min_time),
                          "--benchmark_format=json"], capture_output=True, text=True, check=True,
                         env=dict(env, OMP_NUM_THREADS=str(threads))).stdout
    report = json.loads(out)
    runs = {b["name"].removesuffix("/real_time"): b for b in report["benchmarks"] if not b.get("error_occurred")}
    return runs, report["context"]


def run_pair(exe, target, min_time, env):
    """One process: the peak of the target's thread count, then the target. Returns (peak, target)
    GFLOP/s, and the benchmark's context; None for a bf16 target where the peak was skipped."""
    names = [peak_name(target.threads, target.peak), target.benchmark]
    runs, context = run_benchmarks(exe, names, target.threads, min_time, env)
    if target.peak == "bf16" and names[0] not in runs:
        return None, context
    missing = [n for n in names if n not in runs]
    if missing:
        sys.exit(f"check_targets: {exe} has no benchmark {', '.join(missing)}")
    return (runs[names[0]]["GFLOPs"], runs[names[1]]["GFLOPs"]), context


def run_ratio(exe, ratio, min_time, env):
    """One process: the faster benchmark, then the slower. Returns slower's time ÷ faster's."""
    runs, _ = run_benchmarks(exe, [ratio.faster, ratio.slower], ratio.threads, min_time, env)
    return runs[ratio.slower]["real_time"] / runs[ratio.faster]["real_time"]


def summarise(rounds):
    """rounds: one list per round of (peak, rate) pairs, one pair per benchmark, in MEASURED's order.
    Returns, per target: (median GFLOP/s, median %, lowest %, highest %), each percentage against the
    peak measured with that very run."""
    out = []
    for k in range(len(rounds[0])):
        rates = [r[k][1] for r in rounds]
        shares = [100.0 * r[k][1] / r[k][0] for r in rounds]
        out.append((statistics.median(rates), statistics.median(shares), min(shares), max(shares)))
    return out


def is_met(target, median_percent):
    return target.percent is not None and median_percent >= target.percent


def machine_lines(context, isa_forced):
    isa = context.get("simd_isa", "?")
    return [f"Machine: {context.get('cpu_model', '?')}; kernels: {isa} ({context.get('simd_batch_floats', '?')} "
            f"floats a batch{', forced by ATTN_ISA' if isa_forced else ''}); this CPU runs: "
            f"{context.get('simd_supported', '?')}",
            f"Caches: {context.get('caches', '?')}",
            f"Blocks: {context.get('blocks', '?')}"]


def table(summary, measured=MEASURED):
    lines = ["| target | threads | GFLOP/s (median) | % of the same run's peak: median [lowest, highest] | needs | met? |",
             "|---|---|---|---|---|---|"]
    for t, (rate, median, low, high) in zip(measured, summary):
        needs, met = ("—", "—") if t.percent is None else (f"≥ {t.percent:.0f}%", "yes" if is_met(t, median) else "no")
        peak = " of the bf16 peak" if t.peak == "bf16" else ""
        lines.append(f"| {t.what} | {t.threads} | {rate:.1f} | **{median:.1f}%**{peak} [{low:.1f}, {high:.1f}] | "
                     f"{needs} | {met} |")
    return lines


def gap_table(summary, measured=MEASURED):
    """Each gap between two targets' median shares, from the same rounds (summary in measured's order)."""
    medians = {t.benchmark: median for t, (_, median, _, _) in zip(measured, summary)}
    lines = ["| gap | points: the first's median share less the second's | needs | met? |", "|---|---|---|---|"]
    for g in GAPS:
        if g.higher not in medians or g.lower not in medians:
            lines.append(f"| {g.what} | not measured | ≤ {g.points:.0f} | – |")
            continue
        gap = medians[g.higher] - medians[g.lower]
        lines.append(f"| {g.what} | **{gap:.1f}** | ≤ {g.points:.0f} | {'yes' if gap <= g.points else 'no'} |")
    return lines


def ratio_table(ratios):
    """ratios: one list per round of slower ÷ faster time ratios, in RATIOS' order."""
    lines = ["| speed-up | threads | median [lowest, highest] | needs | met? |", "|---|---|---|---|---|"]
    for k, r in enumerate(RATIOS):
        values = [round_[k] for round_ in ratios]
        median = statistics.median(values)
        lines.append(f"| {r.what} | {r.threads} | **{median:.2f}×** [{min(values):.2f}, {max(values):.2f}] | "
                     f"≥ {r.at_least:.1f}× | {'yes' if median >= r.at_least else 'no'} |")
    return lines


def self_test(exe):
    checks = []
    # Each percentage is taken against its own run's peak: with the peak halving between rounds and
    # the target halving with it, the share is 50% in every round (a median peak would give 67/33%).
    two = [[(400.0, 200.0)], [(200.0, 100.0)], [(300.0, 150.0)]]
    rate, median, low, high = summarise(two)[0]
    checks.append(("share against the same run's peak", (median, low, high) == (50.0, 50.0, 50.0)))
    checks.append(("median GFLOP/s over rounds", rate == 150.0))
    four = [[(100.0, 70.0)], [(100.0, 90.0)], [(100.0, 80.0)], [(100.0, 60.0)]]
    checks.append(("median of an even count is the mean of the middle two", summarise(four)[0][1] == 75.0))
    checks.append(("lowest and highest over rounds", summarise(four)[0][2:] == (60.0, 90.0)))
    checks.append(("exactly at the target counts as met", is_met(TARGETS[0], TARGETS[0].percent)))
    checks.append(("just below the target does not", not is_met(TARGETS[0], TARGETS[0].percent - 0.01)))
    checks.append(("a ceiling is never met", not is_met(CEILINGS[0], 100.0)))
    rows = table(summarise([[(100.0, 80.0)] * len(MEASURED)]))[2:]
    checks.append(("one table row per target and ceiling, in order",
                   [r.split(" | ")[0].removeprefix("| ") for r in rows] == [t.what for t in MEASURED]))
    checks.append(("a ceiling's row names no target", rows[len(TARGETS) + len(CEILINGS) - 1].endswith("| — | — |")
                   and rows[0].endswith(f"| ≥ {TARGETS[0].percent:.0f}% | yes |")))
    ratio_rows = ratio_table([[2.2, 1.7, 1.79, 1.9], [1.8, 1.9, 1.81, 1.9], [2.0, 1.8, 1.7, 1.9]])[2:]  # bounds 1.8
    checks.append(("a speed-up is the median over rounds, met at or above its bound",
                   "**2.00×** [1.80, 2.20]" in ratio_rows[0] and ratio_rows[0].endswith("| yes |")
                   and ratio_rows[1].endswith("| yes |") and "**1.79×**" in ratio_rows[2]
                   and ratio_rows[2].endswith("| no |")))
    gaps = gap_table([(0.0, 81.0 if t.benchmark == GAPS[0].higher else 78.5 if t.benchmark == GAPS[0].lower else 0.0,
                       0.0, 0.0) for t in MEASURED])[2:]
    checks.append(("a gap of 2.5 points is within 3", gaps[0].endswith("| **2.5** | ≤ 3 | yes |")))
    checks.append(("a bf16 target's share is of the bf16 peak",
                   "of the bf16 peak" in table(summarise([[(100.0, 80.0)] * len(MEASURED)]))[-1]))
    if exe and not os.access(exe, os.X_OK):
        checks.append((f"{exe} is there to list", False))
    elif exe:
        listed = subprocess.run([exe, "--benchmark_list_tests"], capture_output=True, text=True,
                                check=True).stdout.split()
        names = {t.benchmark for t in MEASURED} | {peak_name(t.threads, t.peak) for t in MEASURED}
        names |= {r.faster for r in RATIOS} | {r.slower for r in RATIOS}
        for name in sorted(names):
            checks.append((f"{exe} lists {name}", name + "/real_time" in listed))
    for name, ok in checks:
        print(f"{'ok  ' if ok else 'FAIL'} self-test: {name}")
    failed = sum(not ok for _, ok in checks)
    print(f"{len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=None, help="the benchmark binary (default: build/bench_attention)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.5, help="seconds per benchmark run")
    ap.add_argument("--isa", help="run the kernels of this instruction set (ATTN_ISA), against its own peak")
    ap.add_argument("--json", help="write every round's (peak, GFLOP/s) pairs and the summary here")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test(args.bench)
    exe = args.bench or str(ROOT / "build" / "bench_attention")
    if not os.access(exe, os.X_OK):
        sys.exit(f"check_targets: no benchmark binary at {exe} (./scripts/dev targets builds it first)")
    if args.rounds < 1:
        sys.exit("check_targets: --rounds must be at least 1")
    env = dict(os.environ)
    if args.isa:
        env["ATTN_ISA"] = args.isa
    rounds, ratios, context = [], [], {}
    measured = MEASURED
    for r in range(args.rounds):
        pairs = []
        for t in list(measured):
            pair, context = run_pair(exe, t, args.min_time, env)
            if pair is None:  # no vdpbf16ps in these kernels: no bf16 peak to measure against
                measured = [m for m in measured if m.peak != "bf16"]
                continue
            pairs.append(pair)
        rounds.append(pairs)
        if len(measured) == len(MEASURED):
            ratios.append([run_ratio(exe, q, args.min_time, env) for q in RATIOS])
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr, flush=True)
    summary = summarise(rounds)
    print("\n".join(machine_lines(context, bool(args.isa))))
    print(f"{args.rounds} rounds; each benchmark ran right after the peak of its thread count (FMA, or bf16 "
          f"for the bf16 mode), {args.min_time} s each (Google Benchmark 'real_time')")
    print()
    print("\n".join(table(summary, measured)))
    print()
    print("\n".join(gap_table(summary, measured)))
    print()
    if ratios:
        print("\n".join(ratio_table(ratios)))
    else:
        print("bf16 targets: not measured, the kernels in use have no vdpbf16ps (BM_peak_bf16 was skipped); "
              "the bf16 mode runs emulated")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "context": context, "isa_forced": args.isa,
            "targets": [t.__dict__ for t in measured],
            "rounds": rounds,
            "ratios": {"what": [q.__dict__ for q in RATIOS], "rounds": ratios},
            "summary": [dict(zip(("gflops", "percent_median", "percent_low", "percent_high"), s)) for s in summary],
        }, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
