"""Every operator and builtin against NumPy, per dtype, run on the host backend.

All specializations are compiled into one host module (one compiler run); each case then
launches its own entry point and compares the output, values and dtype, with NumPy's.
"""

from __future__ import annotations

import math
import os
import zlib
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import numpy as np
import pytest

from gompute import types as T
from gompute.lang.kernel import compile_module

from . import ops_kernels as K
from .hostrun import run_spec

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOATS = [np.float16, np.float32, np.float64]
NUMERIC = INTS + FLOATS
ALL = [np.bool_] + NUMERIC
MIXED = [
    (np.int8, np.uint8),
    (np.int16, np.float16),
    (np.int32, np.float32),
    (np.uint64, np.int64),
    (np.bool_, np.int8),
    (np.float16, np.float32),
    (np.uint32, np.int32),
    (np.int64, np.float64),
    (np.bool_, np.float16),
    (np.uint8, np.int64),
]
N = 96
SPECIAL_FLOATS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 2.5, 1e-30, 65504.0, 7.0, -7.0]


def sample(dtype, rng, role="any"):
    """N values of `dtype`: random ones plus the edge cases each kind has."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, N).astype(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if role == "exponent":
            return rng.integers(0, 6, N).astype(dtype)
        if role == "shift":
            return rng.integers(0, info.bits + 3, N).astype(dtype)
        edges = [info.min, info.max, 0, 1, 2, 3, 7] + ([-1, -2, -7, info.min + 1] if dtype.kind == "i" else [])
        small = rng.integers(max(info.min, -9), min(info.max, 9) + 1, N // 3)
        wide = rng.integers(info.min, info.max, N - len(edges) - len(small), dtype=dtype, endpoint=True)
        return rng.permutation(np.concatenate([np.array(edges, dtype), small.astype(dtype), wide]))
    values = rng.standard_normal(N - len(SPECIAL_FLOATS)) * rng.choice([0.5, 3.0, 100.0], N - len(SPECIAL_FLOATS))
    if role == "unit":
        values = np.tanh(values)
    with np.errstate(over="ignore"):
        return rng.permutation(np.concatenate([np.array(SPECIAL_FLOATS), values]).astype(dtype))


def _np_logical(op):
    def ref(a, b):
        t = np.result_type(a, b)
        truthy = a.astype(bool)
        return np.where(truthy, b, a).astype(t) if op == "and" else np.where(truthy, a, b).astype(t)

    return ref


BINARY = {
    "add": (np.add, NUMERIC),
    "sub": (np.subtract, NUMERIC),
    "mul": (np.multiply, NUMERIC),
    "truediv": (np.true_divide, ALL),
    "floordiv": (np.floor_divide, NUMERIC),
    "mod": (np.remainder, NUMERIC),
    "power": (np.power, NUMERIC),
    "bit_and": (np.bitwise_and, [np.bool_] + INTS),
    "bit_or": (np.bitwise_or, [np.bool_] + INTS),
    "bit_xor": (np.bitwise_xor, [np.bool_] + INTS),
    "lshift": (np.left_shift, INTS),
    "rshift": (np.right_shift, INTS),
    "lt": (np.less, ALL),
    "le": (np.less_equal, ALL),
    "gt": (np.greater, ALL),
    "ge": (np.greater_equal, ALL),
    "eq": (np.equal, ALL),
    "ne": (np.not_equal, ALL),
    "logical_and": (_np_logical("and"), ALL),
    "logical_or": (_np_logical("or"), ALL),
}
UNARY = {
    "neg": (np.negative, NUMERIC),
    "invert": (np.invert, [np.bool_] + INTS),
    "logical_not": (np.logical_not, ALL),
}

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _via_f64(fn):
    """A reference NumPy lacks, computed in f64 and rounded to the input's float type."""
    return lambda a: fn(a.astype(np.float64)).astype(a.dtype)


