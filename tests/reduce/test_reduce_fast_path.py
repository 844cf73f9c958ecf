"""Repeated g.reduce calls take the C++ fast path (csrc/reduce_dispatch.cpp); every call it cannot
take exactly falls back to the general path, which raises what it should.

Each test warms a fresh AutoReduce up first (the general path teaches the fast path the
signature), then watches which of the calls that follow reach the general path.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import gompute as g

from . import kernels as K
from .test_fake_cuda import _down, _on, cuda  # noqa: F401 - cuda is a fixture

AutoReduce = importlib.import_module("gompute.reduce").AutoReduce
rng = np.random.default_rng(5)


def counting(kernel):
    """A fresh g.reduce of `kernel` and the list of calls that reached its general path."""
    r = AutoReduce(kernel)
    calls = []
    general = r._general

    def counted(*arrays, **kwargs):
        calls.append(kwargs)
        return general(*arrays, **kwargs)

    r._general = counted
    return r, calls


def _data(shape, dtype=np.float32):
    return rng.integers(-9, 10, shape).astype(dtype)


def _warm(r, dtype=np.float32):
    """Teach both first entries (rows and columns) for inputs of `dtype`, with and without out=."""
    x = _data((8, 64), dtype)
    r(x)
    r(x, axis=0)
    r(x, out=np.empty((), r.kernel.result_type((g.types.resolve(x.dtype),)).dtype))


# Launches: one where an item covers a whole result (the first launch stores it), two where a
# result's items leave partials for the finish.
@pytest.mark.parametrize(
    "shape, axis, keepdims, launches",
    [
        ((1000,), None, False, 1),
        ((1000,), 0, True, 1),
        ((7, 300), 1, False, 1),
        ((7, 300), 0, False, 1),
        ((7, 300), -1, True, 1),
        ((4, 5, 6), (0, 2), False, 1),
        ((4, 5, 6), (2, 0), True, 1),
        ((4, 5, 6), (), False, 1),
        ((20000, 7), 0, False, 2),  # columns over more reduced rows than an item takes
        ((3, 200_000), None, False, 2),  # a launch long enough to release the GIL
    ],
)
def test_repeated_calls_take_the_cpp_path_and_match_numpy(shape, axis, keepdims, launches):
    r, calls = counting(K.total)
    _warm(r)
    warmed = len(calls)
    x = _data(shape)
    before = g.runtime.stats()["launches"]
    got = r(x, axis=axis, keepdims=keepdims)
    assert len(calls) == warmed, "the fast path declined the call"
    assert g.runtime.stats()["launches"] == before + launches
    want = np.sum(x, axis=axis, keepdims=keepdims)
    assert type(got) is np.ndarray and got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_a_full_reduction_is_a_0d_array_of_the_inputs_library():
    r, calls = counting(K.sumsq)
    _warm(r)
    warmed = len(calls)
    x = _data(1000)
    got = r(x)
    assert len(calls) == warmed and type(got) is np.ndarray and got.shape == ()
    assert got == np.sum(x * x)


def test_views_and_broadcast_inputs_read_the_right_elements():
    r, calls = counting(K.dot)
    x, y = _data((40, 30)), _data(30)
    r(x, y)
    r(x, y, axis=0)
    warmed = len(calls)
    for a, b in [(x.T, y[:, None]), (x[::-2, ::3], y[::3]), (np.broadcast_to(y, (5, 30)), y)]:
        for axis in (None, 0, 1, (0, 1)):
            want = np.sum(a.astype(np.float64) * b, axis=axis).astype(np.float32)
            np.testing.assert_array_equal(r(a, b, axis=axis), want)
    assert len(calls) == warmed


def test_out_is_written_and_returned():
    r, calls = counting(K.total)
    _warm(r)
    warmed = len(calls)
    x = _data((6, 50))
    out = np.full(50, 7, np.float32)
    assert r(x, axis=0, out=out) is out
    np.testing.assert_array_equal(out, np.sum(x, axis=0))
    target = np.zeros(100, np.float32)
    assert r(x.T, axis=1, out=target[::2]) is not None
    np.testing.assert_array_equal(target[::2], np.sum(x, axis=0))
    assert not target[1::2].any()
    assert len(calls) == warmed


def test_empty_reductions_after_warm_up():
    r, calls = counting(K.total)
    _warm(r)
    np.testing.assert_array_equal(r(np.zeros((0, 4), np.float32), axis=0), np.zeros(4, np.float32))
    assert r(np.zeros((0, 4), np.float32), axis=1).shape == (0,)
    m, _ = counting(K.largest)
    _warm(m)
    with pytest.raises(ValueError, match="zero elements"):
        m(np.zeros((0, 4), np.float32), axis=0)


def test_calls_it_cannot_take_fall_back_and_raise_as_before():
    r, calls = counting(K.total)
    _warm(r)
    warmed = len(calls)
    x = _data((6, 5))
    with pytest.raises(np.exceptions.AxisError):
        r(x, axis=2)
    with pytest.raises(ValueError, match="repeated|duplicate"):
        r(x, axis=(0, -2))
    with pytest.raises(g.ArgumentError, match="axis must be"):
        r(x, axis=1.5)
    with pytest.raises(g.ArgumentError, match="shape"):
        r(x, axis=0, out=np.zeros(6, np.float32))
    with pytest.raises(g.ArgumentError, match="shares memory"):
        r(x, axis=1, out=x[:, 0])
    with pytest.raises(g.ArgumentError, match="read-only"):
        r(x, axis=1, out=np.broadcast_to(np.zeros(6, np.float32), (6,)))
    # Forms the general path takes: an axis list or NumPy integer, keepdims=1.
    np.testing.assert_array_equal(r(x, axis=[0]), np.sum(x, axis=0))
    np.testing.assert_array_equal(r(x, axis=np.int64(1), keepdims=1), np.sum(x, axis=1, keepdims=True))
    assert len(calls) == warmed + 8


def test_params_are_packed_and_checked():
    r, calls = counting(K.shifted_sum)
    x = _data((4, 10), np.float64)
    r(x, by=1.0)
    warmed = len(calls)
    np.testing.assert_array_equal(r(x, axis=1, by=0.5), np.sum(x + 0.5, axis=1))
    assert len(calls) == warmed
    with pytest.raises(g.ArgumentError, match="needs a value for by"):
        r(x)
    with pytest.raises(g.ArgumentError, match="takes no params"):
        counting(K.total)[0](x, by=1.0)


def test_other_dtypes_are_their_own_signatures():
    r, calls = counting(K.total)
    _warm(r)
    warmed = len(calls)
    x = _data((5, 7), np.int16)
    for _ in range(2):
        got = r(x, axis=1)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, np.sum(x, axis=1))
    assert len(calls) == warmed + 1


def test_torch_tensors_take_the_fast_path_and_count_writes():
    torch = pytest.importorskip("torch")
    r, calls = counting(K.total)
    x = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    out = torch.zeros(6)
    r(x)
    r(x, axis=0)
    r(x, axis=0, out=out)
    warmed = len(calls)
    got = r(x)
    assert isinstance(got, torch.Tensor) and got.shape == () and got.item() == 276
    assert torch.equal(r(x, axis=1), x.sum(dim=1))
    version = out._version
    assert r(x, axis=0, out=out) is out and torch.equal(out, x.sum(dim=0))
    assert out._version == version + 1
    assert len(calls) == warmed


def test_host_buffers_take_the_fast_path():
    compute = g.runtime.host.Compute.init()
    r, calls = counting(K.total)
    x = compute.empty((3, 8), g.f32)
    x.upload(np.arange(24, dtype=np.float32))
    r(x, axis=1)
    warmed = len(calls)
    got = r(x, axis=1)
    assert isinstance(got, g.Buffer) and len(calls) == warmed
    np.testing.assert_array_equal(np.asarray(got), np.arange(24, dtype=np.float32).reshape(3, 8).sum(axis=1))


def test_cuda_buffers_take_the_fast_path_on_their_stream(cuda):  # noqa: F811 - the fixture
    """On the fake driver of `make test`'s second pass (or a GPU): device partials, both launches
    queued on the arrays' stream."""
    r, calls = counting(K.sumsq)
    x = rng.standard_normal((300, 70)).astype(np.float32)
    buf = _on(cuda, x)
    for axis in (None, 0, 1):
        r(buf, axis=axis)
    warmed = len(calls)
    out = cuda.empty((70,), g.f32)
    for axis in (None, 0, 1):
        got = r(buf, axis=axis)
        assert isinstance(got, g.Buffer) and (got.backend, got.device) == (g.Backend.cuda, 0)
        np.testing.assert_allclose(_down(cuda, got, np.float32), np.sum(x * x, axis=axis), rtol=1e-5)
    assert r(buf, axis=0, out=out) is out
    np.testing.assert_allclose(_down(cuda, out, np.float32), np.sum(x * x, axis=0), rtol=1e-5)
    assert len(calls) == warmed


