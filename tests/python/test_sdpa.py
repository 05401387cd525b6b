"""attention_cpp.scaled_dot_product_attention against PyTorch's documented semantics.

Run by `meson test` (tests/meson.build) with the build directory on PYTHONPATH. The conformance cases
are seeded random draws, one pytest case each, held to the float64 model in sdpa_reference.py: every
backend and dtype crossed with one head (rank 2) and rank 3–5 arrays of grouped heads (H / H_kv = 1,
2, 4, 8, and one key/value head), no mask, is_causal with L < S, L > S and L = S, boolean and float
masks in every broadcast pattern, rows that no key may attend, explicit scales, and inputs that are
not C-contiguous float32. The float32 backends' gradients are held to the model's too. Then: a
PyTorch-shaped call with torch tensors, DLPack, the refusals, and the threads a call uses with torch
imported first.
"""
import importlib.util
import json
import os
import subprocess
import sys
from itertools import product
from types import SimpleNamespace

import numpy as np
import pytest

import attention_cpp as ac
import sdpa_reference as ref

# The tolerance, stated once. float32 against float64: an element of the output or of a gradient may
# be off by TOLERANCE times the size of the terms its sum adds (sdpa_reference.magnitudes: the same
# sums over absolute values), about 250 float roundings of it; where that size is 0, exactly 0.
# bf16 (fused only) is held to the bound its rounding allows (sdpa_reference.bf16_bound).
TOLERANCE = 3e-5

SEED = 2026
BACKENDS = [("naive", "f32"), ("simd", "f32"), ("parallel", "f32"), ("fused", "f32"), ("fused", "bf16")]
LAYOUTS = ["one-head", "gqa1", "gqa2", "gqa4", "gqa8", "mqa"]  # H / H_kv, "mqa": H_kv = 1 < H
MASKS = ["none", "causal", "bool", "float"]
DRAWS = 6
SIZES = [1, 2, 5, 8, 13, 17, 24, 33]  # L and S
WIDTHS = [1, 3, 8, 16, 24, 40]  # E and E_v


def head_counts(layout, rng):
    if layout == "one-head":
        return 1, 1
    if layout == "mqa":
        return int(rng.integers(2, 7)), 1
    ratio, kv_heads = int(layout[3:]), int(rng.integers(1, 3))
    return ratio * kv_heads, kv_heads


def lengths(mask, draw, rng):
    """(L, S); causal cases take L < S, L > S and L = S in turn."""
    L, S = sorted(int(x) for x in rng.choice(SIZES, size=2, replace=False))
    if mask != "causal":
        return (L, S) if rng.random() < 0.5 else (S, L)
    return [(L, S), (S, L), (L, L)][draw % 3]


def mask_array(kind, target, pattern, rng, fully_masked):
    """A mask broadcastable to `target`: axis i full when bit i of `pattern` is set, else one element,
    leading axes of one element dropped at random. fully_masked: some query rows see no key."""
    shape = [n if pattern >> i & 1 else 1 for i, n in enumerate(target)]
    ones_in_front = next((i for i, n in enumerate(shape) if pattern >> i & 1), len(shape))
    shape = shape[int(rng.integers(0, ones_in_front + 1)):]
    if kind == "bool":
        mask = np.asarray(rng.random(shape) < 0.75)
    else:
        mask = np.asarray(2 * rng.standard_normal(shape), np.float32)
        mask[rng.random(shape) < 0.15] = -np.inf
    if fully_masked and len(shape) >= 2:
        rows = rng.random(shape[-2]) < 0.4
        mask[..., rows, :] = False if kind == "bool" else -np.inf
    return mask


def make_case(number, backend, dtype, layout, mask, draw, pattern):
    rng = np.random.default_rng([SEED, number])
    rank = 2 if layout == "one-head" else 3 + draw % 3
    leading = tuple(int(n) for n in rng.integers(1, 4, size=max(rank - 3, 0)))
    H, H_kv = head_counts(layout, rng)
    heads = (H,) if rank >= 3 else ()
    kv_heads = (H_kv,) if rank >= 3 else ()
    L, S = lengths(mask, draw, rng)
    E, E_v = (int(x) for x in rng.choice(WIDTHS, size=2))
    normal = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    case = SimpleNamespace(
        id=f"{number}-{backend}-{dtype}-rank{rank}-{layout}-{mask}", backend=backend, dtype=dtype, rank=rank,
        layout=layout, mask=mask, pattern=None, fully_masked=False,
        query=normal(*leading, *heads, L, E), key=normal(*leading, *kv_heads, S, E),
        value=normal(*leading, *kv_heads, S, E_v), grad_output=normal(*leading, *heads, L, E_v),
        attn_mask=None, is_causal=mask == "causal", scale=None if rng.random() < 0.5 else float(rng.uniform(0.05, 1.5)),
        enable_gqa=H != H_kv or bool(rng.random() < 0.5))
    if mask in ("bool", "float"):
        case.pattern, case.fully_masked = pattern, draw % 2 == 0
        case.attn_mask = mask_array(mask, leading + heads + (L, S), pattern, rng, case.fully_masked)
    return case


