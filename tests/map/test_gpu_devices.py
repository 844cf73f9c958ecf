"""Two CUDA devices: buffers, g.map and the interop protocols keep to the device their memory is
on, and an array on the wrong device is refused by name, never launched on.

They need two devices: the fake libcuda with FAKE_CUDA_DEVICES=2 (`make test`'s second pass),
or a machine with two GPUs. Elsewhere they skip.
"""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g
from gompute import _core
from tests.conftest import open_compute
from tests.fakes import images

from .calls import counting
from .kernels import scale_relu

values = np.linspace(-2, 2, 3000, dtype=np.float32)


@g.map_kernel(block_size=256)
def add(x: g.f32, y: g.f32) -> g.f32:
    return x + y


@pytest.fixture
def devices():
    first = open_compute(g.Backend.cuda)
    count = _core.probe(g.Backend.cuda.kind)[3]
    if count < 2:
        pytest.skip(f"one CUDA device here ({count}); the fake has two with FAKE_CUDA_DEVICES=2")
    second = g.runtime.cuda.Compute.init_device(1)
    if images.is_fake(first):
        with images.host_images():
            yield first, second
    else:
        yield first, second
    for compute in (first, second):
        compute.synchronize()
        compute.deinit()


def filled(compute, host: np.ndarray):
    buf = compute.empty(host.shape, g.f32)
    buf.upload(host)
    return buf


def download(compute, buf) -> np.ndarray:
    compute.synchronize()
    out = np.empty(tuple(buf.shape), np.float32)
    buf.download(out)
    return out


class PointerOnly:
    """An array that gives its memory through __cuda_array_interface__ and says nothing of its
    device (the protocol has no field for it): the driver has to tell."""

    def __init__(self, buffer, stream: int = 1):  # CAI's legacy default stream
        self.buffer, self.stream = buffer, stream

    @property
    def __cuda_array_interface__(self):
        return {
            "shape": tuple(self.buffer.shape),
            "typestr": "<f4",
            "data": (self.buffer.data_addr(), False),
            "version": 3,
            "stream": self.stream,
        }


def test_buffers_and_their_exports_name_their_device(devices):
    first, second = devices
    a, b = first.alloc(64), second.alloc(64)
    assert (a.device, b.device) == (0, 1)
    assert b.__dlpack_device__() == (2, 1)  # kDLCUDA, device 1
    assert (first.ordinal, second.ordinal) == (0, 1)


def test_an_array_that_names_no_device_is_on_the_device_of_its_memory(devices):
    first, second = devices
    on_second = filled(second, values)
    wrapped = g.asbuffer(PointerOnly(on_second))
    assert (wrapped.device, wrapped.data_addr()) == (1, on_second.data_addr())
    inside = on_second.view_bytes(400, 400)  # an interior pointer too
    assert g.asbuffer(PointerOnly(inside)).device == 1
    assert g.asbuffer(PointerOnly(filled(first, values))).device == 0


def test_g_map_runs_on_the_device_of_its_arrays(devices):
    first, second = devices
    k, calls = counting(scale_relu)
    x = filled(second, values)
    made = k(x, scale=2)
    assert made.device == 1
    np.testing.assert_array_equal(download(second, made), np.maximum(values * 2, 0))
    y = second.empty(values.shape, g.f32)
    for scale in (3, 0.5):  # the fast path after the first call
        assert k(x, out=y, scale=scale) is y
        np.testing.assert_array_equal(download(second, y), np.maximum(values * np.float32(scale), 0))
    on_first = k(filled(first, values), scale=1)  # and back on device 0, the same g.map
    assert on_first.device == 0
    np.testing.assert_array_equal(download(first, on_first), np.maximum(values, 0))


def test_g_map_takes_a_pointer_only_array_on_the_second_device(devices):
    first, second = devices
    k, calls = counting(scale_relu)
    x, y = filled(second, values), second.empty(values.shape, g.f32)
    for scale in (2, 4):  # the general path, then the fast one
        k(PointerOnly(x), out=PointerOnly(y), scale=scale)
        np.testing.assert_array_equal(download(second, y), np.maximum(values * np.float32(scale), 0))


@pytest.mark.parametrize("wrap", [lambda b: b, PointerOnly], ids=["Buffer", "pointer-only CAI"])
def test_arrays_on_two_devices_are_refused_by_name(devices, wrap):
    first, second = devices
    k = g.map(add)
    x, y = filled(first, values), filled(second, values)
    for _ in range(2):  # the general path, and again once the fast one has seen a good call
        with pytest.raises(g.ArgumentError, match=r"is on cuda:1, but the call runs on cuda:0; move it there"):
            k(wrap(x), wrap(y))
        k(wrap(x), wrap(x))
    out = second.empty(values.shape, g.f32)
    for _ in range(2):  # out= on the other device, on both paths
        with pytest.raises(g.ArgumentError, match=r"is on cuda:0, but the call runs on cuda:1; move it there"):
            k(wrap(y), wrap(y), out=wrap(x))
        k(wrap(y), wrap(y), out=wrap(out))
    np.testing.assert_array_equal(download(second, out), values + values)


def test_a_stream_of_the_other_device_is_refused_by_name(devices):
    first, second = devices
    x = filled(second, values)
    with pytest.raises(g.ArgumentError, match=r"stream= is a stream of cuda:0, but the arrays are on cuda:1"):
        g.map(scale_relu)(x, scale=2, stream=first.create_stream())
    stream = second.create_stream()
    made = g.map(scale_relu)(x, scale=2, stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(download(second, made), np.maximum(values * 2, 0))
