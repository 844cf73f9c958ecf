"""Kernels mean what the same Python means: each sample kernel, run on the host backend, gives
what the plain Python function gives on NumPy scalars, element by element."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from gompute import abi
from gompute import types as T
from gompute.lang.kernel import compile_module

from . import sample_kernels as S
from .hostrun import launch_ctypes, launch_runtime, run_spec, runtime_available

AFFINE = dict(mul=-1.5, add=7, flag=False, half=0.25)
SCALE = dict(scale=2.0)


def _params(cls, values):
    """(the packed bytes, the same values as NumPy scalars for the Python reference)."""
    scalars = {f.name: f.type.dtype.type(values[f.name]) for f in cls.__fields__}
    return abi.pack(cls, **values), SimpleNamespace(**scalars)


def _inputs(rng):
    return {
        "collatz": [np.concatenate([np.arange(-3, 60), rng.integers(1, 10**6, 30)]).astype(np.int64)],
        "loops": [rng.integers(-50, 50, 80).astype(np.int32), rng.standard_normal(80).astype(np.float32)],
        "branches": [
            np.concatenate(
                [
                    [np.nan, -np.inf, np.inf, -1.0, 1.0, 100.0, 100.5],
                    rng.uniform(-5, 5, 60),
                    rng.uniform(50, 150, 20),
                ]
            )
        ],
        "values": [rng.integers(-5, 5, 80).astype(np.int16), rng.integers(-300, 300, 80).astype(np.int16)],
        "casts": [rng.uniform(-400, 400, 80)],
        # halfway between two f16 values plus a little: rounding through f32 first would lose the little
        "narrow": [
            np.concatenate(
                [
                    1 + 2.0**-11 + 2.0 ** np.arange(-40, -20),
                    [np.nan, -np.inf, 65520.0, 1e-8],
                    rng.standard_normal(40) * 1000,
                ]
            )
        ],
        "mixed_compare": [
            np.array([2**53 + 1, -1, 0, 2**63 - 1, 5, -(2**63)], dtype=np.int64),
            np.array([2**53, 2**64 - 1, 0, 2**63, 5, 0], dtype=np.uint64),
        ],
    }


CASES = {
    "collatz": (S.collatz, None),
    "loops": (S.loops, None),
    "branches": (S.branches, (S.Affine, AFFINE)),
    "values": (S.values, None),
    "casts": (S.casts, None),
    "narrow": (S.narrow, None),
    "mixed_compare": (S.mixed_compare, None),
}
GENERIC = [(T.f32, T.f32), (T.i32, T.i8), (T.f16, T.u8), (T.u16, T.f64), (T.i64, T.i64)]


@pytest.fixture(scope="module")
def image():
    specs = [k.specialize() for k, _ in CASES.values()]
    specs += [S.generic_mix.specialize(*sig) for sig in GENERIC]
    specs += [
        S.scale_relu.specialize(),
        S.half_ops.specialize(),
        S.bf16_ops.specialize(),
        S.fill.specialize(),
    ]
    return compile_module(specs, "host", None, "test_semantics")


def _python(fn, inputs, params, out_dtype):
    with np.errstate(all="ignore"):
        rows = [np.asarray(fn(*vals, *([params] if params is not None else []))) for vals in zip(*inputs)]
        out_dtype = out_dtype or rows[0].dtype
        return np.array([r.astype(out_dtype) for r in rows], dtype=out_dtype)


@pytest.mark.parametrize("name", CASES)
def test_kernel_matches_python(image, name):
    kernel, params = CASES[name]
    inputs = _inputs(np.random.default_rng(7))[name]
    packed, scalars = _params(*params) if params else (None, None)
    spec = kernel.specialize()
    got = run_spec(image, spec, *inputs, params=packed)
    np.testing.assert_array_equal(got, _python(kernel.fn, inputs, scalars, spec.out_type.dtype))


@pytest.mark.parametrize("sig", GENERIC, ids=lambda s: "-".join(t.name for t in s))
def test_generic_kernel_specializes_per_dtype(image, sig):
    rng = np.random.default_rng(3)
    inputs = [(rng.standard_normal(64) * 20).astype(t.dtype) for t in sig]
    spec = S.generic_mix.specialize(*sig)
    expected = _python(S.generic_mix.fn, inputs, None, None)
    assert spec.out_type.dtype == expected.dtype  # NEP 50: the literals 2 and 3 widen nothing
    assert spec.name == f"generic_mix__{sig[0].name}_{sig[1].name}"
    np.testing.assert_allclose(run_spec(image, spec, *inputs), expected, rtol=1e-6 if sig[0] is not T.f16 else 1e-3)


def test_generic_specialization_is_cached():
    a = S.generic_mix.specialize(T.f32, T.f32)
    assert S.generic_mix.specialize(T.f32, T.f32) is a
    assert S.generic_mix.specialize(T.f64, T.f32) is not a


def test_scale_relu_in_place_and_out_of_place(image):
    x = np.linspace(-4, 4, 1000, dtype=np.float32)
    packed, _ = _params(S.Params, SCALE)
    spec = S.scale_relu.specialize()
    expected = np.maximum(x * 2, 0).astype(np.float32)
    np.testing.assert_array_equal(run_spec(image, spec, x, params=packed, inplace=True), expected)
    np.testing.assert_array_equal(run_spec(image, spec, x, params=packed), expected)
    assert [e.symbol for e in spec.entry_points()] == ["scale_relu", "scale_relu__out", "scale_relu__strided"]
    assert [(a.name, a.kind) for a in spec.entry_points()[0].args] == [
        ("data", "pointer"),
        ("len", "len"),
        ("params", "params"),
    ]


def _launch(image, symbol, args, grid, block):
    return (launch_runtime if runtime_available() else launch_ctypes)(image, symbol, args, grid, block)


def test_host_entry_runs_a_grid_smaller_than_the_data(image):
    # grid-stride: 3 blocks of 256 threads cover 2000 elements, as on a GPU
    x = np.linspace(-4, 4, 2000, dtype=np.float32)
    data = x.copy()
    packed, _ = _params(S.Params, SCALE)
    assert _launch(image, "scale_relu", [data, np.uint64(len(x)).tobytes(), packed], 3, 256) == []
    np.testing.assert_array_equal(data, np.maximum(x * 2, 0))


def test_host_entry_traps_on_a_block_other_than_its_block_size(image):
    data = np.ones(100, dtype=np.float32)
    packed, _ = _params(S.Params, SCALE)
    args = [data, np.uint64(len(data)).tobytes(), packed]
    message = "scale_relu: launched with a block size other than its block_size, 256"
    if runtime_available():
        from gompute.errors import SyncFailed

        with pytest.raises(SyncFailed, match=message):
            launch_runtime(image, "scale_relu", args, 1, 128)
    else:
        assert launch_ctypes(image, "scale_relu", args, 1, 128) == [message]
    np.testing.assert_array_equal(data, 1)  # nothing ran


def test_f16_is_rounded_after_every_operation(image):
    rng = np.random.default_rng(5)
    x = np.concatenate([[np.nan, np.inf, -np.inf, 0.0, 65504.0], rng.standard_normal(90) * 30]).astype(np.float16)
    y = (rng.standard_normal(95) * 30).astype(np.float16)
    with np.errstate(all="ignore"):
        z = x * y + np.sqrt(np.abs(x))
        z -= np.float16(0.1)
        expected = np.where(z == z, np.maximum(z, y), x)
    np.testing.assert_array_equal(run_spec(image, S.half_ops.specialize(), x, y), expected)


def _bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _f32_to_bf16(x: np.ndarray) -> np.ndarray:
    return np.array([T._bf16_bits(float(v)) for v in x], dtype=np.uint16)


def test_bf16_computes_in_f32_rounded_to_bf16(image):
    rng = np.random.default_rng(6)
    x = _f32_to_bf16(np.concatenate([[np.nan, np.inf, 0.0, -1.0], rng.standard_normal(60) * 100]).astype(np.float32))
    y = (rng.standard_normal(64) * 10).astype(np.float32)
    spec = S.bf16_ops.specialize()
    assert spec.out_type is T.bf16  # bf16 * 3 stays bf16; + f32 is f32, then the return rounds to bf16
    got = run_spec(image, spec, x, y)
    expected = _f32_to_bf16(_bf16_to_f32(_f32_to_bf16(_bf16_to_f32(x) * 3)) + y)
    np.testing.assert_array_equal(got, expected)


def test_a_kernel_without_inputs_fills_its_output(image):
    packed, _ = _params(S.Params, SCALE)
    entry, _ = S.fill.entry_points()
    assert [a.name for a in entry.args] == ["out", "len", "params"]
    np.testing.assert_array_equal(run_spec(image, S.fill.specialize(), params=packed, n=300), np.full(300, 3.0))
