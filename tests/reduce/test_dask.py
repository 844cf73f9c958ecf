"""g.reduce on Dask arrays: a lazy graph of dask.array.reduction, one call per chunk (per block of
chunks aligned as in g.map, for several inputs), the chunks' results folded with the kernel's
combine."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import gompute as g

from . import kernels as K

da = pytest.importorskip("dask.array", reason="dask is not installed (pip install gompute[dask])")

AXES = [None, 0, 1, -1, (0, 1), (-1, 0)]


class Offset(g.Params):
    by: g.f64


@g.reduce_kernel(identity=0)
def offset_fma(x: g.f64, y: g.f64, z: g.f64, p: Offset) -> g.f64:
    return x * y + z + p.by


@g.reduce_kernel(combine=g.max)
def widest_gap(x: g.f32, y: g.f32) -> g.f32:
    return abs(x - y)


@g.reduce_kernel(combine=min)
def least_product(x: g.f32, y: g.f32) -> g.f32:
    return x * y


@g.reduce_kernel(identity=0)
def byte_sum(x: g.u8) -> g.u8:  # annotated: a u8 accumulator, wrapping as np.sum(dtype=np.uint8)
    return x


def normal(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_of_dask_arrays_are_lazy_and_match_numpy(axis, keepdims):
    x = normal((30, 41), 3)
    d = da.from_array(x, chunks=(7, 10))
    lazy = g.reduce(K.sumsq)(d, axis=axis, keepdims=keepdims)
    assert isinstance(lazy, da.Array) and lazy.dtype == np.float32
    np.testing.assert_allclose(lazy.compute(), np.sum(x * x, axis=axis, keepdims=keepdims), rtol=1e-5)
    np.testing.assert_array_equal(g.reduce(K.largest)(d, axis=axis).compute(), np.max(x, axis=axis))


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_a_dot_of_dask_arrays_chunked_differently_matches_numpy(scheduler, axis, keepdims):
    x, y = normal((30, 41), 4), normal((30, 41), 5)
    launches = g.runtime.stats()["launches"]
    dx, dy = da.from_array(x, chunks=(7, 10)), da.from_array(y, chunks=(11, 6))
    lazy = g.reduce(K.dot)(dx, dy, axis=axis, keepdims=keepdims)
    assert g.runtime.stats()["launches"] == launches  # nothing ran, not even on empty arrays
    expected = np.sum(x.astype(np.float64) * y, axis=axis, keepdims=keepdims)
    assert isinstance(lazy, da.Array) and lazy.dtype == np.float32 and lazy.shape == expected.shape
    assert type(lazy._meta) is np.ndarray and lazy._meta.ndim == expected.ndim
    got = lazy.compute(scheduler=scheduler)
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis", AXES)
def test_dask_and_numpy_arrays_broadcast_together(axis):
    x, row = normal((30, 41), 6), normal(41, 7)
    d = da.from_array(x, chunks=(8, 9))
    expected = np.sum(x.astype(np.float64) * row, axis=axis)
    np.testing.assert_allclose(g.reduce(K.dot)(d, row, axis=axis).compute(), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g.reduce(K.dot)(row, d, axis=axis).compute(), expected, rtol=1e-5, atol=1e-5)
    column = da.from_array(normal((30, 1), 8), chunks=(4, 1))
    expected = np.sum(column.compute().astype(np.float64) * row, axis=axis)
    np.testing.assert_allclose(g.reduce(K.dot)(column, row, axis=axis).compute(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis", [None, 1, -3, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_three_inputs_and_params_reach_every_chunk(axis, keepdims):
    x, y, z = normal((5, 12, 9), 9, np.float64), normal((12, 1), 10, np.float64), normal(9, 11, np.float64)
    dx = da.from_array(x, chunks=(2, 5, 4))
    dz = da.from_array(z, chunks=3)
    lazy = g.reduce(offset_fma)(dx, y, dz, axis=axis, keepdims=keepdims, by=0.5)
    expected = np.sum(x * y + z + 0.5, axis=axis, keepdims=keepdims)
    assert lazy.dtype == np.float64
    np.testing.assert_allclose(lazy.compute(scheduler="threads"), expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(g.ArgumentError, match="needs a value for by"):
        g.reduce(offset_fma)(dx, y, dz, axis=axis)


@pytest.mark.parametrize("axis", AXES)
def test_several_inputs_combine_with_min_and_max(axis):
    x, y = normal((30, 41), 12), normal((30, 41), 13)
    dx, dy = da.from_array(x, chunks=(9, 8)), da.from_array(y, chunks=(5, 41))
    got = g.reduce(widest_gap)(dx, dy, axis=axis).compute(scheduler="sync")
    np.testing.assert_array_equal(got, np.max(np.abs(x - y), axis=axis))
    got = g.reduce(least_product)(dx, y, axis=axis).compute(scheduler="threads")
    np.testing.assert_array_equal(got, np.min(x * y, axis=axis))


def test_an_empty_reduced_axis_gives_the_identity_or_is_refused_as_in_a_plain_call():
    empty = np.zeros((0, 5), np.float32)
    d = da.from_array(empty, chunks=2)
    for axis in (0, 1, None):
        expected = g.reduce(K.dot)(empty, empty, axis=axis)  # the identity, or no results
        got = g.reduce(K.dot)(d, d, axis=axis).compute()
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    assert g.reduce(widest_gap)(d, empty, axis=1).compute().shape == (0,)  # no results: nothing to refuse
    for axis in (0, None):
        with pytest.raises(g.ArgumentError, match="zero elements"):
            g.reduce(widest_gap)(empty, empty, axis=axis)
        with pytest.raises(g.ArgumentError, match="zero elements"):  # when the graph is built
            g.reduce(widest_gap)(d, empty, axis=axis)
        with pytest.raises(g.ArgumentError, match="zero elements"):
            g.reduce(K.largest)(d, axis=axis)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_chunks_of_no_elements_do_not_stop_a_reduction_with_no_identity(axis):
    x, y = normal((10, 7), 14), normal((10, 7), 15)
    dx = da.from_array(x, chunks=((0, 4, 0, 6), (3, 0, 4)))
    np.testing.assert_array_equal(g.reduce(K.largest)(dx, axis=axis).compute(), np.max(x, axis=axis))
    got = g.reduce(widest_gap)(dx, da.from_array(y, chunks=((5, 0, 5), 7)), axis=axis).compute()
    np.testing.assert_array_equal(got, np.max(np.abs(x - y), axis=axis))


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_chunks_of_unknown_size_some_empty_reduce_with_no_identity(axis):
    """Boolean indexing leaves chunk sizes Dask does not know, some of them empty: their partials are
    empty, as Dask's own max makes them for one dimension (for two it fails where this does not)."""
    a = normal((12, 5), 16)
    a[:, 0] = np.arange(12)
    x = da.from_array(a, chunks=(2, 2))
    picked, rows = x[x[:, 0] > 7], a[a[:, 0] > 7]
    assert all(np.isnan(picked.chunks[0]))
    np.testing.assert_array_equal(g.reduce(K.largest)(picked, axis=axis).compute(), np.max(rows, axis=axis))
    got = g.reduce(least_product)(picked, picked, axis=axis).compute()
    np.testing.assert_array_equal(got, np.min(rows * rows, axis=axis))
    none = x[x[:, 0] > 100]
    assert g.reduce(K.largest)(none, axis=1).compute().shape == (0,)
    if axis != 1:
        with pytest.raises(g.ArgumentError, match="largest: a reduction over zero elements"):
            g.reduce(K.largest)(none, axis=axis).compute()


