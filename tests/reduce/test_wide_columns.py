"""g.reduce over the rows of a wide C-contiguous array (axis=0 of (n, C), C past NARROW_COLUMNS:
lang/reduce_entries.py's columns items, tiles of up to column_width results over chunks of
COLUMN_ROWS rows, COLUMN_GROUP rows a step, a whole chunk in long runs), against NumPy: every width
around the tiles' bounds, every row count around a step's and a chunk's, inputs starting anywhere in
a 64-byte line (and two inputs apart), float sums within a pairwise sum's error of the exact sums,
integer and small-integer float sums exact, min and max with NaNs in any run and step, the other
combines, strided, sliced and 3-D inputs, out= and keepdims, and the same bits on any thread count."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g
from gompute.lang.reduce_layout import COLUMN_GROUP, COLUMN_ROWS, NARROW_COLUMNS, column_width

from . import kernels as K
from .columns import assert_columns_near_exact, assert_two_inputs_params_and_combines
from .threads import outputs_by_thread_count

RNG = np.random.default_rng(3232)
LINE = 64  # bytes: a step's column loop starts at the first input row's next line
F32_TILE, F64_TILE = column_width(g.f32), column_width(g.f64)
WIDTHS = sorted(
    {NARROW_COLUMNS + 1, 300, 511, 512, 640, 1000, 1023, 1024, 1025}
    | {w + d for w in (F64_TILE, F32_TILE) for d in (-1, 0, 1)}
)
# Fewer rows than a step; steps and a remainder inside a chunk; exactly one chunk (the results stored
# directly); a chunk and fewer rows than a step; two whole chunks; whole chunks, then one of steps and
# a remainder (the items' partials, merged by the finish).
ROWS = [
    COLUMN_GROUP - 3,
    3 * COLUMN_GROUP + 5,
    COLUMN_ROWS,
    COLUMN_ROWS + 9,
    2 * COLUMN_ROWS,
    3 * COLUMN_ROWS + 2 * COLUMN_GROUP + 7,
]
EPS = {np.float32: 2.0**-24, np.float64: 2.0**-53}


def _small_ints(shape, dtype, bound: int = 2**10) -> np.ndarray:
    """Nonzero integers below `bound`: every partial sum of a few thousand rows (of their products, two
    of at most 2**5) is exact in f32, so a row left out, taken twice or from another column changes the
    result."""
    x = RNG.integers(1, bound, shape) * RNG.choice([-1, 1], shape)
    return x.astype(dtype)


def _in_line(n: int, cols: int, dtype, first: int) -> np.ndarray:
    """An (n, cols) C-contiguous view whose first element lies `first` elements past a 64-byte line."""
    size = np.dtype(dtype).itemsize
    raw = np.empty(n * cols + 2 * LINE // size, dtype)
    start = (-raw.ctypes.data) % LINE // size + first
    view = raw[start : start + n * cols].reshape(n, cols)
    assert view.ctypes.data % LINE == first * size
    return view


@pytest.mark.parametrize("cols", WIDTHS)
def test_float_sums_of_every_width(cols):
    for n in ROWS:
        for dtype, eps in EPS.items():
            x = RNG.standard_normal((n, cols)).astype(dtype)
            got = g.reduce(K.total)(x, axis=0)
            assert got.dtype == dtype and got.shape == (cols,)
            assert_columns_near_exact(got, x, eps)
            assert np.array_equal(g.reduce(K.total)(x, axis=0, keepdims=True), got[None])
            ints = _small_ints((n, cols), dtype)
            np.testing.assert_array_equal(g.reduce(K.total)(ints, axis=0), np.sum(ints, axis=0))


@pytest.mark.parametrize("cols", WIDTHS)
def test_integer_sums_are_exact(cols):
    for n in ROWS:
        for dtype in (np.int32, np.int64):
            x = RNG.integers(-(2**31), 2**31 - 1, (n, cols), dtype=dtype)
            got = g.reduce(K.total)(x, axis=0)
            assert got.dtype == np.sum(x[:1], axis=0).dtype
            np.testing.assert_array_equal(got, np.sum(x, axis=0))


@pytest.mark.parametrize("cols", [NARROW_COLUMNS + 1, 1000, 1024, F64_TILE + 1, F32_TILE + 1])
@pytest.mark.parametrize("kernel, reference", [(K.largest, np.max), (K.smallest, np.min)])
def test_min_and_max_with_a_nan_in_any_run_and_step(cols, kernel, reference):
    for n in ROWS:
        for dtype in (np.float32, np.float64):
            x = RNG.standard_normal((n, cols)).astype(dtype)
            # Column c has its NaN at a row of its own, spread over every row (so every run, step and
            # remainder of a chunk); every third column none; one column the infinity that wins.
            for c in range(0, cols, 3):
                x[(c * 7919) % n, c] = np.nan
            x[n // 2, 1] = np.inf if kernel is K.largest else -np.inf
            np.testing.assert_array_equal(g.reduce(kernel)(x, axis=0), reference(x, axis=0))


@pytest.mark.parametrize("cols", [1000, 1024, F32_TILE])
def test_every_start_in_a_line(cols):
    """The same rows starting at each element of a 64-byte line: the columns before the first row's next
    line take every count, and rows whose stride is a multiple of a line keep that count on every row."""
    for n in (3 * COLUMN_GROUP + 5, COLUMN_ROWS, 2 * COLUMN_ROWS + 2 * COLUMN_GROUP + 7):
        for dtype in (np.float32, np.float64, np.int32, np.int64):
            data = _small_ints((n, cols), dtype)
            want = np.sum(data, axis=0)
            for first in range(LINE // data.itemsize):
                x = _in_line(n, cols, dtype, first)
                x[...] = data
                np.testing.assert_array_equal(g.reduce(K.total)(x, axis=0), want, err_msg=f"start {first}")


@pytest.mark.parametrize("cols", [300, 1000, 1024, F32_TILE + 1])
def test_two_inputs_apart_in_their_lines(cols):
    """K.dot of inputs at different places in their lines: the second's columns meet the first's line
    start anywhere in its own."""
    n = 2 * COLUMN_ROWS + 2 * COLUMN_GROUP + 7
    a, b = _small_ints((2, n, cols), np.float32, 2**5)
    want = np.sum(a.astype(np.float64) * b, axis=0)
    x = _in_line(n, cols, np.float32, 0)
    x[...] = a
    for first in range(LINE // 4):
        y = _in_line(n, cols, np.float32, first)
        y[...] = b
        np.testing.assert_array_equal(g.reduce(K.dot)(x, y, axis=0), want, err_msg=f"second at {first}")
        np.testing.assert_array_equal(g.reduce(K.dot)(y, x, axis=0), want, err_msg=f"first at {first}")
    x, y = RNG.standard_normal((2, n, cols)).astype(np.float32)
    x, y = x[:, 1:], y[:, :-1]  # rows of the same stride, the inputs' starts an element apart
    assert_columns_near_exact(g.reduce(K.dot)(x, y, axis=0), x.astype(np.float64) * y, 2.0**-24)


@pytest.mark.parametrize("cols", [NARROW_COLUMNS + 1, 1000, 1024, F64_TILE + 1, F32_TILE + 1])
def test_other_combines_params_and_a_broadcast_row(cols):
    for n in ROWS:
        assert_two_inputs_params_and_combines(RNG, n, cols)


@pytest.mark.parametrize("cols", [NARROW_COLUMNS + 1, 1000, 1024, F32_TILE + 1])
def test_strided_sliced_and_3d_inputs(cols):
    n = 3 * COLUMN_ROWS + 2 * COLUMN_GROUP + 7
    base = _small_ints((2 * n + 1, cols), np.float32)
    for x in (
        base[1 : n + 1],  # whole rows from the second on
        base[::2],  # rows two apart
        base[:, : cols - 5],  # part of each row
        base[3::2, 7:],  # both, starting mid-line
    ):
        np.testing.assert_array_equal(g.reduce(K.total)(x, axis=0), np.sum(x, axis=0))
    b = 2 * COLUMN_GROUP + 3  # rows a block: steps cross from one block into the next
    cube = _small_ints((2 * COLUMN_ROWS // b + 3, b, cols), np.float32)
    # Two reduced axes that merge into one, and two that do not: the first axis in steps of two, or rows
    # cut short of the block.
    for x in (cube, cube[::2], cube[:, : b - 1], cube.transpose(1, 0, 2)):
        np.testing.assert_array_equal(g.reduce(K.total)(x, axis=(0, 1)), np.sum(x, axis=(0, 1)))
    # A transposed middle axis reduced: a result row per block row, each its own input row; the first
    # axis reduced: the blocks' rows, one result row of b * cols.
    tall = cube.transpose(1, 0, 2)
    np.testing.assert_array_equal(g.reduce(K.total)(tall, axis=1), np.sum(tall, axis=1))
    np.testing.assert_array_equal(g.reduce(K.total)(cube, axis=0), np.sum(cube, axis=0))
    # Four dimensions, two of them reduced apart: a result row per kept outer index.
    four = cube[:, :6].reshape(cube.shape[0], 2, 3, cols)
    np.testing.assert_array_equal(g.reduce(K.total)(four, axis=(0, 2)), np.sum(four, axis=(0, 2)))
    x = base[:n]
    want = np.sum(x, axis=0)
    o = np.zeros(2 * cols, np.float32)[::2]  # a strided output
    assert g.reduce(K.total)(x, axis=0, out=o) is o
    np.testing.assert_array_equal(o, want)
    kept = np.zeros((1, cols), np.float32)
    assert g.reduce(K.total)(x, axis=0, keepdims=True, out=kept) is kept
    np.testing.assert_array_equal(kept, want[None])
    for n in (COLUMN_GROUP - 3, COLUMN_ROWS):  # one item a result: its out= stores go through the strides
        o = np.zeros((cols, 3), np.float32)[::-1, 1]
        assert g.reduce(K.total)(base[:n], axis=0, out=o) is o
        np.testing.assert_array_equal(o, np.sum(base[:n], axis=0))


_SCRIPT = """
import hashlib, numpy as np, gompute as g
from tests.reduce import kernels as K
rng = np.random.default_rng(11)
h = hashlib.sha256()
for cols in (257, 1000, 1024, 2049, 4097):
    for n in (128, 423):
        x = rng.standard_normal((n, cols)).astype(np.float32)
        y = np.empty(n * cols + 3, np.float32)[3:].reshape(n, cols)  # three elements on from x's start
        y[...] = rng.standard_normal(x.shape)
        cube = x[: n // 16 * 16].reshape(16, -1, cols)[:, 1:]  # two reduced axes, not merged
        for r in (g.reduce(K.total)(x, axis=0), g.reduce(K.total)(x.astype(np.float64), axis=0),
                  g.reduce(K.largest)(x, axis=0), g.reduce(K.dot)(x, y, axis=0),
                  g.reduce(K.total)(cube, axis=(0, 1)), g.reduce(K.total)(x[::2], axis=0)):
            h.update(np.ascontiguousarray(r).tobytes())
print(h.hexdigest())
"""


def test_wide_columns_give_the_same_bits_on_any_thread_count():
    outs = outputs_by_thread_count(_SCRIPT)
    assert outs[0] == outs[1] == outs[2] and len(outs[0]) > 60
