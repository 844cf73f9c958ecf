"""`@g.reduce_kernel`: a reduction kernel, its map part, combine and identity.

The decorated function is the map part: it turns one element of each input (broadcast as in
`g.map`) into one value of the accumulator type, its return type. `combine` folds two
accumulator values into one: `+` (the default), `*`, `min`, `max`, `&`, `|`, `^`, or a
`@g.func (a, b) -> acc`. It must be associative and commutative: the elements of one result are
combined in an order of gompute's choosing (lanes, blocks, a pairwise tree). `identity` is the
value `combine(identity, a) == a` for every `a`, and the result of an empty reduction; `min` and
`max` need none (gompute uses the type's extremes inside, and an empty reduction raises, as
NumPy's does).

A kernel whose return type is not annotated takes NumPy's accumulator rules for `+` and `*`:
bool and integers narrower than 64 bits accumulate in i64 (u64 when unsigned), as `np.sum`
gives; f16 and bf16 accumulate in f32 and the result is rounded back. Half accumulators always
add in f32 registers and are rounded once, at the end, as NumPy sums float16.
"""

from __future__ import annotations

import builtins as _py
import copy
import functools
import math
import operator

import numpy as np

from .. import types as T
from ..errors import ArgumentError, CompileError
from ..types import ScalarType
from . import pickling
from .builtins import BUILTINS
from .frontend import return_annotation
from .kernel import Func, MapKernel, backend_name, compile_module
from .module import EntryArg, EntryPoint, Specialization, module_source
from .reduce_entries import reduce_entries_source
from .reduce_layout import LAYOUT_ARRAYS, pack_elements
from .typing_rules import concrete, converts_exactly, is_half

COMBINES = ("+", "*", "min", "max", "&", "|", "^")
_ALIASES = {
    operator.add: "+",
    operator.mul: "*",
    operator.and_: "&",
    operator.or_: "|",
    operator.xor: "^",
    _py.min: "min",
    _py.max: "max",
    BUILTINS["min"]: "min",
    BUILTINS["max"]: "max",
}


def _combine_of(combine, name: str):
    """What `combine=` names: "+", "*", ..., or the @g.func itself."""
    if combine is None:
        return "+"
    if isinstance(combine, Func):
        return combine
    if isinstance(combine, str) and combine in COMBINES:
        return combine
    try:
        found = _ALIASES.get(combine)
    except TypeError:  # unhashable
        found = None
    if found is None:
        raise ArgumentError(
            f"{name}: combine={combine!r} is not one gompute knows; give one of {', '.join(COMBINES)} "
            "(or g.min, g.max, operator.add, ...), or a @g.func (a, b) -> acc"
        )
    return found


class LayoutArg(EntryArg):
    """A reduction entry's layout argument: `gompute_reduce_layout<N>` (reduce_entries.py)."""

    @property
    def nbytes(self) -> int:
        return layout_nbytes(self.type)


def layout_nbytes(narrays: int) -> int:
    """The size of `gompute_reduce_layout<narrays>`: two counts, two shapes, two stride tables of
    `narrays` rows, seven int64 of work cutting, all int64."""
    from .module import MAX_NDIM

    return 8 * (2 + 2 * MAX_NDIM + 2 * narrays * MAX_NDIM + 7)


# A reduction's entries come in two modules, each compiled on its first use and each with its own
# finish: a full sum does not wait for the columns' loops, nor a column sum for the rows' (an f32 sum's
# module on the 2-core VM: 3.5-4.2 s whole; rows 1.8-1.9 s, columns 1.3 s).
GROUPS = {"rows": ("rows", "packed_rows"), "columns": ("columns", "packed_columns")}
_GROUP_OF = {kind: group for group, kinds in GROUPS.items() for kind in kinds}


