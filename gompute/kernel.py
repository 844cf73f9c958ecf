"""`g.map`, `g.run` and `g.BoundKernel`: map kernels called straight on arrays.

`g.map(k)` is the AutoKernel policy: each call reads where its arrays live (NumPy and
other CPU arrays run on the host backend, CUDA arrays on that CUDA device, ROCm arrays on
HIP), launches on the stream the data is ordered on, and returns the kind of array it was
given. `g.BoundKernel(k, backend, ordinal)` is the same call bound to one device.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from . import _core, abi
from .backend import Backend
from .dask import holds_dask_array, lazy_map
from .dim3 import Dim3
from .errors import AllocFailed, ArgumentError, CompileError
from .fast_path import params_table, teach
from .interface import arg
from .interop import asbuffer, check_writable, describe, is_jax, library_of, stream_handle
from .lang.entries import vector_elements
from .lang.kernel import MapKernel
from .runtime import _compute
from .runtime.dynamic import _check_backend
from .types import u64


class BoundKernel:
    """A map kernel bound to one device: `g.BoundKernel(scale_relu, g.Backend.cuda, 0)(x, scale=2)`."""

    def __init__(self, kernel: MapKernel, backend: Backend, ordinal: int = 0):
        if not isinstance(kernel, MapKernel):
            raise ArgumentError(f"g.BoundKernel needs a @g.map_kernel function, got {kernel!r}")
        backend = _check_backend(backend)  # a Backend or its name ("host")
        if backend is Backend.cpu:
            raise ArgumentError(
                "g.BoundKernel runs on a device, and Backend.cpu is the arm with none; use Backend.host for the CPU"
            )
        self.kernel = kernel
        self.compute = _compute.Compute._open(backend, ordinal)
        self._arch = _target_arch(self.compute)
        self._launchers: dict[tuple, _core.Kernel] = {}

    @property
    def backend(self) -> Backend:
        return self.compute.backend

    def __call__(self, /, *arrays, out=None, stream=None, **params):
        return _Call(self, arrays, out, stream, params).run()

    def __reduce__(self):
        """The kernel and the device: a process that unpickles it opens that device itself."""
        return BoundKernel, (self.kernel, self.backend, self.compute.ordinal)

    def __dask_tokenize__(self) -> tuple:
        return ("gompute.BoundKernel", self.kernel.__dask_tokenize__(), self.backend.value, self.compute.ordinal)

    def launcher(self, in_storage: tuple, out_storage, kind: str) -> _core.Kernel:
        """The loaded kernel for one storage signature and entry kind, compiled once."""
        key = (in_storage, out_storage, kind)
        found = self._launchers.get(key)
        if found is None:
            spec = self.kernel.variant(in_storage, out_storage)
            entry = spec.entry(kind)
            image = self.kernel.image_of(spec, self.backend.value, self._arch)
            found = self._launchers[key] = self.compute.load_module(image.data).get_kernel(entry.symbol)
        return found

    def vector(self, in_storage: tuple, out_storage) -> int:
        """Elements a thread of the contiguous GPU entries takes a pass (both read and write the
        same storage types, so "inplace" takes what "map" does)."""
        return vector_elements(self.kernel.variant(in_storage, out_storage).entry("map"))

    def __repr__(self) -> str:
        return f"<BoundKernel {self.kernel.name} on {self.backend}:{self.compute.ordinal}>"


def _target_arch(compute) -> str | None:
    """What to compile for: None on the host, the gfx arch on HIP; on CUDA a CUBIN for the
    device (which any driver loads), or PTX for the newest arch NVRTC knows below it when
    NVRTC is older than the device."""
    if compute.backend is Backend.host:
        return None
    info = compute.device_info()
    if compute.backend is not Backend.cuda:
        return info.arch
    from .compile import nvrtc

    cc = info.compute_capability[0] * 10 + info.compute_capability[1]
    supported = nvrtc.load().supported_archs
    if cc in supported:
        return f"sm_{cc}"
    older = [a for a in supported if a < cc]
    if not older:
        raise CompileError(
            f"NVRTC {nvrtc.load().version} cannot compile for {info.arch} ({info.name}) or anything older"
        )
    return f"compute_{max(older)}"


class AutoKernel(_core.FastMap):
    """`g.map(kernel)`: a callable that runs `kernel` wherever its arrays live.

    Calling it, `(*arrays, out=None, stream=None, **params)`, starts in C++ (the base
    class, csrc/dispatch.cpp): a call shaped like one already launched on that device is
    launched at once, on the host or on the GPU arrays' stream; any other comes to
    `_general`.
    """

    def __init__(self, kernel: MapKernel):
        if not isinstance(kernel, MapKernel):
            raise ArgumentError(f"g.map needs a @g.map_kernel function, got {kernel!r}")
        super().__init__(*params_table(kernel))
        self.kernel = kernel
        self._bound: dict[tuple[Backend, int], BoundKernel] = {}
        self._learned: set[tuple] = set()

    def bound(self, backend: Backend, ordinal: int) -> BoundKernel:
        found = self._bound.get((backend, ordinal))
        if found is None or not found.compute._live().alive:  # none yet, or its runtime was shut down
            found = self._bound[(backend, ordinal)] = BoundKernel(self.kernel, backend, ordinal)
            self._learned = {key for key in self._learned if key[-2:] != (backend, ordinal)}
        return found

    def _general(self, /, *arrays, out=None, stream=None, **params):
        return _Call(None, arrays, out, stream, params, auto=self).run()

    def __reduce__(self):
        """The kernel alone: unpickled, it is `g.map` of the unpickled kernel, the one kept on it."""
        return map, (self.kernel,)

    def __dask_tokenize__(self) -> tuple:
        return ("gompute.map", self.kernel.__dask_tokenize__())

    def learn(self, inputs, out: _core.Buffer, kind: str, core: _core.Kernel, vector: int, first, make) -> None:
        """Lets the C++ path take later calls like this one (`teach`), launching `core` with
        `vector` elements a thread a pass in a contiguous GPU entry."""
        teach(self, inputs, out, kind, first, make, lambda sig, fmt: self.remember(sig, fmt, kind, core, vector))

    def __repr__(self) -> str:
        return f"<g.map {self.kernel.name}>"


def map(kernel: MapKernel) -> AutoKernel:  # noqa: A001 - the library's verb
    """`g.map(k)(*arrays, out=None, stream=None, **params)`: run `k` on arrays of any framework.

    One AutoKernel per kernel, kept on it: `g.map(k)(x)` written inline in a loop costs what a
    saved `g.map(k)` does, not a new binding per call.
    """
    if not isinstance(kernel, MapKernel):
        raise ArgumentError(f"g.map needs a @g.map_kernel function, got {kernel!r}")
    auto = kernel.__dict__.get("_auto")
    if auto is None:
        auto = kernel._auto = AutoKernel(kernel)
    return auto


def run(kernel: MapKernel, array, *, stream=None, **params):
    """The seed's `run`: `kernel` applied to `array` in place; returns `array`."""
    return map(kernel)(array, out=array, stream=stream, **params)


