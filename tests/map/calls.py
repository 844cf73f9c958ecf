"""Watching which calls reach g.map's general (Python) path rather than the C++ one."""

from __future__ import annotations

from gompute.kernel import AutoKernel


def counting(kernel):
    """A fresh g.map of `kernel` (not the one g.map(kernel) shares), and the list of calls
    that reached its general path (the type name of each one's first array)."""
    k = AutoKernel(kernel)
    calls = []
    general = k._general

    def counted(*arrays, **kwargs):
        calls.append(type(arrays[0]).__name__)
        return general(*arrays, **kwargs)

    k._general = counted
    return k, calls
