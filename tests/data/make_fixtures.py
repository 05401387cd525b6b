#!/usr/bin/env python3
"""Writes the tiny .npy fixtures that tests/test_io.cpp reads, with NumPy's own writer.

Run from this folder with Debian's /usr/bin/python3 (python3-numpy). Every array holds
value(i, j) = (i * cols + j) / 8 - 1, so the test can check each element without a stored copy.
"""
import numpy as np


def grid(rows, cols, dtype):
    return (np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) / 8 - 1).astype(dtype)


np.save("numpy_f4_v1.npy", grid(3, 4, np.float32))                     # format 1.0, <f4
np.save("numpy_f8_v1.npy", grid(2, 5, np.float64))                     # format 1.0, <f8
with open("numpy_f4_v2.npy", "wb") as f:                               # format 2.0 (4-byte header length)
    np.lib.format.write_array(f, grid(4, 3, np.float32), version=(2, 0))
np.save("numpy_empty_rows.npy", grid(0, 3, np.float32))                # shape (0, 3)
