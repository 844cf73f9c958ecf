"""The dynamic facade: probe CUDA, then HIP, and fall back to the polite `cpu` arm.

`GOMPUTE_BACKEND=cuda|hip|host|cpu` overrides the probe. `Backend.host` is never
picked by probing (it is not a GPU); ask for it by name.
"""

from __future__ import annotations

import os

from ..backend import Backend
from ..errors import ArgumentError, GomputeError
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
            return cls(Backend.cpu, None, _reasons(ordinal))
        return cls._open(preferred, ordinal)

    @classmethod
    def _probe(cls, ordinal: int) -> Compute:
        reasons = {}
        for backend in _PROBE_ORDER:
            try:
                return cls._open(backend, ordinal)
            except GomputeError as e:
                reasons[backend.value] = str(e)
        return cls(Backend.cpu, None, reasons)


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
