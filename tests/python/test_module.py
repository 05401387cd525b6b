"""The Python module (python/attention_cpp.cpp) against the program it shares its library with.

Run by `meson test` (tests/meson.build) with the build directory on PYTHONPATH and ATTN_EXE naming
the attn of the same build: every backend's results equal attn run's bit for bit, the walk dict
equals attn walk --format json, errors and memory limits say what attn says; C-contiguous float32
arrays are read in place and others converted; the GIL is free while a kernel runs.
"""
import json
import os
import subprocess
import threading

import numpy as np
import pytest

import attention_cpp as ac

ATTN = os.environ["ATTN_EXE"]
BACKENDS = ["naive", "simd", "parallel", "fused"]


def attn(*args, check=True):
    return subprocess.run([ATTN, *args], capture_output=True, text=True, check=check)


def random(rows, cols, seed):
    return np.random.default_rng(seed).standard_normal((rows, cols)).astype(np.float32)


@pytest.fixture
def qkv(tmp_path):
    """Q (37×5), K (29×5), V (29×3) and dO (37×3), in memory and as .npy files."""
    arrays = {"q": random(37, 5, 1), "k": random(29, 5, 2), "v": random(29, 3, 3), "do": random(37, 3, 4)}
    for name, a in arrays.items():
        np.save(tmp_path / f"{name}.npy", a)
    return arrays, tmp_path


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("causal", [False, True])
def test_every_backend_equals_attn_run_bit_for_bit(qkv, backend, causal):
    a, d = qkv
    q, k, v = a["q"], a["k"], a["v"]
    if causal:  # the causal mask needs n = m
        q = np.ascontiguousarray(q[:29])
        np.save(d / "q.npy", q)
    out = d / "out"
    attn("run", "--q", str(d / "q.npy"), "--k", str(d / "k.npy"), "--v", str(d / "v.npy"), "--backend", backend,
         "--scale", "dk", *(["--causal"] if causal else []), "--out", str(out))
    O, alpha = ac.attention(q, k, v, backend=backend, scale="dk", causal=causal)
    assert O.dtype == np.float32 and O.tobytes() == np.load(out / "output.npy").tobytes()
    if backend == "fused":
        assert alpha is None  # never formed, whatever the shapes
        assert ac.attention(q, k, np.zeros((29, 0), np.float32), backend="fused", causal=causal)[1] is None
    else:
        assert alpha.tobytes() == np.load(out / "attn.npy").tobytes()


def test_dtype_bf16_equals_attn_run_and_is_refused_where_attn_refuses_it(qkv):
    a, d = qkv
    out = d / "out"
    attn("run", "--q", str(d / "q.npy"), "--k", str(d / "k.npy"), "--v", str(d / "v.npy"), "--backend", "fused",
         "--dtype", "bf16", "--out", str(out))
    O, alpha = ac.attention(a["q"], a["k"], a["v"], backend="fused", dtype="bf16")
    assert alpha is None and O.tobytes() == np.load(out / "output.npy").tobytes()
    assert O.tobytes() != ac.attention(a["q"], a["k"], a["v"], backend="fused")[0].tobytes()  # it did round
    with pytest.raises(ValueError, match="dtype bf16 runs on the fused backend only"):
        ac.attention(a["q"], a["k"], a["v"], backend="simd", dtype="bf16")
    with pytest.raises(ValueError, match="dtype must be one of f32 and bf16, got 'f16'"):
        ac.attention(a["q"], a["k"], a["v"], dtype="f16")


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_backward_equals_attn_run_grad_output_bit_for_bit(qkv, backend):
    a, d = qkv
    out = d / "out"
    attn("run", "--q", str(d / "q.npy"), "--k", str(d / "k.npy"), "--v", str(d / "v.npy"), "--backend", backend,
         "--grad-output", str(d / "do.npy"), "--out", str(out))
    dQ, dK, dV = ac.attention_backward(a["q"], a["k"], a["v"], a["do"], backend=backend)
    for got, name in ((dQ, "grad_q"), (dK, "grad_k"), (dV, "grad_v")):
        assert got.tobytes() == np.load(out / f"{name}.npy").tobytes(), name


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_layer_equals_attn_run_from_x(tmp_path, backend):
    X, W_Q, W_K, W_V = random(6, 4, 5), random(4, 3, 6), random(4, 3, 7), random(4, 2, 8)
    dO = random(6, 2, 9)
    for name, m in (("x", X), ("wq", W_Q), ("wk", W_K), ("wv", W_V), ("do", dO)):
        np.save(tmp_path / f"{name}.npy", m)
    out = tmp_path / "out"
    files = [arg for n in ("x", "wq", "wk", "wv") for arg in (f"--{n}", str(tmp_path / f"{n}.npy"))]
    attn("run", *files, "--backend", backend,
         "--grad-output", str(tmp_path / "do.npy"), "--out", str(out))
    layer = ac.SingleHeadAttention(W_Q, W_K, W_V)
    O, _ = layer.forward(X, backend=backend)
    assert O.tobytes() == np.load(out / "output.npy").tobytes()
    Q, K, V = layer.project(X, backend=backend)
    assert Q.shape == (6, 3) and V.shape == (6, 2)
    g = layer.backward(X, dO, backend=backend)
    for key, name in (("dX", "grad_x"), ("dW_Q", "grad_w_q"), ("dW_K", "grad_w_k"), ("dW_V", "grad_w_v")):
        assert g[key].tobytes() == np.load(out / f"{name}.npy").tobytes(), key


