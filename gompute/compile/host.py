"""The host backend's compiler: generated C++ → a shared object, through the disk cache.

The compiler is `$CXX` if set, else the first of `c++`, `g++`, `clang++` on PATH, else the
`ziglang` wheel's `zig c++`. Code is built for this machine's CPU (`-march=native`), and the CPU
the compiler resolves that to, with every target option it implies, is part of the cache key.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import CompileError, SourceRejected
from .cache import DiskCache, default_cache, gompute_version

INCLUDE_DIR = Path(__file__).resolve().parent.parent / "include"
FLAGS = (
    "-std=c++17",
    "-O3",
    "-march=native",
    "-shared",
    "-fPIC",
    "-fvisibility=hidden",
    # No errno and no FP-exception side effects let loops vectorize; no contraction keeps
    # each operation rounded as NumPy rounds it.
    "-fno-math-errno",
    "-fno-trapping-math",
    "-ffp-contract=off",
    "-w",
)
# GCC only (Clang refuses it): a loop with a run-time trip count is emitted guarded (lang/codegen.py),
# and splitting it in two at the guard would stop GCC vectorizing across it.
GCC_FLAGS = ("-fno-split-loops",)
# GCC only, for a module of many large functions (a reduction's, whose loops take seconds to
# optimize): each function a partition of link-time optimization, the partitions compiled on every
# core at once. The code runs as fast; a first g.reduce call on two cores takes 0.6x the time.
PARTITIONED_GCC_FLAGS = ("-flto=auto", "-flto-partition=max")


@dataclass(frozen=True)
class HostCompiler:
    command: tuple[str, ...]
    version: str  # first line of --version
    target_cpu: str

    @property
    def identity(self) -> str:
        return f"{' '.join(self.command)}: {self.version}"

    @property
    def flags(self) -> tuple[str, ...]:
        """The options every generated module is compiled with, by this compiler: a `-march` of
        $CXX's own in place of `-march=native`."""
        flags = FLAGS if "clang" in self.version.lower() else FLAGS + GCC_FLAGS
        return tuple(f for f in flags if f != "-march=native") if _has_march(self.command) else flags

    def partitioned_flags(self) -> tuple[str, ...]:
        """The options that compile a module's functions apart, on every core; () where this
        compiler cannot (Clang and zig c++, or a GCC built without link-time optimization)."""
        return PARTITIONED_GCC_FLAGS if _links_in_partitions(self) else ()

    def compile(self, source_path: Path, output: Path, extra: tuple[str, ...] = ()) -> None:
        # Run in the output's folder and name it there: GCC's link-time partitions write a makefile of
        # paths after it, which a folder named with both kinds of quote breaks (a cache dir may be).
        argv = [*self.command, *self.flags, *extra, f"-I{INCLUDE_DIR}", "-o", output.name, str(source_path.resolve())]
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=output.parent)
        if proc.returncode != 0:
            raise SourceRejected(
                f"the host C++ compiler failed.\n"
                f"source: {source_path}\ncommand (in {output.parent}): {shlex.join(argv)}\n{proc.stdout}{proc.stderr}"
            )


@functools.cache
def _links_in_partitions(compiler: HostCompiler) -> bool:
    if "clang" in compiler.version.lower():
        return False
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "probe.cpp"
        source.write_text('extern "C" int gompute_probe() { return 0; }\n')
        argv = [*compiler.command, *compiler.flags, *PARTITIONED_GCC_FLAGS, "-o", f"{folder}/probe.so", str(source)]
        try:
            return subprocess.run(argv, capture_output=True, timeout=60).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False


def _has_march(command: tuple[str, ...]) -> bool:
    return any(arg.startswith("-march=") for arg in command[1:])


def _cxx() -> tuple[str, ...]:
    """$CXX as a command (empty where it is unset or blank)."""
    return tuple(shlex.split(os.environ.get("CXX", "")))


def _candidates() -> list[tuple[str, ...]]:
    found = [_cxx()] if _cxx() else []
    found += [(name,) for name in ("c++", "g++", "clang++")]
    if importlib.util.find_spec("ziglang") is not None:
        found.append((sys.executable, "-m", "ziglang", "c++"))
    return found


def _version(command: tuple[str, ...]) -> str | None:
    if shutil.which(command[0]) is None:
        return None
    try:
        proc = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    return lines[0] if proc.returncode == 0 and lines else None


