"""A generated module: the prelude for a backend, the params structs, the typed functions, and
the entry points a launch calls (the only part that differs between host and GPU backends).
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass, field
from pathlib import Path

from .. import types as T
from .._core import MAX_STRIDED_DIMS
from ..errors import ArgumentError
from ..types import ScalarType
from . import ir
from .codegen import FunctionEmitter, c_ident, storage_ctype
from .entries import entries_source
from .typing_rules import concrete

BACKENDS = ("host", "cuda", "hip")
KERNELS_MARKER = "// ---- generated kernels ----"
MAX_NDIM = MAX_STRIDED_DIMS  # the planner's limit, GOMPUTE_MAX_NDIM in preludes/common.h (tests/test_facts.py)
_PRELUDES = Path(__file__).with_name("preludes")
_PRELUDE_FILES = {
    "host": ("host.h", "common.h", "complex.h", "host_strided.h"),
    "cuda": ("gpu_ints.h", "cuda.h", "common.h", "complex.h"),
    "hip": ("gpu_ints.h", "hip.h", "common.h", "complex.h"),
}


@dataclass(frozen=True)
class EntryArg:
    """One argument of an entry point: a pointer to elements, the element count, the strides
    struct (`pack_strides`) or the params struct."""

    name: str
    kind: str  # "pointer", "len", "strides", "params"
    type: object  # pointers: the ScalarType in memory; len: g.u64; strides: the number of arrays; params: the class

    @property
    def nbytes(self) -> int:
        if self.kind == "params":
            return self.type.__size__
        return strides_nbytes(self.type) if self.kind == "strides" else 8

    @property
    def align(self) -> int:
        return self.type.__align__ if self.kind == "params" else 8


@dataclass(frozen=True)
class EntryPoint:
    """A symbol in the compiled module and the arguments it takes, in order.

    kind "inplace": `(data, len[, params])`, reads and writes `data`; kind "map":
    `(in0, ..., out, len[, params])`, every array contiguous; kind "strided":
    `(in0, ..., out, len, strides[, params])`, each pointer at its array's element 0 and `strides`
    from `pack_strides`. A kernel without a params struct has no params argument.
    """

    symbol: str
    kind: str
    args: tuple[EntryArg, ...]

    @property
    def arity(self) -> int:
        return len(self.args)


@dataclass
class Specialization:
    """One map kernel specialization as the module builder sees it.

    `in_storage` and `out_storage` are the element types in memory, when they differ from the
    parameter and return types (`MapKernel.variant`); the entry points convert, exactly.
    """

    # A host module holding it compiles its functions apart, on every core (compile/host.py): a
    # reduction's many large loops take seconds to optimize, a map's three do not.
    partitioned_build = False

    name: str  # entry symbol of the primary entry point
    function: ir.Function
    block_size: int
    in_storage: tuple[ScalarType, ...] = None  # None: the parameter types
    out_storage: ScalarType = None  # None: the return type
    _entries: dict[str, EntryPoint] = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.in_storage is None:
            self.in_storage = tuple(self.in_types)
        if self.out_storage is None:
            self.out_storage = self.out_type

    @property
    def in_types(self) -> list[ScalarType]:
        return [concrete(p.type) for p in self.function.array_params]

    @property
    def out_type(self) -> ScalarType:
        return concrete(self.function.return_type)

    @property
    def params_class(self):
        return self.function.params_struct

    def entry_points(self) -> list[EntryPoint]:
        """Every entry point of the specialization, in module order: "inplace" (when the one input
        is stored as the output is), "map", "strided"."""
        if self._entries is None:
            self._entries = {e.kind: e for e in self._make_entry_points()}
        return list(self._entries.values())

    def roots(self) -> list[ir.Function]:
        """The functions its entry points call (a reduction's adds its combine)."""
        return [self.function]

    def entries_source(self, backend: str, structs: dict[type, str], names: dict[int, str], done: set) -> list[str]:
        """The C++ of its entry points for `backend` (lang/entries.py; reductions override it)."""
        return entries_source(backend, self, structs, names[id(self.function)], done)

    def entry(self, kind: str) -> EntryPoint:
        """The entry point of `kind` ("inplace", "map" or "strided"); KeyError if there is none."""
        if self._entries is None:
            self.entry_points()
        return self._entries[kind]

    def _make_entry_points(self) -> list[EntryPoint]:
        ins, out = self.in_storage, self.out_storage
        pointers = [
            *(EntryArg(f"in{i}", "pointer", t) for i, t in enumerate(ins)),
            EntryArg("out", "pointer", out),
        ]
        params = [EntryArg("params", "params", self.params_class)] if self.params_class is not None else []
        length = EntryArg("len", "len", T.u64)
        mapped = (*pointers, length, *params)
        strided = EntryPoint(
            f"{self.name}__strided",
            "strided",
            (*pointers, length, EntryArg("strides", "strides", len(pointers)), *params),
        )
        if len(ins) == 1 and ins[0] is out:
            inplace = (EntryArg("data", "pointer", out), length, *params)
            return [
                EntryPoint(self.name, "inplace", inplace),
                EntryPoint(f"{self.name}__out", "map", mapped),
                strided,
            ]
        return [EntryPoint(self.name, "map", mapped), strided]


def strides_nbytes(narrays: int) -> int:
    """The size of the strides struct for `narrays` arrays: ndim, pad, shape[8], strides[narrays][8]."""
    return 8 + 8 * MAX_NDIM * (1 + narrays)


@functools.cache
def _strides_struct(narrays: int) -> struct.Struct:
    return struct.Struct(f"<ii{MAX_NDIM * (1 + narrays)}q")


def pack_strides(shape, strides_per_array) -> bytes:
    """The `strides` argument of a strided entry point: `shape`, and for each array (the inputs,
    then the output) its strides in elements, 0 where it broadcasts.

    Layout (little-endian, alignment 8): int32 ndim, int32 pad, int64 shape[8], then per array
    int64 strides[8]; dimensions past ndim are padded with shape 1, stride 0.
    """
    ndim = len(shape)
    if ndim > MAX_NDIM:
        raise ArgumentError(
            f"strided kernels take arrays of up to {MAX_NDIM} dimensions, not {ndim} (shape {tuple(shape)}); "
            "reshape the arrays, or make them contiguous"
        )
    pad = MAX_NDIM - ndim
    values = [*shape, *(1,) * pad]
    for a, strides in enumerate(strides_per_array):
        if len(strides) != ndim:
            raise ArgumentError(f"array {a} has {len(strides)} strides for a shape of {ndim} dimensions")
        values += [*strides, *(0,) * pad]
    return _strides_struct(len(strides_per_array)).pack(ndim, 0, *values)


def prelude(backend: str) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    return "\n".join((_PRELUDES / name).read_text() for name in _PRELUDE_FILES[backend])


def module_source(units: list[Specialization], backend: str) -> str:
    """The complete C++ source of a module holding `units`, for `backend`."""
    body = module_body(units, backend)
    needs_f16 = "_f16" in body
    head = "// Generated by gompute; edits are lost. #line directives point at the kernels' Python source.\n"
    if needs_f16:
        head += "#define GOMPUTE_NEEDS_F16 1\n"
    return f"{head}{prelude(backend)}\n{KERNELS_MARKER}\n{body}"


def module_body(units: list[Specialization], backend: str) -> str:
    """The generated part of the module (everything after the prelude), as in the golden files."""
    structs = _struct_names(units)
    functions = _functions_in_order(units)
    names = function_names(functions)
    lines: list[str] = []
    for cls, name in structs.items():
        lines.extend(_struct(cls, name))
    for fn in functions:
        lines.extend(FunctionEmitter(fn, structs, names).emit())
    lines.append(f'#line {len(lines) + 2} "gompute-generated-entries"')
    done: set[int] = set()
    for unit in units:
        lines.extend(unit.entries_source(backend, structs, names, done))
    return "\n".join(lines) + "\n"


def function_names(functions: list[ir.Function]) -> dict[int, str]:
    """A unique C++ name per function: its preferred name, numbered when several share it."""
    names: dict[int, str] = {}
    count: dict[str, int] = {}
    for fn in functions:
        n = count[fn.c_name] = count.get(fn.c_name, 0) + 1
        names[id(fn)] = fn.c_name if n == 1 else f"{fn.c_name}_{n}"
    return names


def _struct_names(units: list[Specialization]) -> dict[type, str]:
    names: dict[type, str] = {}
    for unit in units:
        for fn in _functions_in_order([unit]):
            cls = fn.params_struct
            if cls is not None and cls not in names:
                base = c_ident(cls.__name__)
                taken = set(names.values())
                name, n = base, 2
                while name in taken:
                    name, n = f"{base}_{n}", n + 1
                names[cls] = name
    return names


def _struct(cls, name: str) -> list[str]:
    """A params struct laid out as gompute.abi packs it: each field aligned to its size (a c128, whose
    type the host aligns to 8, explicitly)."""
    fields = [
        f"  {'alignas(16) ' if f.type.itemsize == 16 else ''}{storage_ctype(f.type)} {c_ident(f.name)};"
        for f in cls.__fields__
    ] or ["  char gompute_empty;"]
    return [
        f"struct {name} {{",
        *fields,
        "};",
        f'static_assert(sizeof({name}) == {cls.__size__}, "{name} must match {cls.__qualname__}\'s layout");',
    ]


def _functions_in_order(units: list[Specialization]) -> list[ir.Function]:
    """Every function the units need, callees before callers, each once."""
    seen: list[ir.Function] = []

    def visit(fn: ir.Function):
        if any(fn is s for s in seen):
            return
        for callee in fn.callees:
            visit(callee)
        seen.append(fn)

    for unit in units:
        for fn in unit.roots():
            visit(fn)
    return seen
