"""Foreign arrays in, without copies: `g.asbuffer(obj)` and `g.from_dlpack(obj)`.

Whatever the producer (NumPy, PyTorch, CuPy, JAX, Numba, anything speaking a protocol),
the result is one internal array reference: a typed gompute Buffer that points at the
producer's memory (element 0, shape, strides in bytes, dtype, device, read-only, the
stream the data is ordered on) and keeps the producer alive.

Protocols, in order of preference: `__dlpack__` (asked for DLPack 1.0, with the stream
passed explicitly; retried without the new keywords for older producers), then
`__cuda_array_interface__` (v2 and v3, honoring its stream), then
`__array_interface__` / the buffer protocol.
"""

from __future__ import annotations

import operator
import sys

import numpy as np

from . import _core
from .backend import Backend
from .errors import ArgumentError, GomputeError
from .types import from_dtype

# DLPack device types (dlpack.h, DLDeviceType).
DL_CPU, DL_CUDA, DL_CUDA_HOST, DL_ROCM, DL_ROCM_HOST, DL_CUDA_MANAGED = 1, 2, 3, 10, 11, 13
_LEGACY_STREAM = 1
_NO_SYNC = -1  # DLPack's stream=-1: the producer orders nothing


def library_of(obj) -> str:
    """The top-level module of `obj`'s type: "numpy", "torch", "cupy", "jaxlib", ..."""
    return type(obj).__module__.split(".")[0]


def is_jax(obj) -> bool:
    """Whether `obj` is a JAX array: immutable, so gompute reads it and never writes it."""
    return library_of(obj) in ("jax", "jaxlib")


def describe(obj) -> str:
    """How errors name an array: its type and, where it has them, shape and dtype."""
    kind = f"{library_of(obj)}.{type(obj).__name__}"
    try:
        shape, dtype = getattr(obj, "shape", None), getattr(obj, "dtype", None)
        shape = tuple(shape) if shape is not None else None
    except Exception:  # a torch nested tensor has no shape to give
        shape = dtype = None
    details = ", ".join(str(x) for x in (shape, dtype) if x is not None)
    return f"the {kind}" + (f" ({details})" if details else "")


def asbuffer(obj, *, stream=None) -> _core.Buffer:
    """`obj` as a typed gompute Buffer sharing its memory (no copy).

    `stream` (a gompute Stream or anything `stream_handle` accepts) is the stream the
    data will be used on; a CUDA producer is asked to order its work before it.
    """
    if isinstance(obj, _core.Buffer):
        return obj
    what = _Described(obj)
    if _is_masked(obj):
        raise ArgumentError(
            f"{what} is a masked array, whose mask gompute would not honour (its memory holds the masked "
            "values too); pass m.filled(value) or m.data"
        )
    refused = None
    if hasattr(obj, "__dlpack__"):
        try:
            return _from_dlpack(obj, stream, what)
        except BufferError as e:  # e.g. a read-only array from a producer without DLPack 1.0
            refused = e  # try the next protocol
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return _from_cuda_array_interface(obj, cai, what)
    if hasattr(obj, "__array_interface__"):
        array = _read_array_interface(obj, what)
        if isinstance(obj, np.generic):  # a NumPy scalar: the array is a copy, read-only to say so
            array.flags.writeable = False
        return _from_array_interface(array, what)
    if _has_buffer_protocol(obj):  # bytes, bytearray, memoryview, ...: their bytes as they are
        return _from_array_interface(np.asarray(memoryview(obj)), what)
    if refused is not None:  # the producer's own reason, which usually says what to do
        raise ArgumentError(f"{what} refused to export itself through DLPack: {refused}")
    raise ArgumentError(
        f"{what} speaks no array protocol gompute reads (__dlpack__, __cuda_array_interface__, "
        "__array_interface__ or the buffer protocol); convert it with np.asarray first if a copy is fine"
    )


