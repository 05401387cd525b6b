#!/usr/bin/env python3
"""Cross-check `attn run` and `attn walk --grad` against PyTorch, case by case.

    /usr/bin/python3 tests/checks/verify_with_pytorch.py [--attn build/attn]

For random shapes (odd sizes, d_v ≠ d_k), causal and not, every backend, both the full layer and the
core: the inputs are saved as .npy, `attn run --out` computes them, and PyTorch computes the lesson's
SingleHeadAttention in float64 (nn.Linear projections, Q·Kᵀ/√d_k, masked_fill(−inf), softmax, ·V).
The layer case hands attn PyTorch's own nn.Linear weights with --torch-weights. Every case also runs
the backward (--grad-output, a random dO) and compares each gradient file with PyTorch's autograd of
the same float64 expression: grad_q/k/v, and for the layer grad_x and the nn.Linear weights' grads.
`attn walk --grad --format json` (causal and not) is compared the same way: every gradient of the
worked example for L = ½‖O − T‖², the loss, and the loss after its one step of gradient descent.
Prints the largest error of each case; exits 1 if any element of O or α differs by more than 1e-5
relative (plus 1e-6 absolute), or of a gradient by more than 2e-5 relative plus 2e-6 of the largest
entry of that gradient (a gradient sums n or m float products, some of which cancel).
Exits 0 with a line starting "SKIPPED" when torch cannot be imported (Debian: python3-torch).
"""
import argparse
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
    attn = ap.parse_args().attn
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
    print(f"{cases - failures} passed, {failures} failed (PyTorch {torch.__version__}, float64 reference)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
