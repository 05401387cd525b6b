#!/usr/bin/python3
"""The heads tables for docs/performance.md, from the rounds bench/peers/heads_peers.py recorded.

    /usr/bin/python3 bench/tools/heads_report.py build/heads_peers.json [--out heads.md]
    /usr/bin/python3 bench/tools/heads_report.py docs/bench.json       (a run heads_peers.py --into added to)
    /usr/bin/python3 bench/tools/heads_report.py --self-test

Three tables in Markdown: GFLOP/s of every engine on every case, with this library's share of the FMA
peak and how many times faster it runs than each peer; the peak resident memory of each engine's
process; and the speed targets, each with its measured median and whether the median meets it.
Every figure is the median over the rounds with the lowest and highest beside it, in brackets. A
share of the peak and a speed-up are taken round by round (the peak measured right before that
round's case, the peer timed right after it) before their median is taken, never as a ratio of two
medians. A dash: the engine has no such operation (the footnote says why).
--self-test checks the arithmetic on made-up rounds and prints "N passed, M failed".
"""
import argparse
import json
import sys
from pathlib import Path

from rounds import by_round, fmt, spread

NAMES = {
    "ours": "attention.cpp, fused",
    "ort": "ONNX Runtime, MHA / GQA",
    "ort_attention": "ONNX Runtime, Attention (opset 23)",
    "ggml_f32": "ggml, F32 K/V",
    "ggml_f16": "ggml, F16 K/V",
    "torch": "PyTorch",
}
# ONNX Runtime's two operators share a column: MultiHeadAttention where H_kv = H, GroupQueryAttention
# where H_kv < H.
COLUMNS = {"ort_mha": "ort", "ort_gqa": "ort"}
PEER_COLUMNS = ["ort", "ort_attention", "ggml_f32", "ggml_f16", "torch"]


def parse_case(case):
    L, E, kv_heads, causal = map(int, case.split(":"))
    return L, E, kv_heads, causal


def flops(heads, case):
    """As BM_heads counts them: 4·L·S·E per head (two products of 2·L·S·E), half when causal; S = L."""
    L, E, _, causal = parse_case(case) if isinstance(case, str) else case
    return 4.0 * heads * L * L * E * (0.5 if causal else 1.0)


def summary(data):
    """{(case, column): {"gflops", "percent", "speedup", "rss", "operator"}}, each a spread."""
    table = by_round(data, COLUMNS)
    out = {}
    for (case, column), rounds in table.items():
        ours = table.get((case, "ours"), {})
        shared = [r for r in rounds if r in ours]
        out[(case, column)] = {
            "gflops": spread([run["gflops"] for run in rounds.values()]),
            "percent": spread([100 * run["gflops"] / run["peak_gflops"] for run in rounds.values()]),
            "speedup": spread([ours[r]["gflops"] / rounds[r]["gflops"] for r in shared]),
            "rss": spread([run["peak_rss_mib"] for run in rounds.values()]),
            "beyond_operands": spread([run["peak_rss_mib"] - run["operands_mib"] for run in rounds.values()
                                       if "operands_mib" in run]),
            "operator": sorted({run["engine"] for run in rounds.values()}),
        }
    return out


def case_cells(case):
    L, E, kv_heads, causal = parse_case(case)
    return [str(L), str(E), str(kv_heads), "yes" if causal else "no"]


def caption(data):
    peaks = spread(sorted({run["peak_gflops"] for run in data["runs"] if run["engine"] == "ours"}))
    context = data.get("context", {})
    versions = " Peers: " + ", ".join(dict.fromkeys(data["versions"].values())) + "." if data["versions"] else ""
    return (f"**The run.** Machine: {context.get('cpu_model', data['cpu'])}, {data['cpus']} CPUs; every engine on "
            f"{data['threads']} threads. This library's kernels: `{context.get('simd_isa', '?')}`.{versions} "
            f"Batch 1, H = {data['heads']} query heads, L = S, float32 queries. {data['rounds']} rounds in one "
            f"window: in each, every case runs every engine in turn, this library first, right after the FMA peak "
            f"(`BM_peak_fma`, {data['threads']} threads: {fmt(peaks)} GFLOP/s over the run). GFLOP/s count "
            f"4·L·S·E per head, half of it when causal, for every engine alike.")


