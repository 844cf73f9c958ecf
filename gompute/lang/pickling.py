"""Pickling kernels and @g.func functions by what defines them, never by compiled bytes.

One that its module gives back on import (module and qualname, as pickle does functions) pickles
as that reference, and is the very same object on the other side. One defined in `__main__`, in
an IPython cell or inside a function, which a Dask worker or a Ray task cannot import, pickles by
value: its source text with its file name and first line (errors on the other side still point
at the user's line), its options, and the names of its globals the language can read: numbers,
gompute types and builtins, modules (`math`, `g`: by name, and the attributes the def reads of
them), @g.func functions (each pickled the same way), its Params class (by reference where
importable, else by its fields), and of any other object (a class, a config object) the
attributes the def reads off it (`cfg.scale`), as an object of those attributes alone. The values
are those the kernel was translated with, where it has been (an annotated one, when defined): a
global rebound since, or a module attribute set at run time, arrives as the kernel's code holds
it. A process that unpickles a kernel compiles it once for its own device, or finds it in the
disk cache or an emitted package: a kernel rebuilt from a value is kept per process by its token,
so every task that brings it shares one compiled image.

`token` is the same for the same kernel in every process: a hash of its source, options and the
names it captured with their values (Dask's `__dask_tokenize__`).
"""

from __future__ import annotations
import __future__

import ast
import builtins as _py
import hashlib
import importlib
import sys
import textwrap
import threading
import types as _pytypes

import numpy as np

from .. import types
from ..abi import Params
from . import builtins
from .frontend import namespace_of
from .source import Source

# Modules whose definitions no other process can import: the script run as the main program (and
# IPython's cells, whose module is named `__main__` too), and multiprocessing's name for it.
_UNIMPORTABLE_MODULES = ("__main__", "__mp_main__")
_TYPES = {t.name: t for t in vars(types).values() if isinstance(t, types.ScalarType)}

_REBUILT: dict[str, object] = {}  # token -> the kernel or @g.func rebuilt from it in this process
_PARAMS: dict[tuple, type] = {}  # (module, qualname, fields) -> the Params class rebuilt from them
_LOCK = threading.RLock()  # one rebuild per token, also when a worker's threads unpickle it at once


def reduce(obj, src: Source | Exception, options: dict, captured: dict | None = None) -> tuple:
    """`obj.__reduce__()` for a kernel or @g.func `obj` made by `type(obj)(fn, **options)`, whose
    source is `src` (or the error reading it gave, raised where the value is needed). `captured`:
    what `captured(obj, src)` gave when `obj` was first translated, the values its code holds;
    None before (the values now, which the other side compiles with)."""
    return reference(obj) or (_by_value, (type(obj), _state(obj, _read(src), options, captured)))


def reference(obj) -> tuple | None:
    """`obj.__reduce__()` by reference (module and qualname) where its module gives it back on import."""
    return (_by_reference, (obj.__module__, obj.__qualname__)) if _importable(obj) else None


