#!/usr/bin/env python3
"""Turn bench_attention's JSON into Markdown tables and a PNG plot.

    build/bench_attention --benchmark_repetitions=3 --benchmark_out=bench.json --benchmark_out_format=json
    /usr/bin/python3 bench/tools/bench_report.py bench.json --markdown docs/bench-tables.md --plot docs/performance-core.png

With repetitions, each figure is the median Google Benchmark reports; with one run, that run.
Every GFLOP/s figure is also given as a percentage of the FMA peak measured in the same run
(the 1-thread peak for naive, simd and 1-thread OpenBLAS; the 2-thread peak for the others), or for
the fused kernel's bf16 mode (fused_bf16) of the bf16 dot-product peak, BM_peak_bf16, where the run has it.
"""
import argparse
import json
import re
import sys
from collections import defaultdict

from rounds import write_json

BACKENDS = {0: "naive", 1: "simd", 2: "parallel", 3: "fused", 4: "fused_bf16"}  # fused_bf16: BM_core/fused_bf16/…


def load(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    runs = data["benchmarks"]
    if any(r.get("aggregate_name") == "median" for r in runs):
        return data["context"], [r for r in runs if r.get("aggregate_name") == "median"]
    return data["context"], [r for r in runs if r.get("run_type") != "aggregate"]


# Sections of docs/bench.json that the peers' tools add from windows of their own (heads_peers.py and
# decode_peers.py --into), each with the peak measured beside it: a new recorded run keeps them.
PEER_SECTIONS = ("heads_peers", "decode_peers")


def record(run_path, into_path):
    """Write the run at run_path to into_path, keeping into_path's peer sections where the run has none."""
    with open(run_path, encoding="utf-8") as f:
        run = json.load(f)
    try:
        with open(into_path, encoding="utf-8") as f:
            old = json.load(f)
    except FileNotFoundError:
        old = {}
    for key in PEER_SECTIONS:
        if key in old and key not in run:
            run[key] = old[key]
    write_json(into_path, run)


def self_test():
    """record() keeps the peers' sections and takes everything else from the new run; avx512_width's verdicts."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        run, into = f"{d}/run.json", f"{d}/into.json"
        with open(run, "w", encoding="utf-8") as f:
            json.dump({"context": {"new": 1}, "benchmarks": [{"name": "BM_new"}], "bf16_accuracy": {"new": 1}}, f)
        with open(into, "w", encoding="utf-8") as f:
            json.dump({"context": {"old": 1}, "benchmarks": [{"name": "BM_old"}], "bf16_accuracy": {"old": 1},
                       "heads_peers": {"rounds": [1]}, "decode_peers": {"rounds": [2]}}, f)
        record(run, into)
        with open(into, encoding="utf-8") as f:
            got = json.load(f)
    want = {"context": {"new": 1}, "benchmarks": [{"name": "BM_new"}], "bf16_accuracy": {"new": 1},
            "heads_peers": {"rounds": [1]}, "decode_peers": {"rounds": [2]}}
    checks = {
        "a recorded run keeps the peers' sections and nothing else of the old file": got == want,
        "a 1-thread AVX-512 peak twice the AVX2 one is full width":
            "full width" in avx512_width({("avx512", 1): 230.0, ("avx2", 1): 115.0}),
        "equal peaks are two 256-bit halves": "two 256-bit halves" in avx512_width({("avx512", 1): 117.1, ("avx2", 1): 116.9}),
        "without both rungs nothing is said": avx512_width({("avx2", 1): 116.9}) is None,
    }
    for name, ok in checks.items():
        print(f"{'ok  ' if ok else 'FAIL'} self-test: {name}")
    passed = sum(checks.values())
    print(f"{passed} passed, {len(checks) - passed} failed")  # the line .ci/run counts
    return passed == len(checks)


def load_accuracy(path):
    """The bf16 mode's accuracy figures that bench/tools/bf16_accuracy.py --into added to the run, or None."""
    with open(path, encoding="utf-8") as f:
        return json.load(f).get("bf16_accuracy")


def parse_name(name):
    """'BM_core/simd/n:1024/d:64/real_time_median' -> ('core', {'backend': 1, 'n': 1024, 'd': 64})"""
    parts = name.split("/")
    family = parts[0].removeprefix("BM_")
    args = {}
    names = {v: k for k, v in BACKENDS.items()}
    for p in parts[1:]:
        m = re.fullmatch(r"(\w+):(\d+)", p)
        if m:
            args[m.group(1)] = int(m.group(2))
        elif p in names:  # the backend, named in the benchmark's name
            args["backend"] = names[p]
    return family, args


def to_ms(run):
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[run["time_unit"]]
    return run["real_time"] * scale


def collect(runs):
    table = defaultdict(dict)  # (family, (("n", 1024), ("d", 64), …)) -> {column: (ms, gflops, rss)}
    peak = {}  # threads -> GFLOP/s; ("bf16", threads) -> the vdpbf16ps peak
    steps = []  # (step, label, ms, gflops) of BM_gemm_steps
    for r in runs:
        family, args = parse_name(r["name"])
        gflops = r.get("GFLOPs", 0.0)
        if family.startswith("tune_") or family.startswith("ladder") or family in ("stream_triad", "read_bandwidth",
                                                                                    "decode"):
            # the block-size sweep (--tuning) and the ladder (--ladder) are printed on their own; decoding by
            # bench/tools/decode_report.py, from the rounds of bench/peers/decode_peers.py
            continue
        if family == "peak_fma":
            peak[args["threads"]] = gflops
            continue
        if family == "peak_bf16":
            if "error_occurred" not in r:  # skipped where the kernels have no vdpbf16ps
                peak[("bf16", args["threads"])] = gflops
            continue
        if family == "gemm_steps":
            steps.append((args["step"], r.get("label", ""), to_ms(r), gflops))
            continue
        if family == "core_openblas":
            column = f"openblas-{args.pop('threads')}t"
        elif family == "tile_in_l1":
            column = "simd"  # the one-thread kernel, against the one-thread peak
        elif family == "scale_folding":
            column = "folded" if args.pop("folded") else "separate pass"
        elif family == "torch_backward":
            column = "pytorch"  # bench/tools/torch_backward.py, added to the same run's JSON
        else:
            column = BACKENDS[args.pop("backend")]
        table[(family, tuple(args.items()))][column] = (to_ms(r), gflops, r.get("peak_rss_MiB"))
    return table, peak, sorted(steps)


def peak_for(column, peak):
    threads = 2 if column in ("parallel", "fused", "fused_bf16", "openblas-2t", "pytorch") else 1
    if column == "fused_bf16" and ("bf16", threads) in peak:
        return peak[("bf16", threads)]
    return peak.get(threads)


def steps_markdown(steps, peak):
    out = ["", "### gemm_steps (1024×1024×1024, 1 thread)", "",
           "| step | time | GFLOP/s | % of 1-thread peak | gain over the step before |", "|---|---|---|---|---|"]
    previous = None
    for step, label, ms, g in steps:
        gain = f"{previous / ms:.1f}×" if previous else "–"
        pct = (f"{100 * g / peak[1]:.0f}%" if g >= 0.01 * peak[1] else f"{100 * g / peak[1]:.1f}%") if 1 in peak else "–"
        out.append(f"| {step}. {label} | {ms:.1f} ms | {g:.2f} | {pct} | {gain} |")
        previous = ms
    return "\n".join(out) + "\n"


def machine(context):
    """Which machine and build the numbers are from, as the benchmark recorded it."""
    return (f"Machine: {context.get('cpu_model', 'CPU model not recorded')}, {context.get('num_cpus')} CPUs at "
            f"{context.get('mhz_per_cpu')} MHz; caches: {context.get('caches', 'not recorded')}. Build: kernels "
            f"compiled for {context.get('simd_compiled', 'one instruction set')}, this CPU runs "
            f"{context.get('simd_supported', '–')}; default `{context.get('simd_isa', '–')}` (xsimd "
            f"`{context.get('simd_instruction_set')}`, {context.get('simd_batch_floats')} floats per batch), "
            f"{context.get('openmp_threads')} OpenMP threads; blocks: {context.get('blocks', 'not recorded')}.")


def tuning(runs, context):
    """The sweep of bench/tuning.cpp: per family and per size varied, every value's GFLOP/s, the
    best, and the model's choice beside it."""
    out = [machine(context), ""]
    for family, sizes in (("tune_gemm", ("kc", "nc")), ("tune_core", ("kc", "nc")), ("tune_fused", ("rows", "keys"))):
        found = [(parse_name(r["name"])[1], r.get("GFLOPs", 0.0), r.get("label", "")) for r in runs
                 if parse_name(r["name"])[0] == family]
        model = next((args for args, _, label in found if label == "model"), None)
        if not model:
            continue
        for varied in sizes:
            others = [x for x in sizes if x != varied]
            row = sorted((args[varied], g) for args, g, _ in found if all(args[o] == model[o] for o in others))
            best = max(row, key=lambda vg: vg[1])
            at_model = dict(row)[model[varied]]
            out.append(f"{family} {varied}" + "".join(f" ({o} = {model[o]})" for o in others) + ": " +
                       ", ".join(f"{v}: {g:.1f}" for v, g in row) + " GFLOP/s")
            out.append(f"  best {varied} = {best[0]} ({best[1]:.1f}); model {varied} = {model[varied]} "
                       f"({at_model:.1f}, {100 * at_model / best[1]:.0f}% of the best)")
    return "\n".join(out) + "\n"


def peak_text(peak):
    """'1 thread 116.9 GFLOP/s, 2 threads 231.8 GFLOP/s; bf16 pairs (BM_peak_bf16): 1 thread …'"""
    def listed(items):
        return ", ".join(f"{t} thread{'s' if t > 1 else ''} {g:.1f} GFLOP/s" for t, g in items)
    text = listed(sorted((t, g) for t, g in peak.items() if isinstance(t, int)))
    bf16 = sorted((t[1], g) for t, g in peak.items() if not isinstance(t, int))
    return text + (f"; bf16 dot-product peak (`BM_peak_bf16`, vdpbf16ps): {listed(bf16)}" if bf16 else "")


def markdown(table, peak, context):
    out = []
    out.append(machine(context))
    out.append("")
    out.append("Measured FMA peak: " + peak_text(peak))
    families = []
    for key in table:
        if key[0] not in families:
            families.append(key[0])
    order = ["naive", "simd", "parallel", "fused", "fused_bf16", "openblas-1t", "openblas-2t", "separate pass", "folded"]
    for family in families:
        keys = sorted((k for k in table if k[0] == family), key=lambda k: [v for _, v in k[1]][::-1])
        columns = [c for c in order if any(c in table[k] for k in keys)]
        arg_names = [name for name, _ in keys[0][1]]
        out.append("")
        out.append(f"### {family}")
        out.append("")
        out.append("| " + " | ".join(arg_names + columns) + " |")
        out.append("|" + "---|" * (len(arg_names) + len(columns)))
        for k in keys:
            cells = [str(v) for _, v in k[1]]
            for c in columns:
                if c not in table[k]:
                    cells.append("–")
                    continue
                ms, g, rss = table[k][c]
                p = peak_for(c, peak)
                cell = f"{ms:.3f} ms"
                if g:
                    cell += f", {g:.1f} GFLOP/s"
                    if p:
                        cell += f" ({100 * g / p:.0f}%)"
                if rss is not None:
                    cell += f", RSS {rss:.0f} MiB"
                cells.append(cell)
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


PAGE_BEGIN = "<!-- generated by bench/tools/bench_report.py --page from docs/bench.json: do not edit by hand -->"
PAGE_END = "<!-- end of the generated part -->"


def page(context, runs, accuracy=None):
    """The generated part of docs/performance.md: the recorded run's machine as the caption, then the
    tables every section of the page reads (each GFLOP/s figure beside its share of the FMA peak of
    the same run)."""
    table, peak, steps = collect(runs)

    def cell(key, column, with_rss=False):
        if column not in table.get(key, {}):
            return "–"
        ms, g, rss = table[key][column]
        p = peak_for(column, peak)
        text = f"{g:.1f} ({100 * g / p:.0f}%)" if g and p else f"{ms:.2f} ms"
        if column == "fused_bf16" and "fused" in table[key]:  # the speed-up over float32, times of the same run
            text += f", {table[key]['fused'][0] / ms:.2f}× f32"
        return text + (f", {rss:.0f} MiB" if with_rss and rss is not None else "")

    def key(family, **args):
        return (family, tuple(args.items()))

    out = [PAGE_BEGIN, "", "**The run.** " + machine(context) + " Google Benchmark, release build, every benchmark "
           "3 times: each figure is the median. FMA peak (`BM_peak_fma`): " + peak_text(peak) + "."]
    out += ["", ladder_markdown(runs, context).split("\n", 2)[2].rstrip()]
    out += ["", "### The core: GFLOP/s (% of the peak), d = 64 (`BM_core`, `BM_core_openblas`)", "",
            "| n | naive, 1 thread | simd, 1 thread | parallel, 2 threads | fused, 2 threads | fused bf16, 2 threads "
            "(% of the bf16 peak, speed-up over fused) | OpenBLAS + simd softmax, 2 threads |",
            "|---|---|---|---|---|---|---|"]
    for n in (256, 1024, 2048, 4096):
        out.append(f"| {n} | " + " | ".join(cell(key("core", n=n, d=64), c)
                                            for c in ("naive", "simd", "parallel", "fused", "fused_bf16"))
                   + f" | {cell(key('core_openblas', n=n, d=64), 'openblas-2t')} |")
    out += ["", "### Long sequences: GFLOP/s (% of the peak), peak RSS of the process (`BM_core_long`, 2 threads)", "",
            "| n | materialised | fused | fused bf16 | materialised, causal | fused, causal | fused bf16, causal |",
            "|---|---|---|---|---|---|---|"]
    for n in (1024, 4096, 16384):
        out.append(f"| {n} | " + " | ".join(cell(key("core_long", n=n, causal=c), b, True)
                                            for c in (0, 1) for b in ("parallel", "fused", "fused_bf16")) + " |")
    out += accuracy_markdown(accuracy)
    out += backward_markdown(table, cell, key)
    if steps:
        out.append(steps_markdown(steps, peak).rstrip().replace("### gemm_steps (1024×1024×1024, 1 thread)",
                                                                  "### The GEMM, one step at a time (`BM_gemm_steps`, 1024³, 1 thread)"))
    fresh = [(b, table.get(key("core", n=4096, d=64), {}).get(b), table.get(key("core_fresh", n=4096, d=64), {}).get(b))
             for b in ("parallel", "fused")]
    folding = table.get(key("scale_folding", n=2048), {})
    softmax = table.get(key("softmax_rows", n=1024, d=64), {})
    tile = table.get(key("tile_in_l1", rows=12), {}).get("simd") or table.get(key("tile_in_l1", rows=6), {}).get("simd")
    out += ["", "### Single figures", ""]
    for b, reused, new in fresh:
        if reused and new:
            out.append(f"- First touch (`BM_core_fresh` against `BM_core`, n = 4096, {b}): {new[0]:.1f} ms with "
                       f"fresh buffers each call, {reused[0]:.1f} ms with the caller's reused.")
    if "folded" in folding and "separate pass" in folding:
        out.append(f"- Step 4 folded into the softmax (`BM_scale_folding`, n = 2048, 1 thread): "
                   f"{folding['folded'][0]:.2f} ms, against {folding['separate pass'][0]:.2f} ms with a pass of its own.")
    if "naive" in softmax and "simd" in softmax:
        out.append(f"- The softmax (`BM_softmax_rows`, n = 1024): {softmax['simd'][0]:.3f} ms vectorised on 1 thread, "
                   f"{softmax['naive'][0]:.2f} ms for the textbook loop with `std::exp`.")
    if tile and 1 in peak:
        out.append(f"- The register tile alone, all in L1 (`BM_tile_in_l1`): {tile[1]:.1f} GFLOP/s, "
                   f"{100 * tile[1] / peak[1]:.0f}% of the 1-thread peak: the ceiling of every product.")
    out += ["", PAGE_END]
    return "\n".join(out) + "\n"


def accuracy_markdown(accuracy):
    """bench/tools/bf16_accuracy.py's figures: O's error against a float64 forward, as a share of max|v|."""
    if not accuracy:
        return []
    w = accuracy["worked_example"]
    cases = {(c["n"], c["d"], c["causal"]): c for c in accuracy["cases"]}
    out = ["", "### bf16 accuracy: O against a float64 forward, error ÷ max|v| (`bench/tools/bf16_accuracy.py`)", "",
           f"The worked example (`attn walk --dtype bf16`): {w['changed_at_4_decimals']} of O's {w['numbers']} numbers "
           f"change at 4 decimals, the largest by {w['largest_change']:.4f}. Random standard normal Q, K, V:", "",
           "| n | d | bf16: largest, rms | bf16, causal: largest, rms | float32: largest, rms |", "|---|---|---|---|---|"]
    for (n, d, causal), c in sorted(cases.items()):
        if causal:
            continue
        m = cases.get((n, d, True))
        both = lambda e: f"{e['max']:.1e}, {e['rms']:.1e}"  # noqa: E731
        out.append(f"| {n} | {d} | {both(c['bf16'])} | {both(m['bf16']) if m else '–'} | {both(c['f32'])} |")
    return out


def backward_markdown(table, cell, key):
    """The backward's table: BM_backward per backend and, when the run has it, PyTorch's autograd of the
    same expression (bench/tools/torch_backward.py) with the fused backward's speed-up over it."""
    if not any(k[0] == "backward" for k in table):
        return []
    out = ["", "### The backward: GFLOP/s (% of the peak), peak RSS of the process, d = 64 (`BM_backward`)", "",
           "| n | naive, 1 thread | simd, 1 thread | parallel, 2 threads | fused, 2 threads | PyTorch autograd, 2 threads | fused against PyTorch |",
           "|---|---|---|---|---|---|---|"]
    for n in (256, 1024, 2048, 4096, 16384):
        row = table.get(key("backward", n=n, d=64), {})
        if not row:
            continue
        torch_run = table.get(key("torch_backward", n=n, d=64), {}).get("pytorch")
        ratio = f"{torch_run[0] / row['fused'][0]:.2f}× faster" if torch_run and "fused" in row else "–"
        out.append(f"| {n} | " + " | ".join(cell(key("backward", n=n, d=64), c, c == "fused") for c in
                                            ("naive", "simd", "parallel", "fused")) +
                   f" | {cell(key('torch_backward', n=n, d=64), 'pytorch')} | {ratio} |")
    out += ["", "GFLOP/s counted as 8·n²·d for the materialised backends and PyTorch (the four products), "
            "10·n²·d for the fused one (the four and one recomputation of S, all it executes). "
            "The speed-up compares times."]
    return out


def replace_page_part(md_path, json_path):
    """docs/performance.md with its generated part made anew from `json_path`."""
    context, runs = load(json_path)
    text = open(md_path, encoding="utf-8").read()
    start, end = text.index(PAGE_BEGIN), text.index(PAGE_END) + len(PAGE_END) + 1
    with open(md_path, "w", encoding="utf-8") as f:
        f.write(text[:start] + page(context, runs, load_accuracy(json_path)) + text[end:])


def series(table, family, column, **fixed):
    """[(n, (ms, gflops, rss))] of one column of a family, for rows whose other arguments match `fixed`."""
    pts = []
    for (fam, args), cells in table.items():
        a = dict(args)
        if fam == family and column in cells and all(a.get(k) == v for k, v in fixed.items()):
            pts.append((a["n"], cells[column]))
    return sorted(pts)


def plot(table, peak, path):
    """GFLOP/s of the core against n, one line per backend, the measured peaks as dashed lines."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for family, column in [("core", "naive"), ("core", "simd"), ("core", "parallel"), ("core", "fused"),
                           ("core", "fused_bf16"), ("core_openblas", "openblas-1t"), ("core_openblas", "openblas-2t")]:
        pts = series(table, family, column, d=64)
        if pts:
            ax.plot([n for n, _ in pts], [c[1] for _, c in pts], marker="o", label=column)
    for key, g in peak.items():  # threads, or ("bf16", threads)
        threads, what = (key, "FMA peak") if isinstance(key, int) else (key[1], "bf16 peak")
        ax.axhline(g, linestyle="--" if what == "FMA peak" else ":", linewidth=1,
                   color=("grey" if threads == 1 else "black") if what == "FMA peak" else "C3")
        # x in axes fractions (bf16's on the right: its 1-thread peak is about the FMA's 2-thread one), y in GFLOP/s
        ax.text(0.01 if what == "FMA peak" else 0.55, g * 1.03, f"{what}, {threads} thread{'s' if threads > 1 else ''}",
                fontsize=8, transform=ax.get_yaxis_transform())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (sequence length), d = 64")
    ax.set_ylabel("GFLOP/s (4·n²·d per call)")
    ax.set_title("Attention core softmax(Q·K^T/√d)·V")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot_long(table, path):
    """Time and peak memory against n, materialised (parallel) against fused, causal or not."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (t_ax, m_ax) = plt.subplots(1, 2, figsize=(11, 4.5))
    for column in ("parallel", "fused"):
        for causal in (0, 1):
            pts = series(table, "core_long", column, causal=causal)
            if not pts:
                continue
            name = ("materialised" if column == "parallel" else "fused") + (", causal" if causal else "")
            style = "-" if causal == 0 else "--"
            t_ax.plot([n for n, _ in pts], [c[0] for _, c in pts], style, marker="o", label=name)
            m_ax.plot([n for n, _ in pts], [c[2] for _, c in pts], style, marker="o", label=name)
    for ax, label in ((t_ax, "time per call (ms)"), (m_ax, "peak resident memory (MiB)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("n, d = 64, 2 threads")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    t_ax.set_title("Time: both grow as n², fused faster")
    m_ax.set_title("Memory: n² materialised, flat fused")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


ISA_ORDER = ["baseline", "sse2", "neon", "avx2", "avx512", "avx512bf16", "native"]  # narrowest first


def ladder_data(runs):
    """The ladder of bench/ladder.cpp: {(backend, isa or None): GFLOP/s}, {(isa, threads): peak GFLOP/s}
    (("bf16", isa, threads): the vdpbf16ps peak, where the set has it), {threads: triad GB/s}."""
    cores, peaks, triad = {}, {}, {}
    for r in runs:
        parts = r["name"].split("/")
        named = dict(p.split(":", 1) for p in parts[1:] if ":" in p)
        if parts[0] == "BM_ladder":
            cores[(parts[1], named.get("isa"))] = r.get("GFLOPs", 0.0)
        elif parts[0] == "BM_ladder_peak":
            peaks[(named["isa"], int(named["threads"]))] = r.get("GFLOPs", 0.0)
        elif parts[0] == "BM_ladder_peak_bf16":
            peaks[("bf16", named["isa"], int(named["threads"]))] = r.get("GFLOPs", 0.0)
        elif parts[0] == "BM_stream_triad":
            triad[int(named["threads"])] = r.get("bytes_per_second", 0.0) / 1e9
    return cores, peaks, triad


def avx512_width(peaks):
    """What the run's own peaks say of its AVX-512: full width when the avx512 rung's 1-thread FMA peak is
    about twice the avx2 rung's, two 256-bit halves when the two are about equal; None without both."""
    wide, narrow = peaks.get(("avx512", 1)), peaks.get(("avx2", 1))
    if not wide or not narrow:
        return None
    ratio = wide / narrow
    if ratio >= 1.6:
        kind = ("its AVX-512 runs at full width: every kernel has twice the flops to earn at AVX-512, and "
                "whatever is not an FMA (exponentials, row sums, packing, memory) costs twice the share of the peak")
    elif ratio <= 1.25:
        kind = ("its AVX-512 runs as two 256-bit halves (double-pumped): AVX-512 brings the AVX2 peak and gains "
                "only from its 32 registers and fewer instructions")
    else:
        kind = ("neither about twice nor about equal, so the run does not say which kind of core it had (a "
                "peak that moved during the run: throttling or another tenant)")
    return f"This CPU's AVX-512 FMA peak is {ratio:.2f}× its AVX2 one (1 thread): {kind}."


def ladder_markdown(runs, context):
    """naive → each instruction set, 1 thread (simd) and 2 threads (parallel, fused, fused bf16): GFLOP/s,
    the gain over the rung below, and the % of that instruction set's own FMA peak (bf16: of its
    vdpbf16ps peak where it has the instruction; elsewhere the mode is emulated with FMAs)."""
    cores, peaks, triad = ladder_data(runs)
    isas = sorted({isa for _, isa in cores if isa}, key=ISA_ORDER.index)
    out = [machine(context), "", "### The SIMD ladder: the core at n = 2048, d = 64", "",
           "| rung | simd, 1 thread | parallel, 2 threads | fused, 2 threads | fused bf16, 2 threads | "
           "FMA peak 1 / 2 threads |",
           "|---|---|---|---|---|---|"]

    def cell(backend, isa, below, threads):
        g = cores.get((backend, isa))
        if g is None:
            return "–"
        text = f"{g:.1f}"
        if below and cores.get((backend, below)):
            text += f" ({g / cores[(backend, below)]:.2f}× {below})"
        if backend == "fused_bf16" and ("bf16", isa, threads) in peaks:
            return text + f", {100 * g / peaks[('bf16', isa, threads)]:.0f}% of the bf16 peak"
        p = peaks.get((isa, threads))
        text += f", {100 * g / p:.0f}% of peak" if p else ""
        return text + (" (emulated)" if backend == "fused_bf16" else "")

    naive = cores.get(("naive", None))
    if naive:
        out.append(f"| naive (textbook loops, baseline) | {naive:.2f} | – | – | – | – |")
    below = None
    for isa in isas:
        simd = cell("simd", isa, below, 1)
        if below is None and naive and cores.get(("simd", isa)):
            simd += f" ({cores[('simd', isa)] / naive:.0f}× naive)"
        peak = " / ".join(f"{peaks[(isa, t)]:.1f}" for t in (1, 2) if (isa, t) in peaks)
        if ("bf16", isa, 2) in peaks:
            peak += "; bf16 " + " / ".join(f"{peaks[('bf16', isa, t)]:.1f}" for t in (1, 2) if ("bf16", isa, t) in peaks)
        out.append(f"| {isa} | {simd} | {cell('parallel', isa, below, 2)} | {cell('fused', isa, below, 2)} | "
                   f"{cell('fused_bf16', isa, below, 2)} | {peak} |")
        below = isa
    out.append("")
    out.append("GFLOP/s counted as 4·n²·d per call; each % is of the same instruction set's FMA peak, measured "
               "in the same run (BM_ladder_peak), and bf16's of the vdpbf16ps peak (BM_ladder_peak_bf16: two "
               "products a lane per instruction) where the set has the instruction; elsewhere bf16 is emulated.")
    width = avx512_width(peaks)
    if width:
        out.append(width)
    if triad:
        out.append("Memory bandwidth (STREAM triad over 3 × 128 MiB): " +
                   ", ".join(f"{t} thread{'s' if t > 1 else ''} {g:.1f} GB/s" for t, g in sorted(triad.items())) + ".")
    return "\n".join(out) + "\n"


def plot_ladder(runs, path):
    """Bars: the core per rung, simd on 1 thread and parallel / fused on 2, each rung's peaks as ticks."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cores, peaks, _ = ladder_data(runs)
    isas = sorted({isa for _, isa in cores if isa}, key=ISA_ORDER.index)
    rungs = ["naive"] + isas
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.21
    series_ = (("simd", 1), ("parallel", 2), ("fused", 2), ("fused_bf16", 2))
    for k, (backend, threads) in enumerate(series_):
        xs, ys = [], []
        for i, rung in enumerate(rungs):
            g = cores.get(("naive", None)) if rung == "naive" and k == 0 else cores.get((backend, rung))
            if g:
                xs.append(i + (k - 1.5) * width)
                ys.append(g)
        label = (f"{backend.replace('_', ' ')}, {threads} thread{'s' if threads > 1 else ''}" +
                 (" (naive: textbook loops)" if k == 0 else " (emulated without vdpbf16ps)" if k == 3 else ""))
        ax.bar(xs, ys, width, label=label)
    bf16_labelled = False
    for i, isa in enumerate(rungs):
        for threads, style in ((1, "grey"), (2, "black")):
            if (isa, threads) in peaks:
                ax.hlines(peaks[(isa, threads)], i - 2 * width, i + 2 * width, colors=style, linestyles="--",
                          linewidth=1, label=f"FMA peak, {threads} thread{'s' if threads > 1 else ''}" if i == 1 else None)
        if ("bf16", isa, 2) in peaks:
            ax.hlines(peaks[("bf16", isa, 2)], i - 2 * width, i + 2 * width, colors="C3", linestyles=":", linewidth=1.5,
                      label=None if bf16_labelled else "bf16 peak (vdpbf16ps), 2 threads")
            bf16_labelled = True
    ax.set_xticks(range(len(rungs)), rungs)
    ax.set_yscale("log")
    ax.set_ylabel("GFLOP/s, core n = 2048, d = 64")
    ax.set_title("What each vector width buys (one binary, kernels chosen at run time)")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot_roofline(table, runs, path):
    """The roofline of this machine (2 threads: the widest instruction set's FMA peak and the triad
    bandwidth) with every measured core as a point at the arithmetic intensity its backend needs:
    materialised, 4·n²·d flops over Q, K, V, O and four passes over the n×n S (QKᵀ writes it, the
    softmax reads and writes it, α·V reads it); fused, the same flops over Q, K, V and O alone."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, peaks, triad = ladder_data(runs)
    widest = max((k[0] for k in peaks if len(k) == 2 and k[1] == 2), key=ISA_ORDER.index, default=None)
    if not widest or 2 not in triad:
        return False
    peak, bandwidth = peaks[(widest, 2)], triad[2]
    fig, ax = plt.subplots(figsize=(8, 5))
    xs = [2 ** (k / 4) for k in range(-8, 60)]
    ax.plot(xs, [min(peak, x * bandwidth) for x in xs], color="black", linewidth=1.5,
            label=f"roof: min({peak:.0f} GFLOP/s, intensity × {bandwidth:.1f} GB/s)")
    bf16_peak = peaks.get(("bf16", widest, 2))
    if bf16_peak:  # the bf16 mode's roof: the same bytes (its inputs and output are float32), vdpbf16ps's peak
        ax.plot(xs, [min(bf16_peak, x * bandwidth) for x in xs], color="C2", linewidth=1, linestyle="--",
                label=f"bf16 roof: min({bf16_peak:.0f} GFLOP/s (vdpbf16ps), intensity × {bandwidth:.1f} GB/s)")
    colors = {"parallel": "C0", "fused": "C1", "fused_bf16": "C2"}
    for column, marker in (("parallel", "s"), ("fused", "o"), ("fused_bf16", "^")):
        pts = {}
        for family in ("core", "core_long"):
            for n, c in series(table, family, column, d=64) if family == "core" else series(table, family, column, causal=0):
                pts[n] = c[1]
        if not pts:
            continue
        d = 64
        for n, g in sorted(pts.items()):
            moved = 4.0 * (4 * n * d + (4 * n * n if column == "parallel" else 0))
            ax.plot(4.0 * n * n * d / moved, g, marker, color=colors[column])
            # materialised points crowd at d/4 flops per byte once n ≫ d: label the first ones only
            if column != "parallel" or n <= 4 * d:
                ax.annotate(f"{n}", (4.0 * n * n * d / moved, g), fontsize=7, xytext=(3, 3), textcoords="offset points")
        if column == "parallel" and max(pts) > 4 * d:
            big = [n for n in sorted(pts) if n > 4 * d]
            ax.annotate(f"{big[0]}…{big[-1]}", (d / 4.0, max(pts[n] for n in big)), fontsize=7, xytext=(-60, 6),
                        textcoords="offset points")
        ax.plot([], [], marker, color=colors[column],
                label={"parallel": "materialised (parallel)", "fused": "fused", "fused_bf16": "fused, bf16"}[column])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flops per byte the backend must move), d = 64; labels: n")
    ax.set_ylabel("GFLOP/s, 2 threads")
    ax.set_title(f"Roofline of this machine ({widest}, 2 threads)")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="?")
    ap.add_argument("--markdown", help="write the tables here (default: stdout)")
    ap.add_argument("--plot", help="write a PNG plot of the core's GFLOP/s here")
    ap.add_argument("--plot-long", help="write a PNG plot of time and memory, materialised vs fused, here")
    ap.add_argument("--tuning", action="store_true", help="print the block-size sweep (scripts/dev tune) instead")
    ap.add_argument("--ladder", help="write the SIMD ladder's table (Markdown) here")
    ap.add_argument("--plot-ladder", help="write a PNG bar chart of the ladder here")
    ap.add_argument("--plot-roofline", help="write a PNG roofline with every measured core here")
    ap.add_argument("--page", action="store_true", help="print the generated part of docs/performance.md")
    ap.add_argument("--into", help="with --page: replace that part of this Markdown file instead")
    ap.add_argument("--record-into", help="write the run to this JSON file (docs/bench.json), keeping its " +
                    "sections from the peers' tools (" + ", ".join(PEER_SECTIONS) + ")")
    ap.add_argument("--self-test", action="store_true", help="check --record-into and the ladder's AVX-512 verdict on made-up data")
    a = ap.parse_args()
    if a.self_test:
        sys.exit(0 if self_test() else 1)
    if a.json is None:
        ap.error("the benchmark JSON file is required")
    if a.record_into:
        record(a.json, a.record_into)
        return
    context, runs = load(a.json)
    if a.page:
        if a.into:
            replace_page_part(a.into, a.json)
        else:
            sys.stdout.write(page(context, runs, load_accuracy(a.json)))
        return
    if a.tuning:
        sys.stdout.write(tuning(runs, context))
        return
    if a.ladder:
        with open(a.ladder, "w", encoding="utf-8") as f:
            f.write(ladder_markdown(runs, context))
    if a.plot_ladder:
        plot_ladder(runs, a.plot_ladder)
    table, peak, steps = collect(runs)
    text = markdown(table, peak, context) + (steps_markdown(steps, peak) if steps else "")
    if a.markdown:
        with open(a.markdown, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    if a.plot:
        plot(table, peak, a.plot)
    if a.plot_long:
        plot_long(table, a.plot_long)
    if a.plot_roofline and not plot_roofline(table, runs, a.plot_roofline):
        print("bench_report: no roofline: the run has no 2-thread BM_ladder_peak or BM_stream_triad", file=sys.stderr)


if __name__ == "__main__":
    main()
