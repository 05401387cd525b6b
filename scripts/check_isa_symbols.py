#!/usr/bin/env python3
"""No code shared between the instruction sets' copies of the kernels.

    /usr/bin/python3 scripts/check_isa_symbols.py [--build build]

meson.build compiles simd/'s kernel files once per instruction set (libsimd_sse2.a,
libsimd_avx2.a, libsimd_avx512.a), each with its own flags. What a copy defines in its own
namespace (attn::simd::avx2::…) is its own. But an inline function or a template instantiated
there under a shared name — std::to_string, a std::vector of a shared type, an inline helper of
ours — is emitted as a weak symbol in every copy, each compiled with that copy's flags, and the
linker keeps one of them for every caller: perhaps the AVX-512 one, for code that must run on an
SSE2 CPU. This lists the code symbols (nm types T and W) each copy defines whose names do not
mention its own namespace; any one of them fails the check. Weak data (V, u: constant tables) is the same bytes in
every copy and is not code, so it passes.
"""
import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Compiler helpers that are the same instructions whatever the flags: Clang's __clang_call_terminate
# is two calls (__cxa_begin_catch, std::terminate) with no arithmetic to vectorise.
SAME_CODE_EVERYWHERE = {"__clang_call_terminate"}


def shared_code(library, isa):
    """Code symbols `library` defines whose names do not mention attn::simd::<isa>, demangled. A name
    that mentions it (a function of that namespace, or std::vector<float, attn::simd::avx2::
    ScratchAllocator<float>>::resize) cannot be the name of another copy's symbol."""
    out = subprocess.run(["nm", "--defined-only", str(library)], check=True, capture_output=True, text=True).stdout
    own = f"4attn4simd{len(isa)}{isa}"  # how the namespace appears in a mangled name
    shared = [parts[2] for line in out.splitlines()
              if len(parts := line.split()) == 3 and parts[1] in ("T", "W") and own not in parts[2]
              and parts[2] not in SAME_CODE_EVERYWHERE]
    if not shared:
        return []
    return sorted(set(subprocess.run(["c++filt"], input="\n".join(shared), check=True, capture_output=True,
                                     text=True).stdout.splitlines()))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"))
    args = ap.parse_args()
    libraries = sorted(Path(args.build).glob("libsimd_*.a"))
    if len(libraries) < 2:
        print(f"SKIPPED: {args.build} has {len(libraries)} instruction set(s) of kernels; nothing can be shared")
        return 0
    failures = 0
    for library in libraries:
        isa = library.name[len("libsimd_"):-len(".a")]
        shared = shared_code(library, isa)
        failures += bool(shared)
        print(f"{'FAIL' if shared else 'ok  '} {library.name}: {len(shared)} code symbols outside attn::simd::{isa}")
        for name in shared:
            print(f"       {name}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