def token(obj, src: Source | Exception, options: dict, captured: dict | None = None) -> str:
    """The same hex digest for the same definition in every process: of its text, options and the
    values of the names it reads (`captured`, as for `reduce`)."""
    src = _read(src)
    captured = _captured(obj, src) if captured is None else captured
    parts = [obj.__module__, obj.__qualname__, "\n".join(src.lines), repr(sorted(options.items()))]
    parts += [f"{name}={_token_of(captured[name])}" for name in sorted(captured)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def captured(obj, src: Source | Exception) -> dict | None:
    """The encoded values of the names `obj`'s def reads, as they are now (None without a source):
    taken by a kernel or @g.func when it is translated, which is when its code takes them."""
    return None if isinstance(src, Exception) else _captured(obj, src)


def _read(src: Source | Exception) -> Source:
    if isinstance(src, Exception):
        raise src
    return src


def _importable(obj) -> bool:
    """Whether importing `obj`'s module elsewhere and following its qualname gives `obj` here."""
    if obj.__module__ in _UNIMPORTABLE_MODULES or "<locals>" in obj.__qualname__:
        return False
    target = sys.modules.get(obj.__module__)
    for part in obj.__qualname__.split("."):
        target = getattr(target, part, None)
    return target is obj


def _by_reference(module: str, qualname: str):
    target = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def _state(obj, src: Source, options: dict, captured: dict | None) -> dict:
    fn = src.function
    captured = _captured(obj, src) if captured is None else captured
    return {
        "module": obj.__module__,
        "qualname": obj.__qualname__,
        "filename": src.filename,
        "first_line": src.first_line,
        "lines": src.lines,
        "future_annotations": bool(fn.__code__.co_flags & __future__.annotations.compiler_flag),
        "options": options,
        "globals": captured,
        "token": token(obj, src, options, captured),
    }


def _by_value(cls, state: dict):
    """The kernel or @g.func of `state`, built once per process (later unpickles share it)."""
    with _LOCK:
        found = _REBUILT.get(state["token"])
        if found is None:
            found = _REBUILT[state["token"]] = cls(_function(state), **state["options"])
        return found


def _function(state: dict):
    """The plain function `state` defines: its def compiled against the file name and lines the
    original was read from, its decorators left off (the options come with the state)."""
    lines = state["lines"]
    module = ast.parse(textwrap.dedent("\n".join(lines) + "\n"))
    definition = module.body[0]
    definition.decorator_list = []
    ast.increment_lineno(module, state["first_line"] - 1)
    flags = __future__.annotations.compiler_flag if state["future_annotations"] else 0
    code = compile(module, state["filename"], "exec", flags=flags, dont_inherit=True)
    namespace = {"__name__": state["module"], "__builtins__": _py}
    namespace.update({name: _decode(value) for name, value in state["globals"].items()})
    exec(code, namespace)  # noqa: S102 - a def statement: defines the function, runs none of it
    fn = namespace[definition.name]
    fn.__qualname__ = state["qualname"]
    fn.__gompute_source_lines__ = ([line + "\n" for line in lines], state["first_line"])
    return fn


# ---- the globals a definition reads ----------------------------------------------------------


def _captured(obj, src: Source) -> dict[str, tuple]:
    """Each global (or closure) name the function's text uses, bound to a value the language can
    read, encoded; names bound to anything else are left behind, the language reads none of them."""
    namespace, paths = _lookup(src), _paths_used(src.tree)
    found = {}
    for name in sorted(_names_used(src.tree)):
        value = namespace.get(name, _MISSING)
        if value is _MISSING or value is obj or value is src.function:
            continue
        encoded = _encode(value)
        if name in paths and encoded is not None and encoded[0] == "module":  # math.pi, cfg.SCALE
            encoded = ("module", value.__name__, _attributes(value, paths[name]))
        elif name in paths and (encoded is None or (encoded[0] == "value" and isinstance(value, type))):
            attributes = _attributes(value, paths[name])  # an object or class the def reads attributes of
            encoded = ("attributes", attributes) if attributes else encoded
        if encoded is not None:
            found[name] = encoded
    return found


def _lookup(src: Source) -> dict:
    """What the def's names are bound to: its globals and closure, and the objects of annotations
    that name what neither holds (a Params class local to a factory: annotations are no free
    variables of the function)."""
    hints = getattr(src.function, "__annotations__", {})
    spelled = [(a.annotation, hints.get(a.arg)) for a in src.tree.args.args] + [(src.tree.returns, hints.get("return"))]
    found = {node.id: hint for node, hint in spelled if isinstance(node, ast.Name) and isinstance(hint, type)}
    found.update(namespace_of(src.function))
    return found


def _paths_used(tree: ast.FunctionDef) -> dict[str, set[str]]:
    """Each name the def reads attributes of, with the dotted paths it reads (`cfg.a.b`: "a" and "a.b")."""
    found: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        path, base = [], node
        while isinstance(base, ast.Attribute):
            path.append(base.attr)
            base = base.value
        if path and isinstance(base, ast.Name):
            found.setdefault(base.id, set()).add(".".join(reversed(path)))
    return found


def _attributes(value, paths) -> tuple:
    """((path, encoded value), ...) of the attribute paths of `value` whose values the language reads."""
    found = []
    for path in sorted(paths):
        target = value
        for attr in path.split("."):
            target = getattr(target, attr, _MISSING)
        encoded = None if target is _MISSING else _encode(target)
        if encoded is not None:
            found.append((path, encoded))
    return tuple(found)


_MISSING = object()


def _names_used(tree: ast.FunctionDef) -> set[str]:
    """The names in the def (its decorators aside), those of string annotations included."""
    nodes = [tree.args, *tree.body, *([tree.returns] if tree.returns else [])]
    names = {n.id for top in nodes for n in ast.walk(top) if isinstance(n, ast.Name)}
    annotations = [a.annotation for a in tree.args.args] + [tree.returns]
    for text in (a.value for a in annotations if isinstance(a, ast.Constant) and isinstance(a.value, str)):
        try:
            names.update(n.id for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Name))
        except SyntaxError:  # the language refuses it when it reads the signature
            pass
    return names


