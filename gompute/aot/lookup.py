"""Run time: a kernel's image from an emitted `gompute_kernels` package, when that package holds
this very kernel; `g.raw_kernel_by_name`'s search by name."""

from __future__ import annotations

import difflib
import functools
import hashlib
import importlib
import importlib.util
import warnings
from pathlib import Path

from ..errors import CompileError, KernelNotFound
from ..lang.kernel import Image
from ..lang.module import BACKENDS, Specialization, module_body, prelude

PACKAGE = "gompute_kernels"


def source_hash(spec: Specialization) -> str:
    """What the compiled code means, independent of where its Python file lives: the kernel's
    generated CUDA and host code (its `#line`s aside), the preludes and the host ABI they are
    compiled with, and gompute's version. An emitted copy made by another gompute, whose
    preludes differ, is not the kernel's own."""
    parts = [_toolchain_digest()]
    for backend in ("cuda", "host"):
        body = module_body([spec], backend)
        parts.append("\n".join(line for line in body.splitlines() if not line.startswith("#line")))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


@functools.cache
def _toolchain_digest() -> str:
    from ..compile.cache import gompute_version
    from ..compile.host import INCLUDE_DIR

    texts = [gompute_version(), *(prelude(backend) for backend in BACKENDS)]
    texts.append((INCLUDE_DIR / "gompute" / "host_launch.h").read_text())
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()


_broken: dict[str, str] = {}  # the __init__.py of each gompute_kernels that failed to import -> why


def emitted_module():
    """The importable `gompute_kernels`, or None.

    One that fails to import (a blob deleted, say) is None too, with one warning: it is a cache,
    and a broken one must not stop kernels it may not even hold from compiling.
    """
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin in _broken:
        return None
    try:
        module = importlib.import_module(PACKAGE)
    except Exception as e:
        folder = Path(spec.origin).parent
        _broken[spec.origin] = (
            f"{PACKAGE} at {folder} cannot be imported ({type(e).__name__}: {e}); re-emit it "
            f"(`python -m gompute emit ROOT --out {folder.parent}`) or take it off sys.path"
        )
        warnings.warn(f"{_broken[spec.origin]}; compiling kernels instead", stacklevel=2)
        return None
    return module if getattr(module, "emitted", False) else None


def emitted_image(spec: Specialization, backend: str, arch: str | None) -> Image | None:
    """The kernel's image from `gompute_kernels`, when that holds this very kernel; else None.

    A kernel that changed since it was emitted falls back to compiling, with a warning.
    """
    module = emitted_module()
    if module is None or spec.name not in module.kernel_hashes:
        return None
    if module.kernel_hashes[spec.name] != source_hash(spec):
        warnings.warn(
            f"{PACKAGE} holds an older {spec.name}; compiling the current one "
            "(re-run `python -m gompute emit` to refresh it)",
            stacklevel=3,
        )
        return None
    found = _image_for(module, backend, arch, spec.name)
    if found is None:
        return None
    data, fmt, _ = found
    return Image(data, fmt, backend, arch, tuple(spec.entry_points()), None)


def _image_for(module, backend: str, arch: str | None, name: str):
    """(bytes, format, symbol) of `name` in the emitted images for backend/arch, or None."""
    index = {"cuda": module.cuda_index, "hip": module.hip_index, "host": getattr(module, "host_index", {})}[backend]
    entry = index.get(name)
    if entry is None:
        return None
    if backend == "cuda":
        if arch in module.cuda_cubins:
            return module.cuda_cubins[arch][entry.blob], "cubin", entry.symbol
        return (module.cuda_images[entry.blob], "ptx", entry.symbol) if module.has_cuda else None
    if backend == "hip":
        images = module.hip_images_by_arch.get(arch) if arch else module.hip_images
        return (images[entry.blob], "hsaco", entry.symbol) if images else None
    if not _same_host_target(module.host_target):
        return None
    return module.host_images[entry.blob], "so", entry.symbol


def _same_host_target(target: str | None) -> bool:
    here = _host_target()
    return here is None or target == here  # no compiler to build another copy with: the emitted one is the only one


def _host_target() -> str | None:
    """The CPU target this machine's host compiler builds for, or None without one."""
    from ..compile.host import find_compiler

    try:
        return find_compiler().target_cpu
    except CompileError:
        return None


def known_names(backend: str) -> list[str]:
    module = emitted_module()
    if module is None:
        return []
    return list({"cuda": module.cuda_index, "hip": module.hip_index, "host": module.host_index}[backend])


def find_by_name(backend: str, name: str, arch: str | None):
    """(bytes, format, symbol) of the emitted kernel `name`; else KernelNotFound, listing near matches
    for an unknown name, or saying which targets the package holds images for."""
    module = emitted_module()
    if module is None:
        why = "; ".join(_broken.values()) or (
            f"{PACKAGE} is not importable; run `python -m gompute emit ROOT --out DIR` and put DIR on sys.path"
        )
        raise KernelNotFound(f"no emitted kernels: {why}")
    found = _image_for(module, backend, arch, name)
    if found is not None:
        return found
    if any(name in module_index for module_index in (module.cuda_index, module.hip_index, module.host_index)):
        raise KernelNotFound(_no_image(module, backend, arch, name))
    names = known_names(backend)
    near = difflib.get_close_matches(name, names, n=3)
    hint = f"; did you mean {', '.join(near)}?" if near else f"; known: {', '.join(sorted(names)) or 'none'}"
    raise KernelNotFound(f"no emitted {backend} kernel named {name!r}{hint}")


def _no_image(module, backend: str, arch: str | None, name: str) -> str:
    """Why the package, which has `name`, has no image of it for this machine's `backend`/`arch`."""
    if backend == "host":
        held = f"host images for {module.host_target}" if module.host_images else "no host images"
        here, fix = f"this machine builds for {_host_target()}", "on this machine"
    elif backend == "hip":
        held = f"HSACO for {', '.join(module.hip_images_by_arch)}" if module.hip_images_by_arch else "no HIP images"
        here, fix = f"this device is {arch}", f"with --hip-arch {arch}"
    else:
        ptx = [f"PTX for {module.cuda_ptx_arch}"] if module.has_cuda else []
        held = ", ".join(ptx + [f"a CUBIN for {a}" for a in module.cuda_cubins]) or "no CUDA images"
        here, fix = f"this device is {arch}", f"with --cuda-arch {arch}"
    return (
        f"{PACKAGE} has {name!r} but no {backend} image for this target: it holds {held}, and {here}; re-emit it "
        f"{fix} (`python -m gompute emit ROOT --out DIR`)"
    )