def check_writable(name: str, given, out: _core.Buffer) -> None:
    """Refuses an out= array `given` (as `out`) that its library lets no one write: read-only, or a
    torch inference tensor outside torch.inference_mode() (torch's own in-place ops refuse it)."""
    torch = sys.modules.get("torch")  # not imported: no tensor exists
    if out.readonly:
        why = " (JAX arrays are immutable)" if is_jax(given) else ""
    elif torch and isinstance(given, torch.Tensor) and given.is_inference() and not torch.is_inference_mode_enabled():
        why = " (an inference tensor, which torch lets no one write outside torch.inference_mode())"
    else:
        return
    raise ArgumentError(
        f"{name}: {describe(given)} is read-only{why} and cannot be an output; leave out= off for a new "
        "array, or pass a writable one"
    )


def _is_negated_tensor(obj) -> bool:
    torch = sys.modules.get("torch")  # not imported: no tensor exists
    return torch is not None and isinstance(obj, torch.Tensor) and getattr(obj, "is_neg", bool)()


def _is_masked(obj) -> bool:
    ma = sys.modules.get("numpy.ma")  # not imported: no masked array exists
    return ma is not None and isinstance(obj, ma.MaskedArray)


class _Described:
    """An array's description for error messages, made only when one is raised."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __str__(self) -> str:
        return describe(self.obj)


def from_dlpack(obj, *, stream=None) -> _core.Buffer:
    """`obj` through DLPack only, as `np.from_dlpack` does."""
    if not hasattr(obj, "__dlpack__"):
        raise ArgumentError(f"{describe(obj)} has no __dlpack__ method")
    return _from_dlpack(obj, stream, _Described(obj))


def _from_dlpack(obj, stream, what) -> _core.Buffer:
    if _is_negated_tensor(obj):  # torch exports the memory, not the negation
        raise ArgumentError(f"{what} is a lazily negated view (its negative bit is set); call .resolve_neg() first")
    device_type, device_id = _dlpack_device(obj)
    gpu = device_type in (DL_CUDA, DL_CUDA_MANAGED, DL_ROCM)
    # CPU producers take no stream (DLPack and the array API require None there).
    handle = _consumer_stream(device_type, stream) if gpu else None
    try:
        try:
            capsule = obj.__dlpack__(stream=handle, max_version=(1, 0))
        except TypeError:  # a producer from before DLPack 1.0's keywords
            capsule = obj.__dlpack__(stream=handle) if gpu else obj.__dlpack__()
    except (BufferError, GomputeError):  # BufferError: the caller tries the other protocols
        raise
    except Exception as e:  # e.g. torch's nested tensors: the producer's reason
        raise ArgumentError(f"{what} cannot export itself through DLPack: {type(e).__name__}: {e}") from e
    if type(capsule).__name__ != "PyCapsule":
        kind = type(capsule).__name__
        raise ArgumentError(f"{what}.__dlpack__() returned an object of type {kind}, not a DLPack capsule")
    buffer = _core.from_dlpack(capsule, what, readonly=is_jax(obj))  # JAX arrays never change
    if gpu and handle != _NO_SYNC:  # -1: the caller orders the streams itself
        buffer.stream = _as_stream(buffer, stream, handle)
    return buffer


def _consumer_stream(device_type: int, stream) -> int:
    """`stream` as the array API numbers streams for a producer on `device_type`: on CUDA the
    legacy default stream is 1 (0 is refused as ambiguous), on ROCm the default stream is 0
    (1 and 2 are not used). A handle of 0 or 1, a default stream's, is the default stream."""
    handle = stream_handle(stream) if stream is not None else None
    if handle in (None, 0, 1):
        return 0 if device_type == DL_ROCM else _LEGACY_STREAM
    return handle


def _dlpack_device(obj) -> tuple[int, int]:
    try:
        device = obj.__dlpack_device__()
    except AttributeError:
        return DL_CPU, 0
    except GomputeError:
        raise
    except Exception as e:  # e.g. torch's meta tensors, a deleted JAX array: the producer's reason
        raise ArgumentError(
            f"{describe(obj)} cannot say where its memory is: __dlpack_device__() raised {type(e).__name__}: {e}"
        ) from e
    try:
        device_type, device_id = device
        return operator.index(device_type), operator.index(device_id)
    except (TypeError, ValueError):
        raise ArgumentError(
            f"{describe(obj)}.__dlpack_device__() returned {device!r}, not (device type, device id) ints"
        ) from None