def _encode(value) -> tuple | None:
    """A value the language reads, as pickle can carry it to a process that lacks its module."""
    if isinstance(value, _pytypes.ModuleType):
        return ("module", value.__name__)
    if isinstance(value, types.ScalarType):  # by name: the language tells types apart by identity
        return ("type", value.name)
    if isinstance(value, types.Scalar):
        return ("scalar", value.type.name, value.value)
    if isinstance(value, builtins.Builtin):
        return ("builtin", value.name) if getattr(builtins, value.name, None) is value else None
    if isinstance(value, type) and issubclass(value, Params):
        return _encode_params(value)
    if isinstance(value, (bool, int, float, complex)) or _numpy_number(value):
        return ("value", value)
    if getattr(type(value), "__gompute_func__", False):  # pickled in turn, by reference or by value
        return ("value", value)
    if isinstance(value, (type, _pytypes.BuiltinFunctionType, np.ufunc)):  # casts and math functions
        return ("value", value) if getattr(value, "__module__", None) not in _UNIMPORTABLE_MODULES else None
    return None


def _numpy_number(value) -> bool:
    return isinstance(value, np.generic) and value.dtype.kind in "biufc"


def _encode_params(cls: type) -> tuple:
    """By reference where importable, else by the fields; the fields go either way, for the token."""
    fields = tuple((f.name, f.type.name) for f in cls.__fields__)
    return ("params_ref" if _importable(cls) else "params", cls.__module__, cls.__qualname__, fields)


def _decode(encoded: tuple):
    kind, *args = encoded
    if kind == "module":
        return _module(*args)
    if kind == "type":
        return _TYPES[args[0]]
    if kind == "scalar":
        return _TYPES[args[0]](args[1])
    if kind == "builtin":
        return getattr(builtins, args[0])
    if kind == "params_ref":
        return _by_reference(args[0], args[1])
    if kind == "params":
        return _params_class(*args)
    if kind == "attributes":
        return _with_attributes(args[0])
    return args[0]


def _module(name: str, attributes: tuple = ()):
    """The module `name`, where the attributes the def read of it (`attributes`) still hold those
    values once it is imported here; else an object of those values alone (a module global
    rebound after the kernel was compiled, or one its file does not set)."""
    module = importlib.import_module(name)
    for path, encoded in attributes:
        target = module
        for attr in path.split("."):
            target = getattr(target, attr, _MISSING)
        if target is _MISSING or _token_of(_encode(target) or ("missing",)) != _token_of(encoded):
            return _with_attributes(attributes)
    return module


def _with_attributes(attributes: tuple) -> _pytypes.SimpleNamespace:
    """An object with the attribute paths of `attributes` (shortest first): where a path's start
    holds a value already (`cfg.x` and `cfg.x.real`), the value's own attribute serves."""
    root = _pytypes.SimpleNamespace()
    for path, encoded in sorted(attributes, key=lambda item: item[0].count(".")):
        *parents, last = path.split(".")
        target = root
        for attr in parents:
            if not hasattr(target, attr):
                setattr(target, attr, _pytypes.SimpleNamespace())
            target = getattr(target, attr)
        if isinstance(target, _pytypes.SimpleNamespace):
            setattr(target, last, _decode(encoded))
    return root


def _params_class(module: str, qualname: str, fields: tuple) -> type:
    """A Params class of `fields` (each (name, type name)), one per process: the field order
    fixes the C layout, so the offsets are the original's."""
    key = (module, qualname, fields)
    with _LOCK:
        found = _PARAMS.get(key)
        if found is None:
            namespace = {
                "__annotations__": {name: _TYPES[t] for name, t in fields},
                "__module__": module,
                "__qualname__": qualname,
            }
            found = _PARAMS[key] = type(qualname.rpartition(".")[2], (Params,), namespace)
        return found


def _token_of(encoded: tuple) -> str:
    """A value's part of a token: its text, a function's own token, a module's name."""
    if encoded[0] == "value":
        value = encoded[1]
        if hasattr(value, "__dask_tokenize__"):
            return str(value.__dask_tokenize__())
        if isinstance(value, np.generic):
            return f"{value.dtype}:{value.item()!r}"
        if isinstance(value, (type, _pytypes.BuiltinFunctionType, np.ufunc)):
            return f"{getattr(value, '__module__', None)}.{getattr(value, '__qualname__', value.__name__)}"
        return f"{type(value).__name__}:{value!r}"
    if encoded[0] in ("attributes", "module"):  # a module's: its name, and what the def reads of it
        name, attributes = ("", encoded[1]) if encoded[0] == "attributes" else (encoded[1], encoded[2])
        return name + "{" + ", ".join(f"{path}={_token_of(value)}" for path, value in attributes) + "}"
    return repr(encoded)
