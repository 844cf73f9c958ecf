"""g.reduce on Dask arrays: a lazy graph of dask.array.reduction, one call per chunk, the
chunks' results folded with the kernel's combine."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import gompute as g

from . import kernels as K

da = pytest.importorskip("dask.array")


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_of_dask_arrays_are_lazy_and_match_numpy(axis, keepdims):
    x = np.random.default_rng(3).standard_normal((30, 41)).astype(np.float32)
    d = da.from_array(x, chunks=(7, 10))
    lazy = g.reduce(K.sumsq)(d, axis=axis, keepdims=keepdims)
    assert isinstance(lazy, da.Array) and lazy.dtype == np.float32
    np.testing.assert_allclose(lazy.compute(), np.sum(x * x, axis=axis, keepdims=keepdims), rtol=1e-5)
    np.testing.assert_array_equal(g.reduce(K.largest)(d, axis=axis).compute(), np.max(x, axis=axis))


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
    with pytest.raises(g.ArgumentError, match="takes one"):
        g.reduce(K.dot)(d, d)
    with pytest.raises(g.ArgumentError, match="out="):
        g.reduce(K.sumsq)(d, out=np.zeros(()))
