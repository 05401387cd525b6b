#!/usr/bin/python3
"""The polynomials of simd/exp.hpp, each fitted for the smallest largest *relative* error (the softmax
cares about its exponentials to a fixed number of significant digits):

    e      e^r ≈ 1 + r + r²·P(r) on [−ln2/2, ln2/2], P of degree 4 (softmax_exp)
    2      2^f ≈ 1 + f·Q(f) on [−½, ½], Q of degree 5 (softmax_exp2, Grade::float32)
    2bf16  2^f ≈ 1 + f·Q(f) on [0, 1], Q of degree 2 (softmax_exp2, Grade::bfloat16: the bf16 mode's
           weights, rounded to bfloat16's 8 significant bits, need no more)

Lawson's algorithm: a weighted least-squares fit on Chebyshev points, repeated with each point's
weight multiplied by its error, converges to the minimax fit for a linear family like these. The
coefficients are then rounded to float, as the kernel holds them, and the error of the rounded
polynomial (in exact arithmetic) is printed: it must stay well below a float's rounding,
2⁻²⁴ ≈ 6·10⁻⁸, so that the kernel's error is its float arithmetic (for 2bf16, well below
bfloat16's 2⁻⁹). For 2^f the coefficients are rounded one at a time, from c1, refitting the rest
around each: c1 = ln 2 rounded alone costs 1.6·10⁻⁸, as much as the whole fit. (In e^r the leading
terms 1 + r are exact, and rounding all at once is enough.) The bfloat16 grade's interval is [0, 1]
because its reduction takes the floor: vreduceps and vscalefps both round down (simd/exp.hpp).

Usage: bench/tools/fit_exp.py e|2|2bf16
"""
import sys

import numpy as np

FAMILIES = {  # name: (function, interval, first power of P's terms, degree of P)
    "e": (np.exp, (-np.log(2.0) / 2, np.log(2.0) / 2), 2, 4),
    "2": (np.exp2, (-0.5, 0.5), 1, 5),
    "2bf16": (np.exp2, (0.0, 1.0), 1, 2),
}


def lawson(basis, target, rounds=400):
    weight = np.full(len(target), 1.0 / len(target))
    for _ in range(rounds):
        root = np.sqrt(weight)
        c, *_ = np.linalg.lstsq(basis * root[:, None], target * root, rcond=None)
        weight *= np.abs(basis @ c - target)
        weight /= weight.sum()
    return c


def fit(name, points=20001):
    g, (low, high), first, degree = FAMILIES[name]
    x = (low + high) / 2 + (high - low) / 2 * np.cos(np.pi * (np.arange(points) + 0.5) / points)
    x = x[np.abs(x) > 1e-6]  # at 0 the family is exact: nothing to fit
    exact = 1 + x if first == 2 else np.ones_like(x)  # the terms kept exact: 1 + r, or 1
    basis = np.stack([x**p for p in range(first, first + degree + 1)], axis=1) / g(x)[:, None]
    target = (g(x) - exact) / g(x)  # relative error = basis·c − target
    if name == "e":
        return lawson(basis, target).astype(np.float32)
    fixed = []
    for k in range(degree + 1):
        c = lawson(basis[:, k:], target - basis[:, :k] @ np.array(fixed, dtype=np.float64))
        fixed.append(float(np.float32(c[0])))
    return np.array(fixed, dtype=np.float32)


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in FAMILIES:
        sys.exit("usage: bench/tools/fit_exp.py e|2|2bf16")
    name = sys.argv[1]
    g, (low, high), first, _ = FAMILIES[name]
    c = fit(name).astype(np.float64)
    x = np.linspace(low, high, 2_000_001)
    exact = 1 + x if first == 2 else np.ones_like(x)
    relative = np.abs((exact + x**first * np.polyval(c[::-1], x)) / g(x) - 1)
    for k, value in enumerate(c, start=first):
        print(f"c{k} = {np.float32(value)!r}f")
    print(f"largest relative error of the float coefficients: {relative.max():.2g}")


if __name__ == "__main__":
    main()
