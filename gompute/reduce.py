"""`g.reduce`: reduction kernels called straight on arrays, with NumPy's axis rules.

`g.reduce(k)(*arrays, axis=None, keepdims=False, out=None, stream=None, **params)` reads the
arrays as `g.map` does (same interop, devices, streams, params and output making: it is
`kernel._Call`'s glue with a reduction's own planning and launches), broadcasts them, reduces
the axes asked for and returns an array of the first input's library: a 0-d one for
`axis=None`.

The plan: the result's dimensions ("kept") outermost and the reduced ones innermost, each
group with extent-1 dimensions dropped and neighbours merged where every array allows, then
one of two first launches (`lang/reduce_entries.py`): `columns` where the innermost kept
dimension is contiguous in every input and the reduced ones are not (the lanes run across
results), `rows` otherwise (runs along the innermost reduced dimension, gathered where it is
strided). Its items are a fixed size, so results do not depend on the thread count.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from . import _core
from .backend import Backend
from .dask import combiner, holds_dask_array, lazy_reduce
from .dim3 import Dim3
from .errors import ArgumentError
from .interface import arg
from .interop import asbuffer, describe, is_jax
from .kernel import (
    _Call,
    _call_device,
    _check_overlap,
    _count_write,
    _is_torch_tensor,
    _output_maker,
    _target_arch,
)
from .lang.module import MAX_NDIM
from .lang.reduce_entries import (
    COLUMN_ROWS,
    GPU_ITEMS,
    LAYOUT_ARRAYS,
    LEAF_ROWS,
    ROW_LEAVES,
    column_width,
    lanes,
)
from .lang.reduce_kernel import ReduceKernel
from .runtime import _compute
from .runtime.dynamic import _check_backend

_BLOCK_ELEMENTS = 1 << 16  # elements a host block of the first launch reads, about
_FINISH_PARTIALS = 1 << 14  # partials a block of the second launch combines, about
_GPU_PARTIALS = 1 << 12  # a GPU rows launch's items (partials), at most, unless results outnumber them
_PLANS_KEPT = 256  # plans a bound reduction keeps, by layout
_GPU_MAX_BLOCKS = 1 << 20  # a GPU launch's blocks, at most: they stride through the items past it


class BoundReduce:
    """A reduction kernel bound to one device: `g.reduce` picks one per call from the arrays."""

    def __init__(self, kernel: ReduceKernel, backend: Backend, ordinal: int = 0):
        backend = _check_backend(backend)
        if backend is Backend.cpu:
            raise ArgumentError("a reduction runs on a device, and Backend.cpu is the arm with none; use Backend.host")
        self.kernel = kernel
        self.compute = _compute.Compute._open(backend, ordinal)
        self._arch = _target_arch(self.compute)
        self._launchers: dict[tuple, _core.Kernel] = {}
        self._plans: dict[tuple, _Plan] = {}
        self.gpu = backend is not Backend.host  # how a call is cut: GPU blocks of threads, or host items

    @property
    def backend(self) -> Backend:
        return self.compute.backend

    def plan(self, spec, inputs, out: _core.Buffer, shape, axes, keepdims: bool) -> _Plan:
        """The call's launches, planned once per layout (shapes, strides, types, axes)."""
        key = (spec.name, axes, keepdims, out.shape, out.strides, *((b.shape, b.strides) for b in inputs))
        found = self._plans.get(key)
        if found is None:
            if len(self._plans) >= _PLANS_KEPT:
                self._plans.clear()
            found = _plan(spec, inputs, out, shape, axes, keepdims, spec.block_size if self.gpu else None)
            self._plans[key] = found
        return found

    def launcher(self, spec, kind: str) -> _core.Kernel:
        """The loaded entry `kind` of `spec`, compiled once."""
        key = (spec.name, kind)
        found = self._launchers.get(key)
        if found is None:
            image = self.kernel.image_of(spec, self.backend.value, self._arch)
            module = self.compute.load_module(image.data)
            found = self._launchers[key] = module.get_kernel(spec.entry(kind).symbol)
        return found