class _Call:
    """One call: read the arrays, choose device, stream, output and entry point, launch."""

    verb = "g.map"  # what the messages call it

    def __init__(self, bound: BoundKernel | None, arrays, out, stream, params, auto: AutoKernel | None = None):
        self.bound, self.auto, self.arrays, self.out, self.stream, self.params = (
            bound,
            auto,
            arrays,
            out,
            stream,
            params,
        )
        self.kernel = (bound or auto).kernel
        self.finish = _same
        self.make = None  # how this call made its result, when it made one that is returned as is

    def run(self):
        k = self.kernel
        self._check_arity()
        packed = self._pack_params()
        if holds_dask_array((*self.arrays, self.out)):
            return self._lazy()
        wanted = self._wanted_stream()
        inputs = [self._import(a, wanted) for a in self.arrays]
        given = None if self.out is None else self._import_out(inputs, wanted)
        where = (self.bound.backend, self.bound.compute.ordinal) if self.bound else _call_device(inputs, given)
        self._check_devices(where, inputs)  # before binding, which may need a compiler for that device
        if given is not None:
            self._check_devices(where, [given], [self.out])
        bound = self.bound or self.auto.bound(*where)
        shape = self._broadcast(inputs)
        spec = k.variant(tuple(b.dtype for b in inputs), None if given is None else given.dtype)
        result, out = self._output(bound, inputs, shape, spec.out_type, given)
        launch_stream = self._launch_stream(bound, [*inputs, out], wanted)
        if out.size:
            self._launch(bound, inputs, out, packed, launch_stream)
        return self.finish(result)

    def _lazy(self):
        """A lazy Dask array of the call, one launch per chunk (gompute/dask.py)."""
        name = self.kernel.name
        if self.out is not None:
            raise ArgumentError(
                f"{name}: out= (and g.run) write into an array, and Dask arrays are immutable; use the Dask array "
                f"g.map({name})(...) returns, or write it into storage with da.store"
            )
        if self.stream is not None:
            raise ArgumentError(
                f"{name}: stream= names one stream, and a Dask array's chunks run on their workers' own; leave it out"
            )
        self._refuse_scalars()
        return lazy_map(self.bound or self.auto, self.kernel, self.arrays, self.params)

    # -- arguments ----------------------------------------------------------------------

    def _refuse_scalars(self) -> None:
        """A lazy call's inputs are arrays: a Python number or sequence has no chunks to run on."""
        for array in self.arrays:
            if _python_value(array):
                raise ArgumentError(self._not_an_array(array))

    def _check_arity(self) -> None:
        k, given = self.kernel, len(self.arrays)
        if k.arity == 0:
            raise ArgumentError(
                f"{k.name} reads no arrays, and {self.verb} takes the shape and device of its work from the "
                "arrays it is given; give the kernel an array argument, or launch it by hand (docs/kernels.md, "
                "'A kernel, compiled and launched by hand')"
            )
        if given != k.arity:
            arrays = f"array{'s' if k.arity != 1 else ''} ({', '.join(k.arg_names)})"
            message = f"{k.name} takes {k.arity} {arrays}, got {given}"
            if given > k.arity and k.params_class is not None:
                message += f"; its params are keywords: {_call_example(self.verb, k, k.params_class.__fields__)}"
            raise ArgumentError(message)

    def _pack_params(self) -> bytes | None:
        cls = self.kernel.params_class
        if cls is None:
            if self.params:
                raise ArgumentError(f"{self.kernel.name} takes no params, got {', '.join(sorted(self.params))}")
            return None
        missing = [f for f in cls.__fields__ if f.name not in self.params]
        if missing:
            names = ", ".join(f.name for f in missing)
            raise ArgumentError(
                f"{self.kernel.name} needs a value for {names} ({cls.__name__}); pass "
                f"{'it' if len(missing) == 1 else 'them'} as keywords: {_call_example(self.verb, self.kernel, missing)}"
            )
        return abi.pack(cls, **self.params)

    def _wanted_stream(self) -> int | None:
        """The stream to launch on, if known before reading the arrays."""
        handle = stream_handle(self.stream) if self.stream is not None else _framework_stream(self.arrays[0])
        if handle == -1:
            raise ArgumentError("stream=-1 (DLPack's 'do not synchronize') names no stream to launch on; pass a stream")
        # A framework's default stream reports handle 0, which DLPack refuses as ambiguous;
        # in the CUDA driver API the null stream is the legacy default stream, handle 1.
        return 1 if handle == 0 else handle

    def _import(self, array, wanted: int | None) -> _core.Buffer:
        if _python_value(array):
            raise ArgumentError(self._not_an_array(array))
        buffer = asbuffer(array, stream=wanted)
        if not buffer.typed:
            buffer = buffer.view(np.uint8, buffer.nbytes)
        itemsize = buffer.dtype.itemsize
        if any(s % itemsize for s in buffer.strides):
            raise ArgumentError(
                f"{self.kernel.name}: {describe(array)} has strides {tuple(buffer.strides)} bytes, not whole "
                f"elements of its {itemsize}-byte type (a field of a structured array, say); "
                + ("write into an array of its own, then copy into it" if array is self.out else "pass a copy")
            )
        return buffer

    def _import_out(self, inputs, wanted: int | None) -> _core.Buffer:
        for array, buffer in zip(self.arrays, inputs):
            if array is self.out:  # in place: the same Buffer, so it is plainly the same view
                return buffer
        return self._import(self.out, wanted)

    def _check_devices(self, where: tuple[Backend, int], buffers, arrays=None) -> None:
        for array, buffer in zip(self.arrays if arrays is None else arrays, buffers):
            if (buffer.backend, buffer.device) != where:
                raise ArgumentError(
                    f"{self.kernel.name}: {describe(array)} is on {buffer.backend}:{buffer.device}, but the call "
                    f"runs on {where[0]}:{where[1]}; move it there first"
                )

    def _not_an_array(self, value) -> str:
        k = self.kernel
        i = next((i for i, a in enumerate(self.arrays) if a is value), None)
        name, declared = ("out", None) if i is None else (k.arg_names[i], k.annotations[i])
        dtype = "" if declared is None or declared.dtype is None else f", dtype=np.{np.dtype(declared.dtype).name}"
        why = f" (np.asarray alone makes float64 or int64, which {name}: {declared.name} may refuse)" if dtype else ""
        return (
            f"{k.name}: {name} is a Python {type(value).__name__}, and {self.verb} takes arrays; "
            f"pass np.asarray({name}{dtype}){why}"
        )

    def _broadcast(self, buffers) -> tuple[int, ...]:
        shape = _core.broadcast_shape(buffers)
        if shape is None:
            listed = ", ".join(str(tuple(b.shape)) for b in buffers)
            raise ArgumentError(f"{self.kernel.name}: input shapes {listed} do not broadcast together")
        return shape

    # -- output -------------------------------------------------------------------------

    def _output(self, bound: BoundKernel, inputs, shape, out_type, out: _core.Buffer | None):
        """(what the call returns, its Buffer)."""
        if out is not None:
            check_writable(self.kernel.name, self.out, out)
            if tuple(out.shape) != tuple(shape):
                raise ArgumentError(
                    f"{self.kernel.name}: out has shape {tuple(out.shape)}, the inputs broadcast to {tuple(shape)}"
                )
            if not out.distinct_elements:
                raise ArgumentError(
                    f"{self.kernel.name}: {describe(self.out)} may have elements that share memory (strides "
                    f"{tuple(out.strides)} bytes, as from expand or broadcast_to), so which result each keeps "
                    "would depend on the order elements are computed in; pass an output of its own (a copy)"
                )
            _check_overlap(self.kernel.name, inputs, out)
            return self.out, out
        make, self.finish = _output_maker(self.arrays[0], bound, out_type)
        order = None if make.fn == bound.compute.empty else _core.result_order(inputs, len(shape))
        if order is not None:  # laid out like the inputs: made in that order, then viewed back
            import array_api_compat

            made = make(tuple(shape[d] for d in order))
            back = tuple(int(d) for d in np.argsort(order))
            result = array_api_compat.array_namespace(made).permute_dims(made, back)
        else:
            result = make(shape)
            if self.finish is _same:  # the C++ path may make later C-order results the same way
                self.make = make
        return result, asbuffer(result)

    # -- launch -------------------------------------------------------------------------

    def _launch_stream(self, bound: BoundKernel, buffers, wanted: int | None) -> _core.Stream | None:
        """The stream to launch on, ordered after every stream the arrays' data is on."""
        if bound.backend is Backend.host:
            given = self._host_stream()
            if given is not None:
                given.synchronize()  # the launch comes after the stream's work
            for buffer in buffers:  # the host launch runs now: what it reads must be ready
                if buffer.stream is not None:
                    buffer.stream.synchronize()
            return None
        given, where = self.stream, (bound.backend, bound.compute.ordinal)
        if isinstance(given, _core.Stream) and (given.backend, given.device) != where:
            raise ArgumentError(
                f"{self.kernel.name}: stream= is a stream of {given.backend}:{given.device}, but the arrays are on "
                f"{where[0]}:{where[1]}; pass a stream of that device"
            )
        device = bound.compute._live()
        if bound.backend is Backend.hip and wanted == 1:  # CUDA's legacy stream: HIP's is the null one
            wanted = 0
        stream = device.wrap_stream(wanted) if wanted is not None else None
        if stream is None:
            stream = next((b.stream for b in buffers if b.stream is not None), None)
        if stream is None:
            return None  # every array's data is on the default stream, and so is the launch
        on_default = stream.handle in (0, 1)  # the null or the legacy default stream
        for buffer in buffers:  # e.g. a CUDA Array Interface producer's own stream; None: the default one
            theirs = buffer.stream
            if (theirs is None and on_default) or (theirs is not None and theirs.handle == stream.handle):
                continue
            ready = device.create_event(False)  # a non-blocking stream does not wait for the default one
            ready.record(theirs if theirs is not None else device.default_stream())
            ready.wait(stream)
        return stream

    def _host_stream(self) -> _core.Stream | None:
        """`stream=` of a host launch, if a host Stream; the host backend has no foreign
        stream handles (0 or 1, a default stream's, mean the default stream)."""
        stream = self.stream
        if isinstance(stream, _core.Stream):
            if stream.backend is not Backend.host:
                raise ArgumentError(f"stream= is a {stream.backend} stream, but the arrays are host memory")
            return stream
        if stream is not None and self._wanted_stream() != 1:
            raise ArgumentError(
                f"stream={stream!r} names a foreign stream, and the host backend has none; "
                "pass a host Stream (compute.create_stream()) or leave stream= out"
            )
        return None

    def _launch(self, bound: BoundKernel, inputs, out, packed, stream) -> None:
        block, in_storage = self.kernel.block_size, tuple(b.dtype for b in inputs)
        vector = bound.vector(in_storage, out.dtype)
        kind, blocks, strides = _core.plan_launch(inputs, out, block, vector)
        core = bound.launcher(in_storage, out.dtype, kind)
        pointers = [out.arg_ptr()] if kind == "inplace" else [b.arg_ptr() for b in (*inputs, out)]
        args = [*pointers, arg(u64(out.size))]
        if strides is not None:
            args.append(arg(strides))
        if packed is not None:
            args.append(arg(packed))
        grid = Dim3(blocks)
        host = bound.backend is Backend.host
        # On the host the result is ready on return (NumPy has no streams); a GPU result is
        # ordered on `stream` and the next user of `out` waits for it there.
        core.launch(grid, Dim3(block), 0, args, stream, wait=host)
        if self.out is not None and _is_torch_tensor(self.out):  # a subclass's write counts too
            _count_write(self.out)
        if not host:
            out.stream = stream
            if isinstance(self.out, _core.Buffer) and self.out is not out:  # an untyped out= got a typed view
                self.out.stream = stream
        if self.auto is not None:
            self.auto.learn(inputs, out, kind, core, vector, self.arrays[0], self.make)


