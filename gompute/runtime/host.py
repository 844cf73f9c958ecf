"""The host backend: the CPU with the same shape as a GPU (buffers, modules, streams, launches)."""

from ..backend import Backend
from . import _compute

Compute = _compute.bound(Backend.host)


def shutdown() -> None:
    """Unloads every host module; old host handles raise afterwards."""
    _compute.shutdown(Backend.host)