def markdown(data):
    s = summary(data)
    cases = data["cases"]
    present = [c for c in PEER_COLUMNS if any((case, c) in s for case in cases)]
    head = ["L = S", "E", "H_kv", "causal"]
    lines = [caption(data), "",
             "| " + " | ".join(head + [NAMES["ours"], "% of the peak"] + [NAMES[c] for c in present]) + " |",
             "|" + "---|" * (len(head) + 2 + len(present))]
    for case in cases:
        ours = s.get((case, "ours"))
        cells = case_cells(case) + ([fmt(ours["gflops"]), fmt(ours["percent"], 0, "%")] if ours else ["–", "–"])
        for c in present:
            peer = s.get((case, c))
            cells.append(f"{fmt(peer['gflops'])}; ours {fmt(peer['speedup'], 2, '×')}" if peer and peer["speedup"]
                         else fmt(peer["gflops"]) if peer else "–")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Each cell: GFLOP/s, median [lowest, highest] over the rounds; beside a peer, how many times "
                 "faster this library ran in the same round (median [lowest, highest]).")
    for engine, reasons in sorted(data["skipped"].items()):
        column = COLUMNS.get(engine, engine)
        empty = {case: reason for case, reason in reasons.items() if (case, column) not in s}
        for reason in sorted(set(empty.values())):
            which = ", ".join(case for case, r in empty.items() if r == reason)
            lines.append(f"– {NAMES[column]} ({engine}) on L:E:H_kv:causal = {which}: {reason}.")
    if "ort" in present:
        lines.append("ONNX Runtime, MHA / GQA: com.microsoft MultiHeadAttention where H_kv = H, GroupQueryAttention "
                     "where H_kv < H.")
    lines += ["", memory_table(data, s, present), "", targets_table(s, data["heads"])]
    return "\n".join(lines)