def _from_cuda_array_interface(obj, cai, what) -> _core.Buffer:
    try:
        return _read_cuda_array_interface(obj, cai, what)
    except GomputeError:  # gompute's own word on what is wrong (ArgumentError is a TypeError too)
        raise
    except (KeyError, TypeError, ValueError) as e:  # a dict the protocol does not describe
        raise ArgumentError(
            f"{what}: its __cuda_array_interface__ is malformed ({type(e).__name__}: {e}); the protocol's v3 "
            "needs 'shape' (ints), 'typestr', 'data' (pointer, read-only flag) and 'version', and may have "
            "'strides' (ints or None) and 'stream' (an int, not 0)"
        ) from None


def _read_cuda_array_interface(obj, cai: dict, what) -> _core.Buffer:
    if not isinstance(cai, dict):
        raise TypeError(f"a {type(cai).__name__}, not a dict")
    version = operator.index(cai.get("version", 0))
    if version not in (2, 3):  # a later version may change what the fields mean
        raise ArgumentError(f"{what}: __cuda_array_interface__ version {version} is not one gompute reads (2 and 3)")
    if cai.get("mask") is not None:
        raise ArgumentError(f"{what}: masked arrays (a 'mask' in __cuda_array_interface__) are not supported")
    ptr, readonly = cai["data"]
    if readonly not in (True, False):  # a bool (NumPy's, or 0 and 1, taken too)
        raise TypeError(f"the read-only flag in 'data' is {readonly!r}, not a bool")
    readonly = bool(readonly)
    ptr = None if ptr is None else operator.index(ptr)
    if ptr is not None and not 0 <= ptr < 1 << 64:
        raise ValueError(f"the pointer in 'data' is {ptr}, not an address from 0 to 2**64 - 1")
    dtype = _dtype(_typestr(cai), what)
    shape = _int64s(cai["shape"], "shape")
    strides = cai.get("strides")
    strides = _c_strides(shape, dtype.itemsize) if strides is None else _int64s(strides, "strides")
    stream = _interface_stream_handle(cai.get("stream") if version >= 3 else None, what)
    buffer = _core.wrap_pointer(
        Backend.cuda.kind,
        _cuda_ordinal(obj, ptr or 0),
        ptr or 0,
        dtype.dlpack_code,
        dtype.bits,
        shape,
        strides,
        readonly,
        obj,
        what,
    )
    if stream is not None:
        buffer.stream = _known_stream(buffer, stream, what)
    return buffer


_CAI_STREAMS = (
    "the protocol's stream is None, 1 (the legacy default stream), 2 (the per-thread default stream) or the "
    "handle of a stream of the array's device"
)


def _interface_stream_handle(raw, what) -> int | None:
    """The stream handle a CUDA interface's 'stream' holds (None: it names none)."""
    if raw is None:
        return None
    try:
        handle = None if isinstance(raw, bool) else operator.index(raw)
    except TypeError:
        handle = None
    if handle == 0:
        raise ArgumentError(f"{what}: __cuda_array_interface__ stream 0 is disallowed by the protocol")
    if handle is None or not 0 < handle < 2**64:
        raise ArgumentError(
            f"{what}: its __cuda_array_interface__ 'stream' is {raw!r}, not a stream handle; {_CAI_STREAMS}"
        )
    return handle


def _known_stream(buffer: _core.Buffer, handle: int, what) -> _core.Stream:
    """The stream g.map is to launch on, which the driver must know on the array's device:
    recording an event there asks it."""
    device = buffer._device()
    stream = device.wrap_stream(handle)
    try:
        device.create_event(False).record(stream)
    except GomputeError as e:
        raise ArgumentError(
            f"{what}: its __cuda_array_interface__ 'stream' is {handle}, which is no stream of "
            f"{buffer.backend}:{buffer.device} ({e}); {_CAI_STREAMS}"
        ) from None
    return stream


