"""The strided entry's fast paths through the public `g.map` API, checked against NumPy: runs
gathered or scattered with the constant strides that have loops of their own (-1, 2, 3, 4), the
general stride beside them, runs longer than one chunk, chunks mixing contiguous arrays (used in
place) with gathered ones, and an output that is exactly its input.
"""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g

pytest.importorskip("gompute._core", reason="strided launches go through the host runtime")


@g.map_kernel
def affine(x: g.f32) -> g.f32:
    return x * 2 + 1


@g.map_kernel
def mix(a: g.f64, b: g.f64) -> g.f64:
    return a * 2 - b


def _f32(n, seed=0):
    return np.random.default_rng(seed).uniform(-10, 10, n).astype(np.float32)


STEPS = [-4, -3, -2, -1, 2, 3, 4, 5, 17]
# Lengths around the chunk (128 elements): one element, a partial chunk, exactly one, and several
# chunks with a remainder.
LENGTHS = [1, 7, 128, 1000]


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("step", STEPS)
def test_gathered_runs(step, n):
    x = _f32(abs(step) * n + 3)[::step][:n]
    assert x.shape == (n,)
    np.testing.assert_array_equal(g.map(affine)(x), x * np.float32(2) + 1)


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("step", STEPS)
def test_scattered_runs(step, n):
    x = _f32(n)
    base = np.zeros(abs(step) * n + 3, np.float32)
    out = base[::step][:n]
    g.map(affine)(x, out=out)
    np.testing.assert_array_equal(out, x * np.float32(2) + 1)
    untouched = np.ones(base.shape, bool)
    untouched[::step][:n] = False
    assert (base[untouched] == 0).all()


@pytest.mark.parametrize("step", [-1, 2, 3, 7])
def test_contiguous_input_beside_a_gathered_one(step):
    a = np.random.default_rng(1).uniform(-5, 5, 1000)
    b = np.random.default_rng(2).uniform(-5, 5, 1000 * abs(step))[::step]
    np.testing.assert_array_equal(g.map(mix)(a, b), a * 2 - b)
    np.testing.assert_array_equal(g.map(mix)(b, a), b * 2 - a)


@pytest.mark.parametrize("step", [-1, 2, 3, -5])
def test_contiguous_output_from_a_gathered_input(step):
    x = _f32(1000 * abs(step))[::step]
    out = np.full(x.shape, np.nan, np.float32)
    g.map(affine)(x, out=out)
    np.testing.assert_array_equal(out, x * np.float32(2) + 1)


@pytest.mark.parametrize("step", [-1, 2, -3, 4])
def test_output_that_is_its_input(step):
    base = _f32(1000 * abs(step))
    x = base[::step]
    want = x * np.float32(2) + 1
    g.map(affine)(x, out=x)
    np.testing.assert_array_equal(x, want)


@pytest.mark.parametrize("shape", [(37, 23), (128, 128), (130, 257), (1, 300), (300, 1)])
def test_transposes(shape):
    x = _f32(shape[0] * shape[1]).reshape(shape).T
    out = np.full(x.shape, np.nan, np.float32)
    g.map(affine)(x, out=out)
    np.testing.assert_array_equal(out, x * np.float32(2) + 1)
    back = np.full(shape, np.nan, np.float32).T
    g.map(affine)(np.ascontiguousarray(x), out=back)
    np.testing.assert_array_equal(back, x * np.float32(2) + 1)
