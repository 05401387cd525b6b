#!/usr/bin/python3
"""Decoding against the engines a user would pick instead, in one window, by alternating rounds.

    /usr/bin/python3 bench/peers/decode_peers.py --work DIR [--ggml SOURCE] [--bench build/bench_attention]
        [--rounds 5] [--min-time 0.3] [--threads 2] [--S 4096 32768] [--kv f32 bf16 f16] [--heads 32]
        [--kv-heads 8] [--E 128] [--one-head 32768] [--engines ours ggml ort_mha ort_gqa ort_attention torch]
        [--json FILE] [--into docs/bench.json] [--build-only | --check-only]

The case is one decoding step of a model layer: batch 1, one query row (L = 1) for each of H query
heads, against a cache of S keys and values in H_kv heads of width E, stored as f32, bf16 or f16;
float32 queries and output; nothing masked. Besides, one head (H = H_kv = 1) at S = --one-head on 1
and on 2 threads, this library only: whether both threads work. Engines:

    ours           BM_decode/<kv>/S:…/H:…/H_kv:…/E:…/threads:… (bench/bench_decode.cpp) in bench_attention,
                   right after BM_peak_fma and BM_read_bandwidth of the same thread count, in one process
    ggml           ggml_flash_attn_ext with q [E, 1, H], k and v [E, S, H_kv] of the case's type (f32, f16:
                   llama.cpp's default cache, bf16), bench/peers/ggml_heads.cpp --keys S
    ort_mha        ONNX Runtime's com.microsoft MultiHeadAttention, L = 1, for H_kv = H (bench/peers/ort_heads.js)
    ort_gqa        its GroupQueryAttention for H_kv < H: the new token's key and value, and a past cache
                   sharing its buffer with the present, as a generator runs it
    ort_attention  ONNX's own Attention (opset 23), q (1, H, 1, E), k and v (1, H_kv, S, E)
    torch          softmax(q @ kᵀ · scale) @ v with k and v repeated to H heads, PyTorch of /usr/bin/python3
                   (bench/peers/torch_heads.py --keys S), in float32, and for a bf16 cache in bfloat16 throughout

ONNX Runtime runs the float32 cache only, PyTorch float32 and bf16. A round takes every case in turn
and runs every engine on it, one right after the other (ours first), each in a process of its own;
--rounds rounds in one window. GB/s count the cache's keys and values alike for every engine
(bench/tools/decode_report.py's cache_bytes), whatever else an engine reads.

The peers are built as bench/peers/heads_peers.py builds them (its helpers, imported), in --work.
Before any timing every peer runs small cases (H = 4, L = 1, S = 80 and 700 — past ggml's split of the
keys across threads at 512 —, E = 32, H_kv = 4 and 2) and its checksum is compared with a float64
computation here on the same inputs (heads_peers.py's formula and checksum), so an engine that read
its layout wrong is never timed; a 16-bit cache is held to the rounding it implies.

Printed: each measurement as it is taken, then bench/tools/decode_report.py's table and targets;
--json (default <bench's folder>/decode_peers.json) keeps every round for decode_report.py, and --into
adds them to a benchmark run's JSON as its "decode_peers" (then decode_report.py --page puts the table
on docs/performance.md). Time it only on an idle machine: the default run (8 cases, 5 rounds) takes
ten to fifteen minutes on 2 cores, most of it in the slowest peers' calls at S = 32768.
"""
import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "bench" / "tools"))
sys.path.insert(0, str(HERE))
import decode_report  # noqa: E402
import heads_peers  # noqa: E402

