#!/usr/bin/python3
"""Many heads against the engines a user would pick instead, in one window, by alternating rounds.

    /usr/bin/python3 bench/peers/heads_peers.py --work DIR [--ggml SOURCE] [--bench build/bench_attention]
        [--rounds 5] [--min-time 0.5] [--threads 2] [--heads 32] [--L 256 1024 4096] [--E 64 128]
        [--kv-heads 32 8] [--causal 0 1] [--engines ours ort_mha ort_gqa ort_attention ggml_f32 ggml_f16 torch]
        [--json FILE] [--into build/bench.json] [--build-only | --check-only]

The case is a model layer's prefill: batch 1, H query heads (BM_heads's, 32), L = S tokens, head width
E, float32 queries, H_kv key/value heads (H_kv < H: grouped-query attention), causal or not. With
--heads 1, a single head instead (BM_one_head: E = 64, L = 1024 … 16384, H_kv = 1, not causal), the
fused core of BM_core and BM_core_long against the same peers:

    /usr/bin/python3 bench/peers/heads_peers.py --work DIR --heads 1 --L 1024 2048 4096 16384 --E 64 \
        --kv-heads 1 --causal 0 --engines ours ort_mha --json build/one_head_peers.json

Engines:

    ours      BM_heads/fused (bench/bench_heads.cpp) in bench_attention, right after BM_peak_fma of the
              same thread count, in one process: the peak of that moment
    ort_mha   ONNX Runtime's com.microsoft MultiHeadAttention, num_heads = H (bench/peers/ort_heads.js;
              npm's onnxruntime-node 1.31.1, its CPU provider), for H_kv = H
    ort_gqa   its GroupQueryAttention, num_heads and kv_num_heads, for H_kv < H (causal: a prompt)
    ort_attention  ONNX's own Attention operator (opset 23), (1, H, L, E) as here, grouped heads or not
    ggml_f32  ggml's ggml_flash_attn_ext with heads, K and V float32 (bench/peers/ggml_heads.cpp)
    ggml_f16  the same with K and V float16, llama.cpp's default cache type
    torch     softmax(q @ kᵀ · scale) @ v on (1, H, L, E) tensors, the PyTorch of /usr/bin/python3
              (bench/peers/torch_heads.py)

Every engine runs on --threads threads. A round takes every case in turn and runs every engine on it,
one right after the other (ours first); --rounds rounds in one window. Every engine's case runs in a
process of its own, whose peak resident memory (wait4's ru_maxrss) is recorded with its time.
GFLOP/s are counted alike for all, as BM_heads counts them: 4·L·S·E per head, half when causal.

What is missing is built first, outside the project, in --work: npm installs onnxruntime-node with
--ignore-scripts (its install script fetches GPU binaries) and onnx-proto; ggml's source (--ggml: a
checkout, a bare git directory, or a URL to clone) is built with CMake (static CPU libraries, native
instructions, no BLAS) and ggml_heads.cpp linked against it; bench_attention is built with ninja.

Before any timing every peer runs small cases (H = 4, L = 80, E = 32: a tile and a part) and its checksum is compared
with a float64 computation here, so an engine that read its layout wrong never gets timed. The inputs
and the checksum are defined here and implemented alike by each peer, in the canonical (head, token,
width) order whatever the engine's layout:

    input t (0 = Q, 1 = K, 2 = V), element i (from 0):  frac((i + 1) · 0.6180339887498949 + 0.1·t) · 2 − 1
    checksum:  Σ O[h, n, e] · ((31·h + 7·n + e) mod 13 − 6)

Printed: each measurement as it is taken, then bench/tools/heads_report.py's tables; --json (default
<bench's folder>/heads_peers.json) keeps every round for heads_report.py, and --into adds them to a
benchmark run's JSON as its "heads_peers", so that one recorded run carries everything. Time it only on an idle
machine: the default run (24 cases, 7 engines, 5 rounds) lasts tens of minutes on 2 cores, and
--E 128 --kv-heads 32 --causal 0 keeps only the cases of the targets.
"""
import argparse
import itertools
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "bench" / "tools"))
import heads_report  # noqa: E402
import rounds  # noqa: E402

