"""NVRTC, loaded at run time with ctypes: CUDA C++ → PTX or CUBIN, with no GPU needed.

The library is located with `cuda-pathfinder` (the `nvidia-cuda-nvrtc` wheel, a CUDA toolkit,
or the system's loader path), so `import gompute` works without it. A CUBIN is compiled for one
`sm_XX`; PTX for a `compute_XX` virtual arch. Prefer a CUBIN for a device you run on: a driver
older than NVRTC refuses NVRTC's PTX (CUDA_ERROR_UNSUPPORTED_PTX_VERSION).
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import site
import warnings
from collections.abc import Iterable
from pathlib import Path

from ..backend import Backend, cuda_version
from ..errors import CompileError, SourceRejected
from .cache import DiskCache, default_cache, gompute_version

# No --use_fast_math and no FMA contraction: each operation rounds as NumPy's does.
OPTIONS = ("--std=c++17", "--fmad=false")


class Nvrtc:
    """The loaded NVRTC library."""

    def __init__(self, lib: ctypes.CDLL, path: str):
        self.lib, self.path = lib, path
        for name in (
            "nvrtcCreateProgram",
            "nvrtcCompileProgram",
            "nvrtcDestroyProgram",
            "nvrtcGetProgramLogSize",
            "nvrtcGetProgramLog",
            "nvrtcGetPTXSize",
            "nvrtcGetPTX",
            "nvrtcGetCUBINSize",
            "nvrtcGetCUBIN",
            "nvrtcVersion",
            "nvrtcGetNumSupportedArchs",
            "nvrtcGetSupportedArchs",
        ):
            getattr(lib, name).restype = ctypes.c_int
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p

    @functools.cached_property
    def version(self) -> tuple[int, int]:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
        return major.value, minor.value

    @functools.cached_property
    def supported_archs(self) -> list[int]:
        """The compute capabilities this NVRTC compiles for, e.g. [75, 80, ..., 120]."""
        n = ctypes.c_int()
        self._check(self.lib.nvrtcGetNumSupportedArchs(ctypes.byref(n)), "nvrtcGetNumSupportedArchs")
        archs = (ctypes.c_int * n.value)()
        self._check(self.lib.nvrtcGetSupportedArchs(archs), "nvrtcGetSupportedArchs")
        return list(archs)

    def _check(self, status: int, what: str) -> None:
        if status != 0:
            raise CompileError(f"{what} failed: {self.lib.nvrtcGetErrorString(status).decode()}")

    def check_arch(self, arch: str) -> str:
        """ "sm" or "compute" for an arch this NVRTC compiles for; else a CompileError."""
        kind, cc = parse_arch(arch)
        if cc not in self.supported_archs:
            raise CompileError(
                f"NVRTC {self.version[0]}.{self.version[1]} cannot compile for {arch}; "
                f"it supports {', '.join(f'sm_{a}' for a in self.supported_archs)}"
            )
        return kind

    def compile(self, source: str, arch: str, filename: str = "source.cu", options=OPTIONS) -> tuple[bytes, str]:
        """(PTX for "compute_XX" or CUBIN for "sm_XX", the compile log)."""
        kind = self.check_arch(arch)
        prog = ctypes.c_void_p()
        self._check(
            self.lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), filename.encode(), 0, None, None),
            "nvrtcCreateProgram",
        )
        try:
            argv = [*options, f"--gpu-architecture={arch}"]
            c_argv = (ctypes.c_char_p * len(argv))(*(o.encode() for o in argv))
            status = self.lib.nvrtcCompileProgram(prog, len(argv), c_argv)
            log = self._log(prog)
            if status != 0:
                raise SourceRejected(
                    f"NVRTC failed for {arch} "
                    f"({self.lib.nvrtcGetErrorString(status).decode()}).\nsource: {filename}\n{log}"
                )
            get_size, get = (
                (self.lib.nvrtcGetPTXSize, self.lib.nvrtcGetPTX)
                if kind == "compute"
                else (self.lib.nvrtcGetCUBINSize, self.lib.nvrtcGetCUBIN)
            )
            size = ctypes.c_size_t()
            self._check(get_size(prog, ctypes.byref(size)), "getting the output size")
            out = ctypes.create_string_buffer(size.value)
            self._check(get(prog, out), "getting the output")
            data = out.raw
            return (data.rstrip(b"\0") if kind == "compute" else data), log
        finally:
            self.lib.nvrtcDestroyProgram(ctypes.byref(prog))

    def _log(self, prog) -> str:
        size = ctypes.c_size_t()
        self.lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(max(size.value, 1))
        self.lib.nvrtcGetProgramLog(prog, buf)
        return buf.value.decode(errors="replace")


def parse_arch(arch: str) -> tuple[str, int]:
    """("sm", 90) for "sm_90", ("compute", 90) for "compute_90" (a trailing letter, sm_90a, is kept off)."""
    match = re.fullmatch(r"(sm|compute)_(\d+)[a-z]?", arch or "")
    if not match:
        raise CompileError(f"{arch!r} is not a CUDA arch; use sm_XX for a CUBIN or compute_XX for PTX")
    return match.group(1), int(match.group(2))


@functools.lru_cache(maxsize=1)
def load() -> Nvrtc:
    """NVRTC, or a CompileError saying how to get it.

    `GOMPUTE_LIBNVRTC=/path/libnvrtc.so` wins; then cuda-pathfinder; without it, the
    libraries that NVIDIA's wheels (also PyTorch's and CuPy's dependencies), a CUDA
    toolkit or the system loader provide. Where a CUDA driver is installed, the first of
    these its CUDA major version can load the output of (see `choose`).
    """
    override = os.environ.get("GOMPUTE_LIBNVRTC")
    if override:
        return _open(override, "from GOMPUTE_LIBNVRTC")
    tried: list[str] = []
    driver = _cuda_driver_version()
    found = choose(_candidates(tried), driver)
    if found is None:
        raise CompileError(
            f"compiling CUDA kernels needs NVRTC, which was not found (tried {', '.join(tried)}); "
            "pip install 'gompute[cuda]' (nvidia-cuda-nvrtc and cuda-pathfinder), or install a CUDA toolkit"
        )
    if driver is not None and found.version[0] > cuda_version(driver)[0]:
        (major, minor), (nvrtc_major, nvrtc_minor) = cuda_version(driver), found.version
        warnings.warn(
            f"no NVRTC found fits this CUDA {major}.{minor} driver: NVRTC {nvrtc_major}.{nvrtc_minor} "
            f"({found.path}) makes code for CUDA {nvrtc_major} drivers, which this one may refuse; install "
            f"nvidia-cuda-nvrtc-cu{major}, or point GOMPUTE_LIBNVRTC at an NVRTC {major}.x",
            stacklevel=2,
        )
    return found


def choose(candidates: Iterable[Nvrtc], driver_version: int | None) -> Nvrtc | None:
    """The first of `candidates` whose CUDA major version is not above the driver's (12080 is
    12.8): a driver loads the CUBINs of an NVRTC of its own major version, a newer minor one
    too (CUDA's minor version compatibility), but not of a newer major one. With no driver, or
    none that fits, the first candidate. Candidates are looked at only until one fits."""
    first = None
    for candidate in candidates:
        if driver_version is None or candidate.version[0] <= cuda_version(driver_version)[0]:
            return candidate
        first = first or candidate
    return first


def _candidates(tried: list[str]):
    """Each NVRTC that loads, in order of preference; what did not is added to `tried`."""
    try:
        from cuda import pathfinder

        loaded = pathfinder.load_nvidia_dynamic_lib("nvrtc")
        yield Nvrtc(ctypes.CDLL(loaded.abs_path), loaded.abs_path)
    except ImportError:
        tried.append("cuda-pathfinder (not installed)")
    except Exception as e:  # noqa: BLE001 - pathfinder's several not-found errors
        tried.append(f"cuda-pathfinder ({e})")
    for path in _fallback_paths():
        try:
            yield Nvrtc(ctypes.CDLL(path), path)
        except OSError:
            tried.append(path)


def _cuda_driver_version() -> int | None:
    """The installed CUDA driver's version (12080 for 12.8), or None where there is none."""
    from .. import _core

    usable, _, version, _ = _core.probe(Backend.cuda.kind)
    return version if usable else None


def _open(path: str, how: str) -> Nvrtc:
    try:
        return Nvrtc(ctypes.CDLL(path), path)
    except OSError as e:
        raise CompileError(f"cannot load NVRTC at {path} ({how}): {e}") from None


def _fallback_paths() -> list[str]:
    """libnvrtc in NVIDIA's wheels and PyTorch's own lib folder, a conda environment, a CUDA
    toolkit, then the loader's own search."""
    folders = [
        (root, pattern)
        for root in site.getsitepackages() + [site.getusersitepackages()]
        for pattern in ("nvidia/*/lib/libnvrtc.so*", "torch/lib/libnvrtc*.so*")
    ]
    folders += [(os.environ["CONDA_PREFIX"], "lib/libnvrtc.so*")] if os.environ.get("CONDA_PREFIX") else []
    homes = (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda")
    folders += [(home, "lib64/libnvrtc.so*") for home in homes if home]
    found = [str(p) for root, pattern in folders for p in sorted(Path(root).glob(pattern)) if "builtins" not in p.name]
    return found + ["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"]


def available() -> bool:
    try:
        load()
        return True
    except CompileError:
        return False


def default_ptx_arch() -> str:
    """The oldest virtual arch this NVRTC supports: the most portable PTX."""
    return f"compute_{min(load().supported_archs)}"


def compile_cuda(name: str, source: str, arch: str, cache: DiskCache | None = None) -> tuple[bytes, Path]:
    """PTX (arch "compute_XX") or CUBIN ("sm_XX") of `source`, through the disk cache."""
    nvrtc = load()
    kind = nvrtc.check_arch(arch)  # before the cache, so a bad arch leaves no failed build behind
    binary = f"{arch}.ptx" if kind == "compute" else f"{arch}.cubin"
    key = {
        "gompute": gompute_version(),
        "backend": "cuda",
        "source": source,
        "compiler": f"nvrtc {nvrtc.version[0]}.{nvrtc.version[1]} {Path(nvrtc.path).name}",
        "options": list(OPTIONS),
        "target": arch,
    }

    def build(folder: Path) -> None:
        src = folder / "source.cu"
        src.write_text(source)
        data, _ = nvrtc.compile(source, arch, filename=str(src))
        (folder / binary).write_bytes(data)

    return (cache or default_cache()).get(name, key, binary, build)
