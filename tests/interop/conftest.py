"""Helpers the interop tests share: NumPy's own reading of a Buffer's bytes, and
comparisons that stay cheap on broadcast arrays with billions of elements."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g
from gompute import _core

PATTERN_BYTES = 256


@pytest.fixture
def pattern(host):
    """A 256-byte host Buffer holding the bytes 0, 1, ..., 255."""
    buf = host.alloc(PATTERN_BYTES)
    buf.upload(np.arange(PATTERN_BYTES, dtype=np.uint8))
    yield buf
    buf.free()


def strided_reference(raw: np.ndarray, dtype, shape, strides, offset: int) -> np.ndarray:
    """What NumPy itself reads at `offset` of the bytes `raw` with `shape` and byte `strides`."""
    dtype = np.dtype(dtype)
    first = raw[offset : offset + dtype.itemsize].view(dtype)
    if strides is None:
        strides = tuple(int(s) for s in np.empty(shape, dtype).strides) if shape else ()
    return np.lib.stride_tricks.as_strided(first, shape=shape, strides=strides)


def collapse_broadcast(a: np.ndarray) -> np.ndarray:
    """`a` with every stride-0 axis cut to one element: the same information, cheap to compare."""
    if a.size == 0:
        return a
    return a[tuple(slice(0, 1) if s == 0 and n > 1 else slice(None) for s, n in zip(a.strides, a.shape))]


def assert_same_array(got: np.ndarray, want: np.ndarray) -> None:
    """Same shape, same byte strides (where they matter), same first byte, same elements."""
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    if got.size:
        assert got.ctypes.data == want.ctypes.data, "a copy was made"
        assert [s for s, n in zip(got.strides, got.shape) if n > 1] == [
            s for s, n in zip(want.strides, want.shape) if n > 1
        ]
    np.testing.assert_array_equal(collapse_broadcast(got), collapse_broadcast(want))


def drain_releases() -> None:
    """Runs the releases gompute defers until it holds the GIL (foreign owners, capsule deleters)."""
    import gc

    gc.collect()
    _core.run_deferred_releases()
    gc.collect()


# Every gompute type NumPy also has, with values that exercise its range.
NUMPY_TYPES = [t for t in g.types.ALL_TYPES if t.dtype is not None]


def sample(t: g.types.ScalarType, shape=(3, 4)) -> np.ndarray:
    """A C-contiguous array of type `t` whose elements all differ (where the type allows)."""
    n = int(np.prod(shape))
    if t.kind == "b":
        values = np.arange(n) % 3 == 1
    elif t.kind == "f":
        values = (np.arange(n) - n / 2) / 4
    elif t.kind == "c":
        values = (np.arange(n) - n / 2) / 4 + 1j * np.arange(n) / 8
    else:
        lo, hi = t.range()
        values = [lo + (hi - lo) * k // (n - 1) for k in range(n)]  # both ends of the range
    return np.asarray(values, dtype=t.dtype).reshape(shape)
