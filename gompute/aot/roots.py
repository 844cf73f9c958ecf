"""The root modules `gompute emit` is given, and the map kernels each one defines."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import sys
import traceback
import warnings
from pathlib import Path

from ..errors import ArgumentError, CompileError, GomputeError
from ..lang.kernel import MapKernel

_PATH_ROOT = "_gompute_root_"  # prefix of the private module names path roots are imported under


def load_root(root: str):
    """A root module: an importable module name, or a path to a .py file.

    A path is imported under a private module name, so a kernel file named like another module
    (random.py) does not replace that module in `sys.modules`.
    """
    path = Path(root)
    if root.endswith(".py") or path.is_file():
        return _load_file(root, path)
    if path.is_dir() and not (path / "__init__.py").is_file():
        raise ArgumentError(f"{root} is a folder, not a Python module; give the .py files in it as roots")
    with _importing(root):
        try:
            return importlib.import_module(root)
        except ModuleNotFoundError as e:
            if e.name is None or not f"{root}.".startswith(f"{e.name}."):
                raise  # the root imports a module that is missing: its own error
    raise ArgumentError(
        f"no module named {root!r}; give a path to a .py file, or put the folder that holds the module on "
        "sys.path (PYTHONPATH)"
    )


def _load_file(root: str, path: Path):
    if not path.is_file():
        raise ArgumentError(f"{root}: no such file; give a path to a .py file or an importable module name")
    path = path.resolve()
    name = f"{_PATH_ROOT}{hashlib.sha256(str(path).encode()).hexdigest()[:12]}_{path.stem.replace('.', '_')}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise ArgumentError(f"{root} is not a .py file; give a .py file or an importable module name")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # where inspect and Params annotations look the module up
    try:
        with _importing(root):
            spec.loader.exec_module(module)
    except GomputeError:
        del sys.modules[name]
        raise
    return module


@contextlib.contextmanager
def _importing(root: str):
    """A root that fails to import, as a CompileError naming the file and line."""
    try:
        yield
    except GomputeError:
        raise
    except SyntaxError as e:
        raise CompileError(f"{root} is not valid Python: {e.msg} ({e.filename}:{e.lineno})") from e
    except Exception as e:
        where = traceback.extract_tb(e.__traceback__)[-1]
        raise CompileError(f"importing {root} raised {type(e).__name__}: {e} ({where.filename}:{where.lineno})") from e


def root_name(module) -> str:
    """The name a root goes by: its module name, or its file's stem for a path."""
    return Path(module.__file__).stem if module.__name__.startswith(_PATH_ROOT) else module.__name__


def kernels_of(module) -> list[MapKernel]:
    """The map kernels a module defines (not those it imports), in definition order."""
    found = []
    for value in vars(module).values():
        if isinstance(value, MapKernel) and value.fn.__module__ == module.__name__ and value not in found:
            if value.generic:
                warnings.warn(
                    f"{value.name} in {root_name(module)} is generic (unannotated parameters) and is not "
                    "emitted; annotate its parameters to emit it",
                    stacklevel=4,  # emit_kernels' caller
                )
                continue
            found.append(value)
    return found


def no_kernels(root: str, module) -> ArgumentError:
    """The error for a root that defines no kernel, naming those it only imports."""
    imported = [
        f"{v.name} (from {v.fn.__module__})"
        for v in vars(module).values()
        if isinstance(v, MapKernel) and v.fn.__module__ != module.__name__
    ]
    why = (
        f"; the kernels it imports, {', '.join(imported)}, are emitted from the module that defines them: give "
        "that module as a root"
        if imported
        else ""
    )
    return ArgumentError(f"{root} defines no annotated map kernels to emit{why}")