def _target_cpu(command: tuple[str, ...]) -> str:
    """The CPU `-march=native` means to this compiler: its name and a digest of every target option
    it turns on (GCC, then Clang's way of saying it). The name alone is not enough: a compiler can
    give one name to CPUs with different instruction sets (GCC 12 names a CPU with AVX-512 and one
    without it both znver3), and a cache shared between them would hand one code it cannot run."""
    native = [] if _has_march(command) else ["-march=native"]
    gcc = _probe([*command, *native, "-Q", "--help=target"])
    march = re.search(r"^\s*-march=\s*(\S+)", gcc, re.M)
    if march:
        options = [" ".join(line.split()) for line in gcc.splitlines() if line.lstrip().startswith("-m")]
        return f"{march.group(1)}-{_digest(options)}"
    clang = _probe([*command, *native, "-###", "-x", "c++", "-c", os.devnull])
    lines = [line for line in clang.splitlines() if '"-target-cpu"' in line]
    if lines:  # the last -target-cpu of the compiler's own command line is the one it uses (zig c++ gives two)
        cpu = re.findall(r'"-target-cpu" "([^"]+)"', lines[-1])[-1]
        features = re.findall(r'"-target-feature" "([^"]+)"', lines[-1])
        return f"{cpu}-{_digest(features)}"
    return f"{platform.machine()}-{platform.processor() or 'unknown'}"


def _probe(argv: list[str]) -> str:
    """What a compiler prints for `argv` ("" where it cannot be run)."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout + proc.stderr


def _digest(options: list[str]) -> str:
    return hashlib.sha256("\n".join(options).encode()).hexdigest()[:12]


@functools.cache
def _find(candidates: tuple[tuple[str, ...], ...], path: str) -> HostCompiler:
    for command in candidates:
        version = _version(command)
        if version is not None:
            if candidates[0] == _cxx() and command != _cxx():
                warnings.warn(
                    f"$CXX ({shlex.join(_cxx())}) cannot be run as a C++ compiler; gompute builds host "
                    f"kernels with {shlex.join(command)} instead. Fix or unset CXX.",
                    stacklevel=4,
                )
            return HostCompiler(command, version, _target_cpu(command))
    raise CompileError(
        "no C++ compiler found for the host backend (tried $CXX, c++, g++, clang++, python -m ziglang). "
        "Install one: `apt install g++` (or your system's equivalent), or `pip install ziglang`."
    )


def find_compiler() -> HostCompiler:
    """The host C++ compiler to use now (looked up once per $CXX and $PATH)."""
    return _find(tuple(_candidates()), os.environ.get("PATH", ""))


def _launch_header_hash() -> str:
    return hashlib.sha256((INCLUDE_DIR / "gompute" / "host_launch.h").read_bytes()).hexdigest()[:16]


def compile_shared_object(
    name: str, source: str, cache: DiskCache | None = None, partitioned: bool = False
) -> tuple[bytes, Path]:
    """The shared object built from `source` (a whole host module), and its cache folder.
    `partitioned`: the module's functions are compiled apart, on every core, where the compiler can."""
    compiler = find_compiler()
    extra = compiler.partitioned_flags() if partitioned else ()
    key = {
        "gompute": gompute_version(),
        "backend": "host",
        "source": source,
        "compiler": compiler.identity,
        "options": [*compiler.flags, *extra],
        "target": compiler.target_cpu,
        "launch": _launch_header_hash(),
    }

    def build(folder: Path) -> None:
        src = folder / "source.cpp"
        src.write_text(source)
        compiler.compile(src, folder / "host.so", extra)

    return (cache or default_cache()).get(name, key, "host.so", build, load_problem=_load_problem)


# `check(image) -> why the host cannot load it, or None`: registered by the runtime's host
# facade, which is above the compilers (gompute/runtime/host.py); without it nothing is checked.
_load_check: Callable[[bytes], str | None] | None = None


def set_load_check(check: Callable[[bytes], str | None] | None) -> None:
    """Make `check` the test a shared object found in the cache must pass, else it is rebuilt."""
    global _load_check
    _load_check = check


def _load_problem(image: bytes) -> str | None:
    return None if _load_check is None else _load_check(image)
