"""`gompute info`: gompute's version, the compilers it found, its kernel cache and the CUDA extra
that fits this machine's driver; then each backend, whether it is usable and why not, its devices.

A module of its own so that the command line (`__main__.py`) and the demo both print it
without importing each other.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import warnings
from importlib import metadata

from . import __version__, _core
from .backend import Backend, cuda_version
from .compile import cache, nvrtc
from .compile.host import find_compiler
from .errors import CompileError, GomputeError
from .runtime import device_info


def _gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:.1f} GiB"


def _driver_text(backend: Backend, version: int) -> str:
    if backend is Backend.host:
        return f"host launch convention {version}"
    if backend is Backend.cuda:
        return "CUDA driver {}.{}".format(*cuda_version(version))
    return f"HIP driver {version}"


def environment(out=sys.stdout) -> None:
    """Prints gompute's version, the host compiler, the NVRTC, the cache folder and the CUDA extra."""
    driver = cuda_driver_version()
    print(f"gompute {__version__}", file=out)
    print(f"host compiler: {_host_compiler()}", file=out)
    print(f"NVRTC: {_nvrtc(driver)}", file=out)
    where = f"from {cache.ENV_VAR}" if os.environ.get(cache.ENV_VAR) else f"set {cache.ENV_VAR} to move it"
    print(f"kernel cache: {cache.default_root()} ({where})", file=out)
    print(f"CUDA extra: {cuda_extra(driver, cuda_extras())}", file=out)
    print(file=out)


def _host_compiler() -> str:
    try:
        c = find_compiler()
    except CompileError as e:
        return f"none: {e}"
    return f"{shlex.join(c.command)}: {c.version}; target CPU {c.target_cpu}"


def _nvrtc(driver: int | None) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an NVRTC newer than the driver: said below, with the fix
        try:
            found = nvrtc.load()
        except CompileError as e:
            return f"none: {e}"
    text = "{}.{} at {}".format(*found.version, found.path)
    if driver is not None and found.version[0] > cuda_version(driver)[0]:
        text += f" (newer than this CUDA {cuda_version(driver)[0]} driver, which may refuse its code)"
    return text


def cuda_driver_version() -> int | None:
    """The installed CUDA driver's version as cuDriverGetVersion gives it (12080 is 12.8), or None."""
    _usable, _reason, version, _count = _core.probe(Backend.cuda.kind)
    return version or None  # a driver that loads but has no device still says its version


def cuda_extras() -> list[int]:
    """The CUDA major versions gompute has an extra for (`cuda12` -> 12), from its installed metadata."""
    try:
        extras = metadata.metadata("gompute").get_all("Provides-Extra") or []
    except metadata.PackageNotFoundError:
        return []
    return sorted(int(m.group(1)) for e in extras if (m := re.fullmatch(r"cuda(\d+)", e)))


def cuda_extra(driver: int | None, majors: list[int]) -> str:
    """Which `gompute[cudaNN]` fits a CUDA driver of version `driver`: the one of its own major, else the
    newest below it (a driver loads code from an NVRTC of its major or older, not newer)."""
    if not majors:
        return "unknown: gompute's installed metadata lists no cudaNN extra (reinstall gompute)"
    names = " or ".join(f"gompute[cuda{m}]" for m in majors)
    if driver is None:
        return f"no CUDA driver found; on an NVIDIA machine pick {names} by its driver's CUDA major"
    major, minor = cuda_version(driver)
    fitting = [m for m in majors if m <= major]
    if not fitting:
        return (
            f"none fits this CUDA {major}.{minor} driver: the extras bring NVRTC {', '.join(map(str, majors))}, "
            f"whose code it cannot load; set GOMPUTE_LIBNVRTC to an NVRTC {major}.x"
        )
    return f"gompute[cuda{fitting[-1]}] fits this CUDA {major}.{minor} driver"


def backends(out=sys.stdout) -> None:
    """Prints each backend, whether it is usable and why not, and its devices."""
    for backend in (Backend.cuda, Backend.hip, Backend.host):
        usable, reason, version, count = _core.probe(backend.kind)
        if not usable:
            print(f"{backend.value:5} unavailable: {reason}", file=out)
            continue
        print(f"{backend.value:5} usable: {_driver_text(backend, version)}, {count} device(s)", file=out)
        for ordinal in range(count):
            try:
                d = device_info(backend, ordinal)
            except GomputeError as e:
                print(f"      [{ordinal}] cannot be queried: {e}", file=out)
                continue
            arch = (
                d.arch
                if backend is Backend.host
                else f"{d.arch} (compute capability {d.compute_capability[0]}.{d.compute_capability[1]})"
            )
            units = "worker threads" if backend is Backend.host else "multiprocessors"
            print(f"      [{ordinal}] {d.name}: {arch}, {_gib(d.total_memory)}, {d.multiprocessors} {units}", file=out)
    print("cpu   always: the polite arm Compute.init() falls back to when no GPU backend is usable", file=out)
