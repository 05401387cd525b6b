#!/usr/bin/python3
"""The polynomial of simd/exp.hpp: e^r ≈ 1 + r + r²·P(r) on [−ln2/2, ln2/2], P of degree 4.

P is chosen for the smallest largest *relative* error (the softmax cares about e^r to a fixed number
of significant digits). Lawson's algorithm: a weighted least-squares fit on Chebyshev points,
repeated with each point's weight multiplied by its error, converges to that minimax fit for a
linear family like this one. The coefficients are then rounded to float, as the kernel holds them,
and the error of the rounded polynomial (in exact arithmetic) is printed: it must stay well below
a float's rounding, 2⁻²⁴ ≈ 6·10⁻⁸, so that the kernel's error is its float arithmetic.

Usage: scripts/fit_exp.py [degree of P, default 4]
"""
import sys

import numpy as np


def fit(degree, points=20001, rounds=400):
    half = np.log(2.0) / 2
    r = half * np.cos(np.pi * (np.arange(points) + 0.5) / points)
    r = r[np.abs(r) > 1e-6]  # at r = 0 the family is exact: nothing to fit
    powers = range(2, degree + 3)  # r², r³, …: the terms r²·P(r)
    basis = np.stack([r**p for p in powers], axis=1) / np.exp(r)[:, None]
    target = (np.exp(r) - 1 - r) / np.exp(r)  # relative error = basis·c − target
    weight = np.full(len(r), 1.0 / len(r))
    for _ in range(rounds):
        root = np.sqrt(weight)
        c, *_ = np.linalg.lstsq(basis * root[:, None], target * root, rcond=None)
        weight *= np.abs(basis @ c - target)
        weight /= weight.sum()
    return c.astype(np.float32)


def main():
    degree = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    c = fit(degree).astype(np.float64)
    r = np.linspace(-np.log(2.0) / 2, np.log(2.0) / 2, 2_000_001)
    relative = np.abs((1 + r + r**2 * np.polyval(c[::-1], r)) / np.exp(r) - 1)
    for k, value in enumerate(c, start=2):
        print(f"c{k} = {np.float32(value)!r}f")
    print(f"largest relative error of the float coefficients: {relative.max():.2g}")


if __name__ == "__main__":
    main()
