#!/usr/bin/python3
"""The decoding table for docs/performance.md, from the rounds bench/peers/decode_peers.py recorded.

    /usr/bin/python3 bench/tools/decode_report.py build/decode_peers.json [--out decode.md]
    /usr/bin/python3 bench/tools/decode_report.py docs/bench.json       (a run decode_peers.py --into added to)
    /usr/bin/python3 bench/tools/decode_report.py docs/bench.json --targets
    /usr/bin/python3 bench/tools/decode_report.py --self-test

The page's table in Markdown, a row per case (the cache's type, S, H and H_kv, threads): this
library's GB/s of keys and values read, its share of the read bandwidth measured right before it in
the same process (BM_read_bandwidth), its tokens per second, how many times faster it ran than the row
it is compared with (a 16-bit cache: the float32 cache of the same S; two threads: one thread) and
than each peer; its caption names the run and the roofline's ridge (BM_peak_fma over the bandwidth).
--targets: the issue's targets instead, each with its measured median and whether the median meets it.
Every figure is the median over the rounds with the lowest and highest beside it, in brackets; a
share or a ratio is taken round by round before its median is taken, never as a ratio of two
medians. A file that holds no decoding rounds renders one line saying so.
--self-test checks the arithmetic on made-up rounds and prints "N passed, M failed".
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

NAMES = {
    "ggml": "ggml flash_attn_ext, the same K/V type",
    "ort": "ONNX Runtime, MHA / GQA",
    "ort_attention": "ONNX Runtime, Attention (opset 23)",
    "torch": "PyTorch",
}
# ggml runs each case with the case's own cache type; ONNX Runtime's two com.microsoft operators share
# a column: MultiHeadAttention where H_kv = H, GroupQueryAttention where H_kv < H.
COLUMNS = {"ort_mha": "ort", "ort_gqa": "ort"}
PEER_COLUMNS = ["ggml", "ort", "ort_attention", "torch"]
ELEMENT_BYTES = {"f32": 4, "bf16": 2, "f16": 2}
NOT_RECORDED = ("No decoding run is recorded in this file yet: `bench/peers/decode_peers.py --into "
                "docs/bench.json` adds one (the Reproduce section).")


def parse_case(case):
    """'bf16:4096:32:8:128:2' → ('bf16', S, H, H_kv, E, threads)."""
    kv, *numbers = case.split(":")
    S, heads, kv_heads, E, threads = map(int, numbers)
    return kv, S, heads, kv_heads, E, threads


def case_text(kv, S, heads, kv_heads, E, threads):
    return f"{kv}:{S}:{heads}:{kv_heads}:{E}:{threads}"


def cache_bytes(case):
    """The keys and values one call reads, as BM_decode counts them: H_kv·S·(E + E_v)·(bytes an element)."""
    kv, S, _, kv_heads, E, _ = parse_case(case)
    return kv_heads * S * 2 * E * ELEMENT_BYTES[kv]


def compared_case(case):
    """The case a row is compared with: a 16-bit cache with float32's, two threads with one; or None."""
    kv, S, heads, kv_heads, E, threads = parse_case(case)
    if kv != "f32":
        return case_text("f32", S, heads, kv_heads, E, threads)
    return case_text(kv, S, heads, kv_heads, E, 1) if threads > 1 else None


def spread(values):
    """(median, lowest, highest), or None for no values."""
    return (statistics.median(values), min(values), max(values)) if values else None


def by_round(data):
    """{(case, column): {round: run}}."""
    table = {}
    for run in data["runs"]:
        column = COLUMNS.get(run["engine"], run["engine"])
        table.setdefault((run["case"], column), {})[run["round"]] = run
    return table


