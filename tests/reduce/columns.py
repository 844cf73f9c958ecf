"""Checks the column reduction tests share (axis=0 of an (n, C) array, against NumPy)."""

from __future__ import annotations

import numpy as np

import gompute as g

from . import kernels as K
from .accuracy import assert_near_exact


def assert_columns_near_exact(got, terms: np.ndarray, eps: float):
    """got holds the column sums of `terms` (a 2-D array), each within the float sums' bound."""
    assert_near_exact(got, terms, eps, axis=0)


def assert_two_inputs_params_and_combines(rng: np.random.Generator, n: int, cols: int):
    """Over (n, cols) arrays of `rng`'s: a dot of two inputs and of one with a row broadcast along the
    reduced rows, a sum with params, a product, an xor and a combine function (the larger magnitude)."""
    x, y = rng.standard_normal((2, n, cols)).astype(np.float32)
    assert_columns_near_exact(g.reduce(K.dot)(x, y, axis=0), x.astype(np.float64) * y, 2.0**-24)
    row = y[:1]
    assert_columns_near_exact(g.reduce(K.dot)(x, row, axis=0), x.astype(np.float64) * row, 2.0**-24)
    z = rng.standard_normal((n, cols))
    assert_columns_near_exact(g.reduce(K.shifted_sum)(z, axis=0, by=0.5), z + 0.5, 2.0**-53)
    signs = np.sign(z)
    np.testing.assert_array_equal(g.reduce(K.product)(signs, axis=0), np.prod(signs, axis=0))
    bits = rng.integers(0, 2**62, (n, cols), dtype=np.int64)
    np.testing.assert_array_equal(g.reduce(K.parity)(bits, axis=0), np.bitwise_xor.reduce(bits, axis=0))
    pick = np.argmax(np.abs(z), axis=0)  # the first of equal magnitudes, as the combine keeps its left
    np.testing.assert_array_equal(g.reduce(K.extreme)(z, axis=0), z[pick, np.arange(cols)])