def memory_table(data, s, present):
    """Peak resident memory of each engine's process (MiB, median), beside the operands Q, K, V, O."""
    columns = ["ours"] + present
    lines = ["Peak resident memory of each engine's process, MiB (median over the rounds; the program and "
             "its libraries included), beside the size of Q, K, V and O themselves:", "",
             "| L = S | E | H_kv | causal | Q, K, V, O | " + " | ".join(NAMES[c] for c in columns) + " |",
             "|" + "---|" * (5 + len(columns))]
    operands = {}
    for run in data["runs"]:
        if run["engine"] == "ours":
            operands[run["case"]] = run["operands_mib"]
    for case in data["cases"]:
        cells = case_cells(case) + [f"{operands[case]:.0f}" if case in operands else "–"]
        cells += [f"{s[(case, c)]['rss'][0]:.0f}" if (case, c) in s else "–" for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# The speed targets, on the cases of 32 heads with their own key/value heads, not causal, E = 128, and
# of one head, E = 64 (a run of heads_peers.py --heads 1): (what, case, measure, column, bound, at most). measure "percent": share of the FMA peak; "speedup": this
# library's rate ÷ the peer's in the same round; "beyond_operands": the process's peak memory less Q, K, V
# and O, in MiB, which must stay below one head's L×S score matrix (the fused backend keeps none).
TARGETS = (
    [(f"L = {L}: ≥ 85% of the FMA peak", f"{L}:128:32:0", "percent", "ours", 85.0, False) for L in (1024, 4096)]
    + [("L = 256: ≥ 65% of the FMA peak", "256:128:32:0", "percent", "ours", 65.0, False)]
    + [(f"L = {L}: ≥ {x}× ONNX Runtime", f"{L}:128:32:0", "speedup", "ort", x, False)
       for L, x in ((1024, 1.2), (4096, 1.3))]
    + [(f"L = {L}: ≥ 2× ggml flash_attn_ext, {kv} K/V", f"{L}:128:32:0", "speedup", f"ggml_{kv}", 2.0, False)
       for L in (256, 1024, 4096) for kv in ("f32", "f16")]
    + [("L = 4096: memory beyond Q, K, V and O below one L×S score matrix (64 MiB)", "4096:128:32:0",
        "beyond_operands", "ours", 4096 * 4096 * 4 / 2**20, True)]
    + [(f"one head, E = 64, L = {L}: ≥ 1.25× ONNX Runtime", f"{L}:64:1:0", "speedup", "ort", 1.25, False)
       for L in (1024, 2048, 4096, 16384)])


def targets_table(s, heads):
    """The targets of a run of `heads` query heads: those of one head (their cases have H_kv = 1) for a
    run of one, the others otherwise."""
    lines = [f"Targets (H_kv = H, not causal, E = {64 if heads == 1 else 128}): median [lowest, highest] over the "
             "rounds; met when the median is on the target's side of its bound.", "", "| target | measured | met |",
             "|---|---|---|"]
    for what, case, measure, column, bound, at_most in TARGETS:
        if (parse_case(case)[2] == 1) != (heads == 1):
            continue
        value = s.get((case, column), {}).get(measure)
        if not value:
            lines.append(f"| {what} | not measured | – |")
            continue
        units = {"percent": (0, "%"), "speedup": (2, "×"), "beyond_operands": (0, " MiB")}[measure]
        met = value[0] <= bound if at_most else value[0] >= bound
        lines.append(f"| {what} | {fmt(value, *units)} | {'yes' if met else 'no'} |")
    return "\n".join(lines)


def self_test():
    """Made-up rounds whose medians, shares and speed-ups are known."""
    runs = []
    for r, (peak, ours, ort, ggml) in enumerate([(200, 160, 100, 40), (220, 176, 160, 88), (180, 150, 75, 50)]):
        runs += [{"engine": "ours", "case": "1024:128:32:0", "round": r, "gflops": ours, "peak_gflops": peak,
                  "peak_rss_mib": 300, "operands_mib": 64},
                 {"engine": "ort_mha", "case": "1024:128:32:0", "round": r, "gflops": ort, "peak_gflops": peak,
                  "peak_rss_mib": 400},
                 {"engine": "ggml_f32", "case": "1024:128:32:0", "round": r, "gflops": ggml, "peak_gflops": peak,
                  "peak_rss_mib": 350}]
    runs.append({"engine": "ours", "case": "4096:128:32:0", "round": 0, "gflops": 140, "peak_gflops": 200,
                 "peak_rss_mib": 600, "operands_mib": 256})
    data = {"runs": runs, "cases": ["1024:128:32:0", "4096:128:32:0"], "skipped": {"ort_gqa": {"1024:128:8:0": "causal only"}},
            "cpu": "test CPU", "cpus": 2, "threads": 2, "heads": 32, "rounds": 3, "versions": {}}
    s = summary(data)
    checks = [
        ("flops, not causal", flops(32, "1024:128:32:0") == 4.0 * 32 * 1024 * 1024 * 128),
        ("flops, causal: half", flops(32, "1024:128:32:1") == 2.0 * 32 * 1024 * 1024 * 128),
        ("median GFLOP/s", s[("1024:128:32:0", "ours")]["gflops"] == (160, 150, 176)),
        ("share of the peak per round", [round(x, 6) for x in s[("1024:128:32:0", "ours")]["percent"]]
         == [80.0, 80.0, 83.333333]),
        ("speed-up per round, then median", s[("1024:128:32:0", "ort")]["speedup"] == (1.6, 1.1, 2.0)),
        ("ort_mha in the ONNX Runtime column", s[("1024:128:32:0", "ort")]["operator"] == ["ort_mha"]),
        ("a target missed by its median", "| L = 1024: ≥ 85% of the FMA peak | 80% [80, 83] | no |" in targets_table(s, 32)),
        ("a speed-up target met", "| L = 1024: ≥ 1.2× ONNX Runtime | 1.60× [1.10, 2.00] | yes |" in targets_table(s, 32)),
        ("a target missed", "| L = 4096: ≥ 85% of the FMA peak | 70% [70, 70] | no |" in targets_table(s, 32)),
        ("a one-head target only in a run of one head",
         "one head" not in targets_table(s, 32)
         and "| one head, E = 64, L = 16384: ≥ 1.25× ONNX Runtime | not measured | – |" in targets_table(s, 1)),
        ("ggml ≥ 2×: 160/40, 176/88, 150/50", "| L = 1024: ≥ 2× ggml flash_attn_ext, f32 K/V | 3.00× [2.00, 4.00] | yes |"
         in targets_table(s, 32)),
        ("not measured", "| L = 256: ≥ 65% of the FMA peak | not measured | – |" in targets_table(s, 32)),
        ("memory above its bound", "| L = 4096: memory beyond Q, K, V and O below one L×S score matrix (64 MiB) | "
         "344 MiB [344, 344] | no |" in targets_table(s, 32)),
    ]
    failed = [name for name, ok in checks if not ok]
    for name in failed:
        print("failed:", name)
    print(f"{len(checks) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", nargs="?", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        sys.exit(self_test())
    if not args.json:
        parser.error("the JSON of bench/peers/heads_peers.py is needed")
    data = json.loads(args.json.read_text(encoding="utf-8"))
    if "heads_peers" in data:  # a benchmark run's JSON that heads_peers.py --into added its rounds to
        data = data["heads_peers"]
    text = markdown(data) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