def summary(data):
    """{(case, column): {"gbps", "percent", "tokens", "speedup", "against"}}, each a spread (or None)."""
    table = by_round(data)
    out = {}
    for (case, column), rounds in table.items():
        ours = table.get((case, "ours"), {})
        other = table.get((compared_case(case), "ours"), {}) if column == "ours" else {}
        out[(case, column)] = {
            "gbps": spread([cache_bytes(case) / run["seconds"] / 1e9 for run in rounds.values()]),
            "percent": spread([100 * cache_bytes(case) / run["seconds"] / 1e9 / run["bandwidth_gbps"]
                               for run in rounds.values() if "bandwidth_gbps" in run]),
            "tokens": spread([1 / run["seconds"] for run in rounds.values()]),
            "speedup": spread([rounds[r]["seconds"] / ours[r]["seconds"] for r in rounds if r in ours]),
            "against": spread([other[r]["seconds"] / rounds[r]["seconds"] for r in rounds if r in other]),
        }
    return out


def fmt(s, digits=1, suffix=""):
    median, low, high = s
    return f"{median:.{digits}f}{suffix} [{low:.{digits}f}, {high:.{digits}f}]"


def case_cells(case):
    kv, S, heads, kv_heads, _, threads = parse_case(case)
    return [kv, str(S), f"{heads} / {kv_heads}", str(threads)]


def intensity(case):
    """Flops per byte of cache a call does: each cached key and value serves H/H_kv query heads with
    4·E flops (q·k and p·v, 2·E each) for 2·E elements read."""
    kv, _, heads, kv_heads, _, _ = parse_case(case)
    return 2 * heads / kv_heads / ELEMENT_BYTES[kv]


def caption(data):
    ours = [run for run in data["runs"] if run["engine"] == "ours" and parse_case(run["case"])[5] == data["threads"]]
    bandwidth = spread([run["bandwidth_gbps"] for run in ours])
    peak = spread([run["peak_gflops"] for run in ours])
    ridge = spread([run["peak_gflops"] / run["bandwidth_gbps"] for run in ours])
    grouped = [case for case in data["cases"] if parse_case(case)[2] > 1]
    per_type = {parse_case(case)[0]: intensity(case) for case in grouped}
    _, _, heads, kv_heads, E, _ = parse_case(grouped[0] if grouped else data["cases"][0])
    context = data.get("context", {})
    versions = " Peers: " + ", ".join(dict.fromkeys(data["versions"].values())) + "." if data["versions"] else ""
    return (f"**The run.** Machine: {context.get('cpu_model', data['cpu'])}, {data['cpus']} CPUs; every engine on "
            f"{data['threads']} threads. This library's kernels: `{context.get('simd_isa', '?')}`.{versions} Batch 1, "
            f"L = 1, E = {E}, float32 queries and output. {data['rounds']} rounds in one window: in each, every case "
            f"runs this library first, in one process after the FMA peak and the read bandwidth of its thread count "
            f"(`BM_peak_fma`, `BM_read_bandwidth`; {data['threads']} threads: {fmt(peak)} GFLOP/s and {fmt(bandwidth)} "
            f"GB/s over the run), then every peer. GB/s count the cache's keys and values, H_kv·S·2E·(4 bytes for "
            f"f32, 2 for bf16 and f16), for every engine alike. The roofline's ridge, that peak over that bandwidth "
            f"round by round: {fmt(ridge)} flops per byte; H = {heads} query heads over H_kv = {kv_heads} do "
            + ", ".join(f"{v:g} on {kv}" for kv, v in per_type.items()) + ".")


def row(case, s, present):
    ours = s.get((case, "ours"))
    cells = case_cells(case)
    if ours:
        cells += [fmt(ours["gbps"]), fmt(ours["percent"], 0, "%") if ours["percent"] else "–",
                  fmt(ours["tokens"], 0), fmt(ours["against"], 2, "×") if ours["against"] else "–"]
    else:
        cells += ["–"] * 4
    for c in present:
        peer = s.get((case, c))
        cells.append(f"{fmt(peer['gbps'])}; ours {fmt(peer['speedup'], 2, '×')}" if peer and peer["speedup"]
                     else fmt(peer["gbps"]) if peer else "–")
    return "| " + " | ".join(cells) + " |"