class ReduceSpecialization(Specialization):
    """One reduction specialization: the map part's function and storage, plus the combine,
    the accumulator and result types and the identity's C++ spelling. `group` (a key of GROUPS)
    makes it one of its two modules (`part`); None, the whole, as `source` shows it."""

    partitioned_build = True
    group: str | None = None

    def __init__(
        self,
        name,
        function,
        block_size,
        in_storage,
        out_storage,
        *,
        combine,
        combine_fn,
        acc,
        result,
        identity,
        identity_is_zero=False,
    ):
        super().__init__(name, function, block_size, in_storage, out_storage)
        self.combine = combine  # one of COMBINES, or "func"
        self.combine_fn = combine_fn  # the @g.func's typed IR for (acc, acc), when combine is "func"
        self.acc = acc
        self.result = result
        self.identity = identity  # a C++ expression of the accumulator's value type
        # A float sum of a zero identity stores identity + its sum: the sum of -0.0s is then +0.0, as
        # NumPy's and torch's (which start from +0.0), whichever of its paths added them.
        self.adds_identity = combine == "+" and acc.is_float and identity_is_zero
        self._parts: dict[str, ReduceSpecialization] = {}

    def part(self, kind: str) -> ReduceSpecialization:
        """The part of this specialization whose module holds the first launch `kind` and the finish
        after it: the same specialization, its entries those of `kind`'s group."""
        group = _GROUP_OF[kind]
        found = self._parts.get(group)
        if found is None:
            found = self._parts[group] = copy.copy(self)
            found.group, found._entries, found._parts = group, None, {}
        return found

    @property
    def partial_type(self) -> ScalarType:
        """The type leaves are merged and partials stored in: the accumulator's value type, but f64
        for a float sum, whose pairwise tree then adds no error of its own above the leaves."""
        if self.combine == "+" and self.acc.is_float:
            return T.f64
        return T.f32 if is_half(self.acc) else self.acc

    def roots(self):
        return [self.function] + ([self.combine_fn] if self.combine_fn is not None else [])

    def entries_source(self, backend, structs, names, done) -> list[str]:
        combine_name = names[id(self.combine_fn)] if self.combine_fn is not None else None
        return reduce_entries_source(backend, self, structs, names[id(self.function)], combine_name)

    def _make_entry_points(self) -> list[EntryPoint]:
        n = len(self.in_storage)
        inputs = tuple(EntryArg(f"in{i}", "pointer", t) for i, t in enumerate(self.in_storage))
        layout = LayoutArg("layout", "layout", n + LAYOUT_ARRAYS)
        params = (EntryArg("params", "params", self.params_class),) if self.params_class is not None else ()
        partials = EntryArg("partials", "pointer", self.partial_type)
        out = EntryArg("out", "pointer", self.out_storage)
        # A first pass with one item a result (layout.chunks == 1) stores the results in `out` itself
        # and has no partials, nor a finish after it; with more, it writes partials for the finish.
        first = (*inputs, partials, out, layout, *params)
        finish = (partials, out, layout)
        # The packed ones: rows and columns on a GPU read 16 bytes of elements a load where the planner
        # finds them on pack boundaries (csrc/planner.cpp); none for inputs of 16 bytes.
        packed = ("packed_rows", "packed_columns") if pack_elements(self) > 1 else ()
        kinds = [k for k in ("rows", "columns", *packed) if self.group in (None, _GROUP_OF[k])] + ["finish"]
        return [EntryPoint(f"{self.name}__{kind}", kind, finish if kind == "finish" else first) for kind in kinds]


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """NumPy's axis argument as sorted non-negative axes: None is every axis, else an integer or a
    tuple of them (or a list, as torch's dim takes); never a bool, which NumPy refuses too."""
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if not all(hasattr(type(a), "__index__") and not isinstance(a, (bool, np.bool_)) for a in axes):
        raise ArgumentError(f"axis must be None, an int or a tuple of ints, got {axis!r}")
    return tuple(sorted(np.lib.array_utils.normalize_axis_tuple(axes, ndim)))


def check_keepdims(keepdims) -> bool:
    """keepdims as a bool: True, False, or an integer 0 or 1 (NumPy takes those too)."""
    if isinstance(keepdims, (bool, np.bool_)) or (type(keepdims) is int and keepdims in (0, 1)):
        return bool(keepdims)
    raise ArgumentError(f"keepdims must be True or False, got {keepdims!r}")


