"""`@g.map_kernel` and `@g.func`: the decorators, and the objects they make.

A `MapKernel` is the user's function plus what gompute knows about it: its signature, its
`block_size`, one `Specialization` per signature (typed IR, entry points), and the compiled
image per (backend, arch, signature). A fully annotated kernel is translated at decoration, so
errors show at import; a generic one (some parameters unannotated) per signature at first use.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ArgumentError, CompileError, SourceRejected
from ..types import ScalarType
from . import ir, pickling, reserved
from .frontend import check_signature, translate
from .module import EntryPoint, Specialization, module_source
from .source import Source
from .typing_rules import Type, converts_exactly

_IMAGE_FORMAT = {"host": "so", "cuda": "cubin", "hip": "hsaco"}


@dataclass(frozen=True)
class Image:
    """A compiled module: `data` is what `Compute.load_module` takes."""

    data: bytes
    format: str  # "so", "ptx", "cubin", "hsaco"
    backend: str
    arch: str | None
    entry_points: tuple[EntryPoint, ...]
    cache_dir: Path | None  # the cache entry holding source, binary and meta.json

    def entry(self, kind: str = "inplace") -> EntryPoint:
        for e in self.entry_points:
            if e.kind == kind:
                return e
        raise KeyError(kind)


# Where a compiled image of a kernel's own signature may already exist, asked before compiling it:
# `lookup(spec, backend, arch) -> Image | None`. gompute.aot registers the emitted-package lookup;
# registered from above because the language imports nothing of the layers that use it.
_prebuilt_lookup: Callable[[Specialization, str, str | None], Image | None] | None = None


def set_prebuilt_lookup(lookup: Callable[[Specialization, str, str | None], Image | None] | None) -> None:
    """Make `lookup` the source of already compiled images (None: always compile)."""
    global _prebuilt_lookup
    _prebuilt_lookup = lookup


def backend_name(backend) -> str:
    """ "host", "cuda" or "hip" for a g.Backend member or its name."""
    name = getattr(backend, "name", backend)
    name = str(name).lower()
    if name not in _IMAGE_FORMAT:
        raise ArgumentError(f"kernels compile for host, cuda or hip, not {backend!r}")
    return name


# One thread translates @g.func specializations at a time (re-entered by the calls a function
# makes), so that `_CALL_CHAIN`, the functions being translated, each calling the next, is that
# thread's alone and a function found in it means recursion: with two threads at it, each would
# take the other's entries for its own. One lock per function could deadlock on mutually
# recursive ones.
_TRANSLATING = threading.RLock()
_CALL_CHAIN: list[Func] = []


class Func:
    """A function kernels can call, made by `@g.func`. Called from Python, it is the plain function."""

    __gompute_func__ = True

    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self.fn = fn
        # Read now, as the function was defined: read at the first kernel that calls it, a file
        # edited since the import would give another function's text. Kept as the error where
        # there is no source (the plain function still runs from Python).
        try:
            self._src: Source | CompileError = Source.of(fn)
        except CompileError as e:
            self._src = e
        self._specs: dict[tuple[Type, ...], ir.Function] = {}
        self._captured: dict | None = None  # the globals' values at the first translation (pickling.captured)

    def __call__(self, *args):
        return self.fn(*args)

    def __reduce__(self):
        """By reference where importable, else by source and captured globals (lang/pickling.py)."""
        return pickling.reduce(self, self._src, {}, self._captured)

    def __dask_tokenize__(self) -> str:
        return pickling.token(self, self._src, {}, self._captured)

    def specialize(self, arg_types: list[Type], error) -> ir.Function:
        """The typed IR of this function for arguments of `arg_types` (weak types stay weak)."""
        key = tuple(arg_types)
        spec = self._specs.get(key)
        if spec is not None:
            return spec
        with _TRANSLATING:
            spec = self._specs.get(key)  # another thread's, translated while this one waited
            return spec if spec is not None else self._translate(key, error)

    def _translate(self, key: tuple[Type, ...], error) -> ir.Function:
        if self in _CALL_CHAIN:  # for any argument types: f(x: f32) calling f(f64) recurses too
            through = ", ".join(repr(f.fn.__name__) for f in _CALL_CHAIN[_CALL_CHAIN.index(self) + 1 :])
            raise error(
                f"{self.fn.__name__!r} calls itself{' through ' + through if through else ''}; "
                "kernels and @g.func functions cannot recurse"
            )
        if isinstance(self._src, CompileError):
            raise self._src
        arrays, _, params_class = check_signature(self._src)
        if params_class is not None:
            raise self._src.error(self._src.tree, "a @g.func cannot take a params struct; pass the fields it needs")
        if len(arrays) != len(key):
            raise error(f"{self.fn.__name__} takes {len(arrays)} arguments, got {len(key)}")
        types = [ann if ann is not None else t for (_, ann), t in zip(arrays, key)]
        _CALL_CHAIN.append(self)
        try:
            if self._captured is None:
                self._captured = pickling.captured(self, self._src)
            spec = translate(self._src, types, f"gompute_fn_{self.fn.__name__}", _specialize_call)
        finally:
            _CALL_CHAIN.pop()
        self._specs[key] = spec
        return spec


def _specialize_call(gfunc: Func, arg_types, error) -> ir.Function:
    return gfunc.specialize(arg_types, error)


class MapKernel:
    """An elementwise kernel, made by `@g.map_kernel(block_size=...)`."""

    is_map_kernel = True  # how the expression translator tells one apart without importing this module

    def __init__(self, fn, block_size: int = 256, *, call: str = "g.map", keywords=("out", "stream")):
        """`call`, what runs the kernel; `keywords`, that call's own, which no params field may be called."""
        if not isinstance(block_size, int) or not 1 <= block_size <= 1024:
            raise ArgumentError(f"block_size must be an int from 1 to 1024, got {block_size!r}")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.name = fn.__name__
        self.block_size = block_size
        self.src = Source.of(fn)
        arrays, self.params_name, self.params_class = check_signature(self.src)
        for field in self.params_class.__fields__ if self.params_class is not None else ():
            if field.name in keywords:
                raise self.src.error(
                    self.src.tree,
                    f"{self.params_class.__name__}.{field.name}: a kernel's params are keyword arguments of "
                    f"{call}(kernel)(...), where {field.name}= is the call's own; rename the field",
                )
        self.arg_names = [name for name, _ in arrays]
        self.annotations: tuple[ScalarType | None, ...] = tuple(t for _, t in arrays)
        self.generic = any(t is None for t in self.annotations)
        refused = reserved.reason(self.name, exact=not self.generic)
        if refused is not None:
            raise self.src.error(self.src.tree, f"a map kernel cannot be called {self.name!r}: {refused}; rename it")
        self._specs: dict[tuple[ScalarType, ...], Specialization] = {}
        self._variants: dict[tuple, Specialization] = {}
        self._images: dict[tuple, Image] = {}
        self._captured: dict | None = None  # the globals' values at the first translation (pickling.captured)
        if not self.generic:
            self.specialize()

    def __call__(self, *args, **kwargs):
        arrays = ", ".join(self.arg_names)
        params = "".join(f", {f.name}=..." for f in self.params_class.__fields__) if self.params_class else ""
        raise ArgumentError(
            f"{self.name} is a map kernel, which runs on arrays through g.map: g.map({self.name})({arrays}{params})"
        )

    def __reduce__(self):
        """By reference where importable, else by source, options and captured globals (lang/pickling.py)."""
        return pickling.reduce(self, self.src, {"block_size": self.block_size}, self._captured)

    def __dask_tokenize__(self) -> str:
        return pickling.token(self, self.src, {"block_size": self.block_size}, self._captured)

    @property
    def arity(self) -> int:
        """The number of array inputs."""
        return len(self.arg_names)

    def specialize(self, *types: ScalarType) -> Specialization:
        """The specialization for input element types `types` (none needed for an annotated kernel)."""
        spec = self._specs.get(types)
        if spec is not None:
            return spec
        types = self._check_types(types)
        spec = self._specs.get(types)
        if spec is None:
            symbol = self.name if not self.generic else f"{self.name}__{'_'.join(t.name for t in types)}"
            if self._captured is None:
                self._captured = pickling.captured(self, self.src)
            fn = translate(self.src, list(types), f"{ir.KERNEL_PREFIX}{symbol}", _specialize_call)
            spec = self._specs[types] = Specialization(symbol, fn, self.block_size)
        return spec

    def variant(self, in_storage: tuple[ScalarType, ...], out_storage: ScalarType | None = None) -> Specialization:
        """The specialization reading inputs stored as `in_storage` and writing an output stored as
        `out_storage` (None: the return type), converting each exactly; a second call is a
        dictionary lookup.

        An annotated parameter takes an array of any type that converts to it exactly (NumPy's
        "safe" casting: an int16 array into `x: g.f32`), a generic one takes the array's type;
        `out_storage` must hold every value of the return type exactly. With storage equal to the
        kernel's own types this is `specialize(...)`, same symbols; otherwise the symbols carry
        `__from_<types>` and/or `__to_<type>`.
        """
        try:
            return self._variants[in_storage, out_storage]
        except (KeyError, TypeError):  # TypeError: a list, not a tuple
            pass
        in_storage = tuple(in_storage)
        spec = self._variants[in_storage, out_storage] = self._make_variant(in_storage, out_storage)
        return spec

    def _make_variant(self, in_storage: tuple, out_storage: ScalarType | None) -> Specialization:
        if len(in_storage) != self.arity:
            raise ArgumentError(f"{self.name} takes {self.arity} inputs, got {len(in_storage)} storage types")
        types = []
        for name, ann, t in zip(self.arg_names, self.annotations, in_storage):
            if not isinstance(t, ScalarType):
                raise ArgumentError(f"{self.name}: the storage type of {name!r} must be a gompute type, got {t!r}")
            if ann is not None and not converts_exactly(t, ann):
                raise ArgumentError(
                    f"{self.name}: {name} is declared {ann.name}; an array of {_dtype_name(t)} does not convert to it "
                    f"exactly — convert it with {_astype(ann)}"
                )
            types.append(ann if ann is not None else t)
        spec = self.specialize(*types) if self.generic else self.specialize()
        out_storage = spec.out_type if out_storage is None else out_storage
        if not isinstance(out_storage, ScalarType):
            raise ArgumentError(f"{self.name}: the output storage type must be a gompute type, got {out_storage!r}")
        if not converts_exactly(spec.out_type, out_storage):
            raise ArgumentError(
                f"{self.name} returns {spec.out_type.name}; an output array of {_dtype_name(out_storage)} cannot hold "
                f"its results exactly — pass an out= array of {spec.out_type.name} (or of a wider type)"
            )
        if in_storage == tuple(spec.in_types) and out_storage is spec.out_type:
            return spec
        symbol = spec.name
        if in_storage != tuple(spec.in_types):
            symbol += f"__from_{'_'.join(t.name for t in in_storage)}"
        if out_storage is not spec.out_type:
            symbol += f"__to_{out_storage.name}"
        return Specialization(symbol, spec.function, self.block_size, in_storage, out_storage)

    def _check_types(self, types: tuple) -> tuple[ScalarType, ...]:
        if not types:
            if self.generic:
                raise ArgumentError(f"{self.name} is generic; give the input types, e.g. .specialize(g.f32)")
            return self.annotations
        if len(types) != self.arity:
            raise ArgumentError(f"{self.name} takes {self.arity} inputs, got {len(types)} types")
        for name, ann, t in zip(self.arg_names, self.annotations, types):
            if not isinstance(t, ScalarType):
                raise ArgumentError(f"{self.name}: the type of {name!r} must be a gompute type, got {t!r}")
            if ann is not None and ann is not t:
                raise ArgumentError(f"{self.name}: {name!r} is declared {ann!r}, got {t!r}")
        return tuple(types)

    def entry_points(self, *types: ScalarType) -> list[EntryPoint]:
        return self.specialize(*types).entry_points()

    def check_block(self, block) -> None:
        """Refuse a launch block other than `block_size` threads along x."""
        dims = tuple(getattr(block, d, 1) for d in ("x", "y", "z")) if not isinstance(block, int) else (block, 1, 1)
        if dims != (self.block_size, 1, 1):
            raise ArgumentError(
                f"{self.name} was generated for blocks of {self.block_size} threads "
                f"(block_size={self.block_size}); launch it with g.Dim3({self.block_size}), "
                f"not {dims}"
            )

    def source(self, backend="host", *types: ScalarType) -> str:
        """The complete generated C++ module of this kernel for `backend`."""
        return module_source([self.specialize(*types)], backend_name(backend))

    def compile_for(self, backend, arch: str | None = None, *types: ScalarType) -> Image:
        """The compiled image for `backend` and `arch`: host "so"; cuda "sm_90" → CUBIN, "compute_90"
        → PTX; hip "gfx90a" → HSACO. A second call costs one dictionary lookup."""
        key = (backend, arch, types)
        image = self._images.get(key)
        if image is None:
            image = self._images[key] = self.image_of(self.specialize(*types), backend, arch)
        return image

    def image_of(self, spec: Specialization, backend, arch: str | None = None) -> Image:
        """The compiled image holding `spec`, a specialization or variant of this kernel (see
        `compile_for`); a second call costs one dictionary lookup."""
        key = (backend, arch, spec.name)
        image = self._images.get(key)
        if image is None:
            name = backend_name(backend)
            plain = not self.generic and spec is self._specs.get(self.annotations)
            image = _prebuilt_lookup(spec, name, arch) if plain and _prebuilt_lookup is not None else None
            if image is None:
                image = compile_module([spec], name, arch, spec.name)
            self._images[key] = image
        return image

    def __repr__(self) -> str:
        return f"<map_kernel {self.name} block_size={self.block_size}{' generic' if self.generic else ''}>"


