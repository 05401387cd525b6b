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

# The pipeline fuzzer: byte 0 = options (bit 0 causal, bits 1-2 scale, bit 3 CSV, bit 4 full layer),
# then each file as a 2-byte little-endian length and its bytes.
(base / "pipeline").mkdir(parents=True, exist_ok=True)


def npy_bytes(arr):
    import io
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(arr, dtype=np.float32))
    return buf.getvalue()


def pipeline(name, flags, files):
    out = bytes([flags])
    for f in files:
        out += len(f).to_bytes(2, "little") + f
    (base / "pipeline" / name).write_bytes(out)


rng = np.random.default_rng(7)
X = [[1.0, 0.5, -0.2, 0.8], [0.3, -0.6, 1.2, 0.1], [-0.5, 0.9, 0.4, -0.7]]
W = [npy_bytes(rng.uniform(-1, 1, (4, 3))) for _ in range(3)]
q, k, v = (npy_bytes(rng.uniform(-1, 1, (5, 4))) for _ in range(3))
pipeline("core.bin", 0, [q, k, v])
pipeline("core_causal_dk.bin", 1 | (1 << 1), [q, k, v])
pipeline("layer.bin", 16, [npy_bytes(X)] + W)
pipeline("layer_causal.bin", 17, [npy_bytes(X)] + W)
pipeline("csv.bin", 8, [b"1,2\n3,4\n", b"0.5,-1\n2,1\n", b"1\n2\n"])


def claimed_shape(rows, cols):
    """A float32 .npy header claiming (rows, cols) with no data after it: what a crafted file holds."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()


pipeline("zero_width_2e32.bin", 0, [claimed_shape(2**32, 0)] * 3)
pipeline("zero_width_layer.bin", 16, [claimed_shape(2**62, 0)] + [claimed_shape(0, 4)] * 3)
# No depth but many keys: a product with k = 0 must not divide the GEMM's block sizes by zero (an
# input the fuzzer found).
pipeline("zero_depth_many_keys.bin", 0, [claimed_shape(0, 0)] + [claimed_shape(2**32, 0)] * 2)
pipeline("overflow.bin", 0, [npy_bytes([[3e38, -3e38]]), npy_bytes([[1, -1]]), npy_bytes([[1, 2]])])
# A query entry that float32 takes (the keys are small) but that rounds past the largest bfloat16:
# the bf16 mode must refuse it, not return NaN (an input the fuzzer found).
pipeline("bf16_query_past_largest.bin", 0,
         [npy_bytes([[3.4e38, 0.0]]), npy_bytes([[1e-3, 0.0], [0.0, 1e-3]]), npy_bytes([[1, 2], [3, 4]])])
# A subnormal query entry against a key entry at the top of the range: bfloat16 flushes the query to
# 0, which only the bound's η terms allow (an input the fuzzer found).
pipeline("bf16_subnormal_query.bin", 0,
         [npy_bytes([[0.0, 2.0**-127]]), npy_bytes([[0.0, -(2 - 2.0**-7) * 2.0**127], [1.0, 0.0]]),
          npy_bytes([[0.0, 0.0], [0.0, 2.0]])])
