#!/usr/bin/env python3
"""Cross-check `attn run`, `attn walk --grad` and the Python module's scaled_dot_product_attention
against PyTorch, case by case.

    /usr/bin/python3 tests/checks/verify_with_pytorch.py [--attn build/attn] [--build build]

For random shapes (odd sizes, d_v ≠ d_k), causal and not, every backend, both the full layer and the
core: the inputs are saved as .npy, `attn run --out` computes them, and PyTorch computes the lesson's
SingleHeadAttention in float64 (nn.Linear projections, Q·Kᵀ/√d_k, masked_fill(−inf), softmax, ·V).
The layer case hands attn PyTorch's own nn.Linear weights with --torch-weights. Every case also runs
the backward (--grad-output, a random dO) and compares each gradient file with PyTorch's autograd of
the same float64 expression: grad_q/k/v, and for the layer grad_x and the nn.Linear weights' grads.
`attn walk --grad --format json` (causal and not) is compared the same way: every gradient of the
worked example for L = ½‖O − T‖², the loss, and the loss after its one step of gradient descent.
attention_cpp.scaled_dot_product_attention (from --build) and its backward, on many heads (ranks 2–5,
grouped key/value heads, boolean and float masks broadcast, is_causal with L ≠ S, rows no key may
attend), are compared with the same formula written in torch float64 with autograd, and, where the
PyTorch has it (≥ 2.0), with torch.nn.functional.scaled_dot_product_attention in float64 as well
(there only on rows some key may attend: PyTorch before 2.5 gives NaN on the others, this library 0),
all with the gradients' tolerance: an output there is a mean of values of either sign.
Prints the largest error of each case; exits 1 if any element of O or α differs by more than 1e-5
relative (plus 1e-6 absolute), or of a gradient by more than 2e-5 relative plus 2e-6 of the largest
entry of that gradient (a gradient sums n or m float products, some of which cancel).
Exits 0 with a line starting "SKIPPED" when torch cannot be imported (Debian: python3-torch).
"""
import argparse
import itertools
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print(f"SKIPPED: PyTorch cross-check needs torch and numpy ({e}); install python3-torch")
    sys.exit(0)

REL, ABS = 1e-5, 1e-6
GRAD_REL, GRAD_OF_LARGEST = 2e-5, 2e-6
BACKENDS = ["naive", "simd", "parallel", "fused"]
SHAPES = [  # (n, d_model, d_k, d_v)
    (1, 1, 1, 1), (3, 4, 3, 3), (7, 5, 3, 9), (33, 16, 8, 5), (64, 32, 64, 17), (130, 48, 24, 40), (300, 64, 64, 64),
]


def torch_attention(X, W_Q, W_K, W_V, causal, dO):
    """The lesson's SingleHeadAttention in float64; W_* are nn.Linear weights (d_out × d_model).
    Returns Q, K, V, O, α and autograd's gradients for ∂L/∂O = dO: dX, the weights' (nn.Linear
    layout), dQ, dK, dV."""
    d_model, d_k, d_v = X.shape[1], W_Q.shape[0], W_V.shape[0]
    layers = []
    for W, d_out in ((W_Q, d_k), (W_K, d_k), (W_V, d_v)):
        lin = torch.nn.Linear(d_model, d_out, bias=False).double()
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(W))
        layers.append(lin)
    Xt = torch.from_numpy(X).requires_grad_()
    Q, K, V = (lin(Xt) for lin in layers)
    for t in (Q, K, V):
        t.retain_grad()
    out, weights = core(Q, K, V, causal)
    out.backward(torch.from_numpy(dO))
    grads = {"grad_x": Xt.grad, "grad_w_q": layers[0].weight.grad, "grad_w_k": layers[1].weight.grad,
             "grad_w_v": layers[2].weight.grad, "grad_q": Q.grad, "grad_k": K.grad, "grad_v": V.grad}
    return tuple(t.detach() for t in (Q, K, V, out, weights)) + (grads,)


def torch_core(Q, K, V, causal, dO):
    """The core from float64 leaves, with autograd's dQ, dK, dV for ∂L/∂O = dO."""
    leaves = [t.clone().requires_grad_() for t in (Q, K, V)]
    out, weights = core(*leaves, causal)
    out.backward(torch.from_numpy(dO))
    grads = dict(zip(("grad_q", "grad_k", "grad_v"), (t.grad for t in leaves)))
    return out.detach(), weights.detach(), grads