def cases():
    """Every backend × layout × mask × draw; the masks of each rank and kind go through the broadcast
    patterns in turn (2^rank of them: each axis full or one element)."""
    made, turn = [], {}
    for (backend, dtype), layout, mask, draw in product(BACKENDS, LAYOUTS, MASKS, range(DRAWS)):
        rank = 2 if layout == "one-head" else 3 + draw % 3
        pattern = turn.get((rank, mask), 0)
        turn[(rank, mask)] = (pattern + 1) % 2**rank
        made.append(make_case(len(made), backend, dtype, layout, mask, draw, pattern))
    return made


CASES = cases()


def handed_over(case, rng):
    """The operands as a caller might hold them: some float64, some transposed views; the values stay
    the case's float32 numbers."""
    query, key, value, mask = case.query, case.key, case.value, case.attn_mask
    choice = rng.integers(0, 3)
    if choice == 1:
        query, key, value = (t.astype(np.float64) for t in (query, key, value))
    elif choice == 2 and case.rank >= 3:  # (N..., L, H, E) memory read as (N..., H, L, E), as torch's transpose(1, 2)
        query, key, value = (np.swapaxes(np.ascontiguousarray(np.swapaxes(t, -3, -2)), -3, -2)
                             for t in (query, key, value))
    if mask is not None and mask.ndim >= 2 and rng.random() < 0.5:
        mask = np.swapaxes(np.ascontiguousarray(np.swapaxes(mask, -1, -2)), -1, -2)  # column-major mask
    return query, key, value, mask


def assert_close(name, got, want, magnitude):
    assert got.dtype == np.float32 and got.shape == want.shape, f"{name}: {got.dtype} {got.shape}, want {want.shape}"
    err, bound = np.abs(got.astype(np.float64) - want), TOLERANCE * magnitude
    worst = np.unravel_index(np.argmax(err - bound), err.shape) if err.size else ()
    assert np.all(err <= bound), f"{name}: error {err[worst]:.3e} at {worst}, allowed {bound[worst]:.3e}"


def semantics(case):
    return dict(attn_mask=case.attn_mask, is_causal=case.is_causal, scale=case.scale, enable_gqa=case.enable_gqa)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_conformance(case):
    query, key, value, mask = handed_over(case, np.random.default_rng([SEED, 1, int(case.id.split("-")[0])]))
    args = dict(semantics(case), attn_mask=mask)
    got = ac.scaled_dot_product_attention(query, key, value, backend=case.backend, dtype=case.dtype, **args)
    want, _ = ref.forward(case.query, case.key, case.value, **semantics(case))
    if case.dtype == "bf16":
        bound = ref.bf16_bound(case.query, case.key, case.value, **semantics(case))
        assert got.shape == want.shape and np.all(np.abs(got - want) <= bound)
        return
    sizes = ref.magnitudes(case.query, case.key, case.value, case.grad_output, **semantics(case))
    assert_close("output", got, want, sizes[0])
    grads = ac.scaled_dot_product_attention_backward(query, key, value, case.grad_output, backend=case.backend, **args)
    wants = ref.backward(case.query, case.key, case.value, case.grad_output, **semantics(case))
    for name, g, w, size in zip(("dq", "dk", "dv"), grads, wants, sizes[1:]):
        assert_close(name, g, w, size)


def test_the_cases_cover_what_the_suite_promises():
    assert len(CASES) >= 500
    for rank, kind in product(range(2, 6), ("bool", "float")):
        patterns = {c.pattern for c in CASES if c.rank == rank and c.mask == kind}
        assert patterns == set(range(2**rank)), (rank, kind)
    for backend, dtype in BACKENDS:
        mine = [c for c in CASES if (c.backend, c.dtype) == (backend, dtype)]
        assert {c.rank for c in mine} == {2, 3, 4, 5}
        assert {c.layout for c in mine} == set(LAYOUTS)
        causal = [(c.query.shape[-2], c.key.shape[-2]) for c in mine if c.is_causal]
        assert any(L < S for L, S in causal) and any(L > S for L, S in causal)
        masked_rows = [c for c in mine if c.fully_masked]
        assert any(not np.isfinite(ref.bias_of(c.query.shape[-2], c.key.shape[-2], c.attn_mask)).any(axis=-1).all()
                   for c in masked_rows)
        assert any(c.scale is not None for c in mine) and any(c.scale is None for c in mine)