class AutoReduce:
    """`g.reduce(kernel)`: a callable that reduces arrays wherever they live."""

    def __init__(self, kernel: ReduceKernel):
        self.kernel = kernel
        self._bound: dict[tuple[Backend, int], BoundReduce] = {}

    def bound(self, backend: Backend, ordinal: int) -> BoundReduce:
        found = self._bound.get((backend, ordinal))
        if found is None or not found.compute._live().alive:
            found = self._bound[(backend, ordinal)] = BoundReduce(self.kernel, backend, ordinal)
        return found

    def __call__(self, /, *arrays, axis=None, keepdims=False, out=None, stream=None, **params):
        return _ReduceCall(self, arrays, out, stream, params, axis, keepdims).run()

    def __reduce__(self):
        return reduce, (self.kernel,)

    def __dask_tokenize__(self) -> tuple:
        return ("gompute.reduce", self.kernel.__dask_tokenize__())

    def __repr__(self) -> str:
        return f"<g.reduce {self.kernel.name}>"


def reduce(kernel: ReduceKernel) -> AutoReduce:  # noqa: A001 - the library's verb
    """`g.reduce(k)(*arrays, axis=None, keepdims=False, out=None, stream=None, **params)`: reduce
    `k`'s map part over `axis` (None: all; an int or a tuple, negative from the end), as NumPy's
    reductions do; one AutoReduce per kernel, kept on it."""
    if not isinstance(kernel, ReduceKernel):
        raise ArgumentError(f"g.reduce needs a @g.reduce_kernel function, got {kernel!r}")
    auto = kernel.__dict__.get("_auto")
    if auto is None:
        auto = kernel._auto = AutoReduce(kernel)
    return auto


class _ReduceCall(_Call):
    """One call: g.map's reading of arrays, devices and streams; a reduction's plan and launches."""

    def __init__(self, auto: AutoReduce, arrays, out, stream, params, axis, keepdims):
        super().__init__(None, arrays, out, stream, params, auto=auto)
        self.axis, self.keepdims = axis, bool(keepdims)

    def run(self):
        k = self.kernel
        if len(self.arrays) != k.arity:
            raise ArgumentError(self._arity_message().replace("g.map(", "g.reduce("))
        packed = self._pack_params()
        if holds_dask_array((*self.arrays, self.out)):
            fold = reduce(combiner(k))
            return lazy_reduce(self.auto, fold, k, self.arrays, self.axis, self.keepdims, self._dask_checked())
        wanted = self._wanted_stream()
        inputs = self.inputs = [self._import(a, wanted) for a in self.arrays]
        given = None if self.out is None else self._import_out(inputs, wanted)
        where = _call_device(inputs, given)
        self._check_devices(where, inputs)
        if given is not None:
            self._check_devices(where, [given], [self.out])
        bound = self.auto.bound(*where)
        shape = self._broadcast(inputs)
        axes = normalize_axes(self.axis, len(shape))
        kept = tuple(n for d, n in enumerate(shape) if d not in axes)
        out_shape = tuple(1 if d in axes else n for d, n in enumerate(shape)) if self.keepdims else kept
        spec = k.variant(tuple(b.dtype for b in inputs), None if given is None else given.dtype)
        if math.prod(shape[d] for d in axes) == 0 and math.prod(kept) and k.identity is None:
            raise ArgumentError(
                f"{k.name}: a reduction over zero elements with combine {k.combine!r}, which has no identity; "
                "give the kernel identity=, or reduce a nonempty array"
            )
        result, out = self._reduce_output(bound, out_shape, spec, given)
        launch_stream = self._launch_stream(bound, [*inputs, out], wanted)
        if out.size:
            self._launch(bound, spec, inputs, out, shape, axes, packed, launch_stream)
        return self.finish(result)

    def _dask_checked(self) -> dict:
        """The params of a Dask call, after refusing what a lazy reduction cannot take."""
        if self.out is not None or self.stream is not None:
            raise ArgumentError(
                f"{self.kernel.name}: out= and stream= name one array and one stream, and a Dask reduction runs "
                "on its workers' chunks; leave them out"
            )
        return self.params

    def _reduce_output(self, bound: BoundReduce, out_shape, spec, out: _core.Buffer | None):
        """(what the call returns, its Buffer)."""
        name = self.kernel.name
        if out is None:
            make, self.finish = _output_maker(self.arrays[0], bound, spec.result)
            result = make(out_shape)
            return result, asbuffer(result)
        if out.readonly:
            why = " (JAX arrays are immutable)" if is_jax(self.out) else ""
            raise ArgumentError(f"{name}: {describe(self.out)} is read-only{why} and cannot be an output")
        if tuple(out.shape) != tuple(out_shape):
            raise ArgumentError(
                f"{name}: out has shape {tuple(out.shape)}, the reduction's result has shape {tuple(out_shape)}"
            )
        if not out.distinct_elements:
            raise ArgumentError(f"{name}: {describe(self.out)} has elements that share memory; pass one of its own")
        _check_overlap(name, self.inputs, out)
        return self.out, out

    def _launch(self, bound: BoundReduce, spec, inputs, out, shape, axes, packed, stream) -> None:
        plan = bound.plan(spec, inputs, out, shape, axes, self.keepdims)
        host = bound.backend is Backend.host
        partials = bound.compute.empty(max(1, plan.items_partials), spec.partial_type)
        extra = [arg(packed)] if packed is not None else []
        if plan.first_blocks:
            core = bound.launcher(spec, plan.kind)
            args = [*(b.arg_ptr() for b in inputs), partials.arg_ptr(), plan.layout, *extra]
            core.launch(plan.first_grid, plan.block, 0, args, stream, wait=host)
        finish = bound.launcher(spec, "finish")
        args = [partials.arg_ptr(), out.arg_ptr(), plan.layout]
        finish.launch(plan.finish_grid, plan.block, 0, args, stream, wait=host)
        if self.out is not None and _is_torch_tensor(self.out):  # a subclass's write counts too
            _count_write(self.out)
        if not host:
            out.stream = stream


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """NumPy's axis argument as sorted non-negative axes: None is every axis."""
    if axis is None:
        return tuple(range(ndim))
    try:
        return tuple(sorted(np.lib.array_utils.normalize_axis_tuple(axis, ndim)))
    except TypeError:
        raise ArgumentError(f"axis must be None, an int or a tuple of ints, got {axis!r}") from None