def test_integer_sums_keep_numpys_accumulator_and_params_pass_through():
    i = np.arange(-50, 70, dtype=np.int8).reshape(12, 10)
    got = g.reduce(K.total)(da.from_array(i, chunks=5), axis=0).compute()
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.sum(i, axis=0))
    z = np.linspace(0, 1, 90).reshape(9, 10)
    got = g.reduce(K.shifted_sum)(da.from_array(z, chunks=4), axis=1, by=2.0).compute()
    np.testing.assert_allclose(got, np.sum(z + 2, axis=1))


def test_the_graph_pickles_and_refuses_what_it_cannot_take():
    d = da.ones((8, 8), chunks=4, dtype=np.float32)
    lazy = g.reduce(K.sumsq)(d, axis=0)
    np.testing.assert_allclose(pickle.loads(pickle.dumps(lazy)).compute(), np.full(8, 8.0))
    lazy = g.reduce(K.dot)(d, np.full(8, 2, np.float32), axis=1)
    np.testing.assert_allclose(pickle.loads(pickle.dumps(lazy)).compute(), np.full(8, 16.0))
    with pytest.raises(g.ArgumentError, match="out="):
        g.reduce(K.sumsq)(d, out=np.zeros(()))
    with pytest.raises(g.ArgumentError, match="out="):
        g.reduce(K.dot)(d, d, out=np.zeros(()))
    with pytest.raises(g.ArgumentError, match="stream="):
        g.reduce(K.dot)(d, d, stream=0)
    with pytest.raises(g.ArgumentError, match="takes 2 arrays"):
        g.reduce(K.dot)(d)


def test_an_annotated_narrow_accumulator_folds_chunks_in_its_own_type_after_pickling():
    """A worker unpickles the graph, the combiner of the chunks' results among it: it folds them in
    their own type (u8), not by NumPy's rules for an unannotated kernel (uint64)."""
    x = np.full(200, 3, np.uint8)
    lazy = g.reduce(byte_sum)(da.from_array(x, chunks=50))
    for graph in (lazy, pickle.loads(pickle.dumps(lazy))):
        got = graph.compute(scheduler="sync")
        assert got.dtype == np.uint8 and got == np.sum(x, dtype=np.uint8) == 88


def test_a_python_number_beside_a_dask_array_is_refused_by_name():
    d = da.ones((8, 8), chunks=4, dtype=np.float32)
    with pytest.raises(g.ArgumentError, match="y is a Python float, and g.reduce takes arrays"):
        g.reduce(K.dot)(d, 2.0)
    with pytest.raises(g.ArgumentError, match="x is a Python list"):
        g.reduce(K.dot)([1, 2], d)