PEERS = ["ggml", "ort_mha", "ort_gqa", "ort_attention", "torch"]
# The cache types each engine runs (ggml: every one; PyTorch: float32, and bfloat16 throughout).
KV_TYPES = {"ort_mha": {"f32"}, "ort_gqa": {"f32"}, "ort_attention": {"f32"}, "torch": {"f32", "bf16"}}
TORCH_DTYPES = {"f32": "float32", "bf16": "bfloat16"}
CHECK_HEADS, CHECK_E = 4, 32
CHECK_CASES = [(S, kv_heads) for S in (80, 700) for kv_heads in (4, 2)]
# Relative error of a checksum allowed, by the cache's type. The reference holds K and V rounded as the
# cache does; what remains of a 16-bit case is the engine's own rounding (ggml rounds q to the cache's
# type for its dot products, and sums V's rows in float16 for an f16 cache; PyTorch in bfloat16 rounds
# q, the scores, the weights and O too).
TOLERANCE = {"f32": 1e-5, "f16": 1e-3, "bf16": 1e-3}


def decode_name(case):
    kv, S, heads, kv_heads, E, threads = decode_report.parse_case(case)
    return f"BM_decode/{kv}/S:{S}/H:{heads}/H_kv:{kv_heads}/E:{E}/threads:{threads}"


def ensure_ours(bench, cases):
    if (bench.parent / "build.ninja").exists():  # up to date with the sources, whatever was built before
        heads_peers.run(["ninja", "-C", bench.parent, bench.name], stdout=subprocess.DEVNULL)
    listed = subprocess.run([bench, "--benchmark_list_tests", "--benchmark_filter=^BM_decode/"], capture_output=True,
                            text=True, check=True).stdout.split()
    missing = [decode_name(case) for case in cases if decode_name(case) + "/real_time" not in listed]
    if missing:
        sys.exit(f"decode_peers: {bench} has no {', '.join(missing)} (bench/bench_decode.cpp registers the cases)")