def _dtype_name(t: ScalarType) -> str:
    return t.dtype.name if t.dtype is not None else t.name


def _astype(t: ScalarType) -> str:
    return f".astype(np.{t.dtype.name})" if t.dtype is not None else f".astype(...) to {t.name}"


def compile_module(specs: list[Specialization], backend: str, arch: str | None, name: str) -> Image:
    """Compile the module holding `specs` for `backend`/`arch`."""
    from ..compile import build_image

    source, partitioned = module_source(specs, backend), any(s.partitioned_build for s in specs)
    try:
        data, fmt, cache_dir = build_image(backend, source, arch, name, partitioned=partitioned)
    except SourceRejected as e:  # the kernel was translated, so the code is ours to get right
        raise _ours(e) from None
    entries = tuple(e for s in specs for e in s.entry_points())
    return Image(data, fmt, backend, arch, entries, cache_dir)


def _ours(e: SourceRejected) -> SourceRejected:
    """A compiler's failure on generated code, said to be gompute's (RawKernel's is the user's)."""
    ours = SourceRejected(f"gompute generated code that does not compile (a gompute bug; please report it): {e}")
    ours.source_dir = getattr(e, "source_dir", None)
    return ours


def map_kernel(fn=None, *, block_size: int = 256):
    """Make an elementwise kernel from a typed Python function: `@g.map_kernel(block_size=256)`."""
    if fn is None:
        return lambda f: MapKernel(f, block_size)
    return MapKernel(fn, block_size)


def func(fn):
    """Mark a function callable from kernels: `@g.func`."""
    if isinstance(fn, (MapKernel, Func)):
        raise CompileError(f"{fn.__name__} is already a kernel or @g.func")
    return Func(fn)
