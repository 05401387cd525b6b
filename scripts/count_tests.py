#!/usr/bin/env python3
"""Count Catch2 test cases across a `meson test` run: prints `N passed, M failed`.

Meson records one result per test executable in meson-logs/testlog.json; each executable holds many
Catch2 TEST_CASEs and prints their totals at the end of its output (the Python module's tests, pytest's
totals: each test function and parameter set is one case). A program that prints no totals is one
case: passed when it exited 0 (an example that checks its own result), else failed (a crash, a
sanitizer abort, a timeout, a program that died before printing its totals); one that skipped itself
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
            # pytest (tests/python): its last line, e.g. "30 passed in 0.51s" or "1 failed, 29 passed in 0.5s"
            summary = summary or re.search(r"^=*\s*((?:\d+ (?:passed|failed|error|errors|skipped)(?:, )?)+) in [\d.]+s",
                                           out, re.MULTILINE)
            if all_ok:
                p, f = int(all_ok.group(1)), 0
            elif summary:
                row = summary.group(1)
                p = int(m.group(1)) if (m := re.search(r"(\d+) passed", row)) else 0
                f = sum(int(m.group(1)) for m in re.finditer(r"(\d+) (?:failed|errors?)", row))
            else:  # a program with no totals of its own (an example run as a check): one case
                p, f = (1, 0) if entry.get("result") in ("OK", "EXPECTEDFAIL") else (0, 1)
            if entry.get("result") not in ("OK", "EXPECTEDFAIL") and f == 0:
                f = 1  # totals said fine, but the program still failed (sanitizer exit, timeout)
            passed, failed = passed + p, failed + f
    return passed, failed

if __name__ == "__main__":
    p, f = count(sys.argv[1])
    print(f"{p} passed, {f} failed")
