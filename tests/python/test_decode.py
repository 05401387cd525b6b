"""Decoding through attention_cpp.scaled_dot_product_attention: a few query rows against a long
key/value cache, stored as float32, bfloat16 or float16 (kv_dtype).

Run by `meson test` with the others in tests/python. Each case is a seeded draw: L = 1 to 4 query rows,
S up to two thousand keys, grouped heads (H = 32 over H_kv = 8 among others), no mask, is_causal,
a boolean mask aligned bottom-right (the new rows are the cache's last positions) and a float padding
mask, on the fused (decode kernel), naive and parallel backends. Each 16-bit kv dtype is reached two
ways: float32 arrays rounded by kv_dtype, and a 16-bit array read in place (a float16 NumPy array, a
torch.bfloat16 tensor). Each output is held to the float64 model of sdpa_reference.py twice: on the
rounded cache, within the float32 tolerance of test_sdpa.py (the kernel reads the cache's numbers
exactly), and on the unrounded keys and values, within sdpa_reference.cache_bound (what the rounding
may cost, derived in tests/test_decode.cpp) plus that tolerance. Then: the bits for any thread count,
both threads busy for one head, and the refusals.
"""
import numpy as np
import pytest

import attention_cpp as ac
import sdpa_reference as ref
from test_sdpa import TOLERANCE, DLPackOnly, assert_close

SEED = 2056
KV_DTYPES = ["f32", "bf16", "f16"]
BACKENDS = ["fused", "naive", "parallel"]
# (H, H_kv, E, E_v): the decoding shapes of the targets, and smaller and odd ones
HEADS = [(32, 8, 128, 128), (8, 8, 64, 64), (4, 1, 40, 24), (1, 1, 128, 128), (6, 2, 3, 5)]
LENGTHS = [(1, 1000), (1, 1), (2, 300), (3, 2048), (4, 700), (1, 37)]  # (L, S)
MASKS = ["none", "causal", "bottom-right", "padding"]
INTAKES = ["kv_dtype", "in place"]  # floats rounded by kv_dtype, or a 16-bit array read as it is


def bf16_rounded(x):
    """float32 to the nearest bfloat16 (ties to even), as a float32."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)


def rounded(x, kv_dtype):
    """x as the cache holds it: the values its bits stand for, as float32."""
    if kv_dtype == "bf16":
        return bf16_rounded(x)
    if kv_dtype == "f16":
        return x.astype(np.float16).astype(np.float32)
    return x


def in_place(x, kv_dtype):
    """x as a 16-bit array the module reads without a copy: a torch.bfloat16 tensor, a float16 array."""
    if kv_dtype == "bf16":
        torch = pytest.importorskip("torch")
        return torch.from_numpy(x).to(torch.bfloat16)
    return x.astype(np.float16)


def make_case(number, kv_dtype, backend, heads, lengths, mask, intake):
    rng = np.random.default_rng([SEED, number])
    (H, H_kv, E, E_v), (L, S) = heads, lengths
    normal = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    query, key, value = normal(1, H, L, E), normal(1, H_kv, S, E), normal(1, H_kv, S, E_v)
    semantics = dict(attn_mask=None, is_causal=mask == "causal", scale=None, enable_gqa=H != H_kv)
    if mask == "bottom-right":  # query i is position S − L + i of the sequence: it sees keys j ≤ S − L + i
        semantics["attn_mask"] = np.arange(S)[None, :] <= np.arange(S - L, S)[:, None]
    if mask == "padding":  # the first keys are padding: −∞, the others a float term
        padding = np.asarray(rng.uniform(-1, 1, (1, 1, 1, S)), np.float32)
        padding[..., : S // 5] = -np.inf
        semantics["attn_mask"] = padding
    return dict(id=f"{number}-{kv_dtype}-{backend}-H{H}/{H_kv}-E{E}-L{L}-S{S}-{mask}-{intake.replace(' ', '-')}",
                kv_dtype=kv_dtype, backend=backend, mask=mask, intake=intake, query=query, key=key, value=value,
                semantics=semantics)


def cases():
    """For every kv dtype and each way in, draws that go through the backends (3) and masks (4) in all
    12 pairs, the head shapes (5) and the lengths (6) in turn; the first is the targets' shape."""
    made = []
    for kv_dtype in KV_DTYPES:
        for way, intake in enumerate(INTAKES if kv_dtype != "f32" else INTAKES[:1]):
            for draw in range(12):
                made.append(make_case(len(made), kv_dtype, BACKENDS[draw % 3], HEADS[draw % 5],
                                      LENGTHS[(draw + 3 * way) % 6], MASKS[draw % 4], intake))
    return made


