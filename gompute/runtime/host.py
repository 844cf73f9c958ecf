"""The host backend: the CPU with the same shape as a GPU (buffers, modules, streams, launches)."""

import os
import re
import warnings

from ..backend import Backend
from ..compile.host import set_load_check
from ..errors import ModuleLoadFailed
from . import _compute

Compute = _compute.bound(Backend.host)

# The host pool's settings, as csrc/driver_host.cpp reads them: (least, most, the default).
_SETTINGS = {
    "GOMPUTE_HOST_THREADS": (1, 4096, "one thread per core"),
    "GOMPUTE_HOST_SPIN_US": (0, 10_000_000, "100"),
}


def _check_settings() -> None:
    """Says once, at import, which settings the C++ will ignore (it falls back to the default)."""
    for name, (least, most, default) in _SETTINGS.items():
        value = os.environ.get(name, "")
        if not value.strip():  # unset, as the C++ reads it
            continue
        if not re.fullmatch(r"\s*[+-]?\d+\s*", value) or not least <= int(value) <= most:
            warnings.warn(
                f"{name}={value!r} is not a whole number from {least} to {most}, so it is ignored "
                f"(the default: {default})",
                stacklevel=2,
            )


_check_settings()


def _load_problem(image: bytes) -> str | None:
    """Why the host cannot load a shared object found in the kernel cache (None where it loads),
    so that one that does not load is rebuilt. The runtime keeps what it loaded: the kernel's own
    load of these bytes finds the module loaded."""
    try:
        with Compute.init() as compute:
            compute.load_module(image)
    except ModuleLoadFailed as e:
        return str(e)
    return None


set_load_check(_load_problem)


def shutdown() -> None:
    """Unloads every host module; old host handles raise afterwards."""
    _compute.shutdown(Backend.host)
