"""`gompute info`: each backend, whether it is usable and why not, and its devices.

A module of its own so that the command line (`__main__.py`) and the demo both print it
without importing each other.
"""

from __future__ import annotations

import sys

from . import _core
from .backend import Backend, cuda_version
from .errors import GomputeError
from .runtime import device_info


def _gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:.1f} GiB"


def _driver_text(backend: Backend, version: int) -> str:
    if backend is Backend.host:
        return f"host ABI {version}"
    if backend is Backend.cuda:
        return "CUDA driver {}.{}".format(*cuda_version(version))
    return f"HIP driver {version}"


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