def _check_overlap(name: str, inputs, out) -> None:
    """Refuse an output that shares memory with an input without being the very same view of
    it. Views whose bytes interleave without meeting (x[::2] and x[1::2]) are fine."""
    for i in _core.overlapping_inputs(inputs, out):
        if _shares_memory(inputs[i], out):
            raise ArgumentError(
                f"{name}: out shares memory with input {i} without being the same view of it, so results would "
                "depend on the order elements are computed in; pass a separate output array"
            )


def _shares_memory(a: _core.Buffer, b: _core.Buffer) -> bool:
    """Whether two views have a byte in common, as np.shares_memory solves it (exactly, within a
    bound on the work: past it, as though they had)."""
    try:
        return bool(np.shares_memory(_layout_at(a), _layout_at(b), max_work=1 << 20))
    except np.exceptions.TooHardError:
        return True


class _layout_at:  # noqa: N801 - read as a function: `_layout_at(buffer)`
    """A buffer's layout at its address, as NumPy reads arrays (for np.shares_memory, which
    never reads the memory, so a GPU address is fine)."""

    def __init__(self, b: _core.Buffer):
        self.__array_interface__ = {
            "version": 3,
            "shape": tuple(b.shape),
            "strides": tuple(b.strides),
            "typestr": f"|V{b.dtype.itemsize}",
            "data": (b.data_addr(), True),
        }


