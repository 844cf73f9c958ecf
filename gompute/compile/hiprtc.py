"""hiprtc, loaded at run time with ctypes: HIP C++ → an HSACO code object for one gfx arch.

`GOMPUTE_LIBHIPRTC=/path/lib.so` wins; else libhiprtc (ROCm 6 on, and some ROCm 5 builds), then
libamdhip64, which carries hiprtc itself up to ROCm 5 (Debian's and Ubuntu's libamdhip64-5 too),
each looked for in $HIP_PATH/lib, $ROCM_PATH/lib, /opt/rocm/lib and the system loader's path.
Loaded at first use, so `import gompute` works without ROCm.
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
ENV_VAR = "GOMPUTE_LIBHIPRTC"
_SONAMES = ("libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so.5")
# The HIP runtime libraries that export hiprtc's API; ROCm 6's libamdhip64.so.6 does not, and
# a library without it is passed over (see rtc.loadable).
_RUNTIME_SONAMES = ("libamdhip64.so.5", "libamdhip64.so")


class Hiprtc(RuntimeCompiler):
    """The loaded hiprtc library."""

    prefix, title, backend, source_suffix = "hiprtc", "hiprtc", "hip", ".hip"
    options, arch_flag = OPTIONS, "--offload-arch"

    @functools.cached_property
    def identity(self) -> str:
        """hiprtcVersion answers 9.0 in every ROCm release, so the file the library was loaded
        from (libamdhip64.so.5.2.21153: its name carries ROCm's version), its size and its time
        tell one hiprtc from another."""
        path = _loaded_file(self.lib) or self.path
        try:
            stat = os.stat(path)
        except OSError:
            return f"{super().identity} {path}"
        return f"{super().identity} {path} {stat.st_size} {stat.st_mtime_ns}"

    def output_kind(self, arch: str) -> str:
        """An HSACO code object, for a gfx arch ("gfx90a")."""
        check_arch(arch)
        return "Code"


def check_arch(arch: str) -> None:
    """A CompileError unless `arch` is a gfx name, with or without target features."""
    if not re.fullmatch(r"gfx[0-9a-f]+(:[a-z+\-:]+)?", arch or ""):
        raise CompileError(f"{arch!r} is not an AMD GPU arch; use the device's gfx name, e.g. gfx90a")


class _DlInfo(ctypes.Structure):
    """The Dl_info that dladdr fills (dlfcn.h)."""

    _fields_ = [
        ("fname", ctypes.c_char_p),
        ("fbase", ctypes.c_void_p),
        ("sname", ctypes.c_char_p),
        ("saddr", ctypes.c_void_p),
    ]


def _loaded_file(lib: ctypes.CDLL) -> str | None:
    """The real path of the file the loader opened for `lib` (dladdr of one of its functions), or
    None where that cannot be asked."""
    dladdr = getattr(ctypes.CDLL(None), "dladdr", None)
    info = _DlInfo()
    try:
        function = ctypes.cast(lib.hiprtcCreateProgram, ctypes.c_void_p)
    except ctypes.ArgumentError:  # not a function of a loaded shared object
        return None
    if dladdr is None or not dladdr(function, ctypes.byref(info)):
        return None
    return os.path.realpath(info.fname.decode()) if info.fname else None


def _candidates() -> list[str]:
    """The libraries to try, in order: libhiprtc anywhere before a HIP runtime carrying it, so
    that ROCm 6 on never loads the runtime only to find no hiprtc in it."""
    dirs = [os.environ.get("HIP_PATH"), os.environ.get("ROCM_PATH"), "/opt/rocm"]
    paths: list[str] = []
    for sonames, name in ((_SONAMES, "hiprtc"), (_RUNTIME_SONAMES, "amdhip64")):
        paths += [str(Path(d) / "lib" / so) for d in dirs if d for so in sonames]
        found = ctypes.util.find_library(name)
        paths += ([found] if found else []) + list(sonames)
    return list(dict.fromkeys(paths))


@functools.lru_cache(maxsize=1)
def load() -> Hiprtc:
    """hiprtc, or a CompileError saying how to get it."""
    override = os.environ.get(ENV_VAR)
    paths = [override] if override else _candidates()
    tried: list[str] = []
    found = next(loadable(Hiprtc, paths, tried), None)
    if found is not None:
        return found
    where = f"{override} (from {ENV_VAR})" if override else ", ".join(tried)
    raise CompileError(
        "compiling HIP kernels needs hiprtc, which was not found: install ROCm (or set HIP_PATH / ROCM_PATH "
        f"to it, or {ENV_VAR} to the library); on Debian or Ubuntu, libamdhip64-5 carries it. Tried {where}"
    )


def available() -> bool:
    return rtc.available(load)


def compile_hip(name: str, source: str, arch: str, cache: DiskCache | None = None) -> tuple[bytes, Path]:
    """The HSACO of `source` for `arch`, through the disk cache."""
    hiprtc = load()
    check_arch(arch)  # before the cache, so a bad arch leaves no failed build behind
    return hiprtc.compile_cached(name, source, arch, f"{arch.split(':')[0]}.hsaco", cache)