class ReduceKernel:
    """A reduction kernel, made by `@g.reduce_kernel(identity=..., combine=...)`."""

    is_reduce_kernel = True

    def __init__(self, fn, identity=None, combine=None, block_size: int = 256):
        functools.update_wrapper(self, fn)
        if not isinstance(block_size, int) or isinstance(block_size, bool) or block_size % 64 or block_size > 1024:
            raise ArgumentError(
                f"block_size must be a multiple of 64 up to 1024 (a reduction's blocks are whole warps and "
                f"wavefronts), got {block_size!r}"
            )
        self.map_part = MapKernel(fn, block_size, call="g.reduce", keywords=("out", "stream", "axis", "keepdims"))
        self.name = self.map_part.name
        self.combine = _combine_of(combine, self.name)
        if identity is None and self.combine not in ("min", "max"):
            what = "its @g.func combine" if isinstance(self.combine, Func) else f"combine {self.combine!r}"
            raise ArgumentError(
                f"{self.name}: {what} needs identity= (the value combine(identity, a) == a, and the result of an "
                "empty reduction); only min and max go without"
            )
        if identity is not None and not isinstance(identity, (bool, int, float)):
            raise ArgumentError(f"{self.name}: identity must be a Python number, got {identity!r}")
        if isinstance(identity, float) and math.isnan(identity):
            raise ArgumentError(
                f"{self.name}: identity=nan is not an identity (combine(nan, a) is nan, not a); give the value "
                "combine leaves every a unchanged with (0 for +, 1 for *), or none for min and max"
            )
        self.identity = identity
        self.numpy_rules = return_annotation(self.map_part.src) is None
        self._variants: dict[tuple, ReduceSpecialization] = {}
        self._images: dict[tuple, object] = {}

    # What g.reduce's call glue reads, as it reads a map kernel's.
    @property
    def arity(self) -> int:
        return self.map_part.arity

    @property
    def arg_names(self):
        return self.map_part.arg_names

    @property
    def annotations(self):
        return self.map_part.annotations

    @property
    def params_class(self):
        return self.map_part.params_class

    @property
    def block_size(self) -> int:
        return self.map_part.block_size

    @property
    def generic(self) -> bool:
        return self.map_part.generic

    def __call__(self, *args, **kwargs):
        raise ArgumentError(
            f"{self.name} is a reduction kernel, which runs on arrays through g.reduce: "
            f"g.reduce({self.name})({', '.join(self.arg_names)}, axis=None)"
        )

    def __reduce__(self):
        """By reference where importable (lang/pickling.py), else as its map part (by value), its combine,
        identity and accumulator rule (a Dask combiner's NumPy rules are off: gompute.dask.combiner)."""
        return pickling.reference(self) or (_rebuild, (self.map_part, self.identity, self.combine, self.numpy_rules))

    def __dask_tokenize__(self) -> tuple:
        combine = self.combine if isinstance(self.combine, str) else self.combine.__dask_tokenize__()
        return (
            "gompute.reduce_kernel",
            self.map_part.__dask_tokenize__(),
            repr(self.identity),
            combine,
            self.numpy_rules,
        )

    def accumulator(self, ret: ScalarType) -> tuple[ScalarType, ScalarType]:
        """(accumulator type, result type) for a map part returning `ret`."""
        if not self.numpy_rules or self.combine not in ("+", "*"):
            return ret, ret
        if ret is T.bool_ or (ret.kind == "i" and ret.bits < 64):
            return T.i64, T.i64
        if ret.kind == "u" and ret.bits < 64:
            return T.u64, T.u64
        if is_half(ret):
            return T.f32, ret
        return ret, ret

    def refuse_empty(self, shape: tuple[int, ...], axes: tuple[int, ...]) -> None:
        """Raises where `axes` of `shape` hold no elements and the combine has no identity (min, max
        without one), as NumPy's np.max over an empty axis does, even where no result is left to give
        (np.zeros((0, 0)).max(axis=1))."""
        if self.identity is None and math.prod(shape[d] for d in axes) == 0:
            raise ArgumentError(
                f"{self.name}: a reduction over zero elements with combine {self.combine!r}, which has no "
                "identity; give the kernel identity=, or reduce a nonempty array"
            )

    def result_type(self, in_storage: tuple[ScalarType, ...]) -> ScalarType:
        """The element type of a new result for inputs stored as `in_storage`."""
        return self.variant(tuple(in_storage)).result

    def variant(
        self, in_storage: tuple[ScalarType, ...], out_storage: ScalarType | None = None
    ) -> ReduceSpecialization:
        """The specialization reading inputs stored as `in_storage` into an output stored as
        `out_storage` (None: the result type), each converted exactly; then a dictionary lookup."""
        key = (tuple(in_storage), out_storage)
        found = self._variants.get(key)
        if found is None:
            found = self._variants[key] = self._make_variant(*key)
        return found

    def _make_variant(self, in_storage, out_storage) -> ReduceSpecialization:
        spec = self.map_part.variant(in_storage)
        ret = concrete(spec.out_type)
        acc, result = self.accumulator(ret)
        if acc.kind == "c":
            raise ArgumentError(
                f"{self.name}: g.reduce does not reduce complex values yet (the accumulator would be {acc.name}); "
                "reduce the real and imaginary parts with two kernels (return z.real, z.imag)"
            )
        if self.combine in ("&", "|", "^") and acc.is_float:
            raise ArgumentError(
                f"{self.name}: combine {self.combine!r} takes integers or bools, and returns {acc.name}"
            )
        out_storage = result if out_storage is None else out_storage
        if not converts_exactly(result, out_storage):
            raise ArgumentError(
                f"{self.name} reduces to {result.name}; an output array of {_name(out_storage)} cannot hold it "
                f"exactly — pass an out= array of {result.name} (or of a wider type)"
            )
        combine_fn = None
        if isinstance(self.combine, Func):
            combine_fn = self.combine.specialize([acc, acc], CompileError)
            got = concrete(combine_fn.return_type)
            if not converts_exactly(got, acc):
                raise ArgumentError(
                    f"{self.name}: combine {self.combine.__name__} returns {got.name} for two {acc.name} values; "
                    f"it must return {acc.name}, the accumulator type"
                )
        symbol = f"{spec.name}__reduce" + (f"__to_{out_storage.name}" if out_storage is not result else "")
        return ReduceSpecialization(
            symbol,
            spec.function,
            self.block_size,
            spec.in_storage,
            out_storage,
            combine="func" if combine_fn is not None else self.combine,
            combine_fn=combine_fn,
            acc=acc,
            result=result,
            identity=self._identity_code(acc),
            identity_is_zero=self.identity is not None and self.identity == 0,
        )

    def _identity_code(self, acc: ScalarType) -> str:
        from .codegen import literal

        value = self.identity
        if value is None:  # min or max: the type's far end, never a result of a nonempty reduction
            if acc.is_float:
                return f"{'' if self.combine == 'min' else '-'}gompute_inf_{'f64' if acc is T.f64 else 'f32'}()"
            if acc is T.bool_:
                return "true" if self.combine == "min" else "false"
            lo, hi = acc.range()
            return literal(hi if self.combine == "min" else lo, acc)
        if not acc.is_float:
            if isinstance(value, float) and not value.is_integer():
                raise ArgumentError(f"{self.name}: identity={value!r} is not a value of the accumulator, {acc.name}")
            lo, hi = acc.range() if acc is not T.bool_ else (0, 1)
            if self.combine in ("&", "|", "^") and acc.kind in ("u", "b"):  # bits: -1 is all ones (True), as for NumPy
                value = int(value) % (hi + 1)
            if not lo <= int(value) <= hi:
                raise ArgumentError(f"{self.name}: identity={value!r} is outside {acc.name}'s range")
        return literal(value, T.f32 if is_half(acc) else acc)

    def source(self, backend="host", *types: ScalarType) -> str:
        """The generated C++ module of this kernel for `backend` and input types `types`."""
        return module_source([self.variant(self.map_part._check_types(types))], backend_name(backend))

    def image_of(self, spec: ReduceSpecialization, backend, arch: str | None = None):
        """The compiled image holding `spec` (a part, or the whole); a second call costs one dictionary
        lookup."""
        key = (backend, arch, spec.name, spec.group)
        image = self._images.get(key)
        if image is None:
            name = spec.name if spec.group is None else f"{spec.name}__{spec.group}"
            image = self._images[key] = compile_module([spec], backend_name(backend), arch, name)
        return image

    def __repr__(self) -> str:
        combine = self.combine if isinstance(self.combine, str) else self.combine.__name__
        return f"<reduce_kernel {self.name} combine={combine} identity={self.identity!r}>"


def _name(t: ScalarType) -> str:
    return t.dtype.name if t.dtype is not None else t.name


def _rebuild(map_part: MapKernel, identity, combine, numpy_rules: bool) -> ReduceKernel:
    kernel = ReduceKernel.__new__(ReduceKernel)
    functools.update_wrapper(kernel, map_part.fn)
    kernel.map_part, kernel.name, kernel.combine, kernel.identity = map_part, map_part.name, combine, identity
    kernel.numpy_rules = numpy_rules
    kernel._variants, kernel._images = {}, {}
    return kernel


def reduce_kernel(fn=None, *, identity=None, combine=None, block_size: int = 256):
    """Make a reduction kernel: `@g.reduce_kernel(identity=0)` over a typed map part; see the module."""
    if fn is None:
        return lambda f: ReduceKernel(f, identity, combine, block_size)
    return ReduceKernel(fn, identity, combine, block_size)
