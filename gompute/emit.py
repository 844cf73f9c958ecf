"""Ahead of time: `g.emit_kernels(roots, out=...)` and `python -m gompute emit ROOT... --out DIR`.

Every annotated map kernel defined in each root module is compiled, one image per root and
target, into an importable `gompute_kernels` package with the seed's attributes (`emitted`,
`has_cuda`, `has_hip`, `root_names`, `Entry(blob, symbol)`, `cuda_images`, `hip_images`,
`cuda_index`, `hip_index`) and gompute's additions: CUBINs per arch (`cuda_cubins`), HSACO per
arch (`hip_images_by_arch`), the host backend's shared objects (`host_images`, `host_index`), and
each kernel's `kernel_hashes`, which tell a kernel whether the emitted copy is still its own.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib
import importlib.util
import sys
import warnings
from pathlib import Path

from .errors import CompileError, KernelNotFound
from .lang.kernel import Image, MapKernel, compile_module
from .lang.module import BACKENDS, Specialization, module_body, prelude

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
    from .compile.cache import gompute_version
    from .compile.host import INCLUDE_DIR

    texts = [gompute_version(), *(prelude(backend) for backend in BACKENDS)]
    texts.append((INCLUDE_DIR / "gompute" / "host_abi.h").read_text())
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()


def load_root(root: str):
    """A root module: an importable module name, or a path to a .py file."""
    path = Path(root)
    if root.endswith(".py") or path.exists():
        name = path.stem
        spec = importlib.util.spec_from_file_location(name, path.resolve())
        if spec is None:
            raise CompileError(f"{root} is not a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(root)


def kernels_of(module) -> list[MapKernel]:
    """The map kernels a module defines (not those it imports), in definition order."""
    found = []
    for value in vars(module).values():
        if isinstance(value, MapKernel) and value.fn.__module__ == module.__name__:
            if value.generic:
                warnings.warn(
                    f"{value.name} in {module.__name__} is generic (unannotated parameters) and is not "
                    "emitted; annotate its parameters to emit it",
                    stacklevel=3,
                )
                continue
            found.append(value)
    return found


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

    CUDA images are PTX for the oldest arch NVRTC supports (portable), plus a CUBIN for each of
    `cuda_archs`; `cuda=None` emits CUDA when NVRTC is installed or archs are asked for. HIP
    images are HSACO for each of `hip_archs`. Returns the package's folder.
    """
    from .compile import nvrtc

    roots = [roots] if isinstance(roots, str) else list(roots)
    modules = [load_root(r) for r in roots]
    units = [[k.specialize() for k in kernels_of(m)] for m in modules]
    _check_unique(units, modules)
    cuda = (bool(cuda_archs) or nvrtc.available()) if cuda is None else cuda
    ptx_arch = nvrtc.default_ptx_arch() if cuda else None
    targets = ([("host", None)] if host else []) + ([("cuda", ptx_arch)] if cuda else [])
    targets += [("cuda", a) for a in cuda_archs] + [("hip", a) for a in hip_archs]
    bar = _Progress(len(targets) * len(modules), progress)
    images: dict[tuple[str, str | None], list[Image]] = {}
    try:
        for backend, arch in targets:
            for module, specs in zip(modules, units):
                images.setdefault((backend, arch), []).append(
                    compile_module(specs, backend, arch, f"emit-{module.__name__}")
                )
                bar.step(f"{module.__name__} {backend} {arch or ''}".strip())
    finally:
        bar.close()
    package = Path(out) / PACKAGE
    package.mkdir(parents=True, exist_ok=True)
    _write_package(package, [m.__name__ for m in modules], units, images, ptx_arch, cuda_archs, hip_archs)
    return package


def _check_unique(units: list[list[Specialization]], modules) -> None:
    seen: dict[str, str] = {}
    for module, specs in zip(modules, units):
        for spec in specs:
            if spec.name in seen:
                raise CompileError(
                    f"two kernels named {spec.name!r} (in {seen[spec.name]} and {module.__name__}); "
                    "the emitted index needs unique names"
                )
            seen[spec.name] = module.__name__


