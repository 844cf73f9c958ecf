"""g.reduce against NumPy where the host's row code takes its special paths: runs of many
whole leaves reduced in one pass (min, max, integer and bit combines), NaNs at every place in
such a run, and rows shorter than a leaf's lanes."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g

from . import kernels as K

RNG = np.random.default_rng(32)
# Whole leaves of 512 f32 and a tail, one run per item, and several items.
LONG = [512, 4096 + 77, 300_001]


@pytest.mark.parametrize("n", LONG)
@pytest.mark.parametrize("kernel, reference", [(K.largest, np.max), (K.smallest, np.min)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.int64])
def test_long_runs_of_exact_combines(n, kernel, reference, dtype):
    x = (RNG.standard_normal(n) * 100).astype(dtype)
    assert g.reduce(kernel)(x) == reference(x)
    rows = x[: n // 7 * 7].reshape(7, -1)
    np.testing.assert_array_equal(g.reduce(kernel)(rows, axis=1), reference(rows, axis=1))


@pytest.mark.parametrize("dtype", [np.int32, np.uint16, np.int8])
def test_long_runs_of_integer_sums_and_bits_wrap_as_numpys(dtype):
    x = RNG.integers(0, 200, 300_001).astype(dtype)
    assert g.reduce(K.total)(x) == np.add.reduce(x, dtype=np.int64 if x.dtype.kind == "i" else np.uint64)
    assert g.reduce(K.any_bits)(x) == np.bitwise_or.reduce(x)
    assert g.reduce(K.parity)(x) == np.bitwise_xor.reduce(x)


@pytest.mark.parametrize("at", [0, 1, 63, 64, 511, 512, 1000, 4095, 4096 + 76])
@pytest.mark.parametrize("kernel", [K.largest, K.smallest])
def test_a_nan_anywhere_in_a_run_wins(at, kernel):
    x = RNG.standard_normal(4096 + 77).astype(np.float32)
    x[at] = np.nan
    assert np.isnan(g.reduce(kernel)(x))
    x[at] = np.inf if kernel is K.largest else -np.inf
    assert g.reduce(kernel)(x) == x[at]


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 8, 17, 63, 64, 65])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16])
def test_short_rows_match_numpy(width, dtype):
    x = (RNG.standard_normal((20_011, width)) * 10).astype(dtype)
    want = np.sum(x, axis=1, dtype=np.int64 if x.dtype.kind == "i" else None)
    got = g.reduce(K.total)(x, axis=1)
    if x.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-4)
    else:
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(g.reduce(K.largest)(x, axis=1), np.max(x, axis=1))
    strided = x[::2, ::-1]  # rows at a stride, elements reversed in each
    np.testing.assert_array_equal(g.reduce(K.largest)(strided, axis=1), np.max(strided, axis=1))
    t = np.ascontiguousarray(x.T)  # the same rows, reduced along axis 0: strided elements
    np.testing.assert_array_equal(g.reduce(K.smallest)(t, axis=0), np.min(x, axis=1))


@pytest.mark.parametrize("width", range(1, 9))
def test_short_rows_of_an_f32_sum_add_in_order_in_f32(width):
    """As a row this short does in NumPy: each element added to the sum so far, rounded to f32.
    (Rows whose results are contiguous and elements not, as in a Fortran array, are columns.)"""
    x = (RNG.standard_normal((20_011, width)) * 10).astype(np.float32)
    want = x[:, 0].copy()
    for k in range(1, width):
        want += x[:, k]
    np.testing.assert_array_equal(g.reduce(K.total)(x, axis=1), want)
    np.testing.assert_array_equal(g.reduce(K.total)(x[::3], axis=1), want[::3])  # rows at a stride
