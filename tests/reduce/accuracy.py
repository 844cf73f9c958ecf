"""The bound a float sum's result is held to: within a few roundings of the exact sum, scaled by
the sum of the magnitudes (NumPy's pairwise sum's bound), not by the result, which cancellation
can make as small as it likes."""

from __future__ import annotations

import math

import numpy as np


def assert_near_exact(got, terms: np.ndarray, eps: float, axis: int = -1) -> None:
    """got[i] within 8 * eps * sum(|terms|) of the exact sum (math.fsum in f64) of `terms` along
    `axis` of a 2-D array, for each i."""
    lines = np.moveaxis(terms.astype(np.float64), axis, -1)
    exact = np.array([math.fsum(line) for line in lines])
    scale = np.abs(lines).sum(axis=1)
    err = np.abs(np.asarray(got, np.float64) - exact)
    assert np.all(err <= 8 * eps * scale + 1e-300), (err / np.maximum(scale, 1e-300)).max()
