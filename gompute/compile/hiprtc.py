"""hiprtc, loaded at run time with ctypes: HIP C++ → an HSACO code object for one gfx arch.

Found in $HIP_PATH/lib, $ROCM_PATH/lib, /opt/rocm/lib or the system loader path, so
`import gompute` works without ROCm.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import re
from pathlib import Path

from ..errors import CompileError
from . import rtc
from .cache import DiskCache
from .rtc import RuntimeCompiler, loadable

OPTIONS = ("-std=c++17", "-ffp-contract=off")
_SONAMES = ("libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so.5")


class Hiprtc(RuntimeCompiler):
    """The loaded hiprtc library."""

    prefix, title, backend, source_suffix = "hiprtc", "hiprtc", "hip", ".hip"
    options, arch_flag = OPTIONS, "--offload-arch"

    def output_kind(self, arch: str) -> str:
        """An HSACO code object, for a gfx arch ("gfx90a")."""
        check_arch(arch)
        return "Code"


def check_arch(arch: str) -> None:
    """A CompileError unless `arch` is a gfx name, with or without target features."""
    if not re.fullmatch(r"gfx[0-9a-f]+(:[a-z+\-:]+)?", arch or ""):
        raise CompileError(f"{arch!r} is not an AMD GPU arch; use the device's gfx name, e.g. gfx90a")


def _candidates() -> list[str]:
    dirs = [os.environ.get("HIP_PATH"), os.environ.get("ROCM_PATH"), "/opt/rocm"]
    paths = [str(Path(d) / "lib" / so) for d in dirs if d for so in _SONAMES]
    found = ctypes.util.find_library("hiprtc")
    return paths + ([found] if found else []) + list(_SONAMES)


@functools.lru_cache(maxsize=1)
def load() -> Hiprtc:
    """hiprtc, or a CompileError saying how to get it."""
    found = next(loadable(Hiprtc, _candidates(), []), None)
    if found is not None:
        return found
    raise CompileError(
        "compiling HIP kernels needs hiprtc, which was not found: install ROCm (or set HIP_PATH / ROCM_PATH to it)"
    )


def available() -> bool:
    return rtc.available(load)


def compile_hip(name: str, source: str, arch: str, cache: DiskCache | None = None) -> tuple[bytes, Path]:
    """The HSACO of `source` for `arch`, through the disk cache."""
    hiprtc = load()
    check_arch(arch)  # before the cache, so a bad arch leaves no failed build behind
    return hiprtc.compile_cached(name, source, arch, f"{arch.split(':')[0]}.hsaco", cache)
