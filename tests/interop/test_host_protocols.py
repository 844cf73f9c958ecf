"""Host Buffers through NumPy's protocols, and what g.asbuffer takes and refuses."""

from __future__ import annotations

import ctypes
import weakref

import numpy as np
import pytest

import gompute as g
from gompute import _core, interop
from tests.map.kernels import scale_relu

from .conftest import assert_same_array, drain_releases, strided_reference

try:
    import torch
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None


# ---- __array_interface__ and the buffer protocol -----------------------------------------


def test_array_interface_of_a_contiguous_view(pattern):
    view = pattern.view(g.f32, (3, 4), None, 16)
    assert view.__array_interface__ == {
        "shape": (3, 4),
        "strides": None,
        "typestr": "<f4",
        "descr": [("", "<f4")],
        "data": (pattern.data_addr() + 16, False),
        "version": 3,
    }


def test_array_interface_of_a_strided_view(pattern):
    iface = pattern.view(g.i16, (3, 2), (-20, 4), 60).__array_interface__
    assert iface["shape"] == (3, 2) and iface["strides"] == (-20, 4)
    assert iface["typestr"] == "<i2" and iface["data"] == (pattern.data_addr() + 60, False)


def test_array_interface_of_untyped_bytes(pattern):
    iface = pattern.__array_interface__
    assert (iface["shape"], iface["strides"], iface["typestr"]) == ((256,), None, "|u1")
    assert iface["data"] == (pattern.data_addr(), False)


@pytest.mark.parametrize(
    "t, typestr",
    [
        (g.bool_, "|b1"),
        (g.i8, "|i1"),
        (g.u8, "|u1"),
        (g.i64, "<i8"),
        (g.u32, "<u4"),
        (g.f16, "<f2"),
        (g.f64, "<f8"),
    ],
    ids=lambda x: getattr(x, "name", x),
)
def test_array_interface_typestr(pattern, t, typestr):
    assert pattern.view(t, (2,)).__array_interface__["typestr"] == typestr


def test_array_interface_of_a_zero_size_view(pattern):
    view = pattern.view(g.f32, (0, 3))
    assert view.__array_interface__["data"][0] == 0
    out = np.asarray(view)
    assert out.shape == (0, 3) and out.dtype == np.float32


@pytest.mark.parametrize("t", [g.bool_, g.i8, g.u16, g.i32, g.u64, g.f16, g.f32, g.f64], ids=lambda t: t.name)
def test_buffer_protocol_matches_the_view(pattern, t):
    view = pattern.view(t, (2, 3), (3 * t.itemsize * 2, t.itemsize), t.itemsize)
    mem = memoryview(view)
    assert np.dtype(mem.format) == t.dtype
    assert (mem.itemsize, mem.shape, mem.strides) == (t.itemsize, view.shape, view.strides)
    assert not mem.readonly
    want = strided_reference(np.asarray(pattern), t.dtype, view.shape, view.strides, t.itemsize)
    assert_same_array(np.array(mem, copy=False), want)


def test_numpy_asarray_is_a_view_both_ways(pattern):
    out = np.asarray(pattern.view(g.u32, (8,), None, 32))
    assert out.ctypes.data == pattern.data_addr() + 32
    out[0] = 0xDEADBEEF
    got = np.empty(4, np.uint8)
    pattern.download(got, offset=32)
    assert got.view(np.uint32)[0] == 0xDEADBEEF
    pattern.upload(np.full(4, 7, np.uint8), offset=36)
    assert out[1] == 0x07070707


def test_no_cuda_array_interface_on_host_buffers(pattern):
    assert not hasattr(pattern, "__cuda_array_interface__")
    with pytest.raises(AttributeError):
        _ = pattern.view(g.f32, (4,)).__cuda_array_interface__


# ---- what asbuffer takes ---------------------------------------------------------------------


def _address(obj) -> int:
    return ctypes.addressof(ctypes.c_char.from_buffer(obj))


def test_asbuffer_of_a_bytearray(host):
    data = bytearray(range(10))
    buf = interop.asbuffer(data)
    assert (buf.dtype, buf.shape, buf.readonly) == (g.u8, (10,), False)
    assert buf.data_addr() == _address(data)
    np.asarray(buf)[3] = 99
    assert data[3] == 99
    buf.upload(np.full(2, 42, np.uint8), offset=8)
    assert data[8:] == bytearray([42, 42])


def test_asbuffer_of_a_typed_memoryview(host):
    data = bytearray(np.arange(6, dtype=np.int32).tobytes())
    buf = interop.asbuffer(memoryview(data).cast("i", (2, 3)))
    assert (buf.dtype, buf.shape, buf.strides) == (g.i32, (2, 3), (12, 4))
    assert buf.data_addr() == _address(data)
    np.testing.assert_array_equal(np.asarray(buf), np.arange(6).reshape(2, 3))


