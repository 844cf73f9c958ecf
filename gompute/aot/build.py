"""Compile the kernels of root modules and write them as an importable `gompute_kernels` package."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from ..errors import ArgumentError, CompileError
from ..lang.kernel import Image, compile_module
from ..lang.module import Specialization
from .lookup import PACKAGE, source_hash
from .roots import kernels_of, load_root, no_kernels, root_name


class _Progress:
    """tqdm's bar when it is installed, else one line per step on stderr."""

    def __init__(self, total: int, enabled: bool):
        self.bar = None
        self.total, self.done, self.enabled = total, 0, enabled
        if enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc="gompute emit", unit="image")
            except ImportError:
                pass

    def step(self, what: str) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.set_postfix_str(what)
            self.bar.update()
        elif self.enabled:
            print(f"gompute emit [{self.done}/{self.total}] {what}", file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def emit_kernels(
    roots,
    out=".",
    cuda_archs=(),
    hip_archs=(),
    cuda: bool | None = None,
    host: bool = True,
    progress: bool = True,
) -> Path:
    """Compile every kernel of `roots` and write the `gompute_kernels` package under `out`.

    `roots` is one module name or .py path (a str or Path), or a list of them; `cuda_archs` and
    `hip_archs` one arch or a list. CUDA images are PTX for the oldest arch NVRTC supports
    (portable), plus a CUBIN for each of `cuda_archs` (sm_XX); `cuda=None` emits CUDA when NVRTC is
    installed or archs are asked for. HIP images are HSACO for each of `hip_archs`. Returns the
    package's folder.
    """
    from ..compile import hiprtc, nvrtc

    roots = _names(roots, "roots", "a module name or a .py path", paths=True)
    cuda_archs = _names(cuda_archs, "cuda_archs", "an arch such as sm_90")
    hip_archs = _names(hip_archs, "hip_archs", "an arch such as gfx90a")
    if not roots:
        raise ArgumentError("emit_kernels needs a root: a module name or a path to a .py file")
    _check_cuda_archs(cuda_archs, cuda)
    names, units = _load_units(roots)
    cuda = (bool(cuda_archs) or nvrtc.available()) if cuda is None else cuda
    ptx_arch = nvrtc.default_ptx_arch() if cuda else None  # without NVRTC, says how to get it
    for arch in cuda_archs:
        nvrtc.load().check_arch(arch)
    if hip_archs:
        hiprtc.load()
    package = _package_folder(out)  # before compiling: an `out` that cannot hold it fails at once
    targets = ([("host", None)] if host else []) + ([("cuda", ptx_arch)] if cuda else [])
    targets += [("cuda", a) for a in cuda_archs] + [("hip", a) for a in hip_archs]
    bar = _Progress(len(targets) * len(units), progress)
    images: dict[tuple[str, str | None], list[Image]] = {}
    try:
        for backend, arch in targets:
            for name, specs in zip(names, units):
                images.setdefault((backend, arch), []).append(compile_module(specs, backend, arch, f"emit-{name}"))
                bar.step(f"{name} {backend} {arch or ''}".strip())
    finally:
        bar.close()
    _write_package(package, names, units, images, ptx_arch, cuda_archs, hip_archs)
    return package


def _load_units(roots: list[str]) -> tuple[list[str], list[list[Specialization]]]:
    """Each root's name and its kernels' specializations, every entry symbol one kernel's."""
    names, units = [], []
    for root in roots:
        module = load_root(root)
        kernels = kernels_of(module)
        if not kernels:
            raise no_kernels(root, module)
        names.append(root_name(module))
        units.append([k.specialize() for k in kernels])
    _check_unique(units, names)
    return names, units


def _names(value, what: str, one: str, paths: bool = False) -> list[str]:
    """`value`, one name or an iterable of them (str, or also Path where `paths`), as a list without repeats."""
    kinds = (str, os.PathLike) if paths else (str,)
    items = [value] if isinstance(value, kinds) else list(value) if isinstance(value, Iterable) else [value]
    if not all(isinstance(v, kinds) for v in items):
        raise ArgumentError(f"{what} takes {one}, or a list of them; got {value!r}")
    return list(dict.fromkeys(os.fspath(v) for v in items))


def _check_cuda_archs(cuda_archs: list[str], cuda: bool | None) -> None:
    if cuda_archs and cuda is False:
        raise ArgumentError(
            f"cuda=False (--no-cuda) skips CUDA, but cuda_archs (--cuda-arch) asks for {', '.join(cuda_archs)}; "
            "drop one of the two"
        )
    ptx = [a for a in cuda_archs if a.startswith("compute_")]
    if ptx:
        raise ArgumentError(
            f"cuda_archs (--cuda-arch) takes sm_XX archs, one CUBIN each, not {', '.join(ptx)}: the package "
            "always holds PTX for the oldest arch NVRTC supports, which newer devices compile when they load it"
        )


def _package_folder(out) -> Path:
    """`out`/gompute_kernels, created."""
    if not isinstance(out, (str, os.PathLike)):
        raise ArgumentError(f"out takes a folder (a str or Path), got {out!r}")
    package = Path(out) / PACKAGE
    try:
        package.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        problem = f"{e.strerror} ({e.filename})"
    else:
        if os.access(package, os.W_OK):
            return package
        problem = f"{package} is read-only"
    raise ArgumentError(
        f"cannot write {PACKAGE} into {os.fspath(out)!r}: {problem}; give out= (--out) a folder you can write"
    )


def _check_unique(units: list[list[Specialization]], names: list[str]) -> None:
    seen: dict[str, tuple[Specialization, str]] = {}
    for name, specs in zip(names, units):
        for spec in specs:
            for entry in spec.entry_points():
                other, where = seen.setdefault(entry.symbol, (spec, name))
                if other is not spec:
                    raise CompileError(_clash(entry.symbol, (other, where), (spec, name)))


def _clash(symbol: str, first: tuple[Specialization, str], second: tuple[Specialization, str]) -> str:
    """Why two kernels share the entry symbol `symbol`: the index and the compiled modules key on it."""
    if first[0].name == second[0].name:
        return (
            f"two kernels named {symbol!r} (in {first[1]} and {second[1]}); the emitted index needs unique names: "
            "rename one"
        )
    (kernel, at), (owner, owner_at) = (first, second) if first[0].name == symbol else (second, first)
    return (
        f"kernel {kernel.name!r} (in {at}) is named like an entry point of kernel {owner.name!r} (in {owner_at}); "
        f"rename {kernel.name}: a kernel's entry points are its name and its name plus __out or __strided"
    )


def _write_package(package: Path, root_names, units, images, ptx_arch, cuda_archs, hip_archs) -> None:
    from ..compile.host import find_compiler

    blobs = _write_blobs(package, images)

    def blob_list(backend, arch):
        return "[" + ", ".join(f"_blob{blobs[(backend, arch, i)]!r}" for i in range(len(root_names))) + "]"

    index = {}
    for blob, specs in enumerate(units):
        for spec in specs:
            for entry in spec.entry_points():
                index[entry.symbol] = (blob, entry.symbol)
    hashes = {spec.name: source_hash(spec) for specs in units for spec in specs}
    has_cuda, has_hip, has_host = ("cuda", ptx_arch) in images, bool(hip_archs), ("host", None) in images
    lines = [
        f'"""Kernels emitted by gompute.emit_kernels from {", ".join(root_names)}; do not edit."""',
        "import hashlib",
        "from collections import namedtuple",
        "from pathlib import Path",
        "",
        "_here = Path(__file__).parent",
        "",
        "",
        "def _blob(name, digest):",
        "    data = (_here / name).read_bytes()",
        "    if hashlib.sha256(data).hexdigest() != digest:",
        '        raise ValueError(f"{name} is not the file emit wrote (changed or damaged since)")',
        "    return data",
        "",
        "",
        'Entry = namedtuple("Entry", "blob symbol")',
        "emitted = True",
        f"has_cuda = {has_cuda}",
        f"has_hip = {has_hip}",
        f"has_host = {has_host}",
        f"root_names = {list(root_names)!r}",
        f"cuda_ptx_arch = {ptx_arch!r}",
        f"cuda_images = {blob_list('cuda', ptx_arch) if has_cuda else '[]'}",
        "cuda_cubins = {" + ", ".join(f"{a!r}: {blob_list('cuda', a)}" for a in cuda_archs) + "}",
        "hip_images_by_arch = {" + ", ".join(f"{a!r}: {blob_list('hip', a)}" for a in hip_archs) + "}",
        f"hip_images = hip_images_by_arch[{hip_archs[0]!r}]" if hip_archs else "hip_images = []",
        f"host_images = {blob_list('host', None) if has_host else '[]'}",
        f"host_target = {find_compiler().target_cpu if has_host else None!r}",
        f"cuda_index = {_index_text(index) if has_cuda else '{}'}",
        f"hip_index = {_index_text(index) if has_hip else '{}'}",
        f"host_index = {_index_text(index) if has_host else '{}'}",
        f"kernel_hashes = {hashes!r}",
    ]
    (package / "__init__.py").write_text("\n".join(lines) + "\n")


def _write_blobs(package: Path, images: dict) -> dict[tuple, tuple[str, str]]:
    """Each image as a file in the package: (backend, arch, root index) -> (file name, its sha256),
    which the package checks when imported: a damaged blob makes it fail to import, and kernels
    compile instead (aot/lookup.py), as for a missing one."""
    blobs = {}
    for (backend, arch), per_root in images.items():
        for i, image in enumerate(per_root):
            fname = f"{backend}_{i}.{arch}.{image.format}" if arch else f"{backend}_{i}.{image.format}"
            (package / fname).write_bytes(image.data)
            blobs[(backend, arch, i)] = (fname, hashlib.sha256(image.data).hexdigest())
    return blobs


def _index_text(index: dict) -> str:
    return "{" + ", ".join(f"{name!r}: Entry({blob}, {symbol!r})" for name, (blob, symbol) in index.items()) + "}"
