"""The runtime: devices, buffers, streams, modules and raw launches.

`dynamic` probes for a GPU; `cuda`, `hip` and `host` are the backends unwrapped.
"""

from .. import _core
from . import cuda, dynamic, hip, host
from ._compute import DeviceInfo, device_info, shutdown

__all__ = ["cuda", "device_info", "DeviceInfo", "dynamic", "hip", "host", "shutdown", "stats"]


def stats() -> dict[str, int]:
    """Process-wide counters: contexts retained, modules loaded and cache hits, buffers, launches."""
    return _core.stats()