def core(Q, K, V, causal):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if causal:
        n = scores.shape[0]
        scores = scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1), float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights @ V, weights


def compare(name, got, want):
    want = want.numpy() if hasattr(want, "numpy") else want
    err = np.abs(got.astype(np.float64) - want)
    # how much of the allowed 1e-5·|want| + 1e-6 the worst element uses (≤ 1 passes)
    used = float(np.max(err / (REL * np.abs(want) + ABS))) if err.size else 0.0
    return used <= 1.0, f"{name}: max abs error {float(err.max()) if err.size else 0.0:.2e}, {100 * used:.0f}% of tolerance"


def compare_gradient(name, got, want):
    want = want.numpy() if hasattr(want, "numpy") else want
    err = np.abs(got.astype(np.float64) - want)
    bound = GRAD_REL * np.abs(want) + GRAD_OF_LARGEST * float(np.abs(want).max(initial=0.0)) + 1e-12
    used = float(np.max(err / bound)) if err.size else 0.0
    return used <= 1.0, f"{name}: max abs error {float(err.max()) if err.size else 0.0:.2e}, {100 * used:.0f}% of tolerance"


def check_walk(attn, causal):
    """attn walk --grad --format json against autograd of the same example, in float64."""
    args = [attn, "walk", "--grad", "--format", "json"] + (["--causal"] if causal else [])
    walk = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    back = walk["backward"]
    leaf = {k: torch.tensor(walk[k], dtype=torch.float64, requires_grad=True) for k in ("X", "W_Q", "W_K", "W_V")}
    Q, K, V = (leaf["X"] @ leaf[w] for w in ("W_Q", "W_K", "W_V"))
    for t in (Q, K, V):
        t.retain_grad()
    out, weights = core(Q, K, V, causal)
    out.retain_grad()
    weights.retain_grad()
    T = torch.tensor(back["target"], dtype=torch.float64)
    loss = 0.5 * ((out - T) ** 2).sum()
    loss.backward()
    wants = {"dO": out.grad, "d_weights": weights.grad, "dQ": Q.grad, "dK": K.grad, "dV": V.grad,
             "dX": leaf["X"].grad, "dW_Q": leaf["W_Q"].grad, "dW_K": leaf["W_K"].grad, "dW_V": leaf["W_V"].grad}
    results = [compare_gradient(name, np.array(back[name]), want) for name, want in wants.items()]
    with torch.no_grad():  # one step of gradient descent, as the walk takes it
        moved = [leaf[w] - back["step_size"] * leaf[w].grad for w in ("W_Q", "W_K", "W_V")]
        out_after, _ = core(*(leaf["X"] @ w for w in moved), causal)
        loss_after = 0.5 * ((out_after - T) ** 2).sum()
    for name, got, want in (("loss", back["loss"], loss.item()), ("loss_after_step", back["loss_after_step"], loss_after.item())):
        results.append(compare(name, np.array([got]), np.array([want])))
    return results