class Engines:
    def __init__(self, args):
        self.args = args
        self.versions, self.commands, self.env = {}, {}, {}
        wanted = set(args.engines)
        if wanted & {"ort_mha", "ort_gqa", "ort_attention"}:
            node_path = heads_peers.ensure_ort(args.work)
            version = json.loads((node_path / "onnxruntime-node" / "package.json").read_text())["version"]
            for op in ("mha", "gqa", "attention"):
                self.commands["ort_" + op] = ["node", HERE / "ort_heads.js", "--op", op]
                self.versions["ort_" + op] = "onnxruntime-node " + version
                self.env["ort_" + op] = dict(os.environ, NODE_PATH=str(node_path))
        if "ggml" in wanted:
            program, commit = heads_peers.ensure_ggml(args.work, args.ggml)
            self.commands["ggml"] = [program]
            self.versions["ggml"] = "ggml " + commit
        if "torch" in wanted:
            version = heads_peers.torch_version()
            if version:
                self.commands["torch"] = ["/usr/bin/python3", HERE / "torch_heads.py"]
                self.versions["torch"] = "torch " + version
            else:
                print("decode_peers: /usr/bin/python3 cannot import torch; no PyTorch column", file=sys.stderr)
        self.peers = [e for e in PEERS if e in wanted and e in self.commands]

    def runs(self, engine, case):
        """Whether the engine has this case: its cache type, and MHA or GQA by the grouping."""
        kv, _, heads, kv_heads, _, _ = decode_report.parse_case(case)
        if kv not in KV_TYPES.get(engine, {kv}):
            return False
        return not (engine == "ort_mha" and kv_heads < heads or engine == "ort_gqa" and kv_heads == heads)

    def run_peer(self, engine, case, min_time):
        """{engine, case, calls, seconds, checksum, peak_rss_mib} or {engine, case, skipped}."""
        kv, S, heads, kv_heads, E, threads = decode_report.parse_case(case)
        dtype = ["--kv", kv] if engine == "ggml" else ["--dtype", TORCH_DTYPES[kv]] if engine == "torch" else []
        cmd = [*self.commands[engine], *dtype, "--threads", threads,
               "--min-time", min_time, "--heads", heads, "--keys", S, f"1:{E}:{kv_heads}:0"]
        try:
            out, rss = heads_peers.run_measured(cmd, self.env.get(engine))
        except RuntimeError as error:  # a peer that fails (out of memory, say) is reported, not fatal
            print(f"decode_peers: {error}", file=sys.stderr, flush=True)
            return {"engine": engine, "case": case, "skipped": f"failed: {str(error)[-200:]}"}
        result = json.loads(out.strip().splitlines()[-1])
        result.update(engine=engine, case=case, peak_rss_mib=rss)
        return result

    def run_ours(self, case):
        """BM_peak_fma, BM_read_bandwidth, then BM_decode on the case, in one process: (result, context)."""
        threads = decode_report.parse_case(case)[5]
        peak, bandwidth = f"BM_peak_fma/threads:{threads}", f"BM_read_bandwidth/threads:{threads}"
        decode = decode_name(case)
        cmd = [self.args.bench, f"--benchmark_filter=^({peak}/real_time|{bandwidth}/manual_time|{decode}/real_time)$",
               f"--benchmark_min_time={self.args.min_time}", "--benchmark_format=json"]
        out, rss = heads_peers.run_measured(cmd, dict(os.environ, OMP_NUM_THREADS=str(threads)))
        report = json.loads(out)
        runs = {b["name"].removesuffix("/real_time").removesuffix("/manual_time"): b for b in report["benchmarks"]}
        if any(name not in runs for name in (peak, bandwidth, decode)) or runs[decode].get("error_occurred"):
            raise RuntimeError(f"{self.args.bench}: no {peak}, {bandwidth} or {decode} in its output")
        b = runs[decode]
        seconds = b["real_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
        result = {"engine": "ours", "case": case, "calls": b["iterations"], "seconds": seconds, "peak_rss_mib": rss,
                  "bandwidth_gbps": runs[bandwidth]["GBps"], "peak_gflops": runs[peak]["GFLOPs"],
                  "threads_busy": b["threads_busy"]}
        return result, report["context"]


def rounded(values, kv):
    """float32 values as the cache holds them: f32 unchanged, f16 to nearest, bf16 to nearest (ties to even)."""
    if kv == "f16":
        return values.astype(numpy.float16).astype(numpy.float64)
    if kv == "bf16":
        bits = values.astype(numpy.float32).view(numpy.uint32).astype(numpy.uint64)
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(numpy.uint32)
        return bits.view(numpy.float32).astype(numpy.float64)
    return values


def reference_checksum(case):
    """heads_peers.py's checksum of softmax(q·Kᵀ/√E)·V in float64, K and V as the case's cache holds them,
    and Σ|O·w| (its scale)."""
    kv, S, heads, kv_heads, E, _ = decode_report.parse_case(case)
    q = heads_peers.inputs(0, (heads, 1, E))
    k, v = (numpy.repeat(rounded(heads_peers.inputs(t, (kv_heads, S, E)), kv), heads // kv_heads, 0) for t in (1, 2))
    s = q @ k.transpose(0, 2, 1) / math.sqrt(E)
    a = numpy.exp(s - s.max(-1, keepdims=True))
    o = (a / a.sum(-1, keepdims=True)) @ v
    h, n, e = numpy.meshgrid(numpy.arange(heads), numpy.arange(1), numpy.arange(E), indexing="ij")
    w = numpy.mod(31 * h + 7 * n + e, 13) - 6
    return float(numpy.sum(o * w)), float(numpy.sum(numpy.abs(o * w)))


def check(engines, kv_types):
    """Each peer on the small cases against float64; exits when one is wrong. Returns what was checked."""
    checked = []
    for engine, kv, (S, kv_heads) in itertools.product(engines.peers, kv_types, CHECK_CASES):
        case = decode_report.case_text(kv, S, CHECK_HEADS, kv_heads, CHECK_E, engines.args.threads)
        if not engines.runs(engine, case):
            continue
        result = engines.run_peer(engine, case, 0.01)
        if "skipped" in result:
            sys.exit(f"decode_peers: {engine} fails on {case}: {result['skipped']}; not timing it")
        expected, scale = reference_checksum(case)
        error = abs(result["checksum"] - expected) / scale
        checked.append({"engine": engine, "case": case, "relative_error": error})
        print(f"check {engine:13s} {case:22s} checksum {result['checksum']:+.6f}, float64 {expected:+.6f}: "
              f"relative error {error:.1e}", flush=True)
        if not error <= TOLERANCE[kv]:
            sys.exit(f"decode_peers: {engine} computes something else on {case} "
                     f"(relative error {error:.1e} > {TOLERANCE[kv]:.0e}); not timing it")
    return checked


def cases(args):
    main = [decode_report.case_text(kv, S, args.heads, args.kv_heads, args.E, args.threads)
            for S, kv in itertools.product(args.S, args.kv)]
    one_head = [decode_report.case_text("f32", S, 1, 1, args.E, threads) for S in args.one_head for threads in (1, 2)]
    return main + one_head


def measure(args, engines, data):
    for r in range(args.rounds):
        for case in data["cases"]:
            ours, data["context"] = engines.run_ours(case)
            entries = [ours]
            heads = decode_report.parse_case(case)[2]
            for engine in engines.peers if heads > 1 else []:  # one head: a test of this library's threads
                if not engines.runs(engine, case) or case in data["skipped"].get(engine, {}):
                    continue
                result = engines.run_peer(engine, case, args.min_time)
                if "skipped" in result:
                    data["skipped"].setdefault(engine, {})[case] = result["skipped"]
                    continue
                entries.append(result)
            for entry in entries:
                entry.pop("checksum", None)
                entry["round"] = r
                data["runs"].append(entry)
                gbps = decode_report.cache_bytes(case) / entry["seconds"] / 1e9
                print(f"round {r + 1}/{args.rounds}  {case:22s} {entry['engine']:13s} {gbps:7.1f} GB/s  "
                      f"{1 / entry['seconds']:8.0f} tokens/s  {entry['peak_rss_mib']:7.0f} MiB"
                      + (f"  (read bandwidth {entry['bandwidth_gbps']:.1f} GB/s)" if "bandwidth_gbps" in entry else ""),
                      flush=True)
        if args.json:
            args.json.write_text(json.dumps(data, indent=1))


def main():
    parser = heads_peers.common_arguments(__doc__, min_time=0.3)
    parser.add_argument("--S", type=int, nargs="+", default=[4096, 32768], help="cached keys and values a head")
    parser.add_argument("--kv", nargs="+", default=["f32", "bf16", "f16"], choices=["f32", "bf16", "f16"])
    parser.add_argument("--heads", type=int, default=32, help="H, query heads")
    parser.add_argument("--kv-heads", type=int, default=8, help="H_kv, key/value heads")
    parser.add_argument("--E", type=int, default=128)
    parser.add_argument("--one-head", type=int, nargs="*", default=[32768],
                        help="S of the one-head cases, run on 1 and 2 threads (none: no such case)")
    parser.add_argument("--engines", nargs="+", default=["ours", *PEERS], choices=["ours", *PEERS])
    parser.add_argument("--json", type=Path, help="every round's numbers (default: decode_peers.json beside --bench)")
    parser.add_argument("--into", type=Path, help="a benchmark JSON file to add the rounds to, as \"decode_peers\"")
    parser.add_argument("--build-only", action="store_true", help="build what is missing and stop")
    parser.add_argument("--check-only", action="store_true", help="build, check the peers and stop")
    args = parser.parse_args()
    args.work = args.work.resolve()
    args.json = args.json or args.bench.parent / "decode_peers.json"
    if args.heads % args.kv_heads:
        parser.error("H must be a multiple of H_kv")
    if "ours" in args.engines:
        ensure_ours(args.bench, cases(args))
    engines = Engines(args)
    if args.build_only:
        return
    checked = check(engines, args.kv)
    if args.check_only:
        return
    if "ours" not in args.engines:
        parser.error("the rounds need ours: its process measures the read bandwidth the rates are compared with")
    data = heads_peers.run_rounds(args, engines, cases(args), checked, measure, "decode_peers")
    print()
    print(decode_report.markdown(data))
    print()
    print(decode_report.targets_table(data))
    print(f"\nEvery round: {args.json}")


if __name__ == "__main__":
    main()
