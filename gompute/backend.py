"""The backends gompute can run on."""

from __future__ import annotations

import enum


class Backend(enum.Enum):
    """Where work runs: `cuda`, `hip`, `host` (the CPU, gompute's own), or `cpu`.

    `cpu` is the seed's polite arm, the arm with no device: what `g.runtime.dynamic.Compute.init()`
    falls back to when no GPU backend is usable. It runs nothing; every call that needs a device
    raises, saying why each GPU backend was unusable. `host` is the backend that runs on the CPU.
    """

    cuda = "cuda"
    hip = "hip"
    host = "host"
    cpu = "cpu"

    def __str__(self) -> str:
        return self.value

    @property
    def has_device(self) -> bool:
        """False for `cpu` only: the C++ core has devices of every other backend."""
        return self is not Backend.cpu

    @property
    def kind(self) -> int | None:
        """The C++ core's number for this backend; None for `cpu`, which the core does not know."""
        return _KINDS.get(self)


_KINDS = {Backend.cuda: 0, Backend.hip: 1, Backend.host: 2}


def cuda_version(encoded: int) -> tuple[int, int]:
    """(major, minor) of a CUDA driver version as cuDriverGetVersion gives it: 12080 is 12.8."""
    return encoded // 1000, encoded % 1000 // 10