FLOAT_FUNCS = {
    "sqrt": np.sqrt,
    "rsqrt": lambda a: (1 / np.sqrt(a)).astype(np.sqrt(a).dtype),
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "erf": _via_f64(_erf),
    "erfc": _via_f64(_erfc),
}
EXACT_FUNCS = {
    "abs": np.abs,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "round": np.round,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
}
FLOAT_BINARY = {"atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign}
# NumPy computes these in the first float type both arguments cast to safely: f16 for int8 with
# uint8, which promote to int16, whose own float is f32.
FLOAT_MIXED = [
    (np.int8, np.uint8),
    (np.uint8, np.int16),
    (np.int16, np.uint16),
    (np.int32, np.uint32),
    (np.bool_, np.uint8),
    (np.int8, np.float16),
    (np.uint16, np.float16),
]
EXACT_BINARY = {"min": np.minimum, "max": np.maximum}


def _cases():
    cases = []
    for name, (ref, dtypes) in BINARY.items():
        role = {"power": "exponent", "lshift": "shift", "rshift": "shift"}.get(name, "any")
        pairs = [(d, d) for d in dtypes]
        if name in ("add", "truediv", "lt", "floordiv"):
            pairs += [p for p in MIXED if name != "floordiv" or np.bool_ not in p]
        # libm's powf and NumPy's own float power differ in the last bit.
        cases += [
            (name, getattr(K, name), ref, p, ("any", role), name != "power" or np.dtype(p[0]).kind != "f")
            for p in pairs
        ]
    for name, (ref, dtypes) in UNARY.items():
        cases += [(name, getattr(K, name), ref, (d,), ("any",), True) for d in dtypes]
    for name, ref in FLOAT_FUNCS.items():
        domain = "unit" if name in ("asin", "acos") else "any"
        dtypes = FLOATS + ([np.int8, np.int16, np.int32] if name in ("sqrt", "exp", "sin") else [])
        cases += [(name, getattr(K, f"b_{name}"), ref, (d,), (domain,), False) for d in dtypes]
    for name, ref in EXACT_FUNCS.items():
        dtypes = FLOATS + ([np.int8, np.uint16, np.int64] if name in ("abs", "floor", "round", "isnan") else [])
        cases += [(name, getattr(K, f"b_{name}"), ref, (d,), ("any",), True) for d in dtypes]
    for name, ref in {**FLOAT_BINARY, **EXACT_BINARY}.items():
        dtypes = FLOATS + (INTS if name in EXACT_BINARY else [])
        pairs = [(d, d) for d in dtypes] + (FLOAT_MIXED if name in FLOAT_BINARY else [])
        cases += [(name, getattr(K, f"b_{name}"), ref, p, ("any", "any"), name in EXACT_BINARY) for p in pairs]
    cases += [("pow", K.b_pow, np.power, (d, d), ("any", "exponent"), d is np.int32) for d in (np.int32, np.float32)]
    cases += [
        (
            "fma",
            K.b_fma,
            _np_fma,
            (d, d, d),
            ("any",) * 3,
            False,
        )
        for d in FLOATS
    ]
    cases += [
        (
            "clamp",
            K.b_clamp,
            lambda a, lo, hi: np.minimum(np.maximum(a, lo), hi),
            (d, d, d),
            ("any",) * 3,
            True,
        )
        for d in (np.int16, np.uint8, np.float32, np.float64)
    ]
    cases += [
        ("where", K.b_where, lambda c, a, b: np.where(c, a, b), (c, d, d), ("any",) * 3, True)
        for c, d in ((np.bool_, np.float32), (np.int32, np.int8), (np.float64, np.float16))
    ]
    cases += [
        ("chained", K.chained, lambda a, b, c: (a < b) & (b <= c), (d, d, d), ("any",) * 3, True)
        for d in (np.int32, np.float32)
    ]
    cases += [
        ("ternary", K.ternary, lambda c, a, b: np.where(c, a, b), (np.bool_, d, d), ("any",) * 3, True)
        for d in (np.uint16, np.float64)
    ]
    return cases


def _np_fma(a, b, c):
    """a * b + c rounded once. Narrower floats: the f64 product is exact and one f64 sum rounds far
    below their ulp. f64: exactly, in fractions, where the inputs are finite (an unfused f64
    a * b + c is wrong by far more than the tolerance where the sum cancels)."""
    if a.dtype != np.float64:
        return (a.astype(np.float64) * b + c).astype(a.dtype)
    out = a * b + c
    for i in np.flatnonzero(np.isfinite(a) & np.isfinite(b) & np.isfinite(c)):
        exact = Fraction(a[i]) * Fraction(b[i]) + Fraction(c[i])
        try:
            out[i] = float(exact)
        except OverflowError:
            out[i] = math.inf if exact > 0 else -math.inf
    return out


CASES = _cases()


def _spec(case):
    _, kernel, _, dtypes, _, _ = case
    return kernel.specialize(*(T.from_dtype(d) for d in dtypes))


def _id(case):
    return f"{case[0]}-{'-'.join(np.dtype(d).name for d in case[3])}"


# The kernels are compiled as this many modules at once, a compiler process each: one module of
# every case is most of this file's time, and the cores share it.
PARTS = max(2, min(4, os.cpu_count() or 1))


@pytest.fixture(scope="module")
def image():
    """Each case's entry symbol -> the compiled module that holds it."""
    specs = [_spec(c) for c in CASES] + [K.py_aliases.specialize(T.f32, T.f32)]
    specs += [K.mul_add.specialize(*[T.from_dtype(d)] * 3) for d in FLOATS]
    specs += [K.literal_bounds.specialize(T.from_dtype(d)) for d in INTS + FLOATS]
    specs += [k.specialize() for k in K.ROUND_TRIPS]
    specs += [K.zero_ties.specialize(*[T.from_dtype(d)] * 2) for d in FLOATS]
    parts = [specs[k::PARTS] for k in range(PARTS)]
    with ThreadPoolExecutor(PARTS) as pool:
        built = list(pool.map(lambda k: compile_module(parts[k], "host", None, f"test_ops_{k}"), range(PARTS)))
    return {e.symbol: image for part, image in zip(parts, built) for s in part for e in s.entry_points()}


def _run(images, spec, *inputs):
    entry = next(e for e in spec.entry_points() if e.kind == "map")
    return run_spec(images[entry.symbol], spec, *inputs)


def _tolerance(dtype):
    return {np.float16: (2e-3, 1e-5), np.float32: (4e-6, 1e-30), np.float64: (1e-14, 1e-300)}[dtype.type]


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_against_numpy(image, case):
    name, _, ref, dtypes, roles, exact = case
    rng = np.random.default_rng(zlib.crc32(_id(case).encode()))  # the same inputs in every process
    inputs = [sample(d, rng, role) for d, role in zip(dtypes, roles)]
    with np.errstate(all="ignore"):
        expected = np.asarray(ref(*inputs))
    spec = _spec(case)
    assert spec.out_type.dtype == expected.dtype, f"{name}{dtypes}: gompute gives {spec.out_type}"
    got = _run(image, spec, *inputs)
    if exact or expected.dtype.kind not in "f":
        np.testing.assert_array_equal(got, expected, err_msg=f"{name} on {dtypes}, inputs {inputs}")
    else:
        rtol, atol = _tolerance(expected.dtype)
        np.testing.assert_allclose(
            got,
            expected,
            rtol=rtol,
            atol=atol,
            equal_nan=True,
            err_msg=f"{name} on {dtypes}, inputs {inputs}",
        )


# 1 + e and 1 - e, whose product 1 - e**2 rounds to 1 in the type: with c = -1, a product
# rounded before the sum gives 0 and one rounded once gives -e**2.
ROUNDS_TO_ONE = {np.float16: 2.0**-6, np.float32: 2.0**-14, np.float64: 2.0**-30}


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_fma_rounds_once_and_a_product_plus_a_sum_twice(image, dtype):
    e = ROUNDS_TO_ONE[dtype]
    a, b, c = (np.full(N, v, dtype) for v in (1 + e, 1 - e, -1))
    assert a[0] * b[0] == 1
    types = [T.from_dtype(dtype)] * 3
    fused = _run(image, K.b_fma.specialize(*types), a, b, c)
    separate = _run(image, K.mul_add.specialize(*types), a, b, c)
    np.testing.assert_array_equal(fused, np.full(N, -e * e, dtype))
    np.testing.assert_array_equal(separate, a * b + c)  # zeros: no contraction into an FMA


@pytest.mark.parametrize("dtype", INTS + FLOATS, ids=lambda d: np.dtype(d).name)
def test_min_max_and_clamp_take_python_ints_in_the_arrays_type(image, dtype):
    a = sample(dtype, np.random.default_rng(5))
    got = _run(image, K.literal_bounds.specialize(T.from_dtype(dtype)), a)
    with np.errstate(all="ignore"):
        t = a.dtype.type
        want = np.minimum(t(0), a) + np.maximum(a, t(7)) + np.clip(a, t(1), t(5)) + np.minimum(t(3), a)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kernel", K.ROUND_TRIPS, ids=lambda k: k.name)
def test_a_float_through_an_integer_and_back_is_the_integers_value(image, kernel):
    dtype = K.ROUND_TRIPS[kernel]
    a = np.array([-0.5, -0.0, -0.99, 0.5, -1.5, 2.5, -3.0, 0.0], dtype)
    got = _run(image, kernel.specialize(), a)
    want = a.astype(np.int16).astype(dtype)  # +0.0 for every zero
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_min_max_and_clamp_keep_numpys_zero_of_a_tie(image, dtype):
    a = np.array([0.0, -0.0, 0.0, -0.0], dtype)  # every pair of zeros
    b = np.array([0.0, -0.0, -0.0, 0.0], dtype)
    got = _run(image, K.zero_ties.specialize(*[T.from_dtype(dtype)] * 2), a, b)
    ties = [np.minimum(a, b), np.maximum(a, b), np.clip(a, b, b), np.clip(b, a, a), np.minimum(np.minimum(a, b), b)]
    want = sum(np.signbit(t).astype(np.int64) << k for k, t in enumerate(ties))
    np.testing.assert_array_equal(got, want)  # f16 keeps the first zero, f32 and f64 the second


def test_python_builtins_and_math_map_to_builtins(image):
    rng = np.random.default_rng(1)
    a, b = sample(np.float32, rng), sample(np.float32, rng)
    spec = K.py_aliases.specialize(T.f32, T.f32)
    got = _run(image, spec, a, b)
    with np.errstate(all="ignore"):
        expected = (
            np.abs(a)
            + np.minimum(a, b)
            + np.maximum(np.maximum(a, b), np.float32(0))
            + np.rint(a)
            + np.sqrt(np.abs(a))
            + np.power(np.abs(a), np.float32(0.5))
            + np.floor(a)
        )
    assert spec.out_type is T.f32
    np.testing.assert_allclose(got, expected, rtol=1e-6, equal_nan=True)