def _call_example(verb: str, kernel: MapKernel, fields) -> str:
    arrays = ", ".join(kernel.arg_names)
    return f"{verb}({kernel.name})({arrays}, {', '.join(f'{f.name}=...' for f in fields)})"


# ---- where results and streams come from ---------------------------------------------------


def _call_device(inputs, out: _core.Buffer | None) -> tuple[Backend, int]:
    """Where a g.map call runs: on its first input's device, or on out='s when that input is on
    the host and out= on a GPU (the inputs are then what to move, as the error says)."""
    first = inputs[0]
    if out is not None and first.backend is Backend.host and out.backend is not Backend.host:
        return out.backend, out.device
    return first.backend, first.device


def _framework_stream(array) -> int | None:
    """The current stream of a PyTorch or CuPy CUDA array's framework, else None."""
    if _is_torch_tensor(array):
        return _torch_stream(array) if array.is_cuda else None
    if library_of(array) == "cupy":
        import cupy

        return cupy.cuda.get_current_stream().ptr
    return None


def _is_torch_tensor(obj) -> bool:
    torch = sys.modules.get("torch")  # not imported: no tensor exists
    return torch is not None and isinstance(obj, torch.Tensor)


def _torch_stream(tensor) -> int:
    """torch's current stream on a GPU tensor's device, asked by the C++ path's own code, through
    the DLPack exchange table on the tensor's type (a torch without one: its Python API)."""
    handle = _core.current_work_stream(tensor)
    if handle is None:
        import torch

        handle = torch.cuda.current_stream(tensor.device).cuda_stream
    return handle


