"""What the cluster tests run in each worker process, through `client.run`: a count of the kernel
modules the process compiles, and taking its C++ compiler away."""

import collections
import os
import sys
import tempfile

import gompute.lang.kernel as lang_kernel

COMPILES: collections.Counter = collections.Counter()
_SAVED: dict[str, str | None] = {}  # the environment without_compiler changed


def count_compiles() -> None:
    """From now on count, by kernel name, each module this process compiles (or loads from the
    disk cache: the step an unpickled kernel must take at most once per process)."""
    if getattr(lang_kernel.compile_module, "counted", False):
        return
    compile_module = lang_kernel.compile_module

    def counted(specs, backend, arch, name):
        COMPILES[name] += 1
        return compile_module(specs, backend, arch, name)

    counted.counted = True
    lang_kernel.compile_module = counted


def compiles() -> dict[str, int]:
    return dict(COMPILES)


def without_compiler() -> None:
    """No C++ compiler from here on: $CXX names a missing program, PATH holds none, and the
    ziglang wheel cannot be imported."""
    _SAVED.update({name: os.environ.get(name) for name in ("CXX", "PATH")})
    os.environ["CXX"] = "/nonexistent/c++"
    os.environ["PATH"] = tempfile.mkdtemp(prefix="no-compiler-")
    sys.modules["ziglang"] = None  # importlib.util.find_spec then answers None


def with_compiler() -> None:
    """Undo `without_compiler`."""
    for name, value in _SAVED.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    if sys.modules.get("ziglang", 0) is None:
        del sys.modules["ziglang"]
