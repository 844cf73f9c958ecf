"""Compilers for generated and user C++: the host compiler, NVRTC, hiprtc; one disk cache."""

from __future__ import annotations

from pathlib import Path

from .cache import CacheWarning, DiskCache, default_cache


def build_image(
    backend: str, source: str, arch: str | None, name: str, cache: DiskCache | None = None, partitioned: bool = False
) -> tuple[bytes, str, Path]:
    """(image bytes, format, cache folder) of a whole module's `source` for `backend`/`arch`.

    host: a shared object ("so"); cuda: "sm_XX" → "cubin", "compute_XX" (or None, the most
    portable PTX) → "ptx"; hip: "gfx..." → "hsaco". `partitioned` (host): a module of many large
    functions, compiled a function apart on every core where the compiler can.
    """
    if backend == "host":
        from .host import compile_shared_object

        data, folder = compile_shared_object(name, source, cache, partitioned)
        return data, "so", folder
    if backend == "cuda":
        from . import nvrtc

        arch = arch or nvrtc.default_ptx_arch()
        data, folder = nvrtc.compile_cuda(name, source, arch, cache)
        return data, ("ptx" if arch.startswith("compute") else "cubin"), folder
    if backend == "hip":
        from . import hiprtc

        if arch is None:
            from ..errors import CompileError

            raise CompileError("compiling for HIP needs the device's gfx arch, e.g. gfx90a")
        data, folder = hiprtc.compile_hip(name, source, arch, cache)
        return data, "hsaco", folder
    raise ValueError(f"unknown backend {backend!r}")


__all__ = ["build_image", "CacheWarning", "DiskCache", "default_cache"]