ORT_PACKAGES = ["onnxruntime-node@1.31.1", "onnx-proto"]
PEERS = ["ort_mha", "ort_gqa", "ort_attention", "ggml_f32", "ggml_f16", "torch"]
CHECK_CASES = [(80, 32, 4, 0), (80, 32, 4, 1), (80, 32, 2, 0), (80, 32, 2, 1)]
CHECK_HEADS = 4


def case_text(case):
    return "{}:{}:{}:{}".format(*case)


def run(cmd, **kwargs):
    print("+ " + " ".join(str(c) for c in cmd), file=sys.stderr, flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kwargs)


def run_measured(cmd, env=None):
    """Runs cmd; returns (stdout, peak resident MiB of that process). Raises on a failure, with its stderr."""
    with tempfile.TemporaryFile(mode="w+") as err:
        p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        out = p.stdout.read()
        p.stdout.close()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            err.seek(0)
            raise RuntimeError(" ".join(str(c) for c in cmd) + f" exited {p.returncode}: {err.read()[-2000:]}")
    return out, usage.ru_maxrss / 1024.0  # kB on Linux


# --- building what is missing ------------------------------------------------------------------

def ensure_ours(bench):
    if (bench.parent / "build.ninja").exists():  # up to date with the sources, whatever was built before
        run(["ninja", "-C", bench.parent, bench.name], stdout=subprocess.DEVNULL)
    listed = subprocess.run([bench, "--benchmark_list_tests", "--benchmark_filter=^BM_heads/"], capture_output=True,
                            text=True, check=True).stdout
    if not listed.strip():
        sys.exit(f"heads_peers: {bench} has no BM_heads (built before bench/bench_heads.cpp?)")


def ensure_ort(work):
    folder = work / "ort"
    if not (folder / "node_modules" / "onnxruntime-node").exists():
        folder.mkdir(parents=True, exist_ok=True)
        run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--prefix", folder, *ORT_PACKAGES])
    return folder / "node_modules"


def ggml_source(work, source):
    """ggml's source in work/ggml-src, from a checkout, a bare git directory or a URL; returns its commit."""
    target = work / "ggml-src"
    commit_file = work / "ggml-src.commit"
    if not (target / "CMakeLists.txt").exists():
        target.mkdir(parents=True, exist_ok=True)
        path = Path(source)
        if (path / "CMakeLists.txt").exists():
            shutil.copytree(path, target, dirs_exist_ok=True)
            git = ["git", "-C", path]
        elif (path / "HEAD").exists() and (path / "objects").exists():
            archive = subprocess.run(["git", "--git-dir", path, "archive", "HEAD"], capture_output=True, check=True)
            subprocess.run(["tar", "x", "-C", target], input=archive.stdout, check=True)
            git = ["git", "--git-dir", path]
        else:
            shutil.rmtree(target)
            run(["git", "clone", "--depth", "1", source, target])
            git = ["git", "-C", target]
        commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        commit_file.write_text(commit or "unknown")
    return commit_file.read_text().strip() if commit_file.exists() else "unknown"


def ensure_ggml(work, source):
    commit = ggml_source(work, source)
    build = work / "ggml-build"
    libraries = [build / "src" / "libggml-cpu.a", build / "src" / "libggml-base.a"]
    if not all(lib.exists() for lib in libraries):
        run(["cmake", "-S", work / "ggml-src", "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON",
             "-DGGML_BLAS=OFF", "-DBUILD_SHARED_LIBS=OFF", "-DGGML_BUILD_TESTS=OFF", "-DGGML_BUILD_EXAMPLES=OFF"],
            stdout=subprocess.DEVNULL)
        run(["cmake", "--build", build, "--target", "ggml-cpu", "ggml-base", "-j", str(os.cpu_count() or 1)],
            stdout=subprocess.DEVNULL)
    program, source_file = work / "ggml_heads", HERE / "ggml_heads.cpp"
    if not program.exists() or program.stat().st_mtime < source_file.stat().st_mtime:
        run(["c++", "-O2", "-std=c++17", "-I", work / "ggml-src" / "include", source_file, *libraries, "-fopenmp",
             "-lpthread", "-lm", "-o", program])
    return program, commit


