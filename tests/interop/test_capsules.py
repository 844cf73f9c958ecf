"""The DLPack capsule protocol at the ABI: names, versions, flags, dl_device/copy, consumption."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import gompute as g
from gompute import _core, interop

from .conftest import assert_same_array, drain_releases
from .dlpack_abi import (
    FOREIGN_NAME,
    IS_COPIED,
    KDL_CPU,
    READ_ONLY,
    VERSIONED_NAME,
    Handmade,
    Producer,
    capi,
    capsule_name,
    managed,
    tensor_fields,
)


@pytest.fixture
def view(pattern):
    """A strided float32 view (2, 3) with row stride 24 bytes, starting at byte 8."""
    return pattern.view(g.f32, (2, 3), (24, 4), 8)


# ---- what the capsules hold ----------------------------------------------------------------


@pytest.mark.parametrize("max_version", [(1, 0), (1, 3), (2, 0)], ids=str)
def test_versioned_capsule_describes_the_view(view, max_version):
    capsule = view.__dlpack__(max_version=max_version)
    assert capsule_name(capsule) == b"dltensor_versioned"
    m = managed(capsule)
    assert (m.major, m.minor) == (1, 0)
    assert m.flags == 0
    assert m.deleter
    assert tensor_fields(m.dl_tensor) == {
        "data": view.data_addr(),
        "device": (KDL_CPU, 0),
        "dtype": (2, 32, 1),
        "shape": (2, 3),
        "strides": (6, 1),
    }


@pytest.mark.parametrize("max_version", [None, (0, 8)], ids=str)
def test_legacy_capsule_when_the_consumer_does_not_ask_for_1_0(view, max_version):
    capsule = view.__dlpack__(max_version=max_version)
    assert capsule_name(capsule) == b"dltensor"
    assert "dltensor" in repr(capsule) and "versioned" not in repr(capsule)
    m = managed(capsule)
    assert m.deleter
    assert tensor_fields(m.dl_tensor)["data"] == view.data_addr()
    assert tensor_fields(m.dl_tensor)["strides"] == (6, 1)


@pytest.mark.parametrize(
    "t, code",
    [(g.bool_, 6), (g.i8, 0), (g.i64, 0), (g.u16, 1), (g.u64, 1), (g.f16, 2), (g.bf16, 4), (g.f64, 2)],
    ids=lambda x: getattr(x, "name", str(x)),
)
def test_capsule_dtype_codes(pattern, t, code):
    m = managed(pattern.view(t, (2,)).__dlpack__(max_version=(1, 0)))
    assert tensor_fields(m.dl_tensor)["dtype"] == (code, t.bits, 1)


def test_zero_dim_capsule(pattern):
    m = managed(pattern.view(g.i32, (), None, 8).__dlpack__(max_version=(1, 0)))
    assert m.dl_tensor.ndim == 0
    assert tensor_fields(m.dl_tensor)["data"] == pattern.data_addr() + 8
    assert np.from_dlpack(pattern.view(g.i32, (), None, 8)).shape == ()


def test_dlpack_device_of_host_buffers(pattern, host):
    assert pattern.__dlpack_device__() == (KDL_CPU, 0)
    assert pattern.view(g.f64, (4,)).__dlpack_device__() == (KDL_CPU, 0)
    assert interop.asbuffer(np.zeros(3)).__dlpack_device__() == (KDL_CPU, 0)


# ---- read-only ------------------------------------------------------------------------------


@pytest.fixture
def frozen(host):
    """A read-only NumPy array and the read-only Buffer over it."""
    a = np.arange(6, dtype=np.int32)
    a.flags.writeable = False
    return a, interop.asbuffer(a)


def test_read_only_numpy_imports_read_only(frozen):
    a, buf = frozen
    assert buf.readonly and buf.data_addr() == a.ctypes.data
    with pytest.raises(g.CopyFailed):
        buf.upload(np.full(6, 9, np.int32))
    np.testing.assert_array_equal(a, np.arange(6))


def test_every_view_of_a_read_only_buffer_is_read_only(frozen):
    a, buf = frozen
    typed = buf.view(g.u8, (24,))
    part = buf.view_bytes(4, 8)
    assert typed.readonly and not np.asarray(typed).flags.writeable
    assert part.readonly and part.device_addr() == a.ctypes.data + 4
    with pytest.raises(g.CopyFailed):
        part.upload(np.array([77, 78], np.int32))
    np.testing.assert_array_equal(a, np.arange(6))


def test_read_only_buffer_exports_the_flag(frozen):
    a, buf = frozen
    m = managed(buf.__dlpack__(max_version=(1, 0)))
    assert m.flags == READ_ONLY
    out = np.from_dlpack(buf)
    assert not out.flags.writeable and out.ctypes.data == a.ctypes.data
    assert not np.asarray(buf).flags.writeable
    assert buf.__array_interface__["data"] == (a.ctypes.data, True)
    assert memoryview(buf).readonly


def test_read_only_buffer_has_no_legacy_capsule(frozen):
    _, buf = frozen
    with pytest.raises(BufferError, match="max_version"):
        buf.__dlpack__()


def test_writable_array_flags(view):
    assert managed(view.__dlpack__(max_version=(1, 0))).flags & READ_ONLY == 0
    assert np.from_dlpack(view).flags.writeable


def test_read_only_capsule_imports_read_only(host):
    a = np.arange(4.0)
    a.flags.writeable = False
    buf = _core.from_dlpack(a.__dlpack__(max_version=(1, 0)), "the frozen array")
    assert buf.readonly and buf.data_addr() == a.ctypes.data


# ---- dl_device and copy ---------------------------------------------------------------------


def test_copy_true_makes_a_flagged_copy(view):
    capsule = view.__dlpack__(max_version=(1, 0), copy=True)
    m = managed(capsule)
    assert m.flags == IS_COPIED
    fields = tensor_fields(m.dl_tensor)
    assert fields["data"] != view.data_addr()
    assert fields["shape"] == (2, 3)

    out = np.from_dlpack(Producer(capsule))
    np.testing.assert_array_equal(out, np.asarray(view))
    out[:] = 0  # the copy is its own memory
    assert np.asarray(view).any()


def test_numpy_copy_keyword(view):
    copied = np.from_dlpack(view, copy=True)
    shared = np.from_dlpack(view, copy=False)
    assert copied.ctypes.data != view.data_addr()
    assert shared.ctypes.data == view.data_addr()
    np.testing.assert_array_equal(copied, shared)


@pytest.mark.parametrize("copy", [None, False])
def test_no_copy_unless_asked(view, copy):
    m = managed(view.__dlpack__(max_version=(1, 0), copy=copy))
    assert m.flags == 0 and tensor_fields(m.dl_tensor)["data"] == view.data_addr()


@pytest.mark.parametrize("copy", [None, False, True])
def test_dl_device_of_its_own_device(view, copy):
    m = managed(view.__dlpack__(max_version=(1, 0), dl_device=(KDL_CPU, 0), copy=copy))
    assert tensor_fields(m.dl_tensor)["device"] == (KDL_CPU, 0)
    assert (m.flags == IS_COPIED) == bool(copy)
    assert (tensor_fields(m.dl_tensor)["data"] == view.data_addr()) == (not copy)


def test_numpy_device_keyword(view):
    out = np.from_dlpack(view, device="cpu")
    assert out.ctypes.data == view.data_addr()


@pytest.mark.parametrize("copy", [None, False, True])
def test_dl_device_gompute_cannot_copy_to(view, copy):
    with pytest.raises(BufferError):
        view.__dlpack__(max_version=(1, 0), dl_device=(2, 0), copy=copy)  # kDLCUDA from a host buffer


def test_copy_of_a_read_only_buffer_is_a_writable_copy(frozen):
    a, buf = frozen
    m = managed(buf.__dlpack__(max_version=(1, 0), copy=True))
    assert tensor_fields(m.dl_tensor)["data"] != a.ctypes.data
    assert m.flags == managed(a.__dlpack__(max_version=(1, 0), copy=True)).flags == IS_COPIED  # as NumPy does
    copied = np.from_dlpack(buf, copy=True)
    assert copied.flags.writeable
    np.testing.assert_array_equal(copied, a)


@pytest.mark.parametrize(
    "shape, strides, offset",
    [
        ((3, 4), (-32, 8), 200),
        ((2, 3, 4), (4, 96, -8), 40),
        ((5, 3), (0, 8), 16),
        ((0, 2), None, 0),
        ((), None, 24),
    ],
    ids=["negative-rows", "mixed", "broadcast", "zero-size", "0-d"],
)
def test_copy_true_of_strided_views(pattern, shape, strides, offset):
    view = pattern.view(g.f64 if len(shape) != 3 else g.u16, shape, strides, offset)
    want = np.asarray(view).copy()
    copied = np.from_dlpack(Producer(view.__dlpack__(max_version=(1, 0), copy=True)))
    assert copied.shape == want.shape
    np.testing.assert_array_equal(copied, want)
    if copied.size:
        assert copied.ctypes.data != view.data_addr()


# ---- consumption ----------------------------------------------------------------------------


@pytest.mark.parametrize("max_version, used", [((1, 0), b"used_dltensor_versioned"), (None, b"used_dltensor")])
def test_capsule_is_consumed_once(view, max_version, used):
    capsule = view.__dlpack__(max_version=max_version)
    buf = _core.from_dlpack(capsule, "the first view")
    assert capsule_name(capsule) == used
    assert buf.data_addr() == view.data_addr() and buf.shape == (2, 3) and buf.strides == (24, 4)
    with pytest.raises(g.ArgumentError, match="the first view.*already consumed"):
        _core.from_dlpack(capsule, "the first view")
    np.testing.assert_array_equal(np.asarray(buf), np.asarray(view))


def test_numpy_capsule_consumed_by_gompute_then_by_numpy(host):
    a = np.arange(5.0)
    capsule = a.__dlpack__(max_version=(1, 0))
    buf = _core.from_dlpack(capsule, "a")
    assert buf.data_addr() == a.ctypes.data
    with pytest.raises(ValueError, match="incorrect name"):  # NumPy sees it was renamed used_...
        np.from_dlpack(Producer(capsule))


def test_gompute_capsule_consumed_by_numpy_then_by_gompute(view):
    capsule = view.__dlpack__(max_version=(1, 0))
    out = np.from_dlpack(Producer(capsule))
    assert out.ctypes.data == view.data_addr()
    assert capsule_name(capsule) == b"used_dltensor_versioned"
    with pytest.raises(g.ArgumentError, match="already consumed"):
        interop.from_dlpack(Producer(capsule))


def test_foreign_capsule_is_refused(host):
    anything = ctypes.c_int(0)
    capsule = capi.PyCapsule_New(ctypes.addressof(anything), FOREIGN_NAME, None)
    with pytest.raises(g.ArgumentError, match="the odd capsule.*not_a_tensor"):
        _core.from_dlpack(capsule, "the odd capsule")
    assert capsule_name(capsule) == FOREIGN_NAME


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "legacy"])
def test_consumer_calls_a_foreign_deleter_exactly_once(host, versioned):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    made = Handmade(a, versioned=versioned)
    buf = _core.from_dlpack(made.capsule, "the handmade tensor")
    assert buf.data_addr() == a.ctypes.data and buf.strides == a.strides
    view = buf.view(g.f32, (12,))
    out = np.from_dlpack(view)
    del buf
    drain_releases()
    assert made.deleted() == 0, "deleted while a view and an export still use it"
    del view
    drain_releases()
    assert made.deleted() == 0
    assert out.sum() == 66
    del out
    drain_releases()
    assert made.deleted() == 1
    del made.capsule  # a consumed capsule's destructor must not call the deleter again
    drain_releases()
    assert made.deleted() == 1


def test_null_strides_mean_row_major(host):
    a = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    made = Handmade(a, strides=False)  # the producer: it must outlive its capsule
    buf = _core.from_dlpack(made.capsule, "compact")
    assert buf.strides == (24, 8, 2)
    assert_same_array(np.asarray(buf), a)


def test_byte_offset_is_honored(host):
    a = np.arange(10, dtype=np.float64)[3:]
    made = Handmade(a, byte_offset=24)
    buf = _core.from_dlpack(made.capsule, "offset")
    assert buf.data_addr() == a.ctypes.data
    assert np.asarray(buf).tolist() == list(range(3, 10))


def test_read_only_flag_of_a_foreign_capsule(host):
    a = np.arange(3.0)
    frozen, copied = Handmade(a, flags=READ_ONLY), Handmade(a, flags=IS_COPIED)
    assert _core.from_dlpack(frozen.capsule, "ro").readonly
    assert not _core.from_dlpack(copied.capsule, "copied").readonly


def test_cuda_host_memory_is_host_memory(host):
    a = np.arange(3.0)
    made = Handmade(a, device=(3, 0))  # kDLCUDAHost
    buf = _core.from_dlpack(made.capsule, "pinned")
    assert buf.backend is g.Backend.host and buf.data_addr() == a.ctypes.data


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"major": 2}, "version 2"),
        ({"device": (7, 0)}, "device type 7"),  # kDLVulkan
        ({"dtype": (5, 32, 1)}, "code 5"),  # complex32
        ({"dtype": (2, 32, 4)}, "4 lanes"),
        ({"dtype": (2, 8, 1)}, "8 bits"),
        ({"dtype": (6, 1, 1)}, "1 bits"),
    ],
    ids=["version-2", "vulkan", "complex", "vector-lanes", "float8", "bit-bool"],
)
def test_foreign_capsules_gompute_cannot_read(host, kwargs, match):
    made = Handmade(np.zeros(4, np.float32), **kwargs)
    with pytest.raises(g.ArgumentError, match=f"the odd tensor.*{match}"):
        _core.from_dlpack(made.capsule, "the odd tensor")
    assert capsule_name(made.capsule) == VERSIONED_NAME, "a refused capsule stays the producer's"
    assert made.deleted() == 0


@pytest.mark.parametrize("max_version", [(), "1", (1,), ("1", "0"), (1, "x"), (True, 0)], ids=repr)
def test_a_max_version_that_is_no_version_is_refused_naming_it(pattern, max_version):
    with pytest.raises(g.ArgumentError, match=r"max_version is a \(major, minor\) tuple of ints"):
        pattern.__dlpack__(max_version=max_version)


def test_a_max_version_past_64_bits_is_a_version_past_1(pattern):
    assert capsule_name(pattern.__dlpack__(max_version=(2**70, 0))) == VERSIONED_NAME


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dl_device": "cpu"}, r"dl_device= is a \(device_type, device_id\) tuple"),
        ({"dl_device": (1,)}, r"dl_device= is a \(device_type, device_id\) tuple"),
        ({"dl_device": (1.0, 0)}, "dl_device's device_type must be an int"),
        ({"copy": "no"}, "copy= is True, False or None, got 'no'"),
        ({"stream": 7}, "a host buffer has no streams; stream= must be None"),
        ({"stream": "x"}, "a host buffer has no streams"),
    ],
    ids=repr,
)
def test_dlpack_keywords_that_mean_nothing_are_refused_naming_them(pattern, kwargs, message):
    """pybind11's "Unable to cast" and an IndexError before; the array API allows only None
    as the stream of a device without streams."""
    with pytest.raises(g.ArgumentError, match=message):
        pattern.__dlpack__(max_version=(1, 0), **kwargs)


def test_a_producer_that_cannot_say_where_it_lives_is_named(host):
    class Broken:
        def __dlpack__(self, **_):
            raise AssertionError("never asked: the device comes first")

        def __dlpack_device__(self):
            raise ValueError("Unknown device type meta for Dlpack")

    with pytest.raises(g.ArgumentError, match=r"cannot say where its memory is: __dlpack_device__\(\) raised Value"):
        g.asbuffer(Broken())


def test_numpy_bfloat16_of_ml_dtypes_is_bf16(host):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.array([1.5, -2.0, 3.25], ml_dtypes.bfloat16)
    b = g.asbuffer(x)
    assert b.dtype is g.bf16 and b.data_addr() == x.ctypes.data


class _Recording:
    """A GPU DLPack producer (a gompute Buffer behind a wrapper) that records what it is asked."""

    def __init__(self, buffer):
        self.buffer, self.asked = buffer, []

    def __dlpack__(self, **kwargs):
        self.asked.append(kwargs.get("stream"))
        return self.buffer.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.buffer.__dlpack_device__()


@pytest.mark.parametrize("given", ["default stream", 0, None])
def test_the_default_stream_is_asked_for_as_the_array_apis_1_on_cuda(given):
    """A gompute default stream (handle 0) went to the producer as stream=0, which the array
    API forbids on CUDA as ambiguous."""
    from tests.conftest import open_compute

    cuda = open_compute(g.Backend.cuda)
    producer = _Recording(cuda.empty((16,), g.f32))
    stream = cuda.default_stream if given == "default stream" else given
    assert g.asbuffer(producer, stream=stream).shape == (16,)
    assert producer.asked == [1]


def test_stream_minus_one_asks_for_no_ordering_and_names_no_stream():
    from tests.conftest import open_compute

    cuda = open_compute(g.Backend.cuda)
    producer = _Recording(cuda.empty((16,), g.f32))
    buffer = g.asbuffer(producer, stream=-1)  # wrap_stream(-1) was pybind11's TypeError
    assert producer.asked == [-1] and buffer.stream is None


@pytest.mark.parametrize("stream", [-2, -(2**63)])
def test_a_negative_stream_but_minus_one_is_refused_before_the_driver_sees_it(stream):
    """The array API's only negative stream is -1 (no ordering); any other would reach the driver
    as a stream handle to wait on."""
    from tests.conftest import open_compute

    cuda = open_compute(g.Backend.cuda)
    with pytest.raises(BufferError, match=rf"stream={stream} is not a stream in DLPack \(-1 is the only negative"):
        cuda.empty((16,), g.f32).__dlpack__(stream=stream)


def test_a_producer_whose_export_fails_is_named_with_its_reason(host):
    """As a torch nested tensor does: its __dlpack__ and its shape raise RuntimeError."""

    class Nested:
        @property
        def shape(self):
            raise RuntimeError("NestedTensorImpl doesn't support sizes")

        def __dlpack__(self, **_):
            raise RuntimeError("NestedTensorImpl doesn't support sizes")

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(g.ArgumentError, match="cannot export itself through DLPack: RuntimeError: NestedTensorImpl"):
        g.asbuffer(Nested())