def test_asbuffer_of_a_strided_memoryview(host):
    data = bytearray(range(12))
    buf = interop.asbuffer(memoryview(data)[1::3])
    assert buf.shape == (4,) and buf.strides == (3,)
    assert buf.data_addr() == _address(data) + 1
    assert np.asarray(buf).tolist() == [1, 4, 7, 10]


def test_asbuffer_of_bytes_is_read_only(host):
    data = bytes([1, 2, 3, 4])  # a fresh object: if a write got through, no constant is spoiled
    buf = interop.asbuffer(data)
    assert (buf.dtype, buf.shape, buf.readonly) == (g.u8, (4,), True)
    assert buf.data_addr() == ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value  # no copy
    assert np.asarray(buf).tolist() == [1, 2, 3, 4]
    assert not np.asarray(buf).flags.writeable
    with pytest.raises(g.CopyFailed):
        buf.upload(bytearray(4))
    assert data == b"\x01\x02\x03\x04"


def test_asbuffer_of_a_memoryview_of_bytes_is_read_only(host):
    data = bytes([5, 6, 7])
    buf = interop.asbuffer(memoryview(data))
    assert (buf.dtype, buf.shape, buf.readonly) == (g.u8, (3,), True)
    assert np.asarray(buf).tolist() == [5, 6, 7]
    with pytest.raises(g.CopyFailed):
        buf.upload(bytearray(3))
    with pytest.raises(g.CopyFailed):  # a byte range of it too: bytes objects are immutable
        buf.view_bytes(0, 2).upload(b"ZZ")
    assert data == b"\x05\x06\x07"


def test_asbuffer_keeps_a_bytearray_alive(host):
    class Bytes(bytearray):  # weak-referenceable, unlike bytearray itself
        pass

    data = Bytes(range(8))
    alive = weakref.ref(data)
    buf = interop.asbuffer(data)
    del data
    drain_releases()
    assert alive() is not None and np.asarray(buf).tolist() == list(range(8))
    del buf
    drain_releases()
    assert alive() is None


class Both:
    """Speaks DLPack (for one array) and the array interface (for another)."""

    def __init__(self, through_dlpack, through_interface):
        self.through_dlpack, self.__array_interface__ = through_dlpack, through_interface.__array_interface__

    def __dlpack__(self, **kwargs):
        return self.through_dlpack.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.through_dlpack.__dlpack_device__()