def _read_array_interface(obj, what) -> np.ndarray:
    """`obj` as NumPy reads it through its `__array_interface__`, which NumPy checks; what it
    refuses is an ArgumentError naming the array, the interface and the field."""
    interface = obj.__array_interface__
    try:
        if not isinstance(interface, dict):
            raise TypeError(f"a {type(interface).__name__}, not a dict")
        if interface.get("mask") is not None:  # NumPy ignores it: the masked elements would be read as values
            raise ArgumentError(f"{what}: masked arrays (a 'mask' in __array_interface__) are not supported")
        _typestr(interface)  # NumPy's own message names no field
        return np.asarray(obj)
    except GomputeError:
        raise
    except (KeyError, TypeError, ValueError) as e:  # NumPy's own words name the field
        raise ArgumentError(
            f"{what}: its __array_interface__ is malformed ({type(e).__name__}: {e}); the protocol's v3 needs "
            "'shape' (ints), 'typestr' and 'data' (a pointer, not NULL when there are elements, and a read-only "
            "flag, or an object with the buffer protocol), and may have 'strides' (ints or None)"
        ) from None


def _typestr(interface: dict) -> np.dtype:
    """The NumPy dtype an interface's 'typestr' names; a TypeError naming the field if none."""
    typestr = interface["typestr"]
    if isinstance(typestr, str):  # not None, which np.dtype reads as float64
        try:
            return np.dtype(typestr)
        except TypeError:
            pass
    raise TypeError(f"'typestr' is {typestr!r}, which is no NumPy type string")


def _from_array_interface(array: np.ndarray, what) -> _core.Buffer:
    dtype = _dtype(array.dtype, what)
    return _core.wrap_pointer(
        Backend.host.kind,
        0,
        array.ctypes.data,
        dtype.dlpack_code,
        dtype.bits,
        array.shape,
        array.strides,
        not array.flags.writeable,
        array,
        what,
    )


def _dtype(spec, what):
    try:
        return from_dtype(spec)
    except GomputeError as e:
        raise ArgumentError(f"{what}: {e}") from None


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, running = [], itemsize
    for extent in reversed(shape):
        strides.append(running)
        running *= max(extent, 1)
    return tuple(reversed(strides))


def _has_buffer_protocol(obj) -> bool:
    try:
        memoryview(obj).release()
    except TypeError:
        return False
    return True


def _int64s(values, field: str) -> tuple[int, ...]:
    """An interface's shape or strides as ints of 64 bits; a ValueError naming the field if not."""
    found = tuple(operator.index(v) for v in values)
    if not all(-(1 << 63) <= v < 1 << 63 for v in found):
        raise ValueError(f"'{field}' is {found}, whose entries must fit in 64 bits")
    return found


def _cuda_ordinal(obj, ptr: int) -> int:
    """The CUDA device of a CAI array (the protocol names none): its framework's `device`,
    else the device the driver says `ptr` points into, else device 0."""
    device = getattr(obj, "device", None)
    for attr in ("id", "index"):  # CuPy's Device.id, torch.device.index
        ordinal = getattr(device, attr, None)
        if isinstance(ordinal, int):
            return ordinal
    return max(_core.pointer_device(Backend.cuda.kind, ptr), 0)


# ---- streams ----------------------------------------------------------------------------


def stream_handle(stream) -> int:
    """The raw handle of a stream given as a gompute Stream, anything with `__cuda_stream__`
    (the CUDA stream protocol), a `torch.cuda.Stream`, a `cupy.cuda.Stream`, or an int."""
    if isinstance(stream, bool):
        raise ArgumentError("a stream is a Stream object or an int handle, not a bool")
    if isinstance(stream, int):
        if not -1 <= stream < 1 << 64:  # -1: DLPack's "do not synchronize", which callers refuse or take
            raise ArgumentError(f"stream={stream} is no stream handle; pass a Stream, or a handle from 0 to 2**64 - 1")
        return stream
    if isinstance(stream, _core.Stream):
        return stream.handle
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        _version, handle = protocol() if callable(protocol) else protocol
        return int(handle)
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        handle = getattr(stream, attr, None)
        if isinstance(handle, int):
            return handle
    raise ArgumentError(
        f"cannot use a {type(stream).__name__} as a stream; pass a gompute Stream, a torch or CuPy stream, "
        "anything with __cuda_stream__, or an int handle"
    )


def _as_stream(buffer: _core.Buffer, stream, handle: int) -> _core.Stream:
    if isinstance(stream, _core.Stream):
        return stream
    return buffer._device().wrap_stream(handle)
