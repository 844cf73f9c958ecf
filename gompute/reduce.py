"""`g.reduce`: reduction kernels called straight on arrays, with NumPy's axis rules.

`g.reduce(k)(*arrays, axis=None, keepdims=False, out=None, stream=None, **params)` reads the
arrays as `g.map` does (same interop, devices, streams, params and output making: it is
`kernel._Call`'s glue with a reduction's own planning and launches), broadcasts them, reduces
the axes asked for and returns an array of the first input's library: a 0-d one for
`axis=None`.

The plan is the C++ planner's (`plan_reduce` in csrc/planner.h): the result's dimensions
("kept") outermost and the reduced ones innermost, each group with extent-1 dimensions dropped
and neighbours merged where every array allows, then its first launch
(`lang/reduce_entries.py`): `columns` where the innermost kept dimension is contiguous in every
input and the reduced ones are not (the lanes run across results), `rows` otherwise (runs along
the innermost reduced dimension, gathered where it is strided), and on a GPU their packed twins,
`packed_rows` and `packed_columns`, where every input's elements lie on 16-byte pack boundaries
(a load moves a pack, not an element). Its items are a fixed size, so results do not depend on
the thread count. A kernel's rows entries and its columns entries are two modules, each with the
finish, compiled the first time a call needs one (lang/reduce_kernel.GROUPS).
"""

from __future__ import annotations

from . import _core
from .backend import Backend
from .dask import combiner, holds_dask_array, lazy_reduce
from .dim3 import Dim3
from .errors import ArgumentError
from .fast_path import params_table, teach
from .interface import arg
from .interop import asbuffer, check_writable, describe
from .kernel import (
    _Call,
    _call_device,
    _count_write,
    _is_torch_tensor,
    _output_maker,
    _same,
    _shares_memory,
    _target_arch,
)
from .lang.reduce_kernel import ReduceKernel, check_keepdims, normalize_axes
from .lang.reduce_layout import (
    COLUMN_ROWS,
    GPU_GROUP,
    GPU_ITEMS,
    GPU_LOADS,
    LEAF_ROWS,
    ROW_LEAVES,
    SHORT_ROWS,
    column_width,
    lanes,
    pack_elements,
)
from .runtime import _compute
from .runtime.dynamic import _check_backend
from .types import u64

_BLOCK_ELEMENTS = 1 << 16  # elements a host block of the first launch reads, about
_FINISH_PARTIALS = 1 << 14  # partials a block of the second launch combines, about
_GPU_PARTIALS = 1 << 12  # a GPU rows launch's items (partials), at most, unless results outnumber them
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
        self._modules: dict[tuple[str, str], _core.Module] = {}
        self._launchers: dict[tuple[str, str], tuple[_core.Kernel, _core.Kernel]] = {}
        self._rules: dict[str, _core.ReduceRules] = {}
        self.gpu = backend is not Backend.host  # how a call is cut: GPU blocks of threads, or host items

    @property
    def backend(self) -> Backend:
        return self.compute.backend

    def plan(self, spec, inputs, out: _core.Buffer, axes, keepdims: bool) -> tuple:
        """(first entry kind, its blocks, the finish's blocks, partials, layout argument): the C++
        planner's plan of the call (csrc/planner.h)."""
        return _core.plan_reduce(inputs, out, axes, keepdims, self.rules(spec))

    def rules(self, spec) -> _core.ReduceRules:
        """How the planner cuts `spec`'s work on this device, made once."""
        found = self._rules.get(spec.name)
        if found is None:
            found = self._rules[spec.name] = cut_rules(spec, self.gpu)
        return found

    def image(self, part) -> bytes:
        """`part`'s module for this device (a part of a specialization: `ReduceSpecialization.part`),
        compiled or from the cache."""
        return self.kernel.image_of(part, self.backend.value, self._arch).data

    def launchers(self, spec, kind: str) -> tuple[_core.Kernel, _core.Kernel]:
        """The loaded entry `kind` of `spec` and the finish after it, from the module of their group
        (lang/reduce_kernel.GROUPS): generated, compiled (or read from the cache) and loaded once."""
        key = (spec.name, kind)
        found = self._launchers.get(key)
        if found is None:
            part = spec.part(kind)
            module = self._modules.get((spec.name, part.group))
            if module is None:
                module = self._modules[(spec.name, part.group)] = self.compute.load_module(self.image(part))
            found = self._launchers[key] = tuple(module.get_kernel(part.entry(k).symbol) for k in (kind, "finish"))
        return found


