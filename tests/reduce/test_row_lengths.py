"""g.reduce along rows of every length a host row path handles (fixed widths across rows, tiles of
rows reduced at once, lanes along a row of at most a leaf, leaves past that), against NumPy: float
sums within a pairwise sum's error of the exact sum, integer sums exact, min and max with NaNs
anywhere, several inputs, params, strided and transposed rows, keepdims and out=, and the same bits
on any thread count."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g
from gompute.lang.reduce_layout import LEAF_ROWS, NARROW_LEAF_ROWS, lanes
from gompute.lang.reduce_short import FIXED_STEPS, TILE, TILE_FIRST, TILE_SUM_LAST

from . import kernels as K
from .accuracy import assert_near_exact
from .threads import outputs_by_thread_count

RNG = np.random.default_rng(1032)
# An f32 sum's leaf: rows of at most this many elements are reduced the same way wherever they lie.
F32_LEAF = NARROW_LEAF_ROWS * lanes(g.f32)
LENGTHS = [*range(1, 71), 100, 127, 128, 129, 255, 256, 257, 1000, 1023, 1024, 1025, 4096]
# Tiles' row lengths: every one with a loop of its own, the edges of a step of the longer ones', a
# leaf (a min's or max's longest lane row) and the next, and a min's or max's longest, two leaves.
MAX_LEAF = LEAF_ROWS * lanes(g.f32)
TILED = [*range(TILE_FIRST, (FIXED_STEPS + 2) * TILE + 2), 47, 48, 49, 200, MAX_LEAF, MAX_LEAF + 1, 2 * MAX_LEAF]
SUM_TILED = range(TILE_FIRST, TILE_SUM_LAST + 1)
TILE_ROWS = 3 * TILE + 3  # whole tiles and a short one


class Scale(g.Params):
    by: g.f32


@g.reduce_kernel(identity=0)
def scaled_sum(x: g.f32, p: Scale) -> g.f32:
    return x * p.by


def _rows(n: int, dtype, rows: int = 13) -> np.ndarray:
    return RNG.standard_normal((rows, n)).astype(dtype)


@pytest.mark.parametrize("n", LENGTHS)
def test_float_sums_of_every_row_length(n):
    for dtype, eps in ((np.float32, 2.0**-24), (np.float64, 2.0**-53)):
        x = _rows(n, dtype)
        got = g.reduce(K.total)(x, axis=1)
        assert got.dtype == dtype
        assert_near_exact(got, x, eps)
        assert np.array_equal(g.reduce(K.total)(x, axis=-1, keepdims=True), got[:, None])


@pytest.mark.parametrize("n", LENGTHS)
def test_integer_sums_are_exact(n):
    x = RNG.integers(-(2**31), 2**31 - 1, (11, n), dtype=np.int32)
    np.testing.assert_array_equal(g.reduce(K.total)(x, axis=1), np.sum(x, axis=1))


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("kernel, reference", [(K.largest, np.max), (K.smallest, np.min)])
def test_min_and_max_with_a_nan_anywhere(n, kernel, reference):
    for dtype in (np.float32, np.float64):
        # Row r has its NaN at a place of its own, spread over the whole row; the last rows none.
        x = _rows(n, dtype, rows=min(n, 40) + 2)
        for r in range(x.shape[0] - 2):
            x[r, r * n // (x.shape[0] - 2)] = np.nan
        x[-1, n // 2] = np.inf if kernel is K.largest else -np.inf
        np.testing.assert_array_equal(g.reduce(kernel)(x, axis=1), reference(x, axis=1))


@pytest.mark.parametrize("n", LENGTHS)
def test_two_inputs_and_params(n):
    x, y = _rows(n, np.float32), _rows(n, np.float32)
    assert_near_exact(g.reduce(K.dot)(x, y, axis=1), x.astype(np.float64) * y, 2.0**-24)
    # y broadcast along each row (one value a row) and along the rows (one row for all).
    col, row = y[:, :1], y[:1, :]
    assert_near_exact(g.reduce(K.dot)(x, col, axis=1), x.astype(np.float64) * col, 2.0**-24)
    assert_near_exact(g.reduce(K.dot)(x, row, axis=1), x.astype(np.float64) * row, 2.0**-24)
    z = _rows(n, np.float64)
    assert_near_exact(g.reduce(K.shifted_sum)(z, axis=1, by=0.5), z + 0.5, 2.0**-53)


@pytest.mark.parametrize("n", LENGTHS)
def test_strided_and_transposed_rows(n):
    base = _rows(2 * n, np.float32, rows=9)
    every_other = base[:, ::2]  # rows at element stride 2
    transposed = np.ascontiguousarray(every_other.T).T  # rows at element stride 9
    packed = np.ascontiguousarray(every_other)
    want = g.reduce(K.total)(packed, axis=1)
    assert_near_exact(want, packed, 2.0**-24)
    strided = g.reduce(K.total)(every_other, axis=1)
    if n <= F32_LEAF:
        assert np.array_equal(strided, want)
    assert_near_exact(strided, packed, 2.0**-24)
    assert_near_exact(g.reduce(K.total)(transposed, axis=1), packed, 2.0**-24)  # a columns reduction, its own order
    np.testing.assert_array_equal(g.reduce(K.largest)(transposed, axis=1), np.max(packed, axis=1))


@pytest.mark.parametrize("n", [1, 9, 17, 64, 100, 1000, 1025])
def test_out_given_at_a_stride_and_kept_dimensions(n):
    x = _rows(n, np.float32, rows=30).reshape(5, 6, n)
    o = np.zeros((5, 12), np.float32)[:, ::2]  # a strided output
    got = g.reduce(K.total)(x, axis=2, out=o)
    assert got is o
    assert_near_exact(o.reshape(-1), x.reshape(-1, n), 2.0**-24)
    # Kept dimensions that do not merge (a slice of each): the rows are stepped through both.
    y = x[:, ::2]
    assert np.array_equal(g.reduce(K.total)(y, axis=2, keepdims=True), o[:, ::2, None])


_SCRIPT = """
import hashlib, numpy as np, gompute as g
from tests.reduce import kernels as K
rng = np.random.default_rng(5)
h = hashlib.sha256()
for n in (3, 9, 16, 17, 33, 64, 100, 256, 1000, 1025, 4096):
    x = rng.standard_normal((300_000 // n + 7, n)).astype(np.float32)
    y = rng.standard_normal(x.shape).astype(np.float32)
    for r in (g.reduce(K.total)(x, axis=1), g.reduce(K.total)(x.astype(np.float64), axis=1),
              g.reduce(K.largest)(x, axis=1), g.reduce(K.dot)(x, y, axis=1), g.reduce(K.total)(x[:, ::2], axis=1)):
        h.update(np.ascontiguousarray(r).tobytes())
print(h.hexdigest())
"""


def test_rows_give_the_same_bits_on_any_thread_count():
    outs = outputs_by_thread_count(_SCRIPT)
    assert outs[0] == outs[1] == outs[2] and len(outs[0]) > 60


def _placements(x: np.ndarray) -> list[np.ndarray]:
    """x's rows where they lie in other layouts, each giving x's results in order: in place at a longer
    pitch, in place in reverse order, at a stride (gathered), and under two kept dimensions that do not
    merge (gathered)."""
    wide = np.zeros((x.shape[0], 2 * x.shape[1]), x.dtype)
    wide[:, : x.shape[1]] = x
    spread = np.zeros((x.shape[0], 2 * x.shape[1]), x.dtype)
    spread[:, ::2] = x
    deep = np.zeros((3, 2 * x.shape[0] // 3, x.shape[1]), x.dtype)
    deep[:, ::2] = x.reshape(3, -1, x.shape[1])
    return [wide[:, : x.shape[1]], np.ascontiguousarray(x[::-1])[::-1], spread[:, ::2], deep[:, ::2]]


@pytest.mark.parametrize("n", TILED)
@pytest.mark.parametrize("kernel, reference", [(K.largest, np.max), (K.smallest, np.min)])
def test_tiles_of_min_and_max_with_one_nan_or_both_infinities(n, kernel, reference):
    """A NaN in one row of a tile, +inf and -inf in two rows of another (their sum a NaN too): the tile is
    reduced again with NaN-propagating combines, and every row's result is its own."""
    x = _rows(n, np.float32, rows=TILE_ROWS)
    x[TILE + 3, n // 2] = np.nan
    x[1, 0], x[2, n - 1] = np.inf, -np.inf
    x[-1, n - 1] = np.nan  # in the short tile
    want = reference(x, axis=1)
    got = g.reduce(kernel)(x, axis=1)
    np.testing.assert_array_equal(got, want)
    for placed in _placements(x):
        np.testing.assert_array_equal(g.reduce(kernel)(placed, axis=-1).reshape(-1), want)


@pytest.mark.parametrize("n", SUM_TILED)
def test_tile_sums_give_the_same_bits_wherever_rows_lie(n):
    x = _rows(n, np.float32, rows=TILE_ROWS)
    got = g.reduce(K.total)(x, axis=1)
    assert_near_exact(got, x, 2.0**-24)
    for placed in _placements(x):
        assert np.array_equal(g.reduce(K.total)(placed, axis=-1).reshape(-1), got)
    o = np.zeros(2 * TILE_ROWS, np.float32)[::2]  # the results at a stride
    g.reduce(K.total)(x, axis=1, out=o)
    assert np.array_equal(o, got)


@pytest.mark.parametrize("n", TILED)
def test_tiles_of_halves_params_and_maps(n):
    x = _rows(n, np.float32, rows=TILE_ROWS)
    h = x.astype(np.float16)
    got = g.reduce(K.total)(h, axis=1)  # f16 values summed in f32, rounded to f16 once
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, g.reduce(K.total)(h.astype(np.float32), axis=1).astype(np.float16))
    assert_near_exact(g.reduce(scaled_sum)(x, axis=1, by=0.5), x.astype(np.float64) * 0.5, 2.0**-24)
    np.testing.assert_array_equal(g.reduce(K.absmax)(x, axis=1), np.max(np.abs(x), axis=1))
    assert_near_exact(g.reduce(K.sumsq)(x, axis=1), x.astype(np.float64) ** 2, 2.0**-24)
