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

from ..errors import CompileError, SourceRejected
from .cache import DiskCache, default_cache, gompute_version

OPTIONS = ("-std=c++17", "-ffp-contract=off")
_SONAMES = ("libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so.5")


class Hiprtc:
    """The loaded hiprtc library."""

    def __init__(self, lib: ctypes.CDLL, path: str):
        self.lib, self.path = lib, path
        lib.hiprtcGetErrorString.restype = ctypes.c_char_p

    @functools.cached_property
    def version(self) -> tuple[int, int]:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(self.lib.hiprtcVersion(ctypes.byref(major), ctypes.byref(minor)), "hiprtcVersion")
        return major.value, minor.value

    def _check(self, status: int, what: str) -> None:
        if status != 0:
            raise CompileError(f"{what} failed: {self.lib.hiprtcGetErrorString(status).decode()}")

    def compile(self, source: str, arch: str, filename: str = "source.hip") -> bytes:
        """The HSACO code object of `source` for `arch` (e.g. "gfx90a")."""
        check_arch(arch)
        prog = ctypes.c_void_p()
        self._check(
            self.lib.hiprtcCreateProgram(ctypes.byref(prog), source.encode(), filename.encode(), 0, None, None),
            "hiprtcCreateProgram",
        )
        try:
            argv = [*OPTIONS, f"--offload-arch={arch}"]
            c_argv = (ctypes.c_char_p * len(argv))(*(o.encode() for o in argv))
            status = self.lib.hiprtcCompileProgram(prog, len(argv), c_argv)
            if status != 0:
                size = ctypes.c_size_t()
                self.lib.hiprtcGetProgramLogSize(prog, ctypes.byref(size))
                log = ctypes.create_string_buffer(max(size.value, 1))
                self.lib.hiprtcGetProgramLog(prog, log)
                raise SourceRejected(
                    f"hiprtc failed for {arch} "
                    f"({self.lib.hiprtcGetErrorString(status).decode()}).\nsource: {filename}\n"
                    f"{log.value.decode(errors='replace')}"
                )
            size = ctypes.c_size_t()
            self._check(self.lib.hiprtcGetCodeSize(prog, ctypes.byref(size)), "hiprtcGetCodeSize")
            code = ctypes.create_string_buffer(size.value)
            self._check(self.lib.hiprtcGetCode(prog, code), "hiprtcGetCode")
            return code.raw
        finally:
            self.lib.hiprtcDestroyProgram(ctypes.byref(prog))


def check_arch(arch: str) -> None:
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
    tried = []
    for path in _candidates():
        try:
            return Hiprtc(ctypes.CDLL(path), path)
        except OSError as e:
            tried.append(str(e))
    raise CompileError(
        "compiling HIP kernels needs hiprtc, which was not found: install ROCm (or set HIP_PATH / ROCM_PATH to it)"
    )


def available() -> bool:
    try:
        load()
        return True
    except CompileError:
        return False


def compile_hip(name: str, source: str, arch: str, cache: DiskCache | None = None) -> tuple[bytes, Path]:
    """The HSACO of `source` for `arch`, through the disk cache."""
    hiprtc = load()
    check_arch(arch)
    binary = f"{arch.split(':')[0]}.hsaco"
    key = {
        "gompute": gompute_version(),
        "backend": "hip",
        "source": source,
        "compiler": f"hiprtc {hiprtc.version[0]}.{hiprtc.version[1]} {Path(hiprtc.path).name}",
        "options": list(OPTIONS),
        "target": arch,
    }

    def build(folder: Path) -> None:
        src = folder / "source.hip"
        src.write_text(source)
        (folder / binary).write_bytes(hiprtc.compile(source, arch, filename=str(src)))

    return (cache or default_cache()).get(name, key, binary, build)
