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
from ..errors import CompileError
from . import rtc
from .cache import DiskCache
from .rtc import RuntimeCompiler, loadable

# No --use_fast_math and no FMA contraction: each operation rounds as NumPy's does.
OPTIONS = ("--std=c++17", "--fmad=false")


class Nvrtc(RuntimeCompiler):
    """The loaded NVRTC library."""

    prefix, title, backend, source_suffix = "nvrtc", "NVRTC", "cuda", ".cu"
    options, arch_flag = OPTIONS, "--gpu-architecture"

    @functools.cached_property
    def supported_archs(self) -> list[int]:
        """The compute capabilities this NVRTC compiles for, e.g. [75, 80, ..., 120]."""
        n = ctypes.c_int()
        self._call("GetNumSupportedArchs", ctypes.byref(n))
        archs = (ctypes.c_int * n.value)()
        self._call("GetSupportedArchs", archs)
        return list(archs)

    def check_arch(self, arch: str) -> str:
        """ "sm" or "compute" for an arch this NVRTC compiles for; else a CompileError."""
        kind, cc = parse_arch(arch)
        if cc not in self.supported_archs:
            raise CompileError(
                f"NVRTC {self.version[0]}.{self.version[1]} cannot compile for {arch}; "
                f"it supports {', '.join(f'sm_{a}' for a in self.supported_archs)}"
            )
        return kind

    def output_kind(self, arch: str) -> str:
        return "PTX" if self.check_arch(arch) == "compute" else "CUBIN"

    def compile(self, source: str, arch: str, filename: str | None = None) -> tuple[bytes, str]:
        """(PTX for "compute_XX" or CUBIN for "sm_XX", the compile log); PTX without its NUL."""
        data, log = super().compile(source, arch, filename)
        return (data.rstrip(b"\0") if arch.startswith("compute") else data), log


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
            "pip install 'gompute[cuda12]' or 'gompute[cuda13]', your driver's CUDA major (`gompute info` says "
            "which), or install a CUDA toolkit"
        )
    if driver is not None and found.version[0] > cuda_version(driver)[0]:
        (major, minor), (nvrtc_major, nvrtc_minor) = cuda_version(driver), found.version
        warnings.warn(
            f"no NVRTC found fits this CUDA {major}.{minor} driver: NVRTC {nvrtc_major}.{nvrtc_minor} "
            f"({found.path}) makes code for CUDA {nvrtc_major} drivers, which this one may refuse; install "
            f"'gompute[cuda{major}]', or point GOMPUTE_LIBNVRTC at an NVRTC {major}.x",
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
    yield from loadable(Nvrtc, _fallback_paths(), tried)


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
    return rtc.available(load)


def default_ptx_arch() -> str:
    """The oldest virtual arch this NVRTC supports: the most portable PTX."""
    return f"compute_{min(load().supported_archs)}"


def compile_cuda(name: str, source: str, arch: str, cache: DiskCache | None = None) -> tuple[bytes, Path]:
    """PTX (arch "compute_XX") or CUBIN ("sm_XX") of `source`, through the disk cache."""
    nvrtc = load()
    kind = nvrtc.check_arch(arch)  # before the cache, so a bad arch leaves no failed build behind
    return nvrtc.compile_cached(name, source, arch, f"{arch}.ptx" if kind == "compute" else f"{arch}.cubin", cache)
