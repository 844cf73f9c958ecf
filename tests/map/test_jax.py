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
