"""The CUDA driver API, unwrapped: the same shape as g.runtime.dynamic, no union tag."""

from ..backend import Backend
from . import _compute

Compute = _compute.bound(Backend.cuda)


def shutdown() -> None:
    """Unloads every CUDA module and releases every CUDA context."""
    _compute.shutdown(Backend.cuda)