class _Plan:
    """Both launches of a call: the first's entry kind and grid, the second's grid, the block, the
    layout argument, the partials they pass between them."""

    def __init__(self, kind: str, first_blocks: int, finish_blocks: int, items_partials: int, layout: bytes, block):
        self.kind, self.first_blocks, self.items_partials = kind, first_blocks, items_partials
        self.first_grid, self.finish_grid = Dim3(max(1, first_blocks)), Dim3(finish_blocks)
        self.block, self.layout = Dim3(block), arg(layout)


def _element_strides(b: _core.Buffer, shape) -> list[int]:
    """`b`'s strides in elements over the broadcast `shape` (0 where it broadcasts)."""
    itemsize = b.dtype.itemsize
    pad = len(shape) - len(b.shape)
    strides = [0] * pad
    for n, s in zip(b.shape, b.strides):
        if s % itemsize:
            raise ArgumentError("an array's strides are not whole elements of its type")
        strides.append(0 if n == 1 else s // itemsize)
    return strides


def _collapse(dims: list[tuple[int, list[int]]]) -> list[tuple[int, list[int]]]:
    """Extent-1 dimensions dropped, neighbours merged where every array's strides allow."""
    merged: list[tuple[int, list[int]]] = []
    for n, strides in dims:
        if n == 1:
            continue
        if merged:
            m, outer = merged[-1]
            if all(o == s * n for o, s in zip(outer, strides)):
                merged[-1] = (m * n, strides)
                continue
        merged.append((n, strides))
    return merged


def _plan(spec, inputs, out: _core.Buffer, shape, axes, keepdims: bool, gpu_block: int | None) -> _Plan:
    """The launches of a reduction; `gpu_block`: the threads of a GPU block, None on the host."""
    n = len(inputs)
    per_input = [_element_strides(b, shape) for b in inputs]
    out_strides = [s // out.dtype.itemsize for s in out.strides]
    kept_axes = [d for d in range(len(shape)) if d not in axes]
    out_at = kept_axes if keepdims else range(len(kept_axes))
    kept = _collapse([(shape[d], [*(s[d] for s in per_input), out_strides[o]]) for d, o in zip(kept_axes, out_at)])
    # The reduced dimensions in the inputs' memory order, the one of the smallest strides innermost.
    reduced = sorted(((shape[d], [s[d] for s in per_input]) for d in axes), key=lambda t: -sum(map(abs, t[1])))
    red = _collapse(reduced) or [(1, [0] * n)]
    if len(kept) > MAX_NDIM or len(red) > MAX_NDIM:
        raise ArgumentError(
            f"these arrays need {len(kept)} kept and {len(red)} reduced dimensions even merged; a reduction takes "
            f"at most {MAX_NDIM} of each"
        )
    kept_count = math.prod(e for e, _ in kept)
    red_count = math.prod(e for e, _ in red)
    columns = bool(
        kept and red_count > 0 and all(s == 1 for s in kept[-1][1][:n]) and not all(s == 1 for s in red[-1][1])
    )
    work = _gpu_work if gpu_block else _host_work
    kind, items, cut = work(spec.acc, kept, kept_count, red_count, columns, gpu_block)
    layout = _pack_layout(kept, red, n, (kept_count, red_count, *cut))
    chunks, finish_blocks = cut[1], -(-kept_count // cut[4])
    if gpu_block:  # the finish pass strides through the results past the most blocks a launch takes
        finish_blocks = min(finish_blocks, _GPU_MAX_BLOCKS)
    return _Plan(kind, -(-items // cut[3]), finish_blocks, kept_count * chunks, layout, spec.block_size)


def _host_work(acc, kept, kept_count: int, red_count: int, columns: bool, _):
    """(kind, items, (chunk, chunks, width, per_block, finish_per_block)) of a host launch: items
    of a fixed size, blocks of about _BLOCK_ELEMENTS elements."""
    if columns:
        width = column_width(acc)
        cols = kept[-1][0]
        chunk = COLUMN_ROWS
        chunks = -(-red_count // chunk)
        items = kept_count // cols * -(-cols // width) * chunks
        per_block = max(1, _BLOCK_ELEMENTS // (min(width, cols) * min(chunk, red_count)))
    else:
        width = 1
        chunk = LEAF_ROWS * lanes(acc) * ROW_LEAVES
        if red_count <= chunk:
            chunk, chunks = max(red_count, 1), (1 if red_count else 0)
            per_block = max(1, _BLOCK_ELEMENTS // max(red_count, 1))
        else:
            chunks, per_block = -(-red_count // chunk), 1
        items = kept_count * chunks
    finish_per_block = max(1, _FINISH_PARTIALS // max(chunks, 1))
    return "columns" if columns else "rows", items, (chunk, chunks, width, per_block, finish_per_block)


def _gpu_work(acc, kept, kept_count: int, red_count: int, columns: bool, block: int):
    """The same for a GPU: a block an item, threads striding through it (rows: at least
    GPU_ITEMS elements a thread, at most _GPU_PARTIALS partials over all results) or a thread a
    result of a tile (columns); a thread a result in the finish pass."""
    if columns:
        cols = kept[-1][0]
        chunks = -(-red_count // COLUMN_ROWS)
        items = kept_count // cols * -(-cols // block) * chunks
        cut = (COLUMN_ROWS, chunks, block, 1, block)
    else:
        chunks = min(-(-red_count // (block * GPU_ITEMS)), max(1, _GPU_PARTIALS // max(kept_count, 1)))
        chunk = max(1, -(-red_count // chunks)) if chunks else 1
        items = kept_count * chunks
        cut = (chunk, chunks, 1, 1, block)
    return "columns" if columns else "rows", min(items, _GPU_MAX_BLOCKS), cut


def _pack_layout(kept, red, n: int, work: tuple[int, ...]) -> bytes:
    """`gompute_reduce_layout<n + 1>` (lang/reduce_entries.py)."""
    rows = n + LAYOUT_ARRAYS

    def table(dims, arrays: int) -> list[int]:
        values = []
        for a in range(rows):
            values += [dims[d][1][a] if a < arrays else 0 for d in range(len(dims))] + [0] * (MAX_NDIM - len(dims))
        return values

    shape = lambda dims: [e for e, _ in dims] + [1] * (MAX_NDIM - len(dims))  # noqa: E731
    values = [len(kept), len(red), *shape(kept), *shape(red), *table(kept, rows), *table(red, n), *work]
    return struct.pack(f"<{len(values)}q", *values)
