"""Watching which calls reach g.map's general (Python) path rather than the C++ one."""

from __future__ import annotations

import gompute as g


def counting(kernel):
    """g.map(kernel), and the list of calls that reached its general path (the type name of
    each one's first array)."""
    k = g.map(kernel)
    calls = []
    general = k._general

    def counted(*arrays, **kwargs):
        calls.append(type(arrays[0]).__name__)
        return general(*arrays, **kwargs)

    k._general = counted
    return k, calls