def _write_package(package: Path, root_names, units, images, ptx_arch, cuda_archs, hip_archs) -> None:
    from .compile.host import find_compiler

    blobs = _write_blobs(package, images)

    def blob_list(backend, arch):
        return "[" + ", ".join(f"_blob({blobs[(backend, arch, i)]!r})" for i in range(len(root_names))) + "]"

    index = {}
    for blob, specs in enumerate(units):
        for spec in specs:
            for entry in spec.entry_points():
                index[entry.symbol] = (blob, entry.symbol)
    hashes = {spec.name: source_hash(spec) for specs in units for spec in specs}
    has_cuda, has_hip, has_host = ("cuda", ptx_arch) in images, bool(hip_archs), ("host", None) in images
    lines = [
        f'"""Kernels emitted by gompute.emit_kernels from {", ".join(root_names)}; do not edit."""',
        "from collections import namedtuple",
        "from pathlib import Path",
        "",
        "_here = Path(__file__).parent",
        "",
        "",
        "def _blob(name):",
        "    return (_here / name).read_bytes()",
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


def _write_blobs(package: Path, images: dict) -> dict[tuple, str]:
    """Each image as a file in the package: (backend, arch, root index) -> file name."""
    blobs = {}
    for (backend, arch), per_root in images.items():
        for i, image in enumerate(per_root):
            fname = f"{backend}_{i}.{arch}.{image.format}" if arch else f"{backend}_{i}.{image.format}"
            (package / fname).write_bytes(image.data)
            blobs[(backend, arch, i)] = fname
    return blobs


def _index_text(index: dict) -> str:
    return "{" + ", ".join(f"{name!r}: Entry({blob}, {symbol!r})" for name, (blob, symbol) in index.items()) + "}"


def emitted_module():
    """The importable `gompute_kernels`, or None."""
    try:
        module = importlib.import_module(PACKAGE)
    except ImportError:
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
    from .compile.host import find_compiler

    try:
        return target == find_compiler().target_cpu
    except CompileError:
        return True  # no compiler to build another copy with: the emitted one is the only one


def known_names(backend: str) -> list[str]:
    module = emitted_module()
    if module is None:
        return []
    return list({"cuda": module.cuda_index, "hip": module.hip_index, "host": module.host_index}[backend])


def find_by_name(backend: str, name: str, arch: str | None):
    """(bytes, format, symbol) of the emitted kernel `name`, or KernelNotFound listing near matches."""
    import difflib

    module = emitted_module()
    if module is None:
        raise KernelNotFound(
            f"no emitted kernels: {PACKAGE} is not importable; run "
            f"`python -m gompute emit ROOT --out DIR` and put DIR on sys.path"
        )
    found = _image_for(module, backend, arch, name)
    if found is None:
        names = known_names(backend)
        near = difflib.get_close_matches(name, names, n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else f"; known: {', '.join(sorted(names)) or 'none'}"
        raise KernelNotFound(f"no emitted {backend} kernel named {name!r}{hint}")
    return found


def main(argv: list[str] | None = None) -> int:
    """`python -m gompute emit ROOT... --out DIR [--cuda-arch sm_90 ...] [--hip-arch gfx90a ...]`."""
    parser = argparse.ArgumentParser(prog="python -m gompute emit", description=main.__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("roots", nargs="+", metavar="ROOT", help="a module name or a path to a .py file")
    parser.add_argument("--out", default=".", help="folder to write the gompute_kernels package into")
    parser.add_argument("--cuda-arch", action="append", default=[], help="also emit a CUBIN for this arch")
    parser.add_argument("--hip-arch", action="append", default=[], help="emit HSACO for this gfx arch")
    parser.add_argument("--no-cuda", action="store_true", help="skip CUDA even if NVRTC is installed")
    parser.add_argument("--no-host", action="store_true", help="skip the host backend's shared objects")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    sys.path.insert(0, ".")
    package = emit_kernels(
        args.roots,
        out=args.out,
        cuda_archs=args.cuda_arch,
        hip_archs=args.hip_arch,
        cuda=False if args.no_cuda else None,
        host=not args.no_host,
        progress=not args.quiet,
    )
    print(f"wrote {package}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
