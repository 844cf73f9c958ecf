"""g.reduce over the rows of a narrow C-contiguous array (axis=0 of (n, C), C up to NARROW_COLUMNS:
lang/reduce_columns.py's items, in blocks of a period of columns and vectors or rows streamed in
registers, by width, and the wide tiles' runs of rows for the widths neither takes), against NumPy:
float sums within a pairwise sum's error of the exact sums, integer sums exact, max with NaNs
anywhere, several inputs, params, sliced and 3-D inputs, and the same bits on any thread count."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g
from gompute.lang.reduce_layout import COLUMN_GROUP, NARROW_COLUMNS, NARROW_STREAM

from . import kernels as K
from .columns import assert_columns_near_exact, assert_two_inputs_params_and_combines
from .threads import outputs_by_thread_count

RNG = np.random.default_rng(3207)
# Every width to 70 (each loop's narrowest, the streams' bounds of 16, 32 and 64 columns), and the widest
# the period loop takes and the next: 7 vectors (112 f32, 56 f64: min and max), 15 and 16 (f32 240 and
# 256, f64 120 and 128).
PERIOD_BOUNDS = {111, 112, 113, 119, 120, 121, 127, 128, 129, 239, 240, 241}
COLS = sorted(
    {*range(1, 71), *PERIOD_BOUNDS, NARROW_STREAM + 1, NARROW_COLUMNS - 1, NARROW_COLUMNS, NARROW_COLUMNS + 1}
)
# Fewer rows than a step, a few steps and a remainder, and enough elements for several items a result.
ROWS = [1, COLUMN_GROUP - 1, 4 * COLUMN_GROUP + 3, 1001]
MANY = 150_001  # elements: items of a narrow tile read about 65536, so a result takes several


def _row_counts(cols: int) -> list[int]:
    return [*ROWS, MANY // cols + 7]


@pytest.mark.parametrize("cols", COLS)
def test_float_sums_of_every_width(cols):
    for n in _row_counts(cols):
        for dtype, eps in ((np.float32, 2.0**-24), (np.float64, 2.0**-53)):
            x = RNG.standard_normal((n, cols)).astype(dtype)
            got = g.reduce(K.total)(x, axis=0)
            assert got.dtype == dtype and got.shape == (cols,)
            assert_columns_near_exact(got, x, eps)
            assert np.array_equal(g.reduce(K.total)(x, axis=0, keepdims=True), got[None])


@pytest.mark.parametrize("cols", COLS)
def test_integer_sums_are_exact(cols):
    for n in _row_counts(cols):
        for dtype in (np.int32, np.int64):
            x = RNG.integers(-(2**31), 2**31 - 1, (n, cols), dtype=dtype)
            np.testing.assert_array_equal(g.reduce(K.total)(x, axis=0), np.sum(x, axis=0))


@pytest.mark.parametrize("cols", COLS)
def test_max_with_a_nan_anywhere(cols):
    for n in _row_counts(cols):
        for dtype in (np.float32, np.float64):
            x = RNG.standard_normal((n, cols)).astype(dtype)
            # Column c has its NaN at a row of its own, spread over all rows; every third column none.
            for c in range(0, cols, 3):
                x[(c * 7919) % n, c] = np.nan
            if cols > 1:
                x[n // 2, 1] = np.inf
            np.testing.assert_array_equal(g.reduce(K.largest)(x, axis=0), np.max(x, axis=0))


@pytest.mark.parametrize("cols", [1, 3, 10, 16, 17, 33, 48, 64, 65, 100, 128, NARROW_COLUMNS])
def test_two_inputs_and_params(cols):
    for n in _row_counts(cols):
        assert_two_inputs_params_and_combines(RNG, n, cols)


@pytest.mark.parametrize("cols", [2, 5, 16, 31, 64, 90])
def test_sliced_and_3d_inputs(cols):
    n = MANY // cols + 5
    base = RNG.standard_normal((n + 40, cols)).astype(np.float32)
    rows = base[17 : 17 + n]  # a slice of whole rows: still one run
    assert_columns_near_exact(g.reduce(K.total)(rows, axis=0), rows, 2.0**-24)
    every_other = base[::2]  # rows two apart: the wide tiles' loop
    assert_columns_near_exact(g.reduce(K.total)(every_other, axis=0), every_other, 2.0**-24)
    part = base[:, : max(1, cols // 2)]  # rows of part of each row
    assert_columns_near_exact(g.reduce(K.total)(part, axis=0), part, 2.0**-24)
    # (a, n, C) over axis 1: a result row per a, each its own run; over axis 0: a * C results a row.
    cube = RNG.standard_normal((3, n // 3, cols)).astype(np.float32)
    got = g.reduce(K.total)(cube, axis=1)
    for a in range(3):
        assert_columns_near_exact(got[a], cube[a], 2.0**-24)
    assert_columns_near_exact(
        g.reduce(K.total)(cube.transpose(1, 0, 2), axis=0).reshape(-1),
        cube.transpose(1, 0, 2).reshape(n // 3, -1),
        2.0**-24,
    )
    o = np.zeros((3, 2 * cols), np.float32)[:, ::2]  # a strided output
    assert g.reduce(K.total)(cube, axis=1, out=o) is o
    assert np.array_equal(o, got)


_SCRIPT = """
import hashlib, numpy as np, gompute as g
from tests.reduce import kernels as K
rng = np.random.default_rng(9)
h = hashlib.sha256()
for cols in (1, 3, 10, 16, 17, 33, 48, 64, 65, 100, 128, 256):
    x = rng.standard_normal((400_000 // cols + 7, cols)).astype(np.float32)
    y = rng.standard_normal(x.shape).astype(np.float32)
    for r in (g.reduce(K.total)(x, axis=0), g.reduce(K.total)(x.astype(np.float64), axis=0),
              g.reduce(K.largest)(x, axis=0), g.reduce(K.dot)(x, y, axis=0)):
        h.update(np.ascontiguousarray(r).tobytes())
print(h.hexdigest())
"""


def test_narrow_columns_give_the_same_bits_on_any_thread_count():
    outs = outputs_by_thread_count(_SCRIPT)
    assert outs[0] == outs[1] == outs[2] and len(outs[0]) > 60
