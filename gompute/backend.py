"""The backends gompute can run on."""

from __future__ import annotations

import enum


class Backend(enum.Enum):
    """Where work runs: `cuda`, `hip`, `host` (the CPU, gompute's own), or `cpu` (the seed's polite arm)."""

    cuda = "cuda"
    hip = "hip"
    host = "host"
    cpu = "cpu"

    def __str__(self) -> str:
        return self.value

    @property
    def kind(self) -> int:
        """The C++ core's number for this backend (cpu has none)."""
        return _KINDS[self]


_KINDS = {Backend.cuda: 0, Backend.hip: 1, Backend.host: 2}


def cuda_version(encoded: int) -> tuple[int, int]:
    """(major, minor) of a CUDA driver version as cuDriverGetVersion gives it: 12080 is 12.8."""
    return encoded // 1000, encoded % 1000 // 10
