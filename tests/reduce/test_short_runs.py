"""g.reduce over several reduced dimensions whose innermost one is short and not mergeable with
the next (a column slice of a wider array): an item then holds a leaf a run, thousands of them."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g

from . import kernels as K

RNG = np.random.default_rng(33)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [1, 2, 3, 65])
def test_a_full_sum_of_a_column_slice_matches_numpy(dtype, width):
    # 5000 runs of `width` elements: 5000 leaves in one item, past 2**12 of them for the short
    # widths, so the pairwise counter reaches 12 levels.
    x = RNG.random((5000, 80), dtype=dtype)[:, :width]
    got = g.reduce(K.total)(x)
    np.testing.assert_allclose(float(got), x.astype(np.float64).sum(), rtol=1e-6)


@pytest.mark.parametrize("width", [2, 3])
def test_a_sum_over_the_two_last_axes_of_a_slice_matches_numpy(width):
    x = RNG.random((3, 6000, 40), dtype=np.float32)[:, :, :width]
    got = g.reduce(K.total)(x, axis=(1, 2))
    np.testing.assert_allclose(np.asarray(got), x.astype(np.float64).sum(axis=(1, 2)), rtol=1e-6)