def test_a_new_result_for_a_buffer_on_a_stream_is_on_that_stream(cuda):  # noqa: F811 - the fixture
    """No out= on a Buffer whose stream is set: the result is made on that stream, as the general
    path makes it, and the C++ path takes every call but each entry's first (its result was on the
    default stream, and same_place sent every such call to Python)."""
    r, calls = counting(K.total)
    x = rng.standard_normal((300, 70)).astype(np.float32)
    buf = _on(cuda, x)
    stream = cuda.create_stream()
    buf.stream = stream
    for axis in (None, 0, 1) * 2:  # packed rows, packed columns, short rows
        got = r(buf, axis=axis)
        assert got.stream is not None and got.stream.handle == stream.handle
        stream.synchronize()
        np.testing.assert_allclose(_down(cuda, got, np.float32), np.sum(x, axis=axis), rtol=1e-5, atol=1e-4)
    assert len(calls) == 3


def test_an_out_that_is_a_broadcast_inputs_very_view_is_refused():
    """y broadcast against a's rows and out=y: result i would overwrite y[i], which every later
    result reads (a matrix-vector product in place). Both paths refuse it; views that interleave
    without a common byte are computed."""
    r, calls = counting(K.dot)
    a, y = _data((4, 4)), _data((4,))
    for _ in range(2):  # the second call is the fast path's
        np.testing.assert_allclose(r(a, y, axis=1, out=np.empty(4, np.float32)), a @ y, rtol=1e-6)
    before = y.copy()
    for axis in (1, 0):
        with pytest.raises(g.ArgumentError, match="out shares memory with input 1"):
            r(a, y, axis=axis, out=y)
    np.testing.assert_array_equal(y, before)
    cube, square = _data((4, 4, 4)), _data((4, 4))
    with pytest.raises(g.ArgumentError, match="out shares memory with input 1"):
        r(cube, square, axis=2, out=square)
    both = _data((40,))
    out = both[1::2][:4]
    r(both[::2][:16].reshape(4, 4), y, axis=1, out=out)
    np.testing.assert_allclose(out, both[::2][:16].reshape(4, 4) @ y, rtol=1e-6)
    assert len(calls) == 5
