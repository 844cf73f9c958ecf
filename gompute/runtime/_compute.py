"""Compute: a handle on one device of one backend, the seed's runtime facade.

`g.runtime.dynamic.Compute` picks the backend (probe CUDA, then HIP, else the polite
`cpu` arm, `dynamic.CpuArm`); `g.runtime.cuda`, `.hip` and `.host` each have a Compute
bound to their backend. All of them share this class, so the method names are the same
everywhere.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

from .. import _core
from ..backend import Backend
from ..errors import AllocFailed, ArgumentError, BackendUnavailable, InvalidHandle
from ..types import resolve


@dataclass(frozen=True)
class DeviceInfo:
    """What a device is: its name, architecture, memory and driver."""

    backend: Backend
    ordinal: int
    name: str
    arch: str  # "sm_90", "gfx90a", or the CPU architecture on host
    compute_capability: tuple[int, int]
    total_memory: int
    multiprocessors: int  # SMs, CUs, or host worker threads
    driver_version: int


def device_info(backend: Backend, ordinal: int = 0) -> DeviceInfo:
    if not backend.has_device:
        raise BackendUnavailable(f"{backend} is the arm with no device; ask for cuda, hip or host")
    info = _core.device_info(backend.kind, ordinal)
    return DeviceInfo(backend=backend, ordinal=ordinal, **info)


class Compute:
    """One device of one backend. Use `with` to deinit at the end of a block.

    Handles are cheap: two Computes on a device share its context, and `deinit`
    releases only this handle. `g.runtime.shutdown()` is the real teardown.
    """

    def __init__(self, backend: Backend, device: _core.Device | None):
        self._backend = backend
        self._device = device  # None only for the cpu arm, whose _live raises
        self._closed = False

    @classmethod
    def _open(cls, backend: Backend, ordinal: int) -> Compute:
        if not isinstance(ordinal, int) or isinstance(ordinal, bool):
            raise ArgumentError(f"a device ordinal is an int, got {ordinal!r}")
        if not -(2**31) <= ordinal < 2**31:
            raise ArgumentError(f"device ordinal {ordinal} is out of range")
        return cls(backend, _core.Device(backend.kind, ordinal))

    # -- what it is ---------------------------------------------------------------

    @property
    def backend(self) -> Backend:
        return self._backend

    @property
    def ordinal(self) -> int:
        return self._live().ordinal

    def device_info(self) -> DeviceInfo:
        return device_info(self._backend, self._live().ordinal)

    def __repr__(self) -> str:
        return f"<Compute {self._device.describe()}{' deinit' if self._closed else ''}>"

    # -- the seed's calls -----------------------------------------------------------

    def alloc(self, nbytes: int) -> _core.Buffer:
        """`nbytes` of device memory (bytes, not elements)."""
        return self._live().alloc(_nbytes(nbytes))

    def empty(self, shape, dtype) -> _core.Buffer:
        """A new C-contiguous typed Buffer (uninitialized), e.g. `empty((3, 4), g.f32)`."""
        try:
            shape = (shape,) if hasattr(shape, "__index__") else tuple(shape)
        except TypeError:
            raise ArgumentError(f"a shape is an int or a tuple of non-negative ints, got {shape!r}") from None
        itemsize = resolve(dtype).itemsize
        count = 1
        for extent in shape:
            if isinstance(extent, bool) or not hasattr(extent, "__index__") or extent < 0:
                raise ArgumentError(f"a shape is non-negative ints, got {shape!r}")
            count *= operator.index(extent)
        return self.alloc(count * itemsize).view(dtype, shape)

    def alloc_pinned(self, nbytes: int) -> _core.PinnedMemory:
        """Page-locked host memory; `np.asarray(...)` views it. Async copies from it overlap with work."""
        return self._live("alloc_pinned").alloc_pinned(_nbytes(nbytes))

    def load_module(self, image) -> _core.Module:
        """Loads PTX, CUBIN or HSACO (a host shared object on host). The same image loads once per device."""
        if isinstance(image, str):
            image = image.encode()
        elif isinstance(image, (bytearray, memoryview)):
            image = bytes(image)
        elif not isinstance(image, bytes):
            raise ArgumentError(f"a module image is bytes (or PTX text), got {type(image).__name__}")
        return self._live("load_module").load_module(image)

    def create_stream(self) -> _core.Stream:
        return self._live("create_stream").create_stream()

    def create_event(self, timing: bool = True) -> _core.Event:
        """An event for ordering work across streams and, with `timing`, measuring it."""
        if timing not in (True, False):  # a bool (NumPy's too), or 1 or 0
            raise ArgumentError(f"create_event: timing is True or False, got {timing!r}")
        return self._live("create_event").create_event(bool(timing))

    @property
    def default_stream(self) -> _core.Stream:
        """The device's default (legacy) stream."""
        return self._live("default_stream").default_stream()

    def synchronize(self) -> None:
        """Blocks until the device is idle; a fault in earlier work raises SyncFailed here."""
        self._live("synchronize").synchronize()

    def deinit(self) -> None:
        """Releases this handle only; the context and modules stay for other handles."""
        self._closed = True

    def __enter__(self) -> Compute:
        return self

    def __exit__(self, *exc) -> None:
        self.deinit()

    # -- internals ----------------------------------------------------------------------

    def _live(self, call: str = "this call") -> _core.Device:
        """The device, for a call that needs one; `call` names it in the cpu arm's refusal."""
        if self._closed:
            raise InvalidHandle(
                f"this Compute ({self._device.describe()}) was deinit()ed; make a new one with Compute.init"
            )
        return self._device


def _nbytes(nbytes) -> int:
    if isinstance(nbytes, bool):
        raise ArgumentError(f"a size in bytes is an int, got {nbytes!r}")
    try:
        nbytes = operator.index(nbytes)
    except TypeError:
        raise ArgumentError(f"a size in bytes is an int, got {nbytes!r}") from None
    if nbytes < 0:
        raise AllocFailed(f"cannot allocate {nbytes} bytes")
    return nbytes


class BoundCompute(Compute):
    """A Compute fixed to one backend: the shape of g.runtime.cuda, .hip and .host."""

    _backend_kind: Backend

    @classmethod
    def init(cls) -> Compute:
        """The first device of this backend; raises BackendUnavailable with the reason if there is none."""
        return cls._open(cls._backend_kind, 0)

    @classmethod
    def init_device(cls, ordinal: int) -> Compute:
        return cls._open(cls._backend_kind, ordinal)


def bound(backend: Backend) -> type[BoundCompute]:
    return type("Compute", (BoundCompute,), {"_backend_kind": backend, "__module__": f"gompute.runtime.{backend}"})


def shutdown(backend: Backend | None = None) -> None:
    """Unloads every module and releases every context (of one backend, or all).

    Process teardown, not handle teardown: afterwards every old handle raises
    InvalidHandle, and a new Compute.init works again. The cpu arm holds nothing to release.
    """
    if backend is None or backend.has_device:
        _core.shutdown(None if backend is None else backend.kind)
