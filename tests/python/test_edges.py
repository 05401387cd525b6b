"""The edges where front ends and backends could part ways, each held to one outcome: the same
refusal on every backend, or the same result as the naive backend (docs/robustness.md lists them).

Run by `meson test` with the others in tests/python: scores that the scale or a mask's term would push
past float32, NaN in keys that a call with no output never multiplies, float16 arrays of either byte
order, thread counts past the machine, zero sizes, arrays that cannot be read as numbers.
"""
import subprocess
import sys

import numpy as np
import pytest

import attention_cpp as ac

BACKENDS = ["naive", "simd", "parallel", "fused"]
F32 = np.finfo(np.float32)


def normal(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_scale_that_would_push_scores_past_float32_is_refused_by_every_backend(backend):
    q, k, v = np.full((2, 1), 1e5, np.float32), np.full((3, 1), 1e5, np.float32), normal(3, 2)  # ‖q‖·‖k‖ = 1e10
    with pytest.raises(ValueError, match=r"step 4 \(S' = scale·S \+ M, the mask's terms M added\) could leave the "
                                         r"float32 range"):
        ac.scaled_dot_product_attention(q, k, v, scale=1e30, backend=backend)
    assert np.isfinite(ac.scaled_dot_product_attention(q, k, v, scale=1e27, backend=backend)).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_mask_term_that_would_push_scores_past_float32_is_refused_by_every_backend(backend):
    q, k, v = np.full((2, 1), 1.4e19, np.float32), np.full((3, 1), 1e19, np.float32), normal(3, 2)  # S = 1.4e38
    with pytest.raises(ValueError, match=r"step 4 .* scale·max‖q_i‖·max‖k_j‖ \+ ½·\(the largest finite term of "
                                         r"the mask\) = 2\.9e\+38"):
        ac.scaled_dot_product_attention(q, k, v, attn_mask=np.full((2, 3), 3e38, np.float32), scale=1.0,
                                        backend=backend)
    # a negative term, down to float32's lowest (the masked value of many models), raises no score: taken
    lowest = np.full((2, 3), F32.min, np.float32)
    assert ac.scaled_dot_product_attention(q * 1e-19, k * 1e-19, v, attn_mask=lowest, backend="naive").shape == (2, 2)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kv_dtype", [None, "bf16", "f16"])
@pytest.mark.parametrize("empty", ["L = 0", "E_v = 0", "H = 0"])
def test_nan_in_the_keys_is_refused_also_when_the_output_is_empty(backend, kv_dtype, empty):
    L, E_v, H = (0 if empty == which else n for which, n in (("L = 0", 2), ("E_v = 0", 3), ("H = 0", 2)))
    q, k, v = normal(1, H, L, 4), normal(1, 2, 5, 4), normal(1, 2, 5, E_v)
    k[0, 1, 3, 2] = np.nan
    with pytest.raises(ValueError, match=r"key \(.*\) holds NaN or ±inf"):
        ac.scaled_dot_product_attention(q, k, v, backend=backend, kv_dtype=kv_dtype, enable_gqa=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_float16_array_of_either_byte_order_holds_the_same_numbers(backend):
    q, k, v = normal(1, 4, 2, 8, seed=1), normal(1, 2, 9, 8, seed=2), normal(1, 2, 9, 8, seed=3)
    little = ac.scaled_dot_product_attention(q, k.astype("<f2"), v.astype("<f2"), backend=backend, enable_gqa=True)
    big = ac.scaled_dot_product_attention(q, k.astype(">f2"), v.astype(">f2"), backend=backend, enable_gqa=True)
    assert big.tobytes() == little.tobytes()
    wide = ac.scaled_dot_product_attention(q.astype(">f4"), k.astype(">f8"), v.astype(">f8"), backend=backend,
                                           enable_gqa=True)
    assert wide.tobytes() == ac.scaled_dot_product_attention(q, k, v, backend=backend, enable_gqa=True).tobytes()


def test_a_thread_count_past_the_machine_runs_on_every_core():
    program = """if True:
        import numpy as np
        import attention_cpp as ac
        q = np.random.default_rng(1).standard_normal((1, 1, 256, 64)).astype(np.float32)  # work for a team
        runs = [ac.scaled_dot_product_attention(q, q, q, backend=b, threads=n).tobytes()
                for b in ("parallel", "fused") for n in (2, 100000)]
        assert runs[0] == runs[1] and runs[2] == runs[3]
        print(ac.build_info()["last_team"], ac.build_info()["cores"])
    """
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr  # not a crash (SIGSEGV: -11) or libgomp's abort
    last_team, cores = (int(x) for x in run.stdout.split())
    assert 1 <= last_team <= cores  # capped at the CPUs this process may run on


def test_a_negative_thread_count_is_refused():
    with pytest.raises(ValueError, match=r"threads = -1"):
        ac.scaled_dot_product_attention(normal(2, 4), normal(2, 4), normal(2, 4), threads=-1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_sizes_give_empty_results_as_pytorch(backend):
    torch = pytest.importorskip("torch")
    q = normal(1, 1, 2, 8)
    empty_cache = torch.zeros(1, 1, 0, 8, dtype=torch.bfloat16)  # no key at all: every row sees nothing
    out = ac.scaled_dot_product_attention(q, empty_cache, empty_cache, backend=backend)
    assert out.shape == (1, 1, 2, 8) and not out.any()
    narrow = torch.zeros(1, 1, 5, 0, dtype=torch.bfloat16)  # values of no width
    assert ac.scaled_dot_product_attention(q, torch.zeros(1, 1, 5, 8, dtype=torch.bfloat16), narrow,
                                           backend=backend).shape == (1, 1, 2, 0)
    no_heads = ac.scaled_dot_product_attention(normal(2, 0, 3, 4), normal(2, 0, 5, 4), normal(2, 0, 5, 3),
                                               backend=backend)
    assert no_heads.shape == (2, 0, 3, 3)
    grads = ac.scaled_dot_product_attention_backward(normal(2, 0, 3, 4), normal(2, 0, 5, 4), normal(2, 0, 5, 3),
                                                     normal(2, 0, 3, 3), backend=backend)
    assert [g.shape for g in grads] == [(2, 0, 3, 4), (2, 0, 5, 4), (2, 0, 5, 3)]


def test_arrays_that_cannot_be_read_as_numbers_are_value_errors_naming_the_argument():
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match=r"scaled_dot_product_attention: key: .*'O'"):
        ac.scaled_dot_product_attention(normal(2, 4), np.array([[object()] * 4] * 2), normal(2, 4))
    tracked = torch.ones(2, 4, requires_grad=True)
    with pytest.raises(ValueError, match=r"scaled_dot_product_attention: query: .*requires? grad"):
        ac.scaled_dot_product_attention(tracked, normal(2, 4), normal(2, 4))
    with pytest.raises(ValueError, match=r"attention: V: .*requires? grad"):
        ac.attention(normal(2, 4), normal(2, 4), tracked)
    assert ac.scaled_dot_product_attention(tracked.detach(), normal(2, 4), normal(2, 4)).shape == (2, 4)


def test_max_memory_names_the_limit_and_what_the_call_needs():
    with pytest.raises(ValueError, match=r"S/α \(300×300\) of steps 3–5 on the simd backend; --backend fused never "
                                         r"stores S needs 351.56 KiB on top of 29.29 KiB already taken, more than "
                                         r"the max_memory limit of 100 KiB"):
        ac.attention(normal(300, 8), normal(300, 8), normal(300, 25), backend="simd", max_memory=100 * 1024)
