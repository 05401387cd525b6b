#!/usr/bin/env python3
"""Count stack accesses in the microkernel's inner loops, as the compiler actually emitted them.

    /usr/bin/python3 tests/checks/count_spills.py [--build build] [--march x86-64-v3 x86-64-v4] [--self-test]

The register tile of simd/microkernel.hpp keeps 2·R accumulators (12 for R = 6) plus two rows of B
and one broadcast of A in vector registers: 15 of AVX2's 16; AVX-512's wide products run R = 12,
27 of its 32 (the 24-FMA loop counts as a main tile too: 2·MR FMAs or more). If the compiler
ran out, it would store some of them to the stack and load them back on every step of p, and the
tile would lose what it is for. This takes the build's own compile commands for simd/gemm.cpp and
simd/fused.cpp (the two files the microkernel is compiled into; from BUILD/compile_commands.json,
so the compiler and flags are the build's), compiles them to assembly once per target, finds every innermost loop that does at least two FMAs (the microkernel's p loops, one
per tile height R; a loop is the lines from a label to a jump back to it, with no other such loop
and no call inside), and counts in it the instructions that touch the stack: a memory operand on
%rsp, or a negative offset from %rbp in a function that made %rbp its frame pointer (a frame slot).

What fails, and what is only reported:
- a vector register (xmm/ymm/zmm) loaded from or stored to the stack inside such a loop: a spill;
- any stack access in the main tile's loop (2·MR FMAs), where every register counts;
- a loop with no FMA at all in a file (how a Clang AVX-512 build computing x·y + z as vmulps +
  vaddps was found);
- in simd/gemm.cpp, no loop with the tallest tile's FMAs: 2·MR, or 4·MR where AVX-512's zmm
  registers are used (a Clang build whose loop over the 12 rows was left rolled had none: its
  accumulators lived in memory, indexed, where the stack check above does not see them).
An integer reload in a remainder tile's loop (a loop bound kept on the stack) is printed as a note:
it costs one load per step of a tile that runs only for the last rows of a block.

The verdict must be the commit's, not the host's: it is given only for fixed targets. Those are
the build's own commands, one per instruction set the kernels are compiled for (meson.build fixes
their flags: -mavx2 -mfma -mf16c, -mavx512f …), and by default x86-64-v3 (AVX2 + FMA) and x86-64-v4
(AVX-512) in place of the first command's, all with the compiler's generic tuning. SSE2 has no FMA
and is reported as not checked. -march=native (the host's own, or a -Dnative=true build's) is
compiled too and printed as information ("info"), never as a failure: what GCC does for a CPU it
does not know (it falls back to generic tuning with that CPU's features) differs from host to
host. x86-64 only (AT&T operands); elsewhere it says SKIPPED.
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
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ["simd/gemm.cpp", "simd/fused.cpp"]
LABEL = re.compile(r"^(\.L\w+):")
JUMP = re.compile(r"^\s+j\w+\s+(\.L\w+)")
FMA = re.compile(r"^\s+(vfn?madd\w+|vdpbf16ps)")  # an FMA, or the bf16 pair step (simd/bf16.hpp)
STACK = re.compile(r"\(%rsp\)")
FRAME_SLOT = re.compile(r"-\d+\(%rbp\)")  # only where %rbp holds the frame (FRAME_SETUP); else it is a pointer
FRAME_SETUP = re.compile(r"^\s+movq\s+%rsp, %rbp")
FUNCTION = re.compile(r"^[A-Za-z_][\w.$]*:")
VECTOR = re.compile(r"%[xyz]mm\d+")


MR = int(re.search(r"MR = (\d+);", (ROOT / "simd/blocking.hpp").read_text()).group(1))  # tile rows


class Loop(NamedTuple):
    start: int          # first and last line of the loop in the assembly
    end: int
    fmas: int
    vector_stack: int   # instructions moving a vector register to or from the stack: spills
    other_stack: int    # other stack accesses (integer reloads of pointers and bounds)
    vectors: int        # distinct vector registers named in the loop


def innermost_fma_loops(assembly):
    """Every innermost loop (a backward jump with no other backward jump and no call inside it)
    that does at least two FMAs, as a Loop."""
    lines = assembly.splitlines()
    labels = {m.group(1): i for i, line in enumerate(lines) if (m := LABEL.match(line))}
    loops = []
    for i, line in enumerate(lines):
        m = JUMP.match(line)
        if m and m.group(1) in labels and labels[m.group(1)] <= i:
            loops.append((labels[m.group(1)], i))
    found = []
    for start, end in loops:
        # Clang without a frame pointer uses %rbp as one more pointer (the terms of simd/fused.cpp's
        # tiles read through -96(%rbp)): a negative offset from it is a frame slot only in a function
        # that made %rbp its frame.
        first = next((i for i in range(start, -1, -1) if FUNCTION.match(lines[i])), 0)
        framed = any(FRAME_SETUP.match(b) for b in lines[first:start])
        if any((s, e) != (start, end) and start <= s and e <= end for s, e in loops):
            continue  # holds another loop: not innermost
        body = lines[start:end + 1]
        if any(re.match(r"\s+call", b) for b in body):
            continue  # a textual range with a call is outer-loop code the compiler laid out in pieces
        fmas = sum(bool(FMA.match(b)) for b in body)
        if fmas >= 2:
            stack = [b for b in body if STACK.search(b) or (framed and FRAME_SLOT.search(b))]
            vector_stack = sum(bool(VECTOR.search(b)) for b in stack)
            found.append(Loop(start, end, fmas, vector_stack, len(stack) - vector_stack,
                              len(set(VECTOR.findall("\n".join(body))))))
    return found


def verdict(loop):
    """"ok", "note" (an integer reload in a remainder tile) or "FAIL" (a vector spill, or any stack
    access in the main tile's loop)."""
    if loop.vector_stack or (loop.other_stack and loop.fmas >= 2 * MR):
        return "FAIL"
    return "note" if loop.other_stack else "ok"


def compile_commands(build, source):
    """The build's command lines for `source` (one per instruction set it is compiled for), each as
    (list of words, directory it runs in)."""
    found = [(shlex.split(entry["command"]), entry["directory"])
             for entry in json.loads((Path(build) / "compile_commands.json").read_text())
             if Path(entry["directory"], entry["file"]).resolve() == (ROOT / source).resolve()]
    if not found:
        raise SystemExit(f"count_spills: {source} is not in {build}/compile_commands.json (configure {build} first)")
    return found


def is_isa_flag(word):
    return word.startswith("-march=") or word in ("-mavx2", "-mfma", "-mf16c") or word.startswith("-mavx512")


def targets(command, march):
    """(label, command, gate) for each compilation to check. The build's own per-instruction-set
    commands gate (meson.build fixes their flags); each -march of `march` replaces the ISA flags
    of the build's first command and gates too; -march=native is only information."""
    found = []
    for words in command:
        isa = next((w.split("=", 1)[1] for w in words if w.startswith("-DATTN_ISA=")), "?")
        native = any(w in ("-march=native", "-mcpu=native") for w in words)
        found.append((f"{isa} as built", words, not native))
    baseline = [w for w in command[0] if not is_isa_flag(w)]
    found += [(f"-march={m}", baseline + [f"-march={m}"], m != "native") for m in march + ["native"]]
    return found


def assembly(command, directory, out):
    """The command writing assembly to `out` instead of an object file."""
    args, skip = [], False
    for word in command:
        if skip:
            skip = False
        elif word in ("-o", "-MF", "-MQ"):
            skip = True
        elif word not in ("-c", "-MD"):
            args.append(word)
    subprocess.run(args + ["-S", "-o", str(out)], cwd=directory, check=True)
    return Path(out).read_text()


def self_test():
    """The verdicts on hand-written loops: each kind of stack access where it must fail, and where
    it must only be noted. Returns the number of cases and of wrong verdicts (0 when the check works)."""
    fma = "\tvfmadd231ps %zmm1, %zmm2, %zmm0\n"
    frame = "f:\n\tpushq %rbp\n\tmovq %rsp, %rbp\n"  # a function whose %rbp is its frame
    cases = [
        ("zmm accumulator stored to the stack in a 2-FMA loop",
         ".L2:\n" + fma + "\tvmovaps %zmm0, 64(%rsp)\n" + fma + "\tjne .L2\n", "FAIL"),
        ("ymm reloaded from a frame slot",
         frame + ".L2:\n\tvmovups -96(%rbp), %ymm3\n" + fma * 2 + "\tjne .L2\n", "FAIL"),
        ("integer end pointer reloaded in a 1-row tile (2 FMAs)",
         frame + ".L2:\n\tmovq -608(%rbp), %rsi\n" + fma * 2 + "\tcmpq %rsi, %rax\n\tjne .L2\n", "note"),
        ("%rbp as a plain pointer, in a function without a frame pointer",
         "g:\n\tpushq %rbx\n.L2:\n\tvmovups -96(%rbp), %ymm3\n" + fma * 2 + "\tjne .L2\n", "ok"),
        ("integer reload in the main tile's loop",
         ".L2:\n\tmovq 8(%rsp), %rsi\n" + fma * (2 * MR) + "\tjne .L2\n", "FAIL"),
        ("clean main tile", ".L2:\n" + fma * (2 * MR) + "\tjne .L2\n", "ok"),
    ]
    wrong = 0
    for name, asm, expected in cases:
        loops = innermost_fma_loops(asm)
        got = verdict(loops[0]) if len(loops) == 1 else f"{len(loops)} loops"
        wrong += got != expected
        print(f"{'ok  ' if got == expected else 'FAIL'} self-test: {name}: {got} (expected {expected})")
    return len(cases), wrong


def describe(loop):
    return (f"loop of {loop.end - loop.start + 1} lines, {loop.fmas} FMAs, {loop.vectors} vector registers, "
            f"{loop.vector_stack} vector stack accesses, {loop.other_stack} other stack accesses")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--march", nargs="*", default=["x86-64-v3", "x86-64-v4"],
                    help="targets that decide the verdict besides the build's own per-instruction-set flags "
                         "(-march=native is always shown as information)")
    ap.add_argument("--self-test", action="store_true", help="only check the verdicts on hand-written loops")
    args = ap.parse_args()
    if args.self_test:
        cases, wrong = self_test()
        print(f"{cases - wrong} passed, {wrong} failed")
        return 1 if wrong else 0
    if platform.machine() not in ("x86_64", "AMD64"):
        print(f"SKIPPED: the spill count reads x86-64 assembly; this is {platform.machine()}")
        return 0
    if self_test()[1]:
        return 1
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for source in SOURCES:
            commands = compile_commands(args.build, source)
            directory = commands[0][1]
            for label, command, gate in targets([c for c, _ in commands], args.march):
                where = f"{Path(command[0]).name} {label} {source}"
                text = assembly(command, directory, Path(tmp) / "out.s")
                if not any(FMA.match(line) for line in text.splitlines()):
                    # SSE2 has no FMA: its tile multiplies and adds, and the loops are not found.
                    print(f"info {where}: no FMA instructions (an instruction set without FMA): not checked")
                    continue
                loops = innermost_fma_loops(text)
                tallest = 2 * (2 * MR if "%zmm" in text else MR)  # FMAs a step of the tallest tile does
                if source == "simd/gemm.cpp" and loops and max(loop.fmas for loop in loops) < tallest:
                    print(f"{'FAIL' if gate else 'info'} {where}: no loop of {tallest} FMAs (the tallest tile, "
                          f"{tallest // 2} rows: rolled, its accumulators in memory?)")
                    failures += gate
                if not loops:
                    print(f"{'FAIL' if gate else 'info'} {where}: no FMA loop found (fma computed as multiply and add?)")
                    failures += gate
                for loop in loops:
                    v = verdict(loop)
                    failures += gate and v == "FAIL"
                    label_v = {"ok": "ok  ", "note": "note", "FAIL": "FAIL"}[v] if gate else "info"
                    extra = "" if gate or v == "ok" else f" (would be {v}; -march=native is not a gate: it depends on the host)"
                    print(f"{label_v} {where}: {describe(loop)}{extra}")
    print("no spills in the microkernel's loops" if not failures else f"{failures} loops spill or lack FMAs")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