CASES = cases()


def call(case, **options):
    key, value = case["key"], case["value"]
    if case["intake"] == "in place":
        key, value = in_place(key, case["kv_dtype"]), in_place(value, case["kv_dtype"])
        return ac.scaled_dot_product_attention(case["query"], key, value, backend=case["backend"],
                                               **case["semantics"], **options)
    return ac.scaled_dot_product_attention(case["query"], key, value, backend=case["backend"],
                                           kv_dtype=case["kv_dtype"], **case["semantics"], **options)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_decoding_against_the_float64_model(case):
    got = call(case)
    q, kv_dtype, semantics = case["query"], case["kv_dtype"], case["semantics"]
    k, v = rounded(case["key"], kv_dtype), rounded(case["value"], kv_dtype)
    # the output, and beside it the same sums over absolute values (its magnitude), in one forward
    want, magnitude = np.split(ref.forward(q, k, np.concatenate([v, np.abs(v)], axis=-1), **semantics)[0], 2, axis=-1)
    assert_close("output on the rounded cache", got, want, magnitude)
    # on the unrounded cache: what the rounding may cost, plus the float32 arithmetic allowed above
    unrounded, _ = ref.forward(q, case["key"], case["value"], **semantics)
    bound = ref.cache_bound(q, case["key"], case["value"], kv_dtype, **semantics) + TOLERANCE * magnitude
    err = np.abs(got - unrounded)
    worst = np.unravel_index(np.argmax(err - bound), err.shape)
    assert np.all(err <= bound), f"error {err[worst]:.3e} at {worst} on the unrounded cache, allowed {bound[worst]:.3e}"


def test_the_cases_cover_what_the_suite_promises():
    assert len(CASES) >= 50
    for kv_dtype in KV_DTYPES:
        mine = [c for c in CASES if c["kv_dtype"] == kv_dtype]
        assert {c["backend"] for c in mine} == set(BACKENDS)
        assert {c["query"].shape[-2] for c in mine} == {1, 2, 3, 4}
        assert max(c["key"].shape[-2] for c in mine) >= 2000
        assert any(c["query"].shape[1] == 32 and c["key"].shape[1] == 8 for c in mine)
        assert {c["mask"] for c in mine} == set(MASKS)
        if kv_dtype != "f32":
            assert {c["intake"] for c in mine} == set(INTAKES)


@pytest.mark.parametrize("kv_dtype", ["bf16", "f16"])
def test_a_16_bit_array_is_read_in_place_and_gives_kv_dtype_s_bits(kv_dtype):
    rng = np.random.default_rng(SEED)
    q = rng.standard_normal((2, 8, 1, 64)).astype(np.float32)
    k, v = (rng.standard_normal((2, 2, 500, 64)).astype(np.float32) for _ in range(2))
    cache_k, cache_v = in_place(k, kv_dtype), in_place(v, kv_dtype)
    address = cache_k.data_ptr() if kv_dtype == "bf16" else cache_k.ctypes.data
    assert ac._read_address(cache_k) == address  # read where it is, not converted
    got = ac.scaled_dot_product_attention(q, cache_k, cache_v, enable_gqa=True)
    assert got.tobytes() == ac.scaled_dot_product_attention(q, k, v, enable_gqa=True, kv_dtype=kv_dtype).tobytes()
    if kv_dtype == "f16":  # and through DLPack alone, the same
        assert ac._read_address(DLPackOnly(cache_k)) == address
        assert ac.scaled_dot_product_attention(q, DLPackOnly(cache_k), DLPackOnly(cache_v),
                                               enable_gqa=True).tobytes() == got.tobytes()
    # kv_dtype naming the array's own type changes nothing
    assert ac.scaled_dot_product_attention(q, cache_k, cache_v, enable_gqa=True,
                                           kv_dtype=kv_dtype).tobytes() == got.tobytes()


def test_bfloat16_rounding_here_is_torch_s():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(SEED).standard_normal(10000).astype(np.float32) * 1e3
    assert np.array_equal(bf16_rounded(x), torch.from_numpy(x).to(torch.bfloat16).float().numpy())


@pytest.mark.parametrize("kv_dtype", KV_DTYPES)
def test_the_same_bits_for_any_thread_count(kv_dtype):
    rng = np.random.default_rng(SEED)
    q = rng.standard_normal((1, 32, 1, 128)).astype(np.float32)
    k, v = (rng.standard_normal((1, 8, 3000, 128)).astype(np.float32) for _ in range(2))
    runs = [ac.scaled_dot_product_attention(q, k, v, enable_gqa=True, kv_dtype=kv_dtype, threads=n).tobytes()
            for n in (1, 2, 3)]
    assert runs[0] == runs[1] == runs[2]