@pytest.mark.parametrize("backend", ["naive", "simd", "parallel", "fused"])
def test_one_head_is_the_single_head_bit_for_bit(backend):
    rng = np.random.default_rng(SEED)
    q, k, v = (rng.standard_normal(shape).astype(np.float32) for shape in ((9, 5), (7, 5), (7, 3)))
    single, _ = ac.attention(q, k, v, backend=backend, causal=False)
    assert ac.scaled_dot_product_attention(q, k, v, backend=backend).tobytes() == single.tobytes()
    heads = ac.scaled_dot_product_attention(np.stack([q, q]), np.stack([k, k]), np.stack([v, v]), backend=backend)
    assert heads.shape == (2, 9, 3) and heads[0].tobytes() == single.tobytes() == heads[1].tobytes()


def test_the_result_owns_the_library_s_buffer():
    q = np.ones((2, 3, 4, 8), np.float32)
    out = ac.scaled_dot_product_attention(q, q, q)
    assert out.shape == (2, 3, 4, 8) and out.flags.c_contiguous and not out.flags.owndata
    assert type(out.base).__name__ == "PyCapsule"  # the library's Matrix, handed over without a copy


def test_a_pytorch_shaped_call_works_unchanged():
    torch = pytest.importorskip("torch")
    torch.manual_seed(SEED)
    q = torch.randn(2, 8, 16, 64)
    k, v = torch.randn(2, 2, 20, 64), torch.randn(2, 2, 20, 32)
    assert ac._read_address(q) == q.data_ptr()  # a contiguous float32 tensor is read where it is
    assert ac._read_address(q.transpose(1, 2)) != q.data_ptr()  # a strided view is converted
    d_out = torch.randn(2, 8, 16, 32)
    padding = torch.ones(2, 1, 1, 20, dtype=torch.bool)
    padding[1, ..., 15:] = False  # the second sequence is 15 keys long
    strided_q = q.transpose(1, 2).contiguous().transpose(1, 2)  # (B, L, H, E) memory, as a projection leaves it
    for query, semantics in ((q, dict(is_causal=True, enable_gqa=True)),
                             (strided_q, dict(attn_mask=padding, scale=0.1, enable_gqa=True))):
        out = ac.scaled_dot_product_attention(query, k, v, **semantics)
        grads = ac.scaled_dot_product_attention_backward(query, k, v, d_out, **semantics)
        model = dict(semantics, attn_mask=semantics.get("attn_mask", torch.tensor(True)).numpy())
        want, _ = ref.forward(q.numpy(), k.numpy(), v.numpy(), **model)
        wants = ref.backward(q.numpy(), k.numpy(), v.numpy(), d_out.numpy(), **model)
        sizes = ref.magnitudes(q.numpy(), k.numpy(), v.numpy(), d_out.numpy(), **model)
        assert isinstance(out, np.ndarray) and all(isinstance(g, np.ndarray) for g in grads)
        for name, got, w, size in zip(("output", "dq", "dk", "dv"), (out, *grads), (want, *wants), sizes):
            assert_close(name, got, w, size)


