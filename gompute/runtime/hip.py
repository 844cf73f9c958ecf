"""HIP, unwrapped: the same shape as g.runtime.dynamic, no union tag."""

from ..backend import Backend
from . import _compute

Compute = _compute.bound(Backend.hip)


def shutdown() -> None:
    """Unloads every HIP module and releases every HIP context."""
    _compute.shutdown(Backend.hip)