def torch_sdpa(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """PyTorch's documented semantics of scaled_dot_product_attention, in torch, differentiable. A row
    that no key may attend gets weights 0 (the softmax's sum is 0 there), as this library documents."""
    if enable_gqa and q.dim() >= 3 and k.shape[-3] != q.shape[-3]:
        groups = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(groups, dim=-3), v.repeat_interleave(groups, dim=-3)
    factor = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = factor * (q @ k.transpose(-2, -1))
    if is_causal:
        scores = scores.masked_fill(~torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril(), float("-inf"))
    if attn_mask is not None:
        mask = torch.from_numpy(attn_mask)
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask.double()
    top = scores.amax(dim=-1, keepdim=True).detach()
    e = torch.exp(scores - torch.where(torch.isfinite(top), top, torch.zeros_like(top)))
    total = e.sum(dim=-1, keepdim=True)
    return (e / torch.where(total > 0, total, torch.ones_like(total))) @ v


def autograd(function, inputs, grad_output):
    """function's output and the gradients of its float64 inputs for ∂L/∂output = grad_output."""
    leaves = [torch.from_numpy(t.astype(np.float64)).requires_grad_() for t in inputs]
    out = function(*leaves)
    out.backward(torch.from_numpy(grad_output.astype(np.float64)))
    return out.detach(), [t.grad for t in leaves]


def module_cases(rng):
    """(label, query, key, value, grad_output, keyword arguments): ranks 2–5, H / H_kv of 1, 2, 4 and
    one key/value head, no mask, causal with L < S and L > S, a boolean mask broadcast over batch and
    queries, a float one (with −∞) over heads, one with a row no key may attend."""
    for rank, layout, mask in itertools.product((2, 3, 4, 5), ("1", "2", "4", "mqa"), ("none", "causal", "bool", "float")):
        if rank == 2 and layout != "1":
            continue
        lead = tuple(int(n) for n in rng.integers(1, 3, size=max(rank - 3, 0)))
        kv = 1 if layout == "mqa" else int(rng.integers(1, 3))
        H = 3 if layout == "mqa" else kv * int(layout)
        L, S = (int(n) for n in rng.integers(1, 48, size=2))
        if mask == "causal" and L == S:
            S += 3
        E, E_v = (int(n) for n in rng.choice([1, 8, 17, 64], size=2))
        heads, kv_heads = ((H,), (kv,)) if rank >= 3 else ((), ())
        args = dict(is_causal=mask == "causal", enable_gqa=H != kv, scale=None if rng.random() < 0.5 else 0.3)
        if mask == "bool":
            args["attn_mask"] = rng.random(lead + heads[:1] + (1, S)) < 0.7  # broadcast over the queries
            args["attn_mask"][..., 0] = False
        elif mask == "float":
            args["attn_mask"] = rng.standard_normal((L, S)).astype(np.float32)
            args["attn_mask"][rng.random((L, S)) < 0.2] = -np.inf
            args["attn_mask"][L // 2] = -np.inf  # this row sees no key
        arrays = [rng.standard_normal(lead + h + shape).astype(np.float32)
                  for h, shape in ((heads, (L, E)), (kv_heads, (S, E)), (kv_heads, (S, E_v)), (heads, (L, E_v)))]
        label = f"sdpa rank={rank} H={H} H_kv={kv} L={L} S={S} E={E} E_v={E_v} {mask}" + \
            ("" if args["scale"] is None else f" scale={args['scale']}")
        yield label, arrays, args


def torch_functional(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """F.scaled_dot_product_attention (PyTorch ≥ 2.0), key and value heads repeated for the groups."""
    if enable_gqa and q.dim() >= 3 and k.shape[-3] != q.shape[-3]:
        groups = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(groups, dim=-3), v.repeat_interleave(groups, dim=-3)
    mask = None if attn_mask is None else torch.from_numpy(attn_mask)
    mask = mask if mask is None or mask.dtype == torch.bool else mask.double()
    extra = {} if scale is None else {"scale": scale}
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, **extra)


def rows_seeing_a_key(args, shape):
    """(N..., H, L) of the output's shape: True where some key may attend."""
    mask = args.get("attn_mask")
    if mask is None:
        return np.ones(shape[:-1], dtype=bool)
    keep = mask if mask.dtype == bool else np.isfinite(mask)
    return np.broadcast_to(keep.any(axis=-1), shape[:-1])


def check_module(build, rng):
    """Every case of module_cases on every backend: (number of cases, number failed)."""
    sys.path.insert(0, build)
    try:
        import attention_cpp
    except ImportError as e:
        print(f"SKIPPED the module's cases: attention_cpp is not importable from {build} ({e})")
        return 0, 0
    # scale= came with PyTorch 2.1
    with_functional = tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 1)
    cases = failures = 0
    for label, (q, k, v, d_out), args in module_cases(rng):
        want, want_grads = autograd(lambda *t: torch_sdpa(*t, **args), (q, k, v), d_out)
        if with_functional:
            f_want, f_grads = autograd(lambda *t: torch_functional(*t, **args), (q, k, v), d_out)
            rows = rows_seeing_a_key(args, want.shape)
        for backend in BACKENDS:
            out = attention_cpp.scaled_dot_product_attention(q, k, v, backend=backend, **args)
            grads = attention_cpp.scaled_dot_product_attention_backward(q, k, v, d_out, backend=backend, **args)
            # the outputs too are sums of products that partly cancel (a mean of values of either sign)
            results = [compare_gradient("output", out, want)]
            results += [compare_gradient(n, g, w) for n, g, w in zip(("dq", "dk", "dv"), grads, want_grads)]
            if with_functional:
                results.append(compare_gradient("F.sdpa output", out[rows], f_want.numpy()[rows]))
                if rows.all():  # elsewhere its gradients are NaN too
                    results += [compare_gradient(f"F.sdpa {n}", g, w)
                                for n, g, w in zip(("dq", "dk", "dv"), grads, f_grads)]
            ok = all(r[0] for r in results)
            cases += 1
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {label} {backend}: " + "; ".join(r[1] for r in results))
    return cases, failures


def run_attn(attn, args, out):
    result = subprocess.run([attn, "run", *args, "--out", str(out)], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"attn run {' '.join(args)} failed: {result.stderr.strip()}")
    output = np.load(out / "output.npy")
    weights = np.load(out / "attn.npy") if (out / "attn.npy").exists() else None
    grads = {p.stem: np.load(p) for p in out.glob("grad_*.npy")}
    return output, weights, grads


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attn", default=str(Path(__file__).resolve().parents[2] / "build" / "attn"))
    ap.add_argument("--build", default=str(Path(__file__).resolve().parents[2] / "build"),
                    help="the build directory holding the Python module attention_cpp")
    options = ap.parse_args()
    attn = options.attn
    rng = np.random.default_rng(2026)
    failures = cases = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for n, d_model, d_k, d_v in SHAPES:
            X = rng.standard_normal((n, d_model)).astype(np.float32)
            W = [(rng.standard_normal((d, d_model)) / math.sqrt(d_model)).astype(np.float32) for d in (d_k, d_k, d_v)]
            for name, arr in zip(("x", "wq", "wk", "wv"), [X] + W):
                np.save(tmp / f"{name}.npy", arr)
            dO = rng.standard_normal((n, d_v)).astype(np.float32)
            np.save(tmp / "do.npy", dO)
            for causal in (False, True):
                Q, K, V, out_ref, w_ref, g_ref = torch_attention(
                    X.astype(np.float64), *(w.astype(np.float64) for w in W), causal, dO.astype(np.float64))
                # the core case gets float32 Q, K, V, as a user's own files would be
                for name, t in zip(("q", "k", "v"), (Q, K, V)):
                    np.save(tmp / f"{name}.npy", t.numpy().astype(np.float32))
                out_core, w_core, g_core = torch_core(
                    *(torch.from_numpy(np.load(tmp / f"{m}.npy")).double() for m in "qkv"), causal, dO.astype(np.float64))
                for backend in BACKENDS:
                    extra = ["--backend", backend, "--grad-output", str(tmp / "do.npy")] + (["--causal"] if causal else [])
                    for mode, args, refs in (
                        ("layer", ["--x", tmp / "x.npy", "--wq", tmp / "wq.npy", "--wk", tmp / "wk.npy",
                                   "--wv", tmp / "wv.npy", "--torch-weights"], (out_ref, w_ref, g_ref)),
                        ("core", ["--q", tmp / "q.npy", "--k", tmp / "k.npy", "--v", tmp / "v.npy"], (out_core, w_core, g_core)),
                    ):
                        out_dir = tmp / f"out-{cases}"
                        output, weights, grads = run_attn(attn, [str(a) for a in args] + extra, out_dir)
                        results = [compare("output", output, refs[0])]
                        if backend != "fused":
                            results.append(compare("α", weights, refs[1]))
                        if sorted(grads) != sorted(refs[2]):
                            results.append((False, f"gradient files {sorted(grads)}, want {sorted(refs[2])}"))
                        results += [compare_gradient(name, grads[name], want) for name, want in refs[2].items() if name in grads]
                        ok = all(r[0] for r in results)
                        cases += 1
                        failures += not ok
                        label = f"n={n} d_model={d_model} d_k={d_k} d_v={d_v} {'causal' if causal else 'full'} {backend} {mode}"
                        print(f"{'ok  ' if ok else 'FAIL'} {label}: " + "; ".join(r[1] for r in results))
        for causal in (False, True):
            results = check_walk(attn, causal)
            ok = all(r[0] for r in results)
            cases += 1
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} walk --grad{' --causal' if causal else ''}: " + "; ".join(r[1] for r in results))
    module_cases_run, module_failures = check_module(options.build, rng)
    cases += module_cases_run
    failures += module_failures
    print(f"{cases - failures} passed, {failures} failed (PyTorch {torch.__version__}, float64 reference)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
