"""g.map on a CUDA device: the general path and the C++ fast path on device Buffers and on
CuPy-style arrays (their __cuda_array_interface__), streams included.

Without a GPU these run on the fake libcuda (`make test`'s second pass sets
GOMPUTE_LIBCUDA), whose "CUBINs" are host shared objects: tests/fakes/images.py compiles
g.map's modules for the host while a test runs. On a real GPU they run as they are, NVRTC
and all. With no CUDA at all they skip.
"""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g
from tests.conftest import open_compute
from tests.fakes import images

from .calls import counting
from .kernels import axpy, double, scale_relu

values = np.linspace(-2, 2, 3000, dtype=np.float32)


@pytest.fixture
def cuda():
    compute = open_compute(g.Backend.cuda)
    if images.is_fake(compute):
        with images.host_images():
            yield compute
    else:
        yield compute
    compute.synchronize()


def filled(compute, host: np.ndarray):
    """A device Buffer holding `host` (f32 or f64)."""
    buf = compute.empty(host.shape, g.f32 if host.dtype == np.float32 else g.f64)
    buf.upload(np.ascontiguousarray(host))
    return buf


def download(compute, buf) -> np.ndarray:
    """`buf` on the host once the device is done with it (a copy of its elements, C order)."""
    compute.synchronize()
    whole = np.empty(buf.nbytes // buf.dtype.itemsize, buf.dtype.dtype)
    buf.view_bytes(0, buf.nbytes).download(whole)
    return np.lib.stride_tricks.as_strided(
        whole[(buf.data_addr() - buf.device_addr()) // buf.dtype.itemsize :],
        buf.shape,
        buf.strides,
    ).copy()


def relu(x, scale):
    return np.maximum(x * np.float32(scale), 0)


class CaiArray:
    """A CuPy-like array over device memory: its __cuda_array_interface__ and its device."""

    def __init__(self, buffer, stream, version=3, strides=None, readonly=False):
        self.buffer, self.stream, self.version, self.strides, self.readonly = buffer, stream, version, strides, readonly
        self.shape = tuple(buffer.shape) if strides is None else (buffer.shape[0] * 4 // strides[0],)
        self.device = type("Device", (), {"id": buffer.device})()

    @property
    def __cuda_array_interface__(self):
        cai = {"shape": self.shape, "typestr": "<f4", "data": (self.buffer.data_addr(), self.readonly)}
        cai.update(version=self.version, strides=self.strides)
        if self.version >= 3:
            cai["stream"] = self.stream
        return cai


def test_buffers_launch_from_the_fast_path_after_one_call(cuda):
    k, calls = counting(scale_relu)
    x, y = filled(cuda, values), cuda.empty(values.shape, g.f32)
    assert k(x, out=y, scale=2) is y  # the general path, which teaches the fast one
    assert k(y, out=y, scale=1) is y  # ... and in place
    assert len(calls) == 2
    before = g.runtime.stats()["launches"]
    for scale in (3, 0.5):
        assert k(x, out=y, scale=scale) is y
        np.testing.assert_array_equal(download(cuda, y), relu(values, scale))
    assert k(y, out=y, scale=2) is y
    np.testing.assert_array_equal(download(cuda, y), relu(values, 0.5) * 2)
    assert len(calls) == 2 and g.runtime.stats()["launches"] == before + 3


def test_new_outputs_are_device_buffers(cuda):
    k, calls = counting(scale_relu)
    x = filled(cuda, values)
    made = [k(x, scale=4) for _ in range(3)]  # once general, then in C++
    assert len(calls) == 1 and len({b.device_addr() for b in made}) == 3
    for b in made:
        assert b.backend is g.Backend.cuda and tuple(b.shape) == values.shape
        np.testing.assert_array_equal(download(cuda, b), relu(values, 4))


def test_streams_order_the_launch(cuda):
    k, calls = counting(scale_relu)
    x, y = filled(cuda, values), cuda.empty(values.shape, g.f32)
    k(x, out=y, scale=1)
    stream = cuda.create_stream()
    x.stream = stream  # an input on another stream than the output: the general path orders them
    k(x, out=y, scale=2)
    assert len(calls) == 2 and y.stream.handle == stream.handle
    np.testing.assert_array_equal(download(cuda, y), relu(values, 2))
    k(x, out=y, scale=3)  # now both are on `stream`: the fast path, on it
    assert len(calls) == 2
    stream.synchronize()
    np.testing.assert_array_equal(download(cuda, y), relu(values, 3))


def test_a_new_result_for_a_buffer_on_a_stream_is_on_that_stream(cuda):
    """A call with no out= on a Buffer whose stream is set makes its result on that stream, as
    the general path does; the C++ path takes such calls after the first (it made its result on
    the default stream and sent every one to Python)."""
    k, calls = counting(scale_relu)
    stream = cuda.create_stream()
    x = filled(cuda, values)
    x.stream = stream
    for scale in (1, 2, 3):
        y = k(x, scale=scale)
        assert y.stream is not None and y.stream.handle == stream.handle
        stream.synchronize()
        np.testing.assert_array_equal(download(cuda, y), relu(values, scale))
    assert len(calls) == 1


def test_an_untyped_out_buffer_is_ordered_on_the_launch_stream(cuda):
    """g.map reads an untyped out= through a typed view of it; the stream went on the view,
    and the caller's Buffer (and its __cuda_array_interface__) still named the default one."""
    stream = cuda.create_stream()
    data = np.arange(100, dtype=np.uint8)
    x = cuda.empty(data.shape, g.u8)
    x.upload(data)
    out = cuda.alloc(data.nbytes)  # untyped: bytes, so u8
    g.map(double)(x, out=out, stream=stream)
    assert out.stream is not None and out.stream.handle == stream.handle
    assert out.__cuda_array_interface__["stream"] == stream.handle
    np.testing.assert_array_equal(download(cuda, out.view(g.u8, data.shape)), data * 2)


def test_strided_and_broadcast_buffers(cuda):
    k, calls = counting(axpy)
    rng = np.random.default_rng(2)
    a, x, base = rng.standard_normal((6, 1, 5)), rng.standard_normal((4, 1)), rng.standard_normal(10)
    da, dx, dbase = (filled(cuda, v) for v in (a, x, base))
    y = dbase.view(g.f64, (5,), (-16,), offset=9 * 8)  # base[::-2], on the device
    want = a * x + base[::-2]
    out = cuda.empty((6, 4, 5), g.f64)
    for _ in range(3):
        k(da, dx, y, out=out)
        np.testing.assert_array_equal(download(cuda, out), want)
    assert len(calls) == 1
    flat = cuda.empty((5, 24), g.f64)  # an output that is a transposed view: still the strided entry
    k(da, dx, y, out=flat.view(g.f64, (6, 4, 5), (32, 8, 192)))
    np.testing.assert_array_equal(download(cuda, flat).reshape(5, 6, 4).transpose(1, 2, 0), want)
    assert len(calls) == 1


def test_cuda_array_interface_arrays_launch_on_their_stream(cuda):
    k, calls = counting(scale_relu)
    stream = cuda.create_stream()
    x, y = (CaiArray(b, stream.handle) for b in (filled(cuda, values), cuda.empty(values.shape, g.f32)))
    assert k(x, out=y, scale=2) is y
    for scale in (3, 0.25):
        assert k(x, out=y, scale=scale) is y
        stream.synchronize()
        np.testing.assert_array_equal(download(cuda, y.buffer), relu(values, scale))
    assert len(calls) == 1
    # What the fast path leaves to the general one, which still computes the right thing.
    refused = [
        (CaiArray(x.buffer, None), y),  # stream None: the framework's stream, which only Python asks for
        (CaiArray(x.buffer, stream.handle, version=2), y),  # no stream at all
        (CaiArray(x.buffer, 1), y),  # input and output on different streams
    ]
    for scale, (a, out) in enumerate(refused, start=2):
        k(a, out=out, scale=scale)
        cuda.synchronize()
        np.testing.assert_array_equal(download(cuda, out.buffer), relu(values, scale))
    assert len(calls) == 1 + len(refused)
    every_other = CaiArray(x.buffer, stream.handle, strides=(8,))  # the strided entry: once general, then fast
    half = CaiArray(cuda.empty(1500, g.f32), stream.handle)
    for scale in (2, 3, 4):
        k(every_other, out=half, scale=scale)
        stream.synchronize()
        np.testing.assert_array_equal(download(cuda, half.buffer), relu(values[::2], scale))
    assert len(calls) == 2 + len(refused)
    readonly = CaiArray(y.buffer, stream.handle, readonly=True)
    with pytest.raises(g.ArgumentError, match="read-only"):
        k(x, out=readonly, scale=1)


@pytest.mark.parametrize("flag", [np.True_, 1], ids=["numpy-bool", "int"])
def test_a_cai_read_only_flag_may_be_numpys_bool_or_an_int(cuda, flag):
    buf = filled(cuda, values)
    imported = g.asbuffer(CaiArray(buf, stream=1, readonly=flag))
    assert imported.readonly is True and imported.data_addr() == buf.data_addr()
