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
import contextlib
import functools
import hashlib
import importlib
import importlib.util
import os
import sys
import traceback
import warnings
from collections.abc import Iterable
from pathlib import Path

from .errors import ArgumentError, CompileError, GomputeError, KernelNotFound
from .lang.kernel import Image, MapKernel, compile_module
from .lang.module import BACKENDS, Specialization, module_body, prelude

PACKAGE = "gompute_kernels"
_PATH_ROOT = "_gompute_root_"  # prefix of the private module names path roots are imported under


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
    """A root module: an importable module name, or a path to a .py file.

    A path is imported under a private module name, so a kernel file named like another module
    (random.py) does not replace that module in `sys.modules`.
    """
    path = Path(root)
    if root.endswith(".py") or path.is_file():
        return _load_file(root, path)
    if path.is_dir() and not (path / "__init__.py").is_file():
        raise ArgumentError(f"{root} is a folder, not a Python module; give the .py files in it as roots")
    with _importing(root):
        try:
            return importlib.import_module(root)
        except ModuleNotFoundError as e:
            if e.name is None or not f"{root}.".startswith(f"{e.name}."):
                raise  # the root imports a module that is missing: its own error
    raise ArgumentError(
        f"no module named {root!r}; give a path to a .py file, or put the folder that holds the module on "
        "sys.path (PYTHONPATH)"
    )


def _load_file(root: str, path: Path):
    if not path.is_file():
        raise ArgumentError(f"{root}: no such file; give a path to a .py file or an importable module name")
    path = path.resolve()
    name = f"{_PATH_ROOT}{hashlib.sha256(str(path).encode()).hexdigest()[:12]}_{path.stem.replace('.', '_')}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise ArgumentError(f"{root} is not a .py file; give a .py file or an importable module name")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # where inspect and Params annotations look the module up
    try:
        with _importing(root):
            spec.loader.exec_module(module)
    except GomputeError:
        del sys.modules[name]
        raise
    return module


@contextlib.contextmanager
def _importing(root: str):
    """A root that fails to import, as a CompileError naming the file and line."""
    try:
        yield
    except GomputeError:
        raise
    except SyntaxError as e:
        raise CompileError(f"{root} is not valid Python: {e.msg} ({e.filename}:{e.lineno})") from e
    except Exception as e:
        where = traceback.extract_tb(e.__traceback__)[-1]
        raise CompileError(f"importing {root} raised {type(e).__name__}: {e} ({where.filename}:{where.lineno})") from e


def root_name(module) -> str:
    """The name a root goes by: its module name, or its file's stem for a path."""
    return Path(module.__file__).stem if module.__name__.startswith(_PATH_ROOT) else module.__name__


def kernels_of(module) -> list[MapKernel]:
    """The map kernels a module defines (not those it imports), in definition order."""
    found = []
    for value in vars(module).values():
        if isinstance(value, MapKernel) and value.fn.__module__ == module.__name__ and value not in found:
            if value.generic:
                warnings.warn(
                    f"{value.name} in {root_name(module)} is generic (unannotated parameters) and is not "
                    "emitted; annotate its parameters to emit it",
                    stacklevel=4,  # emit_kernels' caller
                )
                continue
            found.append(value)
    return found


def _no_kernels(root: str, module) -> ArgumentError:
    imported = [
        f"{v.name} (from {v.fn.__module__})"
        for v in vars(module).values()
        if isinstance(v, MapKernel) and v.fn.__module__ != module.__name__
    ]
    why = (
        f"; the kernels it imports, {', '.join(imported)}, are emitted from the module that defines them: give "
        "that module as a root"
        if imported
        else ""
    )
    return ArgumentError(f"{root} defines no annotated map kernels to emit{why}")


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
    from .compile import hiprtc, nvrtc

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
            raise _no_kernels(root, module)
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
    from .compile.host import find_compiler

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
    import difflib

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
    """Emit as `args` say; an error is one message on stderr and exit status 2 (bad arguments) or 1."""
    sys.path.insert(0, ".")
    try:
        package = emit_kernels(
            args.roots,
            out=args.out,
            cuda_archs=args.cuda_arch,
            hip_archs=args.hip_arch,
            cuda=False if args.no_cuda else None,
            host=not args.no_host,
            progress=not args.quiet,
        )
    except GomputeError as e:
        print(f"gompute emit: error: {e}", file=sys.stderr)
        return 2 if isinstance(e, ArgumentError) else 1
    print(f"wrote {package}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