class AutoReduce(_core.FastReduce):
    """`g.reduce(kernel)`: a callable that reduces arrays wherever they live.

    Calling it, `(*arrays, axis=None, keepdims=False, out=None, stream=None, **params)`, starts in
    C++ (the base class, csrc/reduce_dispatch.cpp): a call of a signature already launched on that
    device is planned and launched at once; any other comes to `_general`.
    """

    def __init__(self, kernel: ReduceKernel):
        arity, _, fields, size, has_params = params_table(kernel)
        super().__init__(arity, fields, size, has_params, kernel.identity is not None)
        self.kernel = kernel
        self._bound: dict[tuple[Backend, int], BoundReduce] = {}
        self._learned: set[tuple] = set()

    def bound(self, backend: Backend, ordinal: int) -> BoundReduce:
        found = self._bound.get((backend, ordinal))
        if found is None or not found.compute._live().alive:
            found = self._bound[(backend, ordinal)] = BoundReduce(self.kernel, backend, ordinal)
            self._learned = {key for key in self._learned if key[-2:] != (backend, ordinal)}
        return found

    def _general(self, /, *arrays, axis=None, keepdims=False, out=None, stream=None, **params):
        return _ReduceCall(self, arrays, out, stream, params, axis, keepdims).run()

    def learn(self, bound: BoundReduce, spec, inputs, out: _core.Buffer, kind: str, first, make) -> None:
        """Lets the C++ path take later calls like this one (`kernel.teach`), with both launches."""

        def remember(signature: str, out_format: str) -> None:
            launchers = bound.launchers(spec, kind)
            self.remember(signature, out_format, kind, *launchers, bound.rules(spec), spec.partial_type.itemsize)

        teach(self, inputs, out, kind, first, make, remember)

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

    verb = "g.reduce"

    def __init__(self, auto: AutoReduce, arrays, out, stream, params, axis, keepdims):
        super().__init__(None, arrays, out, stream, params, auto=auto)
        self.axis, self.keepdims = axis, check_keepdims(keepdims)

    def run(self):
        k = self.kernel
        self._check_arity()
        packed = self._pack_params()
        if holds_dask_array((*self.arrays, self.out)):
            self._refuse_scalars()
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
        k.refuse_empty(shape, axes)
        result, out = self._reduce_output(bound, out_shape, spec, given)
        launch_stream = self._launch_stream(bound, [*inputs, out], wanted)
        if out.size:
            self._launch(bound, spec, inputs, out, axes, packed, launch_stream)
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
            if self.finish is _same:  # the C++ path may make later results the same way
                self.make = make
            return result, asbuffer(result)
        check_writable(name, self.out, out)
        if tuple(out.shape) != tuple(out_shape):
            raise ArgumentError(
                f"{name}: out has shape {tuple(out.shape)}, the reduction's result has shape {tuple(out_shape)}"
            )
        if not out.distinct_elements:
            raise ArgumentError(f"{name}: {describe(self.out)} has elements that share memory; pass one of its own")
        for i, b in enumerate(self.inputs):  # even its very view: a result reads other results' elements
            if _shares_memory(b, out):
                raise ArgumentError(
                    f"{name}: out shares memory with input {i}, which the reduction reads while it writes its "
                    "results; pass a separate output array"
                )
        return self.out, out

    def _launch(self, bound: BoundReduce, spec, inputs, out, axes, packed, stream) -> None:
        kind, first_blocks, finish_blocks, count, layout = bound.plan(spec, inputs, out, axes, self.keepdims)
        host = bound.backend is Backend.host
        # No partials where the first launch stores the results (or there is none): a null pointer.
        partials = bound.compute.empty(count, spec.partial_type).arg_ptr() if count else arg(u64(0))
        block, layout = Dim3(spec.block_size), arg(layout)
        extra = [arg(packed)] if packed is not None else []
        core, finish = bound.launchers(spec, kind)
        if first_blocks:  # none: nothing to reduce, and the finish writes the identity
            args = [*(b.arg_ptr() for b in inputs), partials, out.arg_ptr(), layout, *extra]
            core.launch(Dim3(first_blocks), block, 0, args, stream, wait=host)
        if finish_blocks:  # none: the first launch stored the results, one item each
            finish.launch(Dim3(finish_blocks), block, 0, [partials, out.arg_ptr(), layout], stream, wait=host)
        if self.out is not None and _is_torch_tensor(self.out):  # a subclass's write counts too
            _count_write(self.out)
        if not host:
            out.stream = stream
        self.auto.learn(bound, spec, inputs, out, kind, self.arrays[0], self.make)


def cut_rules(spec, gpu: bool) -> _core.ReduceRules:
    """How the planner cuts `spec`'s work on a GPU or the host: this module's constants and the
    entries' (lang/reduce_layout.py), for its accumulator type."""
    return _core.ReduceRules(
        gpu=gpu,
        block=spec.block_size,
        row_chunk=LEAF_ROWS * lanes(spec.acc) * ROW_LEAVES,
        column_rows=COLUMN_ROWS,
        column_width=column_width(spec.acc),
        block_elements=_BLOCK_ELEMENTS,
        finish_partials=_FINISH_PARTIALS,
        gpu_items=GPU_ITEMS,
        gpu_partials=_GPU_PARTIALS,
        gpu_max_blocks=_GPU_MAX_BLOCKS,
        gpu_thread_rows=SHORT_ROWS,
        gpu_group_rows=GPU_GROUP * GPU_LOADS,
        gpu_group=GPU_GROUP,
        gpu_pack=pack_elements(spec),
    )