def test_one_head_decoding_keeps_both_threads_busy():
    rng = np.random.default_rng(SEED)
    q = rng.standard_normal((1, 1, 1, 128)).astype(np.float32)
    k, v = (rng.standard_normal((1, 1, 32768, 128)).astype(np.float32) for _ in range(2))
    for kv_dtype in KV_DTYPES:
        ac.scaled_dot_product_attention(q, k, v, kv_dtype=kv_dtype, threads=2)
        # the keys are split over the team: a build without OpenMP runs every call on the calling thread
        assert ac.build_info()["last_team"] == (2 if ac.build_info()["openmp"] else 1), kv_dtype


def test_build_info_lists_the_kv_dtypes():
    assert ac.build_info()["kv_dtypes"] == KV_DTYPES


def x(*shape, dtype=np.float32):
    return np.zeros(shape, dtype)


def bf16(*shape):
    torch = pytest.importorskip("torch")
    return torch.zeros(shape, dtype=torch.bfloat16)


REFUSALS = [
    ("unknown kv_dtype", dict(key=x(1, 2, 5, 8), value=x(1, 2, 5, 8), kv_dtype="f8"),
     r"kv_dtype must be one of f32, bf16 and f16, got 'f8'"),
    ("key and value differ", dict(key=x(1, 2, 5, 8, dtype=np.float16), value=x(1, 2, 5, 8)),
     r"key \(1×2×5×8\) is f16 and value \(1×2×5×8\) is f32: the keys and values of a cache must have the same "
     r"type"),
    ("past the largest float16",
     dict(key=np.full((1, 2, 5, 8), 65520, np.float32), value=x(1, 2, 5, 8), kv_dtype="f16"),
     r"scaled_dot_product_attention: key \(1×2×5×8\) holds 65520 at \[0, 0, 0, 0\], which rounds to ±∞ in f16 "
     r"\(the largest is 65504\): a cache cannot hold it"),
]


@pytest.mark.parametrize("call, message", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_refusals_are_value_errors_naming_the_arrays(call, message):
    arguments = {"query": x(1, 4, 1, 8), "enable_gqa": True, **call}
    with pytest.raises(ValueError, match=message):
        ac.scaled_dot_product_attention(**arguments)


@pytest.mark.parametrize("cache", [x(1, 2, 5, 8, dtype=np.float16), bf16(1, 2, 5, 8)], ids=["f16", "bf16"])
def test_a_16_bit_cache_has_no_backward(cache):
    with pytest.raises(ValueError, match=r"scaled_dot_product_attention_backward: an? b?f16 cache has no backward: "
                                         r"the backward and keep_for_backward need float32 keys and values"):
        ac.scaled_dot_product_attention_backward(x(1, 4, 1, 8), cache, cache, x(1, 4, 1, 8), enable_gqa=True)


def test_any_array_becomes_the_cache_kv_dtype_names():
    """Keys and values of another type than kv_dtype are converted into it (charged like every
    buffer), as float keys are rounded: a float16 array read as a bfloat16 cache is the float16 values
    rounded to bfloat16; a bfloat16 tensor read as f32, its values; a strided bfloat16 tensor, its
    contiguous copy; bfloat16 queries, their float32 values."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(SEED)
    q = rng.standard_normal((1, 4, 1, 8)).astype(np.float32)
    k, v = (rng.standard_normal((1, 2, 5, 8)).astype(np.float32) for _ in range(2))

    def call(query, key, value, **options):
        return ac.scaled_dot_product_attention(query, key, value, enable_gqa=True, **options)

    half_k, half_v = k.astype(np.float16), v.astype(np.float16)
    assert call(q, half_k, half_v, kv_dtype="bf16").tobytes() == call(
        q, half_k.astype(np.float32), half_v.astype(np.float32), kv_dtype="bf16").tobytes()
    brain_k, brain_v = torch.from_numpy(k).to(torch.bfloat16), torch.from_numpy(v).to(torch.bfloat16)
    assert call(q, brain_k, brain_v, kv_dtype="f32").tobytes() == call(
        q, brain_k.float().numpy(), brain_v.float().numpy()).tobytes()
    strided = brain_k.transpose(2, 3).contiguous().transpose(2, 3)
    assert ac._read_address(strided) == 0  # converted, not read in place
    assert call(q, strided, brain_v).tobytes() == call(q, brain_k, brain_v).tobytes()
    brain_q = torch.from_numpy(q).to(torch.bfloat16)
    assert call(brain_q, k, v).tobytes() == call(brain_q.float().numpy(), k, v).tobytes()
