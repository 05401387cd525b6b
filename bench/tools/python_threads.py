#!/usr/bin/env python3
"""The threads scaled_dot_product_attention runs on when torch is imported first, measured.

    /usr/bin/python3 bench/tools/python_threads.py [--build build] [--heads 32] [--n 256] [--width 64]

torch is imported before the module and keeps its own thread count (torch.set_num_threads(1) unless
--torch-threads says otherwise): both use libgomp, whose count torch sets for the whole process. One
prefill call, B = 1, H = --heads, L = S = --n, E = E_v = --width, on the fused backend, is timed with
threads=1 and with threads=None (every core this process may use): the median of 7 runs each, with
the machine's CPU and thread counts. A measurement, not a test: run
it on a quiet machine (check `ps` first); it prints, and records nothing.
"""
import argparse
import os
import sys
from pathlib import Path

import torch  # first, as a notebook that compares with PyTorch has it

import numpy as np

from python_overhead import median_seconds  # beside this file

ROOT = Path(__file__).resolve().parents[2]
RUNS = 7


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--torch-threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.torch_threads)
    sys.path.insert(0, args.build)
    import attention_cpp as ac

    info = ac.build_info()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"cpu: {info['cpu']}; kernels: {info['isa']}; logical CPUs: {os.cpu_count()}, usable by this process: "
          f"{usable}; OMP_NUM_THREADS: {os.environ.get('OMP_NUM_THREADS', 'unset')}")
    print(f"torch {torch.__version__} imported first, torch.get_num_threads() = {torch.get_num_threads()}; "
          f"threads=None means {info['threads']}")
    q = np.random.default_rng(1).standard_normal((1, args.heads, args.n, args.width)).astype(np.float32)
    flops = 4.0 * args.heads * args.n * args.n * args.width
    for threads in (1, None):
        call = lambda: ac.scaled_dot_product_attention(q, q, q, threads=threads)  # noqa: E731
        call()  # warm: the team's threads started, the pages touched
        seconds = median_seconds(call, RUNS)
        print(f"threads={threads}: median of {RUNS} runs {seconds * 1e3:.2f} ms ({flops / seconds / 1e9:.1f} GFLOP/s)")


if __name__ == "__main__":
    main()
