#!/usr/bin/env python3
"""Count Catch2 test cases across a `meson test` run: prints `N passed, M failed`.

Meson records one result per test executable in meson-logs/testlog.json; each executable holds many
Catch2 TEST_CASEs and prints their totals at the end of its output. A program that died before printing
totals (a crash, a sanitizer abort, a timeout) counts as one failed test case; one that skipped itself
(exit status 77: an instruction set this CPU cannot run) counts as nothing.
"""
import json
import re
import sys

def count(log_path):
    passed = failed = 0
    with open(log_path, encoding="utf-8") as log:
        for line in log:
            if not line.strip():
                continue
            entry = json.loads(line)
            if entry.get("result") == "SKIP":
                continue  # a whole program skipped on purpose (exit 77), which it says in its output
            out = entry.get("stdout") or ""
            all_ok = re.search(r"All tests passed \(\d+ assertions? in (\d+) test cases?\)", out)
            summary = re.search(r"^test cases:(.*)$", out, re.MULTILINE)
            if all_ok:
                p, f = int(all_ok.group(1)), 0
            elif summary:
                row = summary.group(1)
                p = int(m.group(1)) if (m := re.search(r"(\d+) passed", row)) else 0
                f = int(m.group(1)) if (m := re.search(r"(\d+) failed", row)) else 0
            else:
                p, f = 0, 1
            if entry.get("result") not in ("OK", "EXPECTEDFAIL") and f == 0:
                f = 1  # totals said fine, but the program still failed (sanitizer exit, timeout)
            passed, failed = passed + p, failed + f
    return passed, failed

if __name__ == "__main__":
    p, f = count(sys.argv[1])
    print(f"{p} passed, {f} failed")