def torch_version():
    out = subprocess.run(["/usr/bin/python3", "-c", "import torch; print(torch.__version__)"], capture_output=True,
                         text=True)
    return out.stdout.strip() or None


# --- the engines -------------------------------------------------------------------------------

class Engines:
    def __init__(self, args):
        self.args = args
        self.versions = {}
        self.commands = {}
        wanted = set(args.engines)
        if wanted & {"ort_mha", "ort_gqa", "ort_attention"}:
            node_path = ensure_ort(args.work)
            self.node_env = dict(os.environ, NODE_PATH=str(node_path))
            version = json.loads((node_path / "onnxruntime-node" / "package.json").read_text())["version"]
            for op in ("mha", "gqa", "attention"):
                self.commands["ort_" + op] = ["node", HERE / "ort_heads.js", "--op", op]
                self.versions["ort_" + op] = "onnxruntime-node " + version
        if wanted & {"ggml_f32", "ggml_f16"}:
            program, commit = ensure_ggml(args.work, args.ggml)
            for kv in ("f32", "f16"):
                self.commands["ggml_" + kv] = [program, "--kv", kv]
                self.versions["ggml_" + kv] = "ggml " + commit
        if "torch" in wanted:
            version = torch_version()
            if version:
                self.commands["torch"] = ["/usr/bin/python3", HERE / "torch_heads.py"]
                self.versions["torch"] = "torch " + version
            else:
                print("heads_peers: /usr/bin/python3 cannot import torch; no PyTorch column", file=sys.stderr)
        self.peers = [e for e in PEERS if e in wanted and e in self.commands]

    def run_peer(self, engine, case, heads, min_time):
        """{engine, case, calls, seconds, checksum, peak_rss_mib} or {engine, case, skipped}."""
        cmd = [*self.commands[engine], "--threads", self.args.threads, "--min-time", min_time, "--heads", heads,
               case_text(case)]
        try:
            out, rss = run_measured(cmd, self.node_env if engine.startswith("ort_") else None)
        except RuntimeError as error:  # a peer that fails (out of memory, say) is reported, not fatal
            print(f"heads_peers: {error}", file=sys.stderr, flush=True)
            return {"engine": engine, "case": case_text(case), "skipped": f"failed: {str(error)[-200:]}"}
        result = json.loads(out.strip().splitlines()[-1])
        result["peak_rss_mib"] = rss
        return result

    def run_ours(self, case):
        """BM_peak_fma then BM_heads on the case, in one process: (result, peak GFLOP/s, heads, context)."""
        L, E, kv_heads, causal = case
        peak = f"BM_peak_fma/threads:{self.args.threads}"
        family = "BM_one_head" if self.args.heads == 1 else "BM_heads"
        heads = f"{family}/fused/L:{L}/E:{E}/H_kv:{kv_heads}/causal:{causal}"
        cmd = [self.args.bench, f"--benchmark_filter=^({peak}|{heads})/real_time$",
               f"--benchmark_min_time={self.args.min_time}", "--benchmark_format=json"]
        out, rss = run_measured(cmd, dict(os.environ, OMP_NUM_THREADS=str(self.args.threads)))
        report = json.loads(out)
        runs = {b["name"].removesuffix("/real_time"): b for b in report["benchmarks"]}
        if peak not in runs or heads not in runs or runs[heads].get("error_occurred"):
            raise RuntimeError(f"{self.args.bench}: no {peak} or {heads} in its output")
        b = runs[heads]
        seconds = b["real_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
        result = {"engine": "ours", "case": case_text(case), "calls": b["iterations"], "seconds": seconds,
                  "peak_rss_mib": rss, "in_process_peak_rss_mib": b["peak_rss_MiB"],
                  "operands_mib": b["operands_MiB"], "threads_busy": b["threads_busy"]}
        return result, runs[peak]["GFLOPs"], int(b["heads"]), report["context"]


# --- checking and timing -------------------------------------------------------------------------

def inputs(t, shape):
    i = numpy.arange(1, math.prod(shape) + 1, dtype=numpy.float64)
    return (numpy.mod(i * 0.6180339887498949 + t * 0.1, 1.0) * 2 - 1).astype(numpy.float32).astype(numpy.float64).reshape(shape)


def reference_checksum(case, heads):
    """The checksum of softmax(Q·Kᵀ/√E [causal])·V in float64, and Σ|O·w| (its scale)."""
    L, E, kv_heads, causal = case
    q, k, v = inputs(0, (heads, L, E)), inputs(1, (kv_heads, L, E)), inputs(2, (kv_heads, L, E))
    k, v = numpy.repeat(k, heads // kv_heads, 0), numpy.repeat(v, heads // kv_heads, 0)
    s = q @ k.transpose(0, 2, 1) / math.sqrt(E)
    if causal:
        s = s + numpy.triu(numpy.full((L, L), -numpy.inf), 1)
    a = numpy.exp(s - s.max(-1, keepdims=True))
    o = (a / a.sum(-1, keepdims=True)) @ v
    h, n, e = numpy.meshgrid(numpy.arange(heads), numpy.arange(L), numpy.arange(E), indexing="ij")
    w = numpy.mod(31 * h + 7 * n + e, 13) - 6
    return float(numpy.sum(o * w)), float(numpy.sum(numpy.abs(o * w)))


def check(engines):
    """Each peer on the small cases against float64; exits when one is wrong. Returns what was checked."""
    checked = []
    for engine, case in itertools.product(engines.peers, CHECK_CASES):
        result = engines.run_peer(engine, case, CHECK_HEADS, 0.01)
        if result.get("skipped", "").startswith("failed"):
            sys.exit(f"heads_peers: {engine} fails on {case_text(case)}; not timing it")
        if "skipped" in result:
            continue  # an operation this engine does not have
        expected, scale = reference_checksum(case, CHECK_HEADS)
        error = abs(result["checksum"] - expected) / scale
        tolerance = 2e-3 if engine == "ggml_f16" else 1e-5
        checked.append({"engine": engine, "case": case_text(case), "relative_error": error})
        print(f"check {engine:13s} H={CHECK_HEADS} {case_text(case):12s} checksum {result['checksum']:+.6f}, "
              f"float64 {expected:+.6f}: relative error {error:.1e}", flush=True)
        if not error <= tolerance:
            sys.exit(f"heads_peers: {engine} computes something else on {case_text(case)} "
                     f"(relative error {error:.1e} > {tolerance:.0e}); not timing it")
    return checked


def cpu_name():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_rounds(args, engines, cases, checked, measure, section):
    """Every round of every case by measure(args, engines, data), with what the report tools need to
    caption them; added to args.into (docs/bench.json) as `section` where given. decode_peers.py's too."""
    data = {"cpu": cpu_name(), "cpus": os.cpu_count(), "threads": args.threads, "rounds": args.rounds,
            "min_time": args.min_time, "versions": engines.versions, "engines": ["ours", *engines.peers],
            "cases": cases, "runs": [], "skipped": {}, "checked": checked}
    measure(args, engines, data)
    if args.into:
        report = json.loads(args.into.read_text(encoding="utf-8"))
        report[section] = data
        rounds.write_json(args.into, report)
    return data


def measure(args, engines, data):
    skipped = data["skipped"]
    for r in range(args.rounds):
        for case in itertools.product(args.L, args.E, args.kv_heads, args.causal):
            ours, peak, heads, context = engines.run_ours(case)
            data["heads"], data["context"] = heads, context
            entries = [ours]
            for engine in engines.peers:
                if case_text(case) in skipped.get(engine, {}) or (engine == "ort_gqa" and case[2] == heads):
                    continue  # GroupQueryAttention where MultiHeadAttention has no grouped heads
                result = engines.run_peer(engine, case, heads, args.min_time)
                if "skipped" in result:
                    skipped.setdefault(engine, {})[case_text(case)] = result["skipped"]
                    continue
                entries.append(result)
            flops = heads_report.flops(heads, case_text(case))
            for entry in entries:
                entry.update(round=r, peak_gflops=peak, gflops=flops / entry["seconds"] / 1e9)
                entry.pop("checksum", None)
                data["runs"].append(entry)
                print(f"round {r + 1}/{args.rounds}  {case_text(case):14s} {entry['engine']:13s} "
                      f"{entry['gflops']:7.1f} GFLOP/s  {100 * entry['gflops'] / peak:5.1f}% of the peak "
                      f"{peak:.1f}  {entry['peak_rss_mib']:7.0f} MiB", flush=True)
        if args.json:
            args.json.write_text(json.dumps(data, indent=1))


def common_arguments(doc, min_time):
    """The options heads_peers.py and decode_peers.py share: where the peers are built, this library's
    benchmark, the rounds and the threads."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="scratch folder for the peers' builds")
    parser.add_argument("--ggml", default="https://github.com/ggml-org/ggml.git",
                        help="ggml's source: a checkout, a bare git directory or a URL")
    parser.add_argument("--bench", type=Path, default=ROOT / "build" / "bench_attention")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=min_time, help="seconds each engine repeats a case")
    parser.add_argument("--threads", type=int, default=2, choices=[1, 2],
                        help="threads of every engine (BM_peak_fma measures 1 and 2)")
    return parser


def main():
    parser = common_arguments(__doc__, min_time=0.5)
    parser.add_argument("--heads", type=int, default=32, choices=[32, 1],
                        help="query heads: BM_heads's 32, or BM_one_head's 1")
    parser.add_argument("--L", type=int, nargs="+", default=[256, 1024, 4096], help="L = S")
    parser.add_argument("--E", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--kv-heads", type=int, nargs="+", default=[32, 8])
    parser.add_argument("--causal", type=int, nargs="+", default=[0, 1], choices=[0, 1])
    parser.add_argument("--engines", nargs="+", default=["ours", *PEERS], choices=["ours", *PEERS])
    parser.add_argument("--json", type=Path, help="every round's numbers (default: heads_peers.json beside --bench)")
    parser.add_argument("--into", type=Path, help="a benchmark JSON file to add the rounds to, as \"heads_peers\"")
    parser.add_argument("--build-only", action="store_true", help="build what is missing and stop")
    parser.add_argument("--check-only", action="store_true", help="build, check the peers and stop")
    args = parser.parse_args()
    args.work = args.work.resolve()
    args.json = args.json or args.bench.parent / "heads_peers.json"
    if "ours" in args.engines:
        ensure_ours(args.bench)
    engines = Engines(args)
    if args.build_only:
        return
    checked = check(engines)
    if args.check_only:
        return
    if "ours" not in args.engines:
        parser.error("the rounds need ours: its process measures the peak, and the peers are compared with it")
    cases = [case_text(c) for c in itertools.product(args.L, args.E, args.kv_heads, args.causal)]
    data = run_rounds(args, engines, cases, checked, measure, "heads_peers")
    print()
    print(heads_report.markdown(data))
    print(f"\nEvery round: {args.json}")


if __name__ == "__main__":
    main()