def markdown(data):
    if not data or not data.get("runs"):
        return NOT_RECORDED
    s = summary(data)
    cases = data["cases"]
    present = [c for c in PEER_COLUMNS if any((case, c) in s for case in cases)]
    head = ["K/V", "S", "H / H_kv", "threads", "attention.cpp, GB/s", "% of the read bandwidth", "tokens/s",
            "ours against f32 / 1 thread"] + [NAMES[c] for c in present]
    lines = [caption(data), "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += [row(case, s, present) for case in cases]
    lines += ["", "Each cell: median [lowest, highest] over the rounds. A peer's cell: its GB/s, and how many times "
              "faster this library ran in the same round. Ours against f32 / 1 thread: a 16-bit cache's speed-up over "
              "the float32 cache of the same S, two threads' over one. A dash: no such run (ONNX Runtime and PyTorch "
              "run the float32 cache only; the one-head rows are this library's alone)."]
    if "ort" in present:
        lines.append("ONNX Runtime, MHA / GQA: com.microsoft MultiHeadAttention where H_kv = H, GroupQueryAttention "
                     "(over a past cache sharing its buffer with the present) where H_kv < H.")
    for engine, reasons in sorted(data["skipped"].items()):
        for reason in sorted(set(reasons.values())):
            which = ", ".join(case for case, r in reasons.items() if r == reason)
            lines.append(f"– {engine} on {which}: {reason}.")
    return "\n".join(lines)


def targets(data):
    """The issue's targets on the recorded cases: (what, case, measure, column, bound)."""
    out = []
    for case in data["cases"]:
        kv, S, heads, kv_heads, _, threads = parse_case(case)
        if heads == 1:
            if threads > 1:
                out.append((f"one head, S = {S}: 2 threads ≥ 1.8× 1 thread", case, "against", "ours", 1.8))
            continue
        if kv in ("f32", "bf16"):
            out.append((f"{kv}, S = {S}: ≥ 70% of the read bandwidth", case, "percent", "ours", 70.0))
        if kv == "bf16":
            out.append((f"bf16, S = {S}: about twice f32's tokens/s (≥ 1.8×)", case, "against", "ours", 1.8))
        out.append((f"{kv}, S = {S}: ≥ 1.2× ggml with the same K/V type", case, "speedup", "ggml", 1.2))
        if kv == "f32":
            out += [(f"f32, S = {S}: ≥ 1.2× {NAMES[c]}", case, "speedup", c, 1.2) for c in ("ort", "ort_attention")]
    return out


def targets_table(data):
    if not data or not data.get("runs"):
        return NOT_RECORDED
    s = summary(data)
    lines = ["Targets: median [lowest, highest] over the rounds; met when the median is at least the bound.", "",
             "| target | measured | met |", "|---|---|---|"]
    for what, case, measure, column, bound in targets(data):
        value = s.get((case, column), {}).get(measure)
        if not value:
            lines.append(f"| {what} | not measured | – |")
            continue
        measured = fmt(value, 0, "%") if measure == "percent" else fmt(value, 2, "×")
        lines.append(f"| {what} | {measured} | {'yes' if value[0] >= bound else 'no'} |")
    return "\n".join(lines)


def self_test():
    """Made-up rounds whose medians, shares and ratios are known."""
    f32, bf16 = "f32:4096:32:8:128:2", "bf16:4096:32:8:128:2"
    one, two = "f32:32768:1:1:128:1", "f32:32768:1:1:128:2"
    runs = []
    # 16 MiB of bf16 keys and values, 32 MiB of f32: seconds chosen for round GB/s.
    mb32 = cache_bytes(f32)
    for r, (bw, ours32, ours16, ggml32, ort32) in enumerate([(40, 32, 30, 16, 20), (50, 30, 29, 20, 30),
                                                           (45, 36, 33, 18, 24)]):
        runs += [{"engine": "ours", "case": f32, "round": r, "seconds": mb32 / ours32 / 1e9, "bandwidth_gbps": bw,
                  "peak_gflops": 10 * bw},
                 {"engine": "ours", "case": bf16, "round": r, "seconds": mb32 / 2 / ours16 / 1e9, "bandwidth_gbps": bw,
                  "peak_gflops": 8 * bw},
                 {"engine": "ggml", "case": f32, "round": r, "seconds": mb32 / ggml32 / 1e9},
                 {"engine": "ort_gqa", "case": f32, "round": r, "seconds": mb32 / ort32 / 1e9}]
    runs += [{"engine": "ours", "case": one, "round": 0, "seconds": 0.010, "bandwidth_gbps": 20, "peak_gflops": 100},
             {"engine": "ours", "case": two, "round": 0, "seconds": 0.006, "bandwidth_gbps": 30, "peak_gflops": 300}]
    data = {"runs": runs, "cases": [f32, bf16, one, two], "skipped": {}, "cpu": "test CPU", "cpus": 2,
            "threads": 2, "rounds": 3, "versions": {}}
    s = summary(data)
    table = markdown(data) + "\n" + targets_table(data)
    checks = [
        ("bytes: H_kv·S·2E·4 for f32", cache_bytes(f32) == 8 * 4096 * 256 * 4),
        ("bytes: half for bf16", cache_bytes(bf16) * 2 == cache_bytes(f32)),
        ("median GB/s", [round(x, 6) for x in s[(f32, "ours")]["gbps"]] == [32.0, 30.0, 36.0]),
        ("share of the same round's bandwidth, then median", [round(x, 6) for x in s[(f32, "ours")]["percent"]]
         == [80.0, 60.0, 80.0]),
        ("tokens per second", round(s[(f32, "ours")]["tokens"][0], 3) == round(32e9 / mb32, 3)),
        ("speed-up over a peer per round: 32/16, 30/20, 36/18", [round(x, 6) for x in s[(f32, "ggml")]["speedup"]]
         == [2.0, 1.5, 2.0]),
        ("bf16 against f32 per round: 2·30/32, 2·29/30, 2·33/36 → median, lowest, highest",
         [round(x, 6) for x in s[(bf16, "ours")]["against"]] == [round(60 / 32, 6), round(66 / 36, 6), round(58 / 30, 6)]),
        ("two threads against one", round(s[(two, "ours")]["against"][0], 6) == round(0.010 / 0.006, 6)),
        ("ort_gqa in the ONNX Runtime column", (f32, "ort") in s),
        ("a bandwidth target met", "| f32, S = 4096: ≥ 70% of the read bandwidth | 80% [60, 80] | yes |" in table),
        ("a bandwidth target met by the median: 30/40, 29/50, 33/45",
         "| bf16, S = 4096: ≥ 70% of the read bandwidth | 73% [58, 75] | yes |" in table),
        ("a peer target met", "| f32, S = 4096: ≥ 1.2× ggml with the same K/V type | 2.00× [1.50, 2.00] | yes |"
         in table),
        ("a peer target not measured", "| bf16, S = 4096: ≥ 1.2× ggml with the same K/V type | not measured | – |"
         in table),
        ("the threads target", "| one head, S = 32768: 2 threads ≥ 1.8× 1 thread | 1.67× [1.67, 1.67] | no |"
         in table),
        ("a row: ours and the peers", table.count("\n| f32 | 4096 | 32 / 8 | 2 | 32.0 [30.0, 36.0] | 80% [60, 80] |")
         == 1),
        ("flops per byte: 2·(H/H_kv)/(bytes an element)", (intensity(f32), intensity(bf16), intensity(one)) == (2, 4, 0.5)),
        ("the ridge, peak over bandwidth round by round: 10, 8 and one 10", "flops per byte" in table
         and "round by round: 10.0 [8.0, 10.0] flops per byte" in table and "do 2 on f32, 4 on bf16." in table),
        ("nothing recorded", markdown({}) == NOT_RECORDED and markdown({"runs": []}) == NOT_RECORDED),
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
    parser.add_argument("--targets", action="store_true", help="the targets' table instead of the page's")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        sys.exit(self_test())
    if not args.json:
        parser.error("the JSON of bench/peers/decode_peers.py is needed")
    data = json.loads(args.json.read_text(encoding="utf-8"))
    if "runs" not in data:  # a benchmark run's JSON, to which decode_peers.py --into adds "decode_peers"
        data = data.get("decode_peers", {})
    text = (targets_table(data) if args.targets else markdown(data)) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