class OldProducer:
    """A producer from before DLPack 1.0: no max_version keyword, legacy capsules only."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        assert stream is None
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_asbuffer_prefers_dlpack(host):
    a, b = np.arange(3.0), np.arange(3.0)
    assert interop.asbuffer(Both(a, b)).data_addr() == a.ctypes.data


def test_asbuffer_falls_back_to_the_array_interface_on_buffer_error(host):
    class Refusing(Both):
        def __dlpack__(self, **kwargs):
            raise BufferError("not today")

    a, b = np.arange(3.0), np.arange(3.0)
    assert interop.asbuffer(Refusing(a, b)).data_addr() == b.ctypes.data


def test_asbuffer_retries_old_producers_without_the_new_keywords(host):
    a = np.arange(5, dtype=np.int16)
    for read in (interop.asbuffer, interop.from_dlpack):
        buf = read(OldProducer(a))
        assert buf.data_addr() == a.ctypes.data and buf.dtype is g.i16
        np.asarray(buf)[0] = 9
        assert a[0] == 9


def test_asbuffer_of_a_buffer_is_itself(pattern):
    assert interop.asbuffer(pattern) is pattern


def test_asbuffer_refuses_a_list(host):
    with pytest.raises(g.ArgumentError, match=r"builtins\.list.*no array protocol"):
        interop.asbuffer([1.0, 2.0, 3.0])


def test_from_dlpack_refuses_what_has_no_dlpack(host):
    with pytest.raises(g.ArgumentError, match=r"builtins\.bytearray.*__dlpack__"):
        interop.from_dlpack(bytearray(4))


def test_asbuffer_refuses_long_double_complex_naming_the_array(host):
    with pytest.raises(g.ArgumentError, match=r"numpy\.ndarray \(\(2, 2\), complex256\).*has no gompute type"):
        interop.asbuffer(np.zeros((2, 2), np.clongdouble))


def test_asbuffer_refuses_other_unsupported_dtypes(host):
    with pytest.raises(g.ArgumentError, match="numpy.ndarray"):
        interop.asbuffer(np.zeros(3, "datetime64[s]"))
    with pytest.raises(g.ArgumentError, match="numpy.ndarray"):
        interop.asbuffer(np.zeros(3, ">f4"))  # non-native byte order: no DLPack, and no gompute type


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_asbuffer_refuses_half_complex_torch_naming_the_tensor(host):
    with pytest.raises(g.ArgumentError, match=r"torch\.Tensor.*code 5, 32 bits"):
        interop.asbuffer(torch.zeros(3, dtype=torch.complex32))


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_a_tensor_torch_will_not_export_says_torchs_reason(host):
    with pytest.raises(g.ArgumentError, match=r"torch\.Tensor.*refused.*DLPack.*detach\(\)"):
        interop.asbuffer(torch.ones(3, requires_grad=True))
    with pytest.raises(g.ArgumentError, match=r"torch\.Tensor.*conjugate bit"):
        interop.asbuffer(torch.ones(3, dtype=torch.complex64).conj())


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_a_lazily_negated_tensor_is_refused_not_read_unnegated(host):
    """torch's DLPack export hands over a negative-bit view's memory without the negation
    (np.from_dlpack reads it unnegated too): gompute refuses it, naming the fix."""
    t = torch.arange(4.0)._neg_view()
    with pytest.raises(g.ArgumentError, match=r"negative bit.*resolve_neg\(\)"):
        interop.asbuffer(t)
    assert np.array_equal(np.asarray(interop.asbuffer(t.resolve_neg())), -np.arange(4.0))


@pytest.mark.parametrize(
    "shape, strides, match",
    [
        ((3,), (2**62,), "reach past 2"),
        ((2**32, 2**32), (0, 0), "reach past 2"),
        ((-1,), (4,), "cannot be negative"),
    ],
    ids=["stride", "count", "negative"],
)
def test_a_view_that_does_not_fit_64_bits_is_refused(host, shape, strides, match):
    with pytest.raises(g.ArgumentError, match=match):
        host.alloc(64).view(g.f32, shape, strides=strides)


@pytest.mark.parametrize(
    "shape, strides, match",
    [((-1,), None, "cannot be negative"), ((2**32, 2**32), None, "reach past 2"), ((3,), (2**62,), "reach past 2")],
    ids=["negative", "count", "stride"],
)
def test_a_foreign_layout_that_does_not_fit_64_bits_is_refused(host, shape, strides, match):
    """A shape of -1 gave a Buffer of 2**64 - 4 bytes, whose views read past the array: through
    wrap_pointer (what __cuda_array_interface__ arrays become) and through DLPack."""
    from .dlpack_abi import Handmade, Producer

    a = np.arange(4, dtype=np.float32)
    byte_strides = strides or (4,) * len(shape)
    with pytest.raises(g.ArgumentError, match=match):
        _core.wrap_pointer(g.Backend.host.kind, 0, a.ctypes.data, 2, 32, shape, byte_strides, False, a, "the array")
    made = Handmade(a[:2].copy() if len(shape) == 1 else a.reshape(2, 2))
    made.shape[:] = list(shape)
    if strides is not None:
        made.strides[:] = [s // 4 for s in strides]
    with pytest.raises(g.ArgumentError, match=match):
        interop.asbuffer(Producer(made.capsule))


class _Cai:
    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


class _Ai:
    def __init__(self, interface):
        self.__array_interface__ = interface


class _Producer:
    def __init__(self, capsule, device):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


@pytest.mark.parametrize(
    "obj, match",
    [
        (_Cai({"version": 3, "shape": (2,), "typestr": "<f4"}), r"__cuda_array_interface__ is malformed \(KeyError"),
        (_Cai({"version": 3, "shape": (2,), "typestr": "<f4", "data": None}), "malformed"),
        (_Cai({"version": 3, "shape": (2,), "typestr": "<f4", "data": (8, "no")}), "read-only flag"),
        (_Cai({"version": 3, "shape": ("2",), "typestr": "<f4", "data": (8, False)}), "malformed"),
        (_Cai({"version": 3, "shape": (2,), "typestr": None, "data": (8, False)}), "'typestr' is None"),  # not f64
        (_Cai({"version": 3, "shape": (2,), "typestr": "<f4", "data": (-8, False)}), "not an address from 0"),
        (_Cai({"version": 3, "shape": (2**64,), "typestr": "<f4", "data": (8, False)}), "must fit in 64 bits"),
        (_Ai({"version": 3, "shape": (2,), "typestr": "<f4", "data": bytes(8), "mask": np.ones(2, bool)}), "masked"),
        (_Producer(5, (1, 0)), r"__dlpack__\(\) returned an object of type int, not a DLPack capsule"),
        (_Producer(None, ("cpu", 0)), r"__dlpack_device__\(\) returned \('cpu', 0\)"),
    ],
    ids=[
        "cai-no-data",
        "cai-data-none",
        "cai-flag",
        "cai-shape",
        "cai-typestr-none",
        "cai-pointer",
        "cai-shape-64",
        "ai-mask",
        "dlpack-int",
        "dlpack-device",
    ],
)
def test_a_malformed_protocol_answer_is_a_gompute_error_naming_it(host, obj, match):
    with pytest.raises(g.ArgumentError, match=match):
        interop.asbuffer(obj)


@pytest.mark.parametrize(
    ("typestr", "match"),
    [("<c32", "dtype complex256 has no gompute type"), (">f4", "is not in this machine's byte order")],
)
def test_a_well_formed_cai_of_a_dtype_gompute_lacks_is_not_called_malformed(host, typestr, match):
    """gompute's own ArgumentError (a TypeError too) was caught and re-worded as "malformed"."""
    cai = {"version": 3, "shape": (4,), "typestr": typestr, "data": (0x1000, False), "stream": 1}
    with pytest.raises(g.ArgumentError, match=match) as raised:
        interop.asbuffer(_Cai(cai))
    assert "malformed" not in str(raised.value)


