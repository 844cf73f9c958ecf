"""What NVRTC and hiprtc share: a runtime C++ compiler loaded with ctypes.

Both libraries have one API shape under their own prefix (create a program, compile it with
options, fetch the log and the code, destroy it) and report failure as a nonzero status with
a GetErrorString. `RuntimeCompiler` drives that shape; nvrtc.py and hiprtc.py hold each
vendor's differences: how the library is found, which arches it takes and what it outputs.
"""

from __future__ import annotations

import abc
import ctypes
import functools
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from ..errors import CompileError, SourceRejected
from .cache import DiskCache, default_cache, gompute_version

Compiler = TypeVar("Compiler", bound="RuntimeCompiler")


class RuntimeCompiler(abc.ABC):
    """A loaded runtime compiler library; subclasses name its vendor and its options."""

    prefix: str  # the API's symbol prefix, "nvrtc"; also the compiler's name in cache keys
    title: str  # its name in messages, "NVRTC"
    backend: str  # the gompute backend it compiles for, "cuda"
    source_suffix: str  # the file name a cached source is written to: ".cu"
    options: tuple[str, ...]  # every compile's options, before the arch flag
    arch_flag: str  # the option that takes the target arch: "--gpu-architecture"

    def __init__(self, lib: ctypes.CDLL, path: str):
        self.lib, self.path = lib, path
        self._fn("GetErrorString").restype = ctypes.c_char_p

    def _fn(self, name: str):
        return getattr(self.lib, self.prefix + name)

    @functools.cached_property
    def version(self) -> tuple[int, int]:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._call("Version", ctypes.byref(major), ctypes.byref(minor))
        return major.value, minor.value

    @property
    def identity(self) -> str:
        """What tells this compiler from another in cache keys: its name, version and library."""
        return f"{self.prefix} {self.version[0]}.{self.version[1]} {Path(self.path).name}"

    def _error(self, status: int) -> str:
        return self._fn("GetErrorString")(status).decode()

    def _call(self, name: str, *args) -> None:
        """Calls prefix+name; a nonzero status is a CompileError naming the call."""
        status = self._fn(name)(*args)
        if status != 0:
            raise CompileError(f"{self.prefix}{name} failed: {self._error(status)}")

    @abc.abstractmethod
    def output_kind(self, arch: str) -> str:
        """What compiling for `arch` fetches, as the API spells it ("PTX", "Code"); raises a
        CompileError for an arch this compiler does not take."""

    def compile(self, source: str, arch: str, filename: str | None = None) -> tuple[bytes, str]:
        """(the compiled code of `source` for `arch`, the compile log). `filename` names the
        source in the log and in errors."""
        output = self.output_kind(arch)
        filename = filename or f"source{self.source_suffix}"
        prog = ctypes.c_void_p()
        self._call("CreateProgram", ctypes.byref(prog), source.encode(), filename.encode(), 0, None, None)
        try:
            argv = [*self.options, f"{self.arch_flag}={arch}"]
            c_argv = (ctypes.c_char_p * len(argv))(*(o.encode() for o in argv))
            status = self._fn("CompileProgram")(prog, len(argv), c_argv)
            log = self._log(prog)
            if status != 0:
                reason = self._error(status)
                raise SourceRejected(f"{self.title} failed for {arch} ({reason}).\nsource: {filename}\n{log}")
            size = ctypes.c_size_t()
            self._call(f"Get{output}Size", prog, ctypes.byref(size))
            data = ctypes.create_string_buffer(size.value)
            self._call(f"Get{output}", prog, data)
            return data.raw, log
        finally:
            self._fn("DestroyProgram")(ctypes.byref(prog))

    def _log(self, prog) -> str:
        size = ctypes.c_size_t()
        self._fn("GetProgramLogSize")(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(max(size.value, 1))
        self._fn("GetProgramLog")(prog, buf)
        return buf.value.decode(errors="replace")

    def compile_cached(
        self, name: str, source: str, arch: str, binary: str, cache: DiskCache | None
    ) -> tuple[bytes, Path]:
        """The compiled code of `source` for `arch` as the file `binary`, through the disk cache.
        The key holds everything that changes the output: gompute's version, the source, this
        compiler's identity and version, the options and the arch."""
        key = {
            "gompute": gompute_version(),
            "backend": self.backend,
            "source": source,
            "compiler": self.identity,
            "options": list(self.options),
            "target": arch,
        }

        def build(folder: Path) -> None:
            src = folder / f"source{self.source_suffix}"
            src.write_text(source)
            data, _ = self.compile(source, arch, filename=str(src))
            (folder / binary).write_bytes(data)

        return (cache or default_cache()).get(name, key, binary, build)


def available(load: Callable[[], RuntimeCompiler]) -> bool:
    """Whether `load` finds its library (it raises a CompileError saying why not)."""
    try:
        load()
        return True
    except CompileError:
        return False


def loadable(kind: type[Compiler], paths: Iterable[str], tried: list[str]) -> Iterator[Compiler]:
    """`kind` over each of `paths` that loads and has the API, in order; those that do not are added
    to `tried`. A library without the API's symbols (a HIP runtime that does not carry hiprtc) is
    not the compiler."""
    for path in paths:
        try:
            yield kind(ctypes.CDLL(path), path)
        except (OSError, AttributeError):
            tried.append(path)
