#!/usr/bin/env python3
"""No code shared between the instruction sets' copies of the kernels, or with the baseline.

    /usr/bin/python3 tests/checks/check_isa_symbols.py [--build build]

meson.build compiles simd/'s kernel files once per instruction set (libsimd_sse2.a,
libsimd_avx2.a, libsimd_avx512.a), each with its own flags. What a copy defines in its own
namespace (attn::simd::avx2::…), or with its own xsimd types (xsimd::batch<float, avx2>), has a
name no other object has. But an inline function or a template instantiated under a shared name —
std::to_string, a std::string destructor, a std::vector of a shared type, an inline helper of
ours — is emitted as a weak symbol in every object that needs it, each compiled with that object's
flags, and the linker keeps one of them for every caller: perhaps the AVX-512 one, for code that
must run on an SSE2 CPU. So this lists the code symbols (nm types T and W) that a kernel copy
defines and that another kernel copy, or any other object of the build (the baseline: the rest of
simd/, matrix/, io/, attention/, cli/, tests, bench), also defines; any one of them fails the check.
Weak data (V, u: constant tables) is bytes, not code, and passes.
"""
import argparse
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Compiler helpers that are the same instructions whatever the flags: Clang's __clang_call_terminate
# is two calls (__cxa_begin_catch, std::terminate) with no arithmetic to vectorise.
SAME_CODE_EVERYWHERE = {"__clang_call_terminate"}


def code_symbols(objects):
    """The code symbols (T, W) the object files define."""
    if not objects:
        return set()
    out = subprocess.run(["nm", "--defined-only", *map(str, objects)], check=True, capture_output=True,
                         text=True).stdout
    return {parts[2] for line in out.splitlines()
            if len(parts := line.split()) == 3 and parts[1] in ("T", "W") and parts[2] not in SAME_CODE_EVERYWHERE}


def demangled(names):
    return subprocess.run(["c++filt"], input="\n".join(sorted(names)), check=True, capture_output=True,
                          text=True).stdout.splitlines()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"))
    args = ap.parse_args()
    build = Path(args.build)
    copies = {d.name[len("libsimd_"):-len(".a.p")]: sorted(d.glob("*.o")) for d in build.glob("libsimd_*.a.p")}
    if len(copies) < 2:
        print(f"SKIPPED: {build} has {len(copies)} instruction set(s) of kernels; nothing can be shared")
        return 0
    # Every other object of the build: compiled for the baseline. (libattention-cpp.a is the installed
    # bundle of the others' objects, not objects of its own.)
    baseline = [o for d in [*build.glob("*.p"), *build.glob("*/*.p")]
                if not d.name.startswith(("libsimd_", "libattention-cpp")) for o in d.glob("*.o")]
    defined_by = defaultdict(list)
    for isa, objects in copies.items():
        for name in code_symbols(objects):
            defined_by[name].append(isa)
    baseline_names = code_symbols(baseline)
    failures = 0
    for isa in sorted(copies):
        shared = {name for name, owners in defined_by.items()
                  if isa in owners and (len(owners) > 1 or name in baseline_names)}
        failures += bool(shared)
        print(f"{'FAIL' if shared else 'ok  '} libsimd_{isa}: {len(shared)} code symbols also defined by "
              f"another copy of the kernels or by the baseline ({len(baseline)} objects)")
        for name in demangled(shared):
            print(f"       {name}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
