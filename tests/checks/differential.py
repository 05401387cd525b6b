#!/usr/bin/env python3
"""The differential check: random calls of scaled_dot_product_attention, each on every backend
through the Python module and, for a share of them, through `attn run`, all held to one outcome.

    /usr/bin/python3 tests/checks/differential.py [--seed N] [--cases N] [--seconds T] [--cli-share F]
                                                  [--only I] [--build build] [--attn build/attn]

Each case draws a rank (2-D one head, 3-D heads, 4-D batches of heads), H query heads over H_kv
key/value heads (grouped-query attention), L queries, S keys (0 included), E, E_v (0 included),
causal or not, a scale (None, small, or 1e30 on tiny values), a mask (boolean, or additive float32,
float64 or float16; broadcast from a smaller shape) whose terms may be extreme but finite (±3e38,
float32's lowest, whole rows of it, rows of −1e30) or −∞ (whole rows too), a key/value cache type
(kv_dtype None, f32, bf16, f16), the operands' types and byte orders ('<f4', '>f4', '<f2', '>f2',
'<f8', '>f8'), the bf16 products mode (fused) and, now and then, a NaN or ±inf in an input, d_k = 0
or heads that do not group. Every backend (naive, simd, parallel, fused) must then give the same
outcome:

- all refuse with a ValueError and the same message (and `attn run` exits 2 with that message after
  `attn: error: <its files>: `; it names each operand by its file, query.npy for query and so on, the
  one difference normalised), or
- all return results that are finite wherever naive's is, and within the float32 bound of naive's
  that the pipeline fuzzer states (tests/fuzz/fuzz_pipeline.cpp): a score carries an error of at most
  δ_ij = 2·(E + 2)·ε·scale·‖q_i‖·‖k_j‖, which moves a weight by a factor within e^(±2δ), so an output
  differs by at most max‖v_j‖·(4δ + 4·(S + 8)·ε), compared where δ ≤ 0.01. A mask's term is added to
  the score in float32, so here δ of a row is how far that float32 sum can move for the keys that
  carry weight in it (a key 120 below the row's largest score carries none): 0 for a row of
  float32's lowest, whose sums round to the same number whatever the product. Naive itself is held to
  the same bound against a float64 computation of those float32 scores. The bf16 mode is held to the
  bound of tests/test_bf16.cpp, as the fuzzer holds it.

A third of the cases run scaled_dot_product_attention_backward on every backend as well, held to the
same outcome with the fuzzer's bounds on dQ, dK and dV (check_gradients says where they are compared).

The seed is printed; `--seed N --only I` runs case I alone, printing what it is. The last line is
"N passed, M failed", a case each.
"""
import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ["naive", "simd", "parallel", "fused"]
F32 = np.finfo(np.float32)
EPS = float(F32.eps)  # 2⁻²³, the fuzzer's ε
BF16_U, BF16_ETA = 2.0**-8, 2.0**-126
IRRELEVANT = 120.0  # a key this far below its row's largest score has weight < e⁻¹²⁰: none in float32
PYTHON_WHO = "scaled_dot_product_attention: "
# attn's .npy reader refuses a value that is not a float32 number (NaN, ±inf, +∞ in a mask, a float64
# past float32) as it reads the file, naming its index; the module hands such arrays to the library,
# which names the operand's shape ("holds NaN or ±inf"), after its shape checks. The same inputs are
# refused, in other words: these refusals are held to naive's being a refusal too, not to its text.
READER_REFUSAL = re.compile(r"^(query|key|value|attn_mask): (an infinite value|NaN|\+∞ \(only −∞ masks a score\)) "
                            r"at |^(query|key|value|attn_mask): value \S+ does not fit in float32$")
OPERAND_FILES = {"query": "query.npy", "key": "key.npy", "value": "value.npy", "attn_mask": "attn_mask.npy"}


# ---- drawing a case ------------------------------------------------------------------------------------

def pick(rng, choices, weights=None):
    if weights is not None:
        weights = np.asarray(weights, float) / np.sum(weights)
    return choices[rng.choice(len(choices), p=weights)]


