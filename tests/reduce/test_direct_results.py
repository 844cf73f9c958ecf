"""Reductions whose first launch covers each result in one item store their results straight into the
output (no partials, no finish launch): short rows, transposed inputs read across results, outputs
given strided or with kept dimensions, on the first call (the general path) and on repeated ones
(the C++ fast path), on the host and on CUDA (the fake driver of `make test`'s second pass, or a GPU)."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g

from . import kernels as K
from .accuracy import assert_near_exact
from .test_fake_cuda import _down, _on, cuda  # noqa: F401 - cuda is a fixture
from .test_reduce_fast_path import counting

rng = np.random.default_rng(32)
WIDTHS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 64, 65]
ROWS = 1001  # several host blocks of short rows, and a last block cut short


def _ints(shape, dtype) -> np.ndarray:
    """Small integers as `dtype`: every sum below is exact in every type, so results compare equal."""
    return rng.integers(-8, 9, shape).astype(dtype)


def _twice(kernel, *args, **kwargs) -> list:
    """The results of a first call (the general path) and a repeated one (the fast path), copied."""
    r, calls = counting(kernel)
    first = np.array(r(*args, **kwargs), copy=True)
    assert len(calls) == 1
    before = g.runtime.stats()["launches"]
    second = np.array(r(*args, **kwargs), copy=True)
    assert len(calls) == 1, "the fast path declined the call"
    assert g.runtime.stats()["launches"] == before + 1, "one launch: the first stores the results"
    return [first, second]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.float16])
@pytest.mark.parametrize("width", WIDTHS)
def test_short_rows_sum_into_a_new_result(width, dtype):
    x = _ints((ROWS, width), dtype)
    want = np.sum(x.astype(np.float64), axis=1).astype(np.sum(x[:1], axis=1).dtype)
    for got in _twice(K.total, x, axis=1):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("width", [1, 3, 8, 9, 64, 65])
def test_short_rows_of_random_floats(width):
    x = rng.standard_normal((ROWS, width)).astype(np.float32)
    for got in _twice(K.total, x, axis=1):
        assert_near_exact(got, x, 2.0**-24)


@pytest.mark.parametrize("width", [1, 3, 8, 9])
def test_short_rows_of_two_inputs_packed_and_broadcast(width):
    x, y = _ints((ROWS, width), np.float32), _ints((ROWS, width), np.float32)
    for b in (y, y[0], y[:, :1]):
        for got in _twice(K.dot, x, b, axis=1):
            np.testing.assert_array_equal(got, np.sum(x * b, axis=1))


@pytest.mark.parametrize("width", [3, 9, 65])
def test_max_and_a_custom_combine(width):
    x = rng.standard_normal((ROWS, width))
    for got in _twice(K.largest, x, axis=1):
        np.testing.assert_array_equal(got, np.max(x, axis=1))
    want = x[np.arange(ROWS), np.argmax(np.abs(x), axis=1)]
    for got in _twice(K.extreme, x, axis=1):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("width", [1, 3, 9, 65])
def test_a_column_of_a_bigger_array_as_out(width):
    x = _ints((ROWS, width), np.float32)
    r, calls = counting(K.total)
    for _ in range(2):
        big = np.full((ROWS, 4), -1.0, np.float32)
        assert r(x, axis=1, out=big[:, 2]) is not None
        np.testing.assert_array_equal(big[:, 2], np.sum(x, axis=1))
        np.testing.assert_array_equal(big[:, [0, 1, 3]], -1.0)  # the other columns untouched
    assert len(calls) == 1


@pytest.mark.parametrize("width", [3, 65])
def test_keepdims_and_a_reversed_out(width):
    x = _ints((ROWS, width), np.float64)
    r, calls = counting(K.total)
    for _ in range(2):
        out = np.zeros((ROWS, 1))
        assert r(x, axis=1, keepdims=True, out=out) is out
        np.testing.assert_array_equal(out, np.sum(x, axis=1, keepdims=True))
        back = np.zeros(ROWS)
        r(x, axis=1, out=back[::-1])
        np.testing.assert_array_equal(back[::-1], np.sum(x, axis=1))
    assert len(calls) == 1  # the output's dtype is the signature, not its shape or strides


@pytest.mark.parametrize("reduced", [3, 17, 128])
def test_a_transposed_input_reduced_across_results(reduced):
    """x.T reduced along its rows: the columns entry, its results contiguous in the input, in one
    item each up to the rows an item takes."""
    x = _ints((reduced, ROWS), np.float32).T
    for got in _twice(K.total, x, axis=1):
        np.testing.assert_array_equal(got, np.sum(x, axis=1))
    big = np.zeros((ROWS, 3), np.float32)
    g.reduce(K.largest)(x, axis=1, out=big[:, 1])
    np.testing.assert_array_equal(big[:, 1], np.max(x, axis=1))


@pytest.mark.parametrize(
    "shape, axis",
    [((ROWS, 129), 1), ((4000, 7), 0), ((300, 70), 0), ((1000, 100), 0), ((3, 300_000), 1), ((7, 4, 5), (0, 2))],
)
def test_results_of_several_items_or_dimensions_match_numpy(shape, axis):
    """Around the direct stores: columns over more rows than an item takes and rows longer than an
    item (partials and the finish, which merges 32 results' partials at once where 32 are left,
    the rest one by one), and results over two kept dimensions."""
    x = _ints(shape, np.float32)
    r, calls = counting(K.total)
    for _ in range(2):
        np.testing.assert_array_equal(r(x, axis=axis), np.sum(x, axis=axis))
    assert len(calls) == 1


def test_an_empty_reduction_writes_the_identity():
    r, calls = counting(K.total)
    for _ in range(2):
        np.testing.assert_array_equal(r(np.zeros((5, 0), np.float32), axis=1), np.zeros(5))
    assert len(calls) == 1


@pytest.mark.parametrize("width", [1, 3, 65, 3000])
def test_cuda_rows(cuda, width):  # noqa: F811 - the fixture
    x = _ints((300, width), np.float32)
    buf = _on(cuda, x)
    r, calls = counting(K.total)
    for _ in range(2):
        np.testing.assert_array_equal(_down(cuda, r(buf, axis=1), np.float32), np.sum(x, axis=1))
        big = cuda.empty((300, 3), g.f32)
        big.upload(np.full((300, 3), -1, np.float32))
        column = big.view(g.f32, (300,), (12,), 4)
        r(buf, axis=1, out=column)
        want = np.full((300, 3), -1, np.float32)
        want[:, 1] = np.sum(x, axis=1)
        np.testing.assert_array_equal(_down(cuda, big, np.float32), want)
    assert len(calls) == 1


@pytest.mark.parametrize("reduced", [3, 128, 300])
def test_cuda_columns(cuda, reduced):  # noqa: F811 - the fixture
    x = rng.standard_normal((reduced, 70)).astype(np.float32)
    buf = _on(cuda, x)
    r, calls = counting(K.absmax)
    for _ in range(2):
        out = cuda.empty((1, 70), g.f32)
        r(buf, axis=0, keepdims=True, out=out)
        np.testing.assert_array_equal(_down(cuda, out, np.float32), np.max(np.abs(x), axis=0, keepdims=True))
    assert len(calls) == 1
