"""The dynamic facade: probe CUDA, then HIP, and fall back to the polite `cpu` arm.

`GOMPUTE_BACKEND=cuda|hip|host|cpu` overrides the probe. `Backend.host` is never
picked by probing (it is not a GPU); ask for it by name. The `cpu` arm is a `CpuArm`:
a Compute with no device, whose calls say why no GPU backend was usable.
"""

from __future__ import annotations

import os

from ..backend import Backend
from ..errors import AllocFailed, ArgumentError, BackendUnavailable, GomputeError
from . import _compute

_PROBE_ORDER = (Backend.cuda, Backend.hip)


class Compute(_compute.Compute):
    """A handle on a device of whichever backend is usable; `backend` says which."""

    @classmethod
    def init(cls, preferred: Backend | None = None) -> Compute:
        """Probe (None), or demand `preferred`; the probe falls back to the `cpu` arm."""
        return cls.init_device(preferred, 0)

    @classmethod
    def init_device(cls, preferred: Backend | None, ordinal: int) -> Compute:
        preferred = _check_backend(preferred) if preferred is not None else _from_environment()
        if preferred is None:
            return cls._probe(ordinal)
        if preferred is Backend.cpu:
            return CpuArm(_reasons(ordinal))
        return cls._open(preferred, ordinal)

    @classmethod
    def _probe(cls, ordinal: int) -> Compute:
        reasons = {}
        for backend in _PROBE_ORDER:
            try:
                return cls._open(backend, ordinal)
            except GomputeError as e:
                reasons[backend.value] = str(e)
        return CpuArm(reasons)


class CpuArm(Compute):
    """The seed's polite arm (`backend` is `Backend.cpu`): a Compute with no device.

    Holding one is harmless; every call that needs a device raises (`alloc` AllocFailed, the
    others BackendUnavailable), naming why each GPU backend was unusable and how to run on the
    CPU instead.
    """

    def __init__(self, unavailable: dict[str, str]):
        super().__init__(Backend.cpu, None)
        self._unavailable = unavailable  # GPU backend name -> why it was not usable

    def __repr__(self) -> str:
        return "<Compute cpu (no GPU backend)>"

    def alloc(self, nbytes: int):
        raise AllocFailed(self._refusal("alloc"))

    def _live(self, call: str = "this call"):
        raise BackendUnavailable(self._refusal(call))

    def _refusal(self, call: str) -> str:
        reasons = "; ".join(f"{name}: {why}" for name, why in self._unavailable.items()) or "none was probed"
        return (
            f"{call} needs a device, but this Compute is the cpu arm: no GPU backend was usable ({reasons}). "
            "To run on the CPU, use g.runtime.host.Compute.init() or Compute.init(g.Backend.host)."
        )


def shutdown() -> None:
    """Unloads every module and releases every context of every backend: the seed's `rt.shutdown()`
    on `rt = g.runtime.dynamic`. Old handles raise InvalidHandle afterwards; a new init works."""
    _compute.shutdown()


def _reasons(ordinal: int) -> dict[str, str]:
    """Why each GPU backend is or isn't usable, for the cpu arm's messages."""
    reasons = {}
    for backend in _PROBE_ORDER:
        try:
            _compute.Compute._open(backend, ordinal)
            reasons[backend.value] = "usable, but GOMPUTE_BACKEND or the caller asked for cpu"
        except GomputeError as e:
            reasons[backend.value] = str(e)
    return reasons


def _check_backend(value) -> Backend:
    if isinstance(value, Backend):
        return value
    return _parse(value, lambda names: f"unknown backend {value!r}; choose one of {names}")


def _from_environment() -> Backend | None:
    value = os.environ.get("GOMPUTE_BACKEND", "").strip().lower()
    if not value:
        return None
    return _parse(value, lambda names: f"GOMPUTE_BACKEND={value!r} is not a backend; set it to {names}, or unset it")


def _parse(value, message) -> Backend:
    try:
        return Backend(value)
    except ValueError:
        raise ArgumentError(message("|".join(b.value for b in Backend))) from None