def draw(rng):
    """One case: the arrays (as float64 values) and how they are handed over."""
    c = {}
    rank = pick(rng, [2, 3, 4])
    B = pick(rng, [1, 2, 0], [6, 3, 1]) if rank == 4 else 1
    if rank == 2:
        H = H_kv = 1
    else:
        H_kv = pick(rng, [1, 2, 3, 0], [5, 3, 1, 1])
        H = H_kv * pick(rng, [1, 2, 3], [4, 3, 1])
        if H_kv == 0:
            H = pick(rng, [0, 2])  # no heads at all, or query heads with none to read (refused)
        elif rng.random() < 0.04:
            H = H_kv + 1  # not a multiple: refused
    L = pick(rng, [0, 1, 2, 3, 5, 8, 17, 33], [1, 3, 2, 2, 2, 2, 2, 1])
    S = pick(rng, [0, 1, 2, 3, 7, 16, 40], [1, 2, 2, 2, 3, 2, 1])
    E = pick(rng, [0, 1, 2, 3, 4, 8, 16, 33], [0.3, 1, 1, 1, 2, 2, 2, 1])
    E_v = pick(rng, [0, 1, 3, 8, 17], [1, 2, 2, 3, 1])
    lead = {2: (), 3: (), 4: (B,)}[rank]
    heads = lambda h: (h,) if rank >= 3 else ()
    q_shape, k_shape, v_shape = lead + heads(H) + (L, E), lead + heads(H_kv) + (S, E), lead + heads(H_kv) + (S, E_v)

    # magnitudes: the lesson's sizes, tiny, large, and scores near the float32 limit
    size = pick(rng, ["normal", "tiny", "large", "huge", "subnormal"], [10, 1, 2, 1, 0.5])
    mag_q, mag_k = {"normal": (1, 1), "tiny": (1e-20, 1e-20), "large": (30, 30), "huge": (1e18, 1e18),
                    "subnormal": (1e-39, 1)}[size]
    q = rng.standard_normal(q_shape) * mag_q
    k = rng.standard_normal(k_shape) * mag_k
    v = rng.standard_normal(v_shape) * pick(rng, [1.0, 1e-30, 1e30], [10, 1, 1])
    scale = pick(rng, [None, 1.0, 0.01, 1e30, 1e-30], [8, 3, 2, 1, 1])
    if scale == 1e30:
        q, k = q * 1e-20, k * 1e-15  # scores of about 1e-35·1e30: in range, and beyond it on bad draws
        if rng.random() < 0.3:
            k = k * 1e10  # ‖q‖·‖k‖·scale past float32: refused by every backend
    c.update(rank=rank, q=q, k=k, v=v, scale=scale)

    # an input holding NaN or ±inf now and then
    if rng.random() < 0.06:
        which = pick(rng, ["q", "k", "v"])
        if c[which].size:
            c[which].flat[rng.integers(c[which].size)] = pick(rng, [np.nan, np.inf, -np.inf])

    # causal, or a mask (not both: PyTorch's function refuses the pair)
    c["causal"] = False
    c["mask"] = None
    kind = pick(rng, ["none", "causal", "bool", "float"], [3, 2, 2, 4])
    if kind == "causal":
        c["causal"] = True
    elif kind in ("bool", "float"):
        full = lead + heads(H) + (L, S)
        mask_rank = rng.integers(max(1, len(full) - 2), len(full) + 1)
        shape = tuple(d if rng.random() < 0.6 else 1 for d in full[len(full) - mask_rank:])
        if rng.random() < 0.03 and len(shape) >= 1:
            shape = shape[:-1] + (shape[-1] + 2,)  # does not broadcast: refused
        if kind == "bool":
            m = rng.random(shape) < pick(rng, [0.8, 0.5, 0.1])
            if m.ndim >= 1 and m.size and rng.random() < 0.3:
                m.reshape(-1, shape[-1])[rng.integers(m.size // shape[-1])] = False  # a row no key may attend
        else:
            m = rng.standard_normal(shape) * pick(rng, [1.0, 10.0, 1e3])
            if m.size:
                flat, rows = m.reshape(-1), m.reshape(-1, shape[-1]) if shape[-1] else None
                for _ in range(rng.integers(0, 4)):
                    flat[rng.integers(m.size)] = pick(rng, [-np.inf, F32.min, -3e38, 3e38, 1e38, -1e30, 2.4e38])
                if rows is not None and rows.shape[0] and rng.random() < 0.4:
                    rows[rng.integers(rows.shape[0])] = pick(rng, [F32.min, -np.inf, -1e30, 3e38, -3e38])
                if rng.random() < 0.02:
                    flat[rng.integers(m.size)] = pick(rng, [np.nan, np.inf, 1e39])  # refused
        c["mask"] = m
        c["mask_type"] = bool if kind == "bool" else pick(rng, ["<f4", "<f8", ">f4", "<f2"], [5, 2, 1, 1])

    # how the operands are handed over: types, byte orders, the cache's type, the bf16 products
    c["q_type"] = pick(rng, ["<f4", ">f4", "<f8", "<f2"], [6, 1, 2, 1])
    kv = pick(rng, ["<f4", ">f4", "<f2", ">f2", "<f8", ">f8"], [5, 1, 2, 1, 1, 1])
    c["k_type"] = c["v_type"] = kv
    c["kv_dtype"] = pick(rng, [None, "f32", "bf16", "f16"], [4, 1, 2, 2])
    c["bf16_products"] = rng.random() < 0.2
    c["threads"] = pick(rng, [None, 1, 2, 3, 100000, -1], [12, 2, 2, 2, 1, 0.2])  # past the machine; refused
    # the backward too, for ∂L/∂O = dO (float keys and values only: a 16-bit cache has none)
    c["dO"] = rng.standard_normal(q_shape[:-1] + (E_v,)) * pick(rng, [1.0, 1e-3, 1e3])
    c["backward"] = rng.random() < 0.35
    return c


def describe(c):
    shapes = " ".join(f"{n}{tuple(c[n].shape)}:{c[n + '_type']}" for n in ("q", "k", "v"))
    mask = "" if c["mask"] is None else f" mask{tuple(c['mask'].shape)}:{np.dtype(c['mask_type']).str}"
    return (f"{shapes}{mask} causal={c['causal']} scale={c['scale']} kv_dtype={c['kv_dtype']} "
            f"bf16_products={c['bf16_products']} threads={c['threads']}")


def handed(c):
    """The arrays as the caller hands them over (types and byte orders as drawn)."""
    with np.errstate(over="ignore", invalid="ignore"):
        q, k, v = (c[n].astype(c[n + "_type"]) for n in ("q", "k", "v"))
        m = None if c["mask"] is None else c["mask"].astype(c["mask_type"])
    return q, k, v, m


# ---- the outcomes -------------------------------------------------------------------------------------

def python_outcome(ac, c, backend, dtype="f32"):
    q, k, v, m = handed(c)
    try:
        out = ac.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=c["causal"], scale=c["scale"],
                                              enable_gqa=True, backend=backend, dtype=dtype, threads=c["threads"],
                                              kv_dtype=c["kv_dtype"])
        return ("result", out)
    except ValueError as e:
        text = str(e)
        return ("refused", text[len(PYTHON_WHO):] if text.startswith(PYTHON_WHO) else text)
    except Exception as e:  # anything but a ValueError is a defect (using.md)
        return ("raised", f"{type(e).__name__}: {e}")


def python_backward(ac, c, backend):
    q, k, v, m = handed(c)
    try:
        grads = ac.scaled_dot_product_attention_backward(q, k, v, c["dO"].astype(np.float32), attn_mask=m,
                                                         is_causal=c["causal"], scale=c["scale"], enable_gqa=True,
                                                         backend=backend, threads=c["threads"])
        return ("result", grads)
    except ValueError as e:
        text, who = str(e), "scaled_dot_product_attention_backward: "
        return ("refused", text[len(who):] if text.startswith(who) else text)
    except Exception as e:
        return ("raised", f"{type(e).__name__}: {e}")


def cli_can_run(c):
    """attn run has --scale sqrt|none (scale None or 1), reads '<f4', '<f8' and '|b1' files, and no
    threads option; the rest the files carry."""
    return c["scale"] in (None, 1.0) and c["threads"] is None


def cli_outcome(attn, c, backend, directory, dtype="f32"):
    q, k, v, m = handed(c)
    for name, a in (("query", q), ("key", k), ("value", v), ("attn_mask", m)):
        if a is not None:
            # the same numbers in a type attn reads: float16 and big-endian arrays as '<f4'/'<f8'
            as_file = a if a.dtype == bool else a.astype(a.dtype.newbyteorder("<") if a.dtype.itemsize > 2 else "<f4")
            np.save(directory / OPERAND_FILES[name], as_file)
    args = [attn, "run", "--q", "query.npy", "--k", "key.npy", "--v", "value.npy", "--backend", backend,
            "--scale", "sqrt" if c["scale"] is None else "none", "--out", "out"]
    if m is not None:
        args += ["--mask", "attn_mask.npy"]
    if c["causal"]:
        args.append("--causal")
    if c["kv_dtype"] is not None:
        args += ["--kv-dtype", c["kv_dtype"]]
    if dtype != "f32":
        args += ["--dtype", dtype]
    shutil.rmtree(directory / "out", ignore_errors=True)
    run = subprocess.run(args, cwd=directory, capture_output=True, text=True, timeout=60)
    if run.returncode == 0:
        return ("result", np.load(directory / "out" / "output.npy"))
    lines = run.stderr.strip().splitlines()
    if run.returncode == 2 and len(lines) == 1 and lines[0].startswith("attn: error: "):
        text = lines[0][len("attn: error: "):]
        files = ", ".join(OPERAND_FILES[n] for n, a in (("query", q), ("key", k), ("value", v), ("attn_mask", m))
                          if a is not None) + ": "
        if text.startswith(files):
            text = text[len(files):]
        for name, file in OPERAND_FILES.items():  # the library names each operand by its file
            text = text.replace(file, name)
        return ("refused", text[len(PYTHON_WHO):] if text.startswith(PYTHON_WHO) else text)
    return ("raised", f"exit {run.returncode}: {run.stderr.strip()}")


# ---- what the results must agree within --------------------------------------------------------------

def bfloat16(a32):
    """float32 → the nearest bfloat16 (ties to even; below 2⁻¹²⁶ to a zero of its sign), as float32."""
    bits = a32.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    return np.where(np.abs(a32) < F32.tiny, np.copysign(np.float32(0), a32), rounded).astype(np.float32)


def as_library_reads(c, backward=False):
    """q, k, v (float64 values), with key/value heads repeated for their groups, and the bias
    (…, L, S): the numbers the kernels compute with (the backward's keys and values are floats)."""
    q, k, v, m = handed(c)
    with np.errstate(over="ignore"):
        m = m if m is None or m.dtype == bool else m.astype(np.float32)  # as the library reads a mask
    sixteen = k.dtype.kind == "f" and k.dtype.itemsize == 2  # a float16 array is a float16 cache
    cache = "f32" if backward else c["kv_dtype"] or ("f16" if sixteen else "f32")
    with np.errstate(over="ignore", invalid="ignore"):
        q, k, v = (a.astype(np.float32) for a in (q, k, v))
        if cache == "f16":
            k, v = (a.astype(np.float16).astype(np.float32) for a in (k, v))
        elif cache == "bf16":
            k, v = bfloat16(k), bfloat16(v)
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    if c["rank"] >= 3 and k.shape[-3] and q.shape[-3] != k.shape[-3]:
        k, v = (np.repeat(a, q.shape[-3] // k.shape[-3], axis=-3) for a in (k, v))
    L, S = q.shape[-2], k.shape[-2]
    bias = np.zeros((L, S))
    if c["causal"]:
        bias = np.where(np.tril(np.ones((L, S), dtype=bool)), 0.0, -np.inf)
    if m is not None:
        bias = bias + (np.where(m, 0.0, -np.inf) if m.dtype == bool else m.astype(np.float64))
    return q, k, v, np.broadcast_to(bias, q.shape[:-1] + (S,))


def f32(x):
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(np.float32).astype(np.float64)


def scores_and_spread(c, backward=False):
    """Per row of every head: the float32 scores (float64 model), each row's δ (how far a backend's
    float32 score of a key that carries weight may be from them), the largest ‖v_j‖ of those keys,
    and which keys carry weight. δ is inf where an ambiguous overflow to −∞ decides the row."""
    q, k, v, bias = as_library_reads(c, backward)
    E = q.shape[-1]
    factor = 1.0 / math.sqrt(E) if c["scale"] is None else float(c["scale"])
    with np.errstate(over="ignore", invalid="ignore"):
        x = factor * (q @ np.swapaxes(k, -1, -2))
        err = 2.0 * (E + 2) * EPS * factor * np.linalg.norm(q, axis=-1)[..., :, None] * \
            np.linalg.norm(k, axis=-1)[..., None, :] + 2.0**-50 * np.abs(x)
        center, lo, hi = f32(x + bias), f32(x - err + bias), f32(x + err + bias)
        spread = np.where(lo == hi, 0.0, np.maximum(hi - center, center - lo))
        spread = np.where(np.isnan(spread), np.inf, spread)
        top = lo.max(axis=-1, keepdims=True) if lo.shape[-1] else np.full(lo.shape[:-1] + (1,), -np.inf)
        carries = hi >= top - IRRELEVANT  # the keys that can carry weight in some backend
        carries &= hi > -np.inf
        delta = np.where(carries, spread, 0.0).max(axis=-1, initial=0.0)
        vnorm = np.linalg.norm(v, axis=-1)  # (…, S)
        vmax = np.where(carries, vnorm[..., None, :], 0.0).max(axis=-1, initial=0.0)
    return center, delta, vmax, carries, (q, k, v, factor)


def float64_of(center, v):
    """softmax over float32 scores (as float64), times V; a row of −∞ gives 0."""
    with np.errstate(invalid="ignore", over="ignore"):
        top = center.max(axis=-1, keepdims=True) if center.shape[-1] else np.zeros(center.shape[:-1] + (1,))
        e = np.exp(center - np.where(np.isfinite(top), top, 0.0))
        total = e.sum(axis=-1, keepdims=True)
        w = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return w @ v


def compare(name, got, want, tol, rows_checked):
    """Problems of got against want: shape, NaN where want is finite, beyond tol (per row, where checked)."""
    if got.shape != want.shape or got.dtype != np.float32:
        return [f"{name}: {got.dtype} {got.shape}, naive {want.dtype} {want.shape}"]
    problems = []
    bad = np.isfinite(want) & ~np.isfinite(got)
    if bad.any():
        problems.append(f"{name}: non-finite at {np.argwhere(bad)[0].tolist()} where naive is finite")
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    over = rows_checked[..., None] & (diff > tol[..., None])
    if over.any():
        at = tuple(np.argwhere(over)[0])
        problems.append(f"{name}: {got[at]!r} vs {want[at]!r} at {list(at)}, allowed ±{tol[at[:-1]]:.3g}")
    return problems


def check_results(c, results):
    """results: {label: array}, naive's under 'naive'; the problems found."""
    center, delta, vmax, carries, (q, k, v, factor) = scores_and_spread(c)
    S = center.shape[-1]
    tol = vmax * (4 * delta + 4 * (S + 8) * EPS) + 1e-30
    checked = delta <= 0.01
    naive = results["naive"]
    problems = []
    if not np.isfinite(naive).all():
        problems.append("naive: a non-finite output")
    problems += compare("naive vs float64 of its float32 scores", naive, f32(float64_of(center, v)).astype(np.float32),
                        tol, checked)
    for label, got in results.items():
        if label == "naive" or label.endswith("bf16"):
            continue
        problems += compare(label, got, naive, tol, checked)
    for label, got in results.items():
        if not label.endswith("bf16"):
            continue
        # tests/test_bf16.cpp's bound (as tests/fuzz/fuzz_pipeline.cpp applies it), per row: Q, K, V
        # and the exponentials rounded by up to u; what bfloat16 flushes to 0 below η
        u, eta = BF16_U, BF16_ETA
        E = q.shape[-1]
        qn = np.linalg.norm(q, axis=-1)
        kn = np.where(carries, np.linalg.norm(k, axis=-1)[..., None, :], 0.0).max(axis=-1, initial=0.0)
        Eb = factor * ((2 * u + u * u) * qn * kn + (1 + u) * eta * math.sqrt(E) * (qn + kn) + E * eta * eta +
                       (E + 2) * eta) + 2 * delta
        checked = Eb <= 1.0  # as the fuzzer compares
        Eb = np.where(checked, Eb, 0.0)
        spread = (1 + u) ** 2 * np.exp(2 * Eb) * (1 + (S + 64) * EPS) - 1
        flushed = (1 + u) * eta * (S * vmax + 2) + S * eta * eta + (S + 1) * eta
        problems += compare(label, got, naive, vmax * (spread + 4 * Eb) + (1 + spread) * flushed + 1e-30, checked)
    return problems


def check_gradients(c, grads):
    """dq, dk, dv of every backend within the pipeline fuzzer's bound of naive's: each gradient sums at
    most max(L, S) + max(E, E_v) terms (a shared key/value head's, G times as many), each bounded by
    the norms of the rows it multiplies, every weight carrying the scores' error 2δ; compared where δ
    (here the largest of the rows') is at most 0.01, and the scale at most 1. Not yet above it: the
    fast backends multiply dS·K and dSᵀ·Q first and by the scale after (naive before), so with
    scale = 1e30 on tiny values a product that float32 cannot hold (below 1e-45) gives them 0 where
    naive's dQ holds 1e-19; there only finiteness is required."""
    _, delta, _, _, (q, k, v, factor) = scores_and_spread(c, backward=True)
    L, S, E, E_v = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    G = q.shape[-3] // max(1, np.shape(c["k"])[-3]) if c["rank"] >= 3 and np.shape(c["k"])[-3] else 1
    norm = lambda a: float(np.linalg.norm(a, axis=-1).max(initial=0.0))
    qn, kn, vn, gn = norm(q), norm(k), norm(v), norm(c["dO"].astype(np.float32).astype(np.float64))
    d = float(delta.max(initial=0.0))
    error = 8 * d + 8 * (max(L, S) + max(E, E_v) + 8) * EPS
    bounds = {"dq": error * 2 * S * gn * vn * kn * factor, "dk": error * 2 * G * L * gn * vn * qn * factor,
              "dv": error * G * L * gn}
    problems = []
    naive = grads["naive"]
    for label, got in grads.items():
        for name, g, want in zip(("dq", "dk", "dv"), got, naive):
            if g.shape != want.shape:
                problems.append(f"backward {label} {name}: shape {g.shape}, naive {want.shape}")
            elif not np.isfinite(g).all():
                problems.append(f"backward {label} {name}: not finite")
            elif d <= 0.01 and label != "naive" and factor <= 1:
                diff = np.abs(g.astype(np.float64) - want)
                if (diff > bounds[name] + 1e-30).any():
                    at = tuple(np.argwhere(diff > bounds[name] + 1e-30)[0])
                    problems.append(f"backward {label} {name}: {g[at]!r} vs {want[at]!r} at {list(at)}, "
                                    f"allowed ±{bounds[name]:.3g}")
    return problems


def backward_problems(ac, c):
    """The backward on every backend: refused alike, or gradients within the bound of naive's."""
    outcomes = {b: python_backward(ac, c, b) for b in BACKENDS}
    problems = [f"backward {b}: {what}" for b, (kind, what) in outcomes.items() if kind == "raised"]
    if problems:
        return problems
    naive_kind, naive_what = outcomes["naive"]
    for b, (kind, what) in outcomes.items():
        if kind != naive_kind or (kind == "refused" and what != naive_what):
            problems.append(f"backward {b} {kind}: {what if kind == 'refused' else 'gradients'}; naive "
                            f"{naive_kind}: {naive_what if naive_kind == 'refused' else 'gradients'}")
    if problems or naive_kind == "refused":
        return problems
    return check_gradients(c, {b: what for b, (kind, what) in outcomes.items()})


# ---- one case -----------------------------------------------------------------------------------------

def run_case(ac, attn, c, rng, cli_share, directory):
    """The problems of one case (empty: it passed), naive's outcome ('result' or 'refused') and how
    many runs of attn run it took."""
    outcomes = {b: python_outcome(ac, c, b) for b in BACKENDS}
    if c["bf16_products"]:
        outcomes["fused bf16"] = python_outcome(ac, c, "fused", "bf16")
    cli_runs = 0
    if attn and cli_can_run(c) and rng.random() < cli_share:
        for b in rng.choice(BACKENDS, size=2, replace=False):
            outcomes[f"attn run {b}"] = cli_outcome(attn, c, b, directory)
            cli_runs += 1
        if c["bf16_products"]:
            outcomes["attn run fused bf16"] = cli_outcome(attn, c, "fused", directory, "bf16")
            cli_runs += 1
    problems = backward_problems(ac, c) if c["backward"] else []
    return problems + forward_problems(c, outcomes), outcomes["naive"][0], cli_runs


def forward_problems(c, outcomes):
    """The forward's outcomes ({label: (kind, what)}) held to naive's."""
    problems = [f"{label}: {what}" for label, (kind, what) in outcomes.items() if kind == "raised"]
    naive_kind, naive_what = outcomes["naive"]
    if problems:
        return problems
    for label, (kind, what) in outcomes.items():
        if label.startswith("attn run") and kind == "refused" and READER_REFUSAL.match(what):
            if naive_kind != "refused":
                problems.append(f"{label}: its reader refused: {what}; naive gave a result")
            continue
        if label.endswith("bf16") and naive_kind == "result" and kind == "refused" and \
                "rounds to ±∞ in bfloat16" in what:
            outcomes[label] = ("skip", None)  # the bf16 mode's one refusal of its own (using.md)
            continue
        if kind != naive_kind or (kind == "refused" and what != naive_what):
            problems.append(f"{label} {kind}: {what if kind == 'refused' else 'a result'}; naive {naive_kind}: "
                            f"{naive_what if naive_kind == 'refused' else 'a result'}")
    if problems or naive_kind == "refused":
        return problems
    return check_results(c, {label: what for label, (kind, what) in outcomes.items() if kind == "result"})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=None, help="the cases' seed (default: a random one, printed)")
    ap.add_argument("--cases", type=int, default=None, help="how many cases (default: as many as --seconds allows)")
    ap.add_argument("--seconds", type=float, default=None, help="stop drawing cases after this long")
    ap.add_argument("--cli-share", type=float, default=0.15, help="the share of cases also run through attn run")
    ap.add_argument("--only", type=int, default=None, help="run case I of the seed alone, and describe it")
    ap.add_argument("--build", default=str(ROOT / "build"), help="the build directory holding attention_cpp")
    ap.add_argument("--attn", default=str(ROOT / "build" / "attn"))
    options = ap.parse_args()
    if options.cases is None and options.seconds is None and options.only is None:
        options.seconds = 30.0
    seed = options.seed if options.seed is not None else int(np.random.default_rng().integers(2**31))
    sys.path.insert(0, options.build)
    import attention_cpp as ac
    attn = options.attn if os.access(options.attn, os.X_OK) else None
    print(f"differential check: seed {seed} (rerun: --seed {seed}); attn run: {attn or 'not found, skipped'}")
    start, passed, failed, cli_runs = time.monotonic(), 0, 0, 0
    counts = {"result": 0, "refused": 0, "raised": 0}
    indices = [options.only] if options.only is not None else range(options.cases or 10**9)
    with tempfile.TemporaryDirectory() as tmp:
        for i in indices:
            if options.seconds is not None and time.monotonic() - start > options.seconds:
                break
            rng = np.random.default_rng([seed, i])
            c = draw(rng)
            problems, naive_kind, runs = run_case(ac, attn, c, rng, options.cli_share, Path(tmp))
            cli_runs += runs
            if options.only is not None:
                print(f"case {i}: {describe(c)}")
                kind, what = python_outcome(ac, c, "naive")
                print(f"  naive: {what if kind != 'result' else f'a result {what.shape}'}")
            if problems:
                failed += 1
                print(f"FAILED case {i} (--seed {seed} --only {i}): {describe(c)}")
                for p in problems:
                    print(f"  {p}")
            else:
                passed += 1
                counts[naive_kind] += 1
    print(f"{passed + failed} cases in {time.monotonic() - start:.1f} s: {counts['result']} agreed on results, "
          f"{counts['refused']} on refusals; {cli_runs} runs of attn run")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