class DLPackOnly:
    """An array that offers only DLPack (np.asarray sees an opaque object)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_an_array_offering_only_dlpack_is_read():
    rng = np.random.default_rng(SEED)
    q, k, v = (rng.standard_normal((3, 6, 8)).astype(np.float32) for _ in range(3))
    want = ac.scaled_dot_product_attention(q, k, v)
    got = ac.scaled_dot_product_attention(DLPackOnly(q), DLPackOnly(k), DLPackOnly(v))
    assert got.tobytes() == want.tobytes()
    assert ac._read_address(DLPackOnly(q)) == q.ctypes.data  # read in place, not copied


def x(*shape):
    return np.zeros(shape, np.float32)


REFUSALS = [
    ("dropout", dict(query=x(1, 2, 4, 8), key=x(1, 2, 4, 8), value=x(1, 2, 4, 8), dropout_p=0.1),
     r"dropout_p must be 0: this library has no dropout"),
    ("rank one", dict(query=x(8), key=x(4, 8), value=x(4, 8)),
     r"query \(8\) must have at least 2 dimensions \(…, L, E\)"),
    ("ranks differ", dict(query=x(2, 4, 3, 8), key=x(4, 5, 8), value=x(4, 5, 8)),
     r"query \(2×4×3×8\), key \(4×5×8\) and value \(4×5×8\) must have the same number of dimensions"),
    ("batches differ", dict(query=x(2, 3, 4, 3, 8), key=x(3, 2, 4, 5, 8), value=x(3, 2, 4, 5, 8)),
     r"query \(2×3×4×3×8\), key \(3×2×4×5×8\) and value \(3×2×4×5×8\) must have the same leading dimensions"),
    ("heads without enable_gqa", dict(query=x(1, 8, 3, 8), key=x(1, 2, 5, 8), value=x(1, 2, 5, 8)),
     r"query \(1×8×3×8\) has 8 heads and key \(1×2×5×8\) 2: different head counts need enable_gqa=True"),
    ("heads not a multiple", dict(query=x(1, 6, 3, 8), key=x(1, 4, 5, 8), value=x(1, 4, 5, 8), enable_gqa=True),
     r"query \(1×6×3×8\) and key \(1×4×5×8\): the query heads H must be a multiple of the key/value heads H_kv"),
    ("widths differ", dict(query=x(1, 4, 3, 8), key=x(1, 4, 5, 7), value=x(1, 4, 5, 8)),
     r"query \(1×4×3×8\) and key \(1×4×5×7\) must have the same width E"),
    ("NaN in the mask", dict(query=x(3, 8), key=x(5, 8), value=x(5, 8), attn_mask=np.full((3, 5), np.nan, np.float32)),
     r"the mask's term for query 0, key 0 is NaN"),
    ("mask not broadcastable", dict(query=x(1, 4, 3, 8), key=x(1, 4, 5, 8), value=x(1, 4, 5, 8), attn_mask=x(3, 4)),
     r"attn_mask \(3×4\) does not broadcast to the scores 1×4×3×5 \(B, H, L, S\)"),
    ("mask and is_causal", dict(query=x(4, 8), key=x(4, 8), value=x(4, 8), attn_mask=x(4, 4), is_causal=True),
     r"attn_mask and is_causal=True cannot be given together"),
    ("integer mask", dict(query=x(4, 8), key=x(4, 8), value=x(4, 8), attn_mask=np.ones((4, 4), np.int64)),
     r"attn_mask \(4×4\) holds int64: a mask must be boolean or floating point"),
    ("not numbers", dict(query="abc", key=x(4, 8), value=x(4, 8)),
     r"scaled_dot_product_attention: query: an array of '3w' elements; numbers are needed"),
    ("an object array", dict(query=np.array([[object()]]), key=x(4, 8), value=x(4, 8)),
     r"scaled_dot_product_attention: query: .*'O'"),
    ("threads", dict(query=x(4, 8), key=x(4, 8), value=x(4, 8), threads=-1),
     r"threads = -1 \(0 for OpenMP's count, or a positive count\)"),
]


@pytest.mark.parametrize("call, message", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_refusals_are_value_errors_naming_the_shapes(call, message):
    with pytest.raises(ValueError, match=message):
        ac.scaled_dot_product_attention(**call)


def test_every_core_by_default_with_torch_imported_first():
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    program = """if True:
        import json
        import torch
        torch.set_num_threads(1)  # libgomp's count for the whole process, as a torch user may set it
        import numpy as np
        import attention_cpp as ac
        q = np.random.default_rng(1).standard_normal((1, 32, 256, 64)).astype(np.float32)
        teams = []
        for backend in ("fused", "parallel"):
            ac.scaled_dot_product_attention(q, q, q, backend=backend)
            teams.append(ac.build_info()["last_team"])
        ac.scaled_dot_product_attention_backward(q, q, q, q)
        teams.append(ac.build_info()["last_team"])
        print(json.dumps(dict(threads=ac.build_info()["threads"], teams=teams, torch_threads=torch.get_num_threads())))
    """
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    seen = json.loads(run.stdout)
    every_core = int(os.environ.get("OMP_NUM_THREADS", "0").split(",")[0]) or len(os.sched_getaffinity(0))
    if not ac.build_info()["openmp"]:
        every_core = 1  # a build without OpenMP runs every call on the calling thread
    assert seen["threads"] == every_core  # what a call with threads=None runs on, torch's 1 notwithstanding
    # and what the fused and parallel forwards and the backward of 32 heads ran on
    assert seen["teams"] == [every_core] * 3
    assert seen["torch_threads"] == 1  # and torch's own count is left as it was after the call
