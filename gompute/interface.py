"""Kernel arguments: `g.interface.Arg` and `g.interface.arg(value)`.

Arguments are passed as both GPU drivers want them: each one is the bytes of its
storage. `buffer.arg_ptr()` gives a buffer's; `arg` gives a typed scalar's or a packed
params struct's.
"""

from __future__ import annotations

from . import _core
from .errors import ArgumentError
from .types import Scalar

Arg = _core.Arg


def arg(value) -> Arg:
    """A launch argument from a typed scalar (`g.u64(n)`), packed params (`g.abi.pack(...)`), or raw bytes."""
    if isinstance(value, Arg):
        return value
    if isinstance(value, Scalar):
        return Arg(bytes(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return Arg(bytes(value))
    if isinstance(value, bool):
        raise ArgumentError("a plain bool has no C type; pass g.bool_(value)")
    if isinstance(value, int):
        raise ArgumentError(
            f"a plain int ({value}) has no C type; pick one: g.u64({value}) for a length or size, "
            f"g.i32({value}) for an int, ..."
        )
    if isinstance(value, float):
        raise ArgumentError(f"a plain float ({value}) has no C type; pick one: g.f32({value}) or g.f64({value})")
    if hasattr(value, "arg_ptr"):
        return value.arg_ptr()
    raise ArgumentError(f"cannot pass a {type(value).__name__} as a kernel argument")
