"""An f32 sum's leaves are merged in groups in f32 before its f64 tree (reduce_layout.NARROW_GROUP):
lengths around a group's and a leaf's edges, contiguous, strided and in rows, against an f64 sum."""

import numpy as np
import pytest

import gompute as g
from gompute.lang.reduce_layout import NARROW_GROUP, NARROW_LEAF_ROWS, lanes
from gompute.types import f32
from tests.reduce import kernels as K

LEAF = NARROW_LEAF_ROWS * lanes(f32)
GROUP = NARROW_GROUP * LEAF


@pytest.mark.parametrize(
    "n",
    [LEAF - 1, LEAF, LEAF + 1, GROUP - LEAF, GROUP - 1, GROUP, GROUP + LEAF + 3, 3 * GROUP + 2 * LEAF, 70 * GROUP + 5],
)
def test_lengths_about_a_group_sum_as_in_f64(n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32) + 2
    exact = np.sum(x, dtype=np.float64)
    assert float(g.reduce(K.total)(x)) == pytest.approx(exact, rel=2e-6)
    assert float(g.reduce(K.sumsq)(x)) == pytest.approx(np.sum(np.square(x, dtype=np.float64)), rel=2e-6)
    assert float(g.reduce(K.total)(x[::3])) == pytest.approx(np.sum(x[::3], dtype=np.float64), rel=2e-6)


def test_rows_that_end_inside_a_group():
    x = np.random.default_rng(7).random((5, 2 * GROUP + LEAF + 17), dtype=np.float32)
    np.testing.assert_allclose(g.reduce(K.total)(x, axis=1), np.sum(x, axis=1, dtype=np.float64), rtol=2e-6)
