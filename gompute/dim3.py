"""Grid and block dimensions."""

from __future__ import annotations

import operator
from dataclasses import dataclass

from .errors import ArgumentError

_MAX = 2**31 - 1


@dataclass(frozen=True)
class Dim3:
    """A grid or block shape: `g.Dim3(256)`, `g.Dim3(16, 16)`, `g.Dim3.linear(n, 256)`."""

    x: int = 1
    y: int = 1
    z: int = 1

    def __post_init__(self):
        for axis in "xyz":
            value = getattr(self, axis)
            try:
                value = operator.index(value)
            except TypeError:
                raise ArgumentError(f"Dim3.{axis} must be an int, got {value!r}") from None
            if not 1 <= value <= _MAX:
                raise ArgumentError(f"Dim3.{axis} must be between 1 and {_MAX}, got {value}")
            object.__setattr__(self, axis, value)

    @classmethod
    def linear(cls, n: int, block: int) -> Dim3:
        """The 1-D grid of `block`-thread blocks that covers `n` threads (ceil(n / block))."""
        n, block = _positive(n, "n"), _positive(block, "block")
        return cls((n + block - 1) // block)

    @property
    def count(self) -> int:
        return self.x * self.y * self.z


def _positive(value, name: str) -> int:
    try:
        value = operator.index(value)
    except TypeError:
        raise ArgumentError(f"Dim3.linear: {name} must be an int, got {value!r}") from None
    if value <= 0:
        raise ArgumentError(f"Dim3.linear: {name} must be positive, got {value}")
    return value