def test_a_c_contiguous_float32_array_is_read_in_place():
    Q = random(8, 4, 10)
    assert ac._read_address(Q) == Q.ctypes.data  # the address the kernels are handed
    rows = random(16, 4, 11)[4:12]  # a block of whole rows is still C-contiguous
    assert ac._read_address(rows) == rows.ctypes.data


def test_other_arrays_are_converted_to_the_same_numbers():
    Q, K, V = random(9, 4, 12), random(7, 4, 13), random(7, 3, 14)
    want, _ = ac.attention(Q, K, V)
    transposed = np.asfortranarray(Q)  # the same numbers, column-major
    strided = np.repeat(K, 2, axis=1)[:, ::2]  # every other column of a wider array
    assert ac._read_address(transposed) != transposed.ctypes.data  # converted: a C-contiguous copy
    assert ac.attention(transposed, strided, V)[0].tobytes() == want.tobytes()
    # float64 is rounded to float32 first, as attn rounds a float64 .npy
    as_double = ac.attention(Q.astype(np.float64), K.astype(np.float64), V.astype(np.float64))[0]
    assert as_double.dtype == np.float32 and as_double.tobytes() == want.tobytes()
    with pytest.raises(ValueError, match=r"Q \(4\) must have at least 2 dimensions"):
        ac.attention(Q[0], K, V)


def cli_message(*args):
    run = attn(*args, check=False)
    assert run.returncode == 2 and run.stderr.startswith("attn: error: ")
    return run.stderr.strip()


def test_bad_input_raises_value_error_with_attn_s_message(qkv):
    a, d = qkv
    np.save(d / "k_wide.npy", random(29, 6, 15))
    said = cli_message("run", "--q", str(d / "q.npy"), "--k", str(d / "k_wide.npy"), "--v", str(d / "v.npy"))
    with pytest.raises(ValueError) as refused:
        ac.attention(a["q"], random(29, 6, 15), a["v"])
    # attn names the operands by their files, the module by the lesson's symbols
    named = str(refused.value).replace("Q (", f"{d / 'q.npy'} (").replace("K (", f"{d / 'k_wide.npy'} (")
    assert said.endswith(named) and "must have the same width E" in named
    nan = a["q"].copy()
    nan[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"Q \(37×5\) holds NaN or ±inf"):
        ac.attention(nan, a["k"], a["v"])
    with pytest.raises(ValueError, match="backend must be one of naive, simd, parallel and fused, got 'gpu'"):
        ac.attention(a["q"], a["k"], a["v"], backend="gpu")
    with pytest.raises(ValueError, match="scale must be one of sqrt, dk and none, got 'half'"):
        ac.attention(a["q"], a["k"], a["v"], scale="half")


def test_max_memory_refuses_before_any_work_as_attn_does(qkv):
    a, d = qkv
    limit = 2048
    inputs = sum(m.nbytes for m in (a["q"], a["k"], a["v"]))  # attn run charges what it read, too
    said = cli_message("run", "--q", str(d / "q.npy"), "--k", str(d / "k.npy"), "--v", str(d / "v.npy"),
                       "--backend", "simd", "--max-memory", str(limit + inputs))
    with pytest.raises(ValueError, match="more than the max_memory limit of 2 KiB") as refused:
        ac.attention(a["q"], a["k"], a["v"], backend="simd", max_memory=limit)
    buffer = str(refused.value).split(" on top of ")[0]  # the buffer that did not fit, and its size
    assert ": " + buffer + " on top of " in said and "needs" in buffer
    O, _ = ac.attention(a["q"], a["k"], a["v"], backend="simd", max_memory=1 << 20)  # enough: it runs
    assert O.shape == (37, 3)


def test_the_gil_is_released_while_a_kernel_runs():
    Q, K, V = random(1024, 64, 16), random(1024, 64, 17), random(1024, 64, 18)
    ticks, done = [0], threading.Event()

    def count():
        while not done.is_set():
            ticks[0] += 1

    counter = threading.Thread(target=count)
    counter.start()
    try:
        before = ticks[0]
        ac.attention(Q, K, V, backend="naive")  # ~0.3 s of C++ that holds no Python object
        during = ticks[0] - before
    finally:
        done.set()
        counter.join()
    assert during > 1000  # the other thread kept running Python while the kernel ran


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("variant", [[], ["--causal"], ["--scale", "none"], ["--grad"]])
def test_walk_equals_attn_walk_json(lang, variant):
    want = json.loads(attn("walk", "--format", "json", "--lang", lang, *variant).stdout)
    scale = variant[1] if variant[:1] == ["--scale"] else "sqrt"
    got = ac.walk(lang=lang, scale=scale, causal="--causal" in variant, grad="--grad" in variant)
    assert got == want


def test_build_info_says_what_attn_version_says():
    info = ac.build_info()
    printed = attn("--version").stdout
    assert f"simd: {info['isa']} (xsimd {info['instruction_set']})" in printed
    assert f"cpu: {info['cpu']}" in printed and f"blocks: {info['blocks']}" in printed
    assert info["isa"] in info["supported"] and info["threads"] >= 1
    # threads=None counts the cores as OpenMP does in a process where no other library set its count
    assert f"openmp: {info['threads']} thread" in printed if info["openmp"] else info["threads"] == 1


def test_learn_defaults_are_what_attn_learn_runs_without_options():
    defaults = ac.learn_defaults()
    run = json.loads(attn("learn", "--format", "json").stdout)
    assert list(defaults) == ["task", "steps", "lr", "seed"]
    assert defaults["task"] == run["task"] and defaults["steps"] == run["steps"] and defaults["seed"] == run["seed"]
    assert repr(defaults["lr"]) == str(np.float32(run["lr"]))  # the same float, as its shortest decimal