def test_a_numpy_scalar_reads_but_is_no_output(host):
    """np.asarray of a scalar is a copy: written to, the result would vanish."""
    buf = interop.asbuffer(np.float32(2))
    assert buf.readonly and np.asarray(buf) == 2
    with pytest.raises(g.ArgumentError, match="read-only"):
        g.map(scale_relu)(np.float32(2), out=np.float32(0), scale=1)


def test_asbuffer_keeps_a_numpy_array_alive_through_array_interface(host):
    raw = np.arange(64, dtype=np.uint8)
    odd = np.ndarray((3,), np.float32, buffer=raw, offset=1, strides=(6,))  # no DLPack for this one
    alive = weakref.ref(raw)
    want = odd.copy()
    buf = interop.asbuffer(odd)
    del raw, odd
    drain_releases()
    assert alive() is not None
    np.testing.assert_array_equal(np.asarray(buf), want)
    del buf
    drain_releases()
    assert alive() is None


def test_wrap_pointer_rejects_mismatched_shape_and_strides(host):
    a = np.zeros(4)
    with pytest.raises(g.ArgumentError, match="the array: shape and strides"):
        _core.wrap_pointer(g.Backend.host.kind, 0, a.ctypes.data, 2, 64, (4,), (8, 8), False, a, "the array")


@pytest.mark.parametrize("make_stream", ["default", "created"])
def test_asbuffer_with_a_stream_on_cpu_arrays(host, make_stream):
    # DLPack says CPU producers take stream=None; a consumer's stream is gompute's business.
    stream = host.default_stream if make_stream == "default" else host.create_stream()
    a = np.arange(4.0)
    assert interop.asbuffer(a, stream=stream).data_addr() == a.ctypes.data
    assert interop.from_dlpack(a, stream=stream).data_addr() == a.ctypes.data
    if torch is not None:
        t = torch.arange(4.0)
        assert interop.asbuffer(t, stream=stream).data_addr() == t.data_ptr()


# ---- JAX (CPU), where installed ---------------------------------------------------------------


def test_jax_cpu_round_trip(host):
    jnp = pytest.importorskip("jax.numpy", reason="JAX is not installed")
    x = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
    buf = interop.asbuffer(x)
    assert buf.shape == (3, 4) and buf.dtype is g.f32
    assert buf.data_addr() == x.unsafe_buffer_pointer()
    np.testing.assert_array_equal(np.from_dlpack(buf), np.arange(12, dtype=np.float32).reshape(3, 4))


def test_numpy_cannot_view_device_memory_or_bf16_and_is_told_so(compute):
    """np.asarray of a GPU Buffer or a bf16 one made NumPy's 0-d object array; torch and CuPy
    refuse a device array, and so does a Buffer, naming the way out. A direct __array__ of a host
    Buffer is its view."""
    buf = compute.empty((4,), g.f32)
    if compute.backend is g.Backend.host:
        buf.upload(np.arange(4, dtype=np.float32))
        assert (
            np.shares_memory(buf.__array__(), np.asarray(buf)) and buf.__array__(dtype=np.float64).dtype == np.float64
        )
        with pytest.raises(g.ArgumentError, match="NumPy has no bfloat16: take a bf16 Buffer through DLPack"):
            np.asarray(compute.empty((4,), g.bf16))
    else:
        with pytest.raises(g.ArgumentError, match=f"a {compute.backend.value} Buffer is device memory, which NumPy"):
            np.asarray(buf)
