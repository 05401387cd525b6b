#!/usr/bin/env python3
"""Writes the fuzzers' seed corpus (tests/fuzz/corpus/) with NumPy's own writer: valid arrays and
the near-misses the reader must refuse. Run from the repository root with Debian's /usr/bin/python3."""
import shutil
from pathlib import Path

import numpy as np

base = Path("tests/fuzz/corpus")
(base / "npy").mkdir(parents=True, exist_ok=True)
(base / "csv").mkdir(parents=True, exist_ok=True)


def save(name, arr, version=None):
    with open(base / "npy" / name, "wb") as f:
        np.lib.format.write_array(f, arr, version=version)


for fixture in Path("tests/data").glob("numpy_*.npy"):
    shutil.copy(fixture, base / "npy" / fixture.name)
save("f8_big_v2.npy", np.linspace(-3, 3, 40).reshape(8, 5), (2, 0))
save("f4_1x1.npy", np.array([[2.5]], dtype=np.float32))
save("i4.npy", np.arange(6, dtype=np.int32).reshape(2, 3))
save("fortran.npy", np.asfortranarray(np.ones((2, 3))))
save("be.npy", np.ones((2, 2), dtype=">f4"))
save("1d.npy", np.ones(3, dtype=np.float32))

# The CSV fuzzer reads the first byte as the --csv-header switch (odd = on).
for name, text in {"plain.csv": "1,2,3\n4,5,6\n", "header.csv": "a,b\n1,2\n", "crlf.csv": "1.5e3, -2\r\n3,+4\r\n",
                   "ragged.csv": "1,2\n3\n", "nan.csv": "1,nan\n"}.items():
    flag = b"\x01" if name == "header.csv" else b"\x00"
    (base / "csv" / name).write_bytes(flag + text.encode())
