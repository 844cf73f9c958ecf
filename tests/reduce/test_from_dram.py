"""The host's rows loop has a twin for launches that read more than the caches hold (DRAM_BYTES and
more; preludes/host.h builds it for 256-bit vectors on AVX-512 machines): it must give the loop's
own bits for every combine and layout. Broadcast rows reach the size without the memory: each
result is one row, which reduced alone is a launch well inside the caches."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g
from gompute.lang.reduce_layout import DRAM_BYTES

from . import kernels as K

RNG = np.random.default_rng(7)
# One item a row, and rows of several items (partials, then the finish pass).
LENGTHS = [5000, 300_001]
CASES = [
    (K.total, np.float32),  # f32 leaves into f64 lanes
    (K.total, np.float64),  # the binary counter
    (K.largest, np.float32),  # one pass, NaNs kept apart
    (K.total, np.int32),  # an exact combine, 64-bit lanes
    (K.parity, np.uint8),
    (K.extreme, np.float64),  # a combine of the user's own
]


def values(n: int, dtype) -> np.ndarray:
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(n).astype(dtype)
    return RNG.integers(0, 100, n).astype(dtype)


def past_the_caches(row: np.ndarray, inputs: int = 1) -> np.ndarray:
    """`row` broadcast to enough rows that reducing them reads DRAM_BYTES or more."""
    rows = DRAM_BYTES // (row.nbytes * inputs) + 1
    return np.broadcast_to(row, (rows, row.size))


def assert_every_row_is(got, alone) -> None:
    got = np.asarray(got)
    np.testing.assert_array_equal(got, np.full(got.shape, alone, dtype=got.dtype))


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("kernel, dtype", CASES)
def test_rows_past_the_caches_have_the_bits_of_one_row(length, kernel, dtype):
    row = values(length, dtype)
    assert_every_row_is(g.reduce(kernel)(past_the_caches(row), axis=1), g.reduce(kernel)(row))


@pytest.mark.parametrize("at", [0, 4099, 300_000])
def test_a_nan_wins_in_rows_past_the_caches(at):
    row = values(300_001, np.float32)
    row[at] = np.nan
    assert np.isnan(g.reduce(K.largest)(past_the_caches(row), axis=1)).all()


def test_a_dot_of_two_inputs_counts_both_inputs_bytes():
    x, y = values(5000, np.float32), values(5000, np.float32)
    rows = past_the_caches(x, inputs=2)
    got = g.reduce(K.dot)(rows, np.broadcast_to(y, rows.shape), axis=1)
    assert_every_row_is(got, g.reduce(K.dot)(x, y))


@pytest.mark.parametrize("kernel, dtype", [(K.total, np.float32), (K.largest, np.float32), (K.total, np.int32)])
def test_a_contiguous_array_past_the_caches(kernel, dtype):
    """A real array of DRAM_BYTES: its halves as rows are the halves reduced alone, and the whole
    agrees with NumPy."""
    x = values(DRAM_BYTES // np.dtype(dtype).itemsize, dtype)
    halves = x.reshape(2, -1)
    np.testing.assert_array_equal(g.reduce(kernel)(halves, axis=1), [g.reduce(kernel)(h) for h in halves])
    whole = g.reduce(kernel)(x)
    if kernel is K.largest:
        assert whole == x.max()
    elif dtype == np.int32:
        assert whole == x.sum(dtype=np.int64)
    else:
        np.testing.assert_allclose(whole, x.sum(dtype=np.float64), rtol=1e-6)