class _Maker(NamedTuple):
    """`fn(shape, *args, **kwargs)`: how a call with no `out=` makes its result (the C++
    path calls it the same way, so NumPy's dtype goes positionally, the quickest)."""

    fn: Callable
    args: tuple = ()
    kwargs: dict | None = None
    dtype: object = None  # for an error's message, where neither args nor kwargs name it

    def __call__(self, shape):
        try:
            return self.fn(shape, *self.args, **(self.kwargs or {}))
        except MemoryError as e:  # NumPy's and CuPy's word for it; gompute's is AllocFailed
            dtype = self.dtype or (self.args[0] if self.args else (self.kwargs or {}).get("dtype"))
            itemsize = getattr(dtype, "itemsize", None)
            size = f", {int(np.prod(shape, dtype=object)) * itemsize} bytes" if isinstance(itemsize, int) else ""
            raise AllocFailed(
                f"the call's result ({dtype}, shape {tuple(shape)}{size}) cannot be allocated: {e}"
            ) from None


def _output_maker(array, bound: BoundKernel, dtype) -> tuple[_Maker, Callable]:
    """How a call with no `out=` makes its result: `(make, finish)`, where `make(shape)` is a
    new array of `array`'s own library (NumPy, PyTorch, CuPy, ...) on the call's device and
    `finish` turns it into what the call returns.

    PyTorch's tensors are made by the allocator of the DLPack exchange table their type carries,
    in C++ (csrc/dispatch.h, TableEmpty): an ordinary tensor whose storage cannot grow, as any
    tensor torch takes through DLPack. JAX arrays are immutable: the result is made as a gompute
    Buffer and handed to JAX through DLPack (`jnp.from_dlpack`, no copy).
    gompute Buffers, arrays with no array namespace, and results of a dtype the library
    lacks (bf16 for NumPy, unless the array is of ml_dtypes' bfloat16) give a Buffer (NumPy
    on host, where it has the dtype).
    """
    on_device = _Maker(bound.compute.empty, (dtype,))
    if isinstance(array, _core.Buffer):
        return on_device, _same
    if is_jax(array):
        import jax.numpy as jnp

        return on_device, jnp.from_dlpack
    numpy_dtype = np.dtype(dtype.dtype) if dtype.dtype is not None else _numpy_bfloat16(array)
    numpy_out = _Maker(np.empty, (numpy_dtype,)) if numpy_dtype is not None else on_device
    if isinstance(array, np.ndarray) and bound.backend is Backend.host:
        return numpy_out, _same
    table = _core.TableEmpty.like(array, dtype.dlpack_code, dtype.bits)
    if table is not None:  # torch's tensors: made in C++ by the allocator its DLPack exchange table holds
        return _Maker(table, dtype=numpy_dtype or dtype), _same
    import array_api_compat  # a requirement: without it a torch or CuPy input would give a Buffer back

    try:
        xp = array_api_compat.array_namespace(array)
    except TypeError:  # no array namespace for this type
        return numpy_out if bound.backend is Backend.host else on_device, _same
    name = "bool" if dtype.name == "bool_" else "bfloat16" if dtype.dtype is None else np.dtype(dtype.dtype).name
    if not hasattr(xp, name):
        return on_device, _same
    return _Maker(xp.empty, (), {"dtype": getattr(xp, name), "device": array_api_compat.device(array)}), _same


def _count_write(tensor) -> None:
    """Counts a write into a torch tensor as torch's in-place ops do: autograd then refuses a
    backward that needs the old values (through a detach()ed alias too) rather than computing
    wrong gradients. dispatch.cpp's count_write, for the C++ path."""
    import torch.autograd.graph

    torch.autograd.graph.increment_version(tensor)


def _numpy_bfloat16(array) -> np.dtype | None:
    """ml_dtypes' (JAX's) NumPy bfloat16, for a bf16 result of an array of that dtype; None
    otherwise (NumPy has no bfloat16 of its own)."""
    dtype = getattr(array, "dtype", None)
    return dtype if isinstance(dtype, np.dtype) and dtype.name == "bfloat16" and dtype.itemsize == 2 else None


def _same(x):
    return x


def _python_value(x) -> bool:
    """A Python number or sequence, which a call refuses as an input; not a NumPy scalar (a 0-d
    array to it), though np.float64 and np.complex128 are Python floats and complexes too."""
    return isinstance(x, (list, tuple, int, float, complex)) and not isinstance(x, np.generic)
