"""g.map on JAX CPU arrays: read through DLPack, results handed back as JAX arrays."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g

from .kernels import add, scale_relu

jnp = pytest.importorskip("jax.numpy", reason="JAX is not installed")


def test_map_on_jax_returns_a_jax_array():
    x = jnp.linspace(-1, 1, 1000, dtype=jnp.float32)
    y = g.map(scale_relu)(x, scale=2)
    assert type(y).__module__.split(".")[0] in ("jax", "jaxlib")
    np.testing.assert_array_equal(np.asarray(y), np.maximum(np.asarray(x) * np.float32(2), 0))


def test_jax_inputs_broadcast_and_mix_with_numpy():
    a = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
    b = np.arange(3, dtype=np.float32)
    y = g.map(add)(a, b)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(a) + b)


def test_asbuffer_of_a_jax_array_shares_its_memory():
    x = jnp.arange(10, dtype=jnp.int32)
    buf = g.asbuffer(x)
    assert buf.data_addr() == x.unsafe_buffer_pointer()
    np.testing.assert_array_equal(np.asarray(buf), np.arange(10, dtype=np.int32))
    assert buf.shape == (10,) and buf.dtype is g.i32


def test_a_jax_array_is_refused_as_an_output_and_left_as_it_was():
    x = jnp.linspace(-1, 1, 100, dtype=jnp.float32)
    before = np.array(x)
    k = g.map(scale_relu)
    k(np.asarray(before), scale=2, out=np.empty(100, np.float32))  # the fast path has this call's dtypes cached
    for _ in range(2):
        with pytest.raises(g.ArgumentError, match="JAX arrays are immutable"):
            k(x, scale=2, out=x)
    np.testing.assert_array_equal(np.asarray(x), before)


def test_the_buffer_over_a_jax_array_is_read_only():
    """JAX's legacy DLPack capsule cannot say so, but a JAX array never changes: gompute marks
    the Buffer read-only, so nothing writes through it and it exports as a read-only array."""
    x = jnp.arange(6, dtype=jnp.float32)
    buf = g.asbuffer(x)
    assert buf.readonly
    with pytest.raises(g.CopyFailed, match="read-only"):
        buf.upload(np.zeros(6, np.float32))
    view = np.from_dlpack(buf)
    assert not view.flags.writeable and view.ctypes.data == x.unsafe_buffer_pointer()
    np.testing.assert_array_equal(np.asarray(x), np.arange(6, dtype=np.float32))
