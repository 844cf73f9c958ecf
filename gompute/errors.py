"""The one error hierarchy. Every failure gompute reports is a GomputeError.

The C++ core raises these classes by name (see csrc/bindings.cpp, the one translation
point); driver failures carry the vendor's symbolic code in `.code`.
"""

from __future__ import annotations

# Classes only Python raises. Every other class here is one of the C++ core's error kinds
# (csrc/errors.h, as _core.ERROR_KINDS); tests/test_facts.py checks the two agree both ways.
PYTHON_ONLY = ("GomputeError", "CompileError", "SourceRejected")


class GomputeError(Exception):
    """Root of every gompute error. `.code` holds the vendor's error name, if any."""

    def __init__(self, message: str = "", code: str | None = None):
        super().__init__(message)
        self.code = code


class BackendUnavailable(GomputeError):
    """The backend asked for cannot be used here; the message says why."""


class AllocFailed(GomputeError):
    """Device or pinned memory could not be allocated."""


class CopyFailed(GomputeError):
    """A transfer was refused (out of range, read-only destination) or failed in the driver."""


class SyncFailed(GomputeError):
    """Work on a stream or device failed; a kernel fault shows up here, at the next synchronize."""


class KernelNotFound(GomputeError, LookupError):
    """No kernel of that name in the module or in the emitted set."""


class ModuleLoadFailed(GomputeError):
    """A module image could not be loaded."""


class LaunchFailed(GomputeError):
    """A launch was refused before running (bad dimensions, wrong argument count, ...)."""


class BufferFreed(GomputeError):
    """A Buffer was used after free()."""


class InvalidHandle(GomputeError):
    """A handle (Compute, Stream, Module, ...) was used after deinit() or shutdown()."""


class DeviceError(GomputeError):
    """Any other driver failure; `.code` names it."""


class ArgumentError(GomputeError, TypeError, ValueError):
    """A value passed to gompute has the wrong type or is out of range."""


class CompileError(GomputeError):
    """A kernel is outside the language, or a compiler failed on generated code."""


class SourceRejected(CompileError):
    """A compiler (host C++, NVRTC, hiprtc) refused a module's source; its log is in the message."""
