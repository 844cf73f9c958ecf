"""Round trips NumPy <-> Buffer <-> torch (CPU): every dtype, every layout, no copies."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g
from gompute import interop

from .conftest import NUMPY_TYPES, assert_same_array, sample, strided_reference

try:
    import torch
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

TORCH_TYPES = {
    "bool_": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
    "c64": "complex64", "c128": "complex128",
}  # fmt: skip


def torch_dtype(t: g.types.ScalarType):
    return getattr(torch, TORCH_TYPES[t.name])


# ---- every dtype, both directions --------------------------------------------------------


@pytest.mark.parametrize("t", NUMPY_TYPES, ids=lambda t: t.name)
def test_numpy_round_trip_shares_memory(host, t):
    a = sample(t)
    buf = interop.asbuffer(a)
    assert (buf.typed, buf.dtype, buf.shape, buf.strides) == (True, t, a.shape, a.strides)
    assert buf.data_addr() == a.ctypes.data
    assert not buf.readonly

    back = np.from_dlpack(buf)
    assert_same_array(back, a)
    assert_same_array(np.asarray(buf), a)

    back[1, 2] = a[0, 0]  # NumPy -> gompute -> NumPy: one memory
    assert a[1, 2] == a[0, 0]
    a[2, 3] = back[0, 1]
    assert back[2, 3] == a[0, 1]


@pytest.mark.parametrize("t", NUMPY_TYPES, ids=lambda t: t.name)
def test_buffer_upload_lands_in_the_imported_numpy_array(host, t):
    a = np.zeros((3, 4), t.dtype)
    buf = interop.asbuffer(a)
    want = sample(t)
    buf.upload(want)
    np.testing.assert_array_equal(a, want)


@needs_torch
@pytest.mark.parametrize("t", NUMPY_TYPES, ids=lambda t: t.name)
def test_numpy_buffer_torch_numpy_round_trip(host, t):
    a = sample(t)
    buf = interop.asbuffer(a)
    tensor = torch.from_dlpack(buf)
    assert tensor.dtype == torch_dtype(t)
    assert tuple(tensor.shape) == a.shape
    assert tensor.data_ptr() == a.ctypes.data

    again = interop.asbuffer(tensor)
    assert (again.dtype, again.shape, again.strides) == (t, a.shape, a.strides)
    assert again.data_addr() == a.ctypes.data
    assert_same_array(np.from_dlpack(again), a)

    tensor[0, 1] = tensor[2, 3]  # torch writes, NumPy reads
    assert a[0, 1] == a[2, 3]
    a[1, 1] = a[0, 0]  # NumPy writes, torch reads
    assert bool(tensor[1, 1] == tensor[0, 0])


@needs_torch
@pytest.mark.parametrize("t", [*NUMPY_TYPES, g.bf16], ids=lambda t: t.name)
def test_torch_round_trip_shares_memory(host, t):
    tensor = torch.from_numpy(sample(g.f32)).to(torch_dtype(t)) if t is g.bf16 else torch.from_numpy(sample(t))
    buf = interop.asbuffer(tensor)
    assert (buf.dtype, buf.shape) == (t, tuple(tensor.shape))
    assert buf.strides == tuple(s * t.itemsize for s in tensor.stride())
    assert buf.data_addr() == tensor.data_ptr()

    back = torch.from_dlpack(buf)
    assert back.dtype == tensor.dtype and back.data_ptr() == tensor.data_ptr()
    assert torch.equal(back, tensor)
    back[2, 0] = tensor[0, 3]
    assert bool(tensor[2, 0] == tensor[0, 3])


@needs_torch
def test_bf16_buffer_exports_to_torch(pattern):
    one, minus_two = 0x3F80, 0xC000  # bfloat16 bit patterns of 1.0 and -2.0
    pattern.upload(np.array([one, minus_two, one], np.uint16))
    view = pattern.view(g.bf16, (3,))
    tensor = torch.from_dlpack(view)
    assert tensor.dtype == torch.bfloat16 and tensor.data_ptr() == pattern.data_addr()
    assert tensor.tolist() == [1.0, -2.0, 1.0]
    tensor[1] = 0.5
    assert tensor.view(torch.uint16).numpy()[1] == 0x3F00


def test_bf16_has_no_numpy_spelling(pattern):
    """An AttributeError, so a consumer probing with hasattr goes on to DLPack."""
    bf16 = pattern.view(g.bf16, (4,))
    with pytest.raises(AttributeError, match="bfloat16.*DLPack"):
        _ = bf16.__array_interface__
    assert not hasattr(bf16, "__array_interface__")


def test_untyped_buffer_exports_as_its_bytes(pattern):
    assert not pattern.typed
    for out in (np.from_dlpack(pattern), np.asarray(pattern)):
        assert out.dtype == np.uint8 and out.shape == (pattern.nbytes,)
        assert out.ctypes.data == pattern.data_addr()
        np.testing.assert_array_equal(out, np.arange(256, dtype=np.uint8))


def test_compute_empty_is_a_typed_contiguous_buffer(host):
    buf = host.empty((3, 4), g.i32)
    assert (buf.typed, buf.dtype, buf.shape, buf.strides, buf.c_contiguous) == (
        True,
        g.i32,
        (3, 4),
        (16, 4),
        True,
    )
    assert buf.nbytes == 48
    out = np.from_dlpack(buf)
    out[...] = np.arange(12).reshape(3, 4)
    assert_same_array(np.asarray(buf), out)


@pytest.mark.parametrize("spelling", [g.f32, np.float32, np.dtype("float32"), "f32"], ids=repr)
def test_view_accepts_every_dtype_spelling(pattern, spelling):
    view = pattern.view(spelling, (2, 8))
    assert view.dtype is g.f32 and view.shape == (2, 8) and view.strides == (32, 4)
    assert view.c_contiguous and view.size == 16


# ---- layouts: exporting views of a Buffer --------------------------------------------------

# (dtype, shape, byte strides or None, byte offset) over the 256-byte pattern buffer.
EXPORT_LAYOUTS = {
    "contiguous": (g.f32, (4, 4), None, 0),
    "byte-offset": (g.f32, (3,), None, 4),
    "unaligned-offset": (g.i16, (3,), None, 3),
    "strided": (g.f64, (4,), (16,), 0),
    "transposed": (g.f32, (4, 3), (4, 16), 0),
    "sliced-2d": (g.u16, (3, 2), (40, 6), 10),
    "negative-stride": (g.i16, (5,), (-2,), 30),
    "mixed-signs": (g.u8, (2, 3, 4), (1, 50, -7), 30),
    "broadcast": (g.f32, (3, 4), (0, 4), 8),
    "0-d": (g.i32, (), None, 8),
    "zero-size": (g.f32, (0, 5), None, 0),
    "zero-size-at-end": (g.f64, (0,), None, 256),
    "30-dims": (g.f32, (1,) * 30, None, 12),
    "huge-broadcast": (g.u16, (2**31 + 3,), (0,), 2),
    "huge-2d-broadcast": (g.u8, (2**32 + 1, 3), (0, 1), 5),
}


def _export_case(pattern, name):
    t, shape, strides, offset = EXPORT_LAYOUTS[name]
    view = pattern.view(t, shape, strides, offset)
    want = strided_reference(np.asarray(pattern), t.dtype, shape, strides, offset)
    return view, want


@pytest.mark.parametrize("name", EXPORT_LAYOUTS)
def test_view_properties(pattern, name):
    t, shape, strides, offset = EXPORT_LAYOUTS[name]
    view, want = _export_case(pattern, name)
    assert (view.dtype, view.shape, view.size) == (t, shape, want.size)
    assert view.strides == want.strides or want.size == 0
    assert view.data_addr() == pattern.data_addr() + offset
    assert view.c_contiguous == (strides is None)


@pytest.mark.parametrize("name", EXPORT_LAYOUTS)
def test_numpy_from_dlpack_of_a_view(pattern, name):
    view, want = _export_case(pattern, name)
    assert_same_array(np.from_dlpack(view), want)


@pytest.mark.parametrize("name", EXPORT_LAYOUTS)
def test_numpy_asarray_of_a_view(pattern, name):
    view, want = _export_case(pattern, name)
    assert_same_array(np.asarray(view), want)


# torch.from_dlpack aborts the whole process on negative strides (a c10::Error thrown
# through a noexcept frame in torch 2.x), so those layouts are not offered to it.
TORCH_LAYOUTS = [n for n, (_, _, strides, _) in EXPORT_LAYOUTS.items() if not strides or min(strides) >= 0]


@needs_torch
@pytest.mark.parametrize("name", TORCH_LAYOUTS)
def test_torch_from_dlpack_of_a_view(pattern, name):
    t, *_ = EXPORT_LAYOUTS[name]
    view, want = _export_case(pattern, name)
    tensor = torch.from_dlpack(view)
    assert tensor.dtype == torch_dtype(t)
    assert tuple(tensor.shape) == want.shape
    if want.size:
        assert tensor.data_ptr() == want.ctypes.data
    assert_same_array(tensor.numpy(), want)


def test_writes_through_an_exported_view_land_in_the_buffer(pattern):
    view = pattern.view(g.u8, (4,), (-3,), 20)  # bytes 20, 17, 14, 11
    np.from_dlpack(view)[:] = [200, 201, 202, 203]
    raw = np.asarray(pattern)
    assert raw[[20, 17, 14, 11]].tolist() == [200, 201, 202, 203]
    assert raw[[12, 13, 15, 16, 18, 19]].tolist() == [12, 13, 15, 16, 18, 19]


def test_view_strides_that_are_not_whole_elements(pattern):
    view = pattern.view(g.f32, (3,), (6,), 1)
    want = strided_reference(np.asarray(pattern), np.float32, (3,), (6,), 1)
    assert_same_array(np.asarray(view), want)  # NumPy's protocols describe byte strides
    with pytest.raises(BufferError, match="whole elements"):  # DLPack counts strides in elements
        view.__dlpack__(max_version=(1, 0))


@pytest.mark.parametrize(
    "shape, strides, offset",
    [
        ((17,), None, 0),
        ((16,), None, 4),
        ((2,), (-4,), 0),
        ((3,), (32,), 0),
        ((1,), None, 61),
        ((1,), None, -4),
    ],
    ids=[
        "too-long",
        "offset-overrun",
        "negative-before-start",
        "strided-overrun",
        "last-element-overruns",
        "negative-offset",
    ],
)
def test_view_outside_the_buffer_is_refused(host, shape, strides, offset):
    with host.alloc(64) as buf, pytest.raises(g.ArgumentError, match="64-byte buffer"):
        buf.view(g.f32, shape, strides, offset)


def test_view_of_a_view_retypes_the_same_bytes(pattern):
    outer = pattern.view(g.u8, (128,), None, 64)
    inner = outer.view(g.u16, (4,), (4,), 8)  # offsets count from the bytes, not from outer's element 0
    assert inner.nbytes == outer.nbytes == pattern.nbytes
    assert inner.data_addr() == pattern.data_addr() + 8
    assert_same_array(np.asarray(inner), strided_reference(np.asarray(pattern), np.uint16, (4,), (4,), 8))


def test_view_of_a_byte_range(pattern):
    part = pattern.view_bytes(64, 128)
    inner = part.view(g.u16, (4,), (4,), 8)
    assert inner.data_addr() == pattern.data_addr() + 72
    assert_same_array(np.from_dlpack(inner), strided_reference(np.asarray(pattern), np.uint16, (4,), (4,), 72))
    with pytest.raises(g.ArgumentError, match="128-byte buffer"):
        part.view(g.u8, (129,))


# ---- layouts: importing NumPy and torch views -----------------------------------------------


def _odd_strides() -> np.ndarray:
    """float32 elements 6 bytes apart starting at byte 1: NumPy refuses to export it over DLPack."""
    raw = np.arange(64, dtype=np.uint8)
    return np.ndarray((3,), np.float32, buffer=raw, offset=1, strides=(6,))


_BASE = np.arange(60, dtype=np.float32).reshape(6, 10)
NUMPY_VIEWS = {
    "contiguous": lambda: _BASE.copy(),
    "row-slice": lambda: _BASE.copy()[3:],
    "reversed": lambda: _BASE.copy()[::-1],
    "reversed-both": lambda: _BASE.copy()[::-2, ::-3],
    "transposed": lambda: _BASE.copy().T,
    "sliced": lambda: _BASE.copy()[1:5:2, 2::3],
    "broadcast": lambda: np.broadcast_to(np.arange(10.0), (4, 10)),
    "broadcast-scalar": lambda: np.broadcast_to(np.float32(2.5), (2**31 + 3,)),
    "huge-2d-broadcast": lambda: np.broadcast_to(np.arange(3, dtype=np.int8), (2**32 + 1, 3)),
    "0-d": lambda: np.array(7.5),
    "0-d-view": lambda: _BASE.copy()[2:3, 3:4].reshape(()),
    "zero-size": lambda: _BASE.copy()[:0],
    "zero-size-3d": lambda: np.empty((3, 0, 2), np.int16),
    "30-dims": lambda: _BASE.copy()[4:5, 7:8].reshape((1,) * 30),
    "odd-byte-strides": _odd_strides,
}


@pytest.mark.parametrize("name", NUMPY_VIEWS)
def test_asbuffer_of_a_numpy_view(host, name):
    a = NUMPY_VIEWS[name]()
    buf = interop.asbuffer(a)
    assert buf.shape == a.shape and buf.dtype is g.types.from_dtype(a.dtype)
    assert buf.size == a.size
    if a.size:
        assert buf.data_addr() == a.ctypes.data
        assert buf.strides == a.strides
    assert_same_array(np.asarray(buf), a)


@pytest.mark.parametrize("name", [n for n in NUMPY_VIEWS if n != "odd-byte-strides"])
def test_numpy_view_through_buffer_and_back_over_dlpack(host, name):
    a = NUMPY_VIEWS[name]()
    buf = interop.from_dlpack(a)
    assert_same_array(np.from_dlpack(buf), a)


def test_odd_byte_strides_refused_by_from_dlpack_but_read_by_asbuffer(host):
    a = _odd_strides()
    with pytest.raises(BufferError):
        interop.from_dlpack(a)
    assert interop.asbuffer(a).strides == (6,)


TORCH_VIEWS = {
    "contiguous": lambda t: t,
    "row-slice": lambda t: t[3:],
    "transposed": lambda t: t.T,
    "sliced": lambda t: t[1:5:2, 2::3],
    "expanded": lambda t: t[:, None, :].expand(6, 4, 10),
    "0-d": lambda t: t[2, 3],
    "zero-size": lambda t: t[:0],
    "30-dims": lambda t: t[4:5, 7:8].reshape((1,) * 30),
}


@needs_torch
@pytest.mark.parametrize("name", TORCH_VIEWS)
def test_asbuffer_of_a_torch_view(host, name):
    tensor = TORCH_VIEWS[name](torch.arange(60, dtype=torch.float64).reshape(6, 10))
    buf = interop.asbuffer(tensor)
    assert buf.shape == tuple(tensor.shape) and buf.dtype is g.f64
    if tensor.numel():
        assert buf.data_addr() == tensor.data_ptr()
        assert buf.strides == tuple(8 * s for s in tensor.stride())
    assert_same_array(np.asarray(buf), tensor.numpy())
    again = torch.from_dlpack(buf)
    assert again.data_ptr() == tensor.data_ptr() and torch.equal(again, tensor)


# ---- the pipeline the issue is about, minus kernels -------------------------------------------


@needs_torch
def test_numpy_to_buffer_to_torch_to_buffer_to_numpy_is_one_memory(host):
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    tensor = torch.from_dlpack(interop.asbuffer(a))
    tensor.mul_(2)  # a torch op, in place
    out = np.from_dlpack(interop.asbuffer(tensor.T))
    assert out.ctypes.data == a.ctypes.data
    np.testing.assert_array_equal(out, (np.arange(24, dtype=np.float32).reshape(4, 6) * 2).T)
