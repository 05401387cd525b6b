#!/usr/bin/env python3
"""Count stack spills in the microkernel's inner loops, as the compiler actually emitted them.

    /usr/bin/python3 scripts/count_spills.py [--build build] [--march native x86-64-v3 x86-64-v4]

The register tile of simd/microkernel.hpp keeps 2·R accumulators (12 for R = 6) plus two rows of B
and one broadcast of A in vector registers: 15 of AVX2's 16, 15 of AVX-512's 32. If the compiler
ran out, it would store some of them to the stack and load them back on every step of p, and the
tile would lose what it is for. This takes the build's own compile commands for simd/gemm.cpp and
simd/fused.cpp (the two files the microkernel is inlined into; from BUILD/compile_commands.json, so
the compiler and flags are the build's), compiles them to assembly once per -march (replacing the
build's), finds every innermost loop that does at least two FMAs (the microkernel's p loops, one
per tile height R; a loop is the lines from a label to a jump back to it, with no other such
loop and no call inside), and counts in it the instructions that touch the stack: a memory operand on
%rsp, or a negative offset from %rbp (a frame slot). A file with no FMA loop at all fails too (that
is how a Clang AVX-512 build computing x·y + z as vmulps + vaddps was found). Prints one line per
loop; exits 1 on any spill. x86-64 only (AT&T operands); elsewhere it says SKIPPED.
"""
import argparse
import json
import platform
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["simd/gemm.cpp", "simd/fused.cpp"]
LABEL = re.compile(r"^(\.L\w+):")
JUMP = re.compile(r"^\s+j\w+\s+(\.L\w+)")
FMA = re.compile(r"^\s+vfn?madd\w+")
STACK = re.compile(r"\(%rsp\)|-\d+\(%rbp\)")
VECTOR = re.compile(r"%[xyz]mm\d+")


def innermost_fma_loops(assembly):
    """[(first line, last line, FMAs, stack accesses, vector registers)] of every innermost loop
    (a backward jump with no other backward jump and no call inside it) that does at least two FMAs."""
    lines = assembly.splitlines()
    labels = {m.group(1): i for i, line in enumerate(lines) if (m := LABEL.match(line))}
    loops = []
    for i, line in enumerate(lines):
        m = JUMP.match(line)
        if m and m.group(1) in labels and labels[m.group(1)] <= i:
            loops.append((labels[m.group(1)], i))
    found = []
    for start, end in loops:
        if any((s, e) != (start, end) and start <= s and e <= end for s, e in loops):
            continue  # holds another loop: not innermost
        body = lines[start:end + 1]
        if any(re.match(r"\s+call", b) for b in body):
            continue  # a textual range with a call is outer-loop code the compiler laid out in pieces
        fmas = sum(bool(FMA.match(b)) for b in body)
        if fmas >= 2:
            found.append((start, end, fmas, sum(bool(STACK.search(b)) for b in body),
                          len(set(VECTOR.findall("\n".join(body))))))
    return found


def compile_command(build, source):
    """The build's command line for `source`, as a list, and the directory it runs in."""
    for entry in json.loads((Path(build) / "compile_commands.json").read_text()):
        if Path(entry["directory"], entry["file"]).resolve() == (ROOT / source).resolve():
            return shlex.split(entry["command"]), entry["directory"]
    raise SystemExit(f"count_spills: {source} is not in {build}/compile_commands.json (configure {build} first)")


def assembly(command, directory, march, out):
    """The command with -march replaced, writing assembly to `out` instead of an object file."""
    args, skip = [], False
    for word in command:
        if skip:
            skip = False
        elif word in ("-o", "-MF", "-MQ"):
            skip = True
        elif word in ("-c", "-MD") or word.startswith("-march="):
            continue
        else:
            args.append(word)
    subprocess.run(args + [f"-march={march}", "-S", "-o", str(out)], cwd=directory, check=True)
    return Path(out).read_text()


def self_test():
    """The counter must see a spill where there is one: a loop storing an accumulator to the stack."""
    loop = ".L2:\n\tvfmadd231ps %ymm1, %ymm2, %ymm0\n\tvmovaps %ymm0, 32(%rsp)\n\tvfmadd231ps %ymm1, %ymm3, %ymm4\n\tjne .L2\n"
    assert innermost_fma_loops(loop) == [(0, 4, 2, 1, 5)], innermost_fma_loops(loop)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--march", nargs="+", default=["native", "x86-64-v3", "x86-64-v4"])
    args = ap.parse_args()
    if platform.machine() not in ("x86_64", "AMD64"):
        print(f"SKIPPED: the spill count reads x86-64 assembly; this is {platform.machine()}")
        return 0
    self_test()
    spilling = 0
    with tempfile.TemporaryDirectory() as tmp:
        for source in SOURCES:
            command, directory = compile_command(args.build, source)
            for march in args.march:
                loops = innermost_fma_loops(assembly(command, directory, march, Path(tmp) / "out.s"))
                where = f"{Path(command[0]).name} -march={march} {source}"
                if not loops:
                    print(f"FAIL {where}: no FMA loop found (fma computed as multiply and add?)")
                    spilling += 1
                for start, end, fmas, stack, vectors in loops:
                    ok = stack == 0
                    spilling += not ok
                    print(f"{'ok  ' if ok else 'FAIL'} {where}: loop of {end - start + 1} lines, {fmas} FMAs, "
                          f"{vectors} vector registers, {stack} stack accesses")
    print("no spills in the microkernel's loops" if not spilling else f"{spilling} loops spill or lack FMAs")
    return 1 if spilling else 0


if __name__ == "__main__":
    sys.exit(main())
