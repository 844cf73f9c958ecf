"""Per-call overhead of a cached `g.map(k)(x, out=x)` on a 1-element array (NumPy, torch CPU and
a gompute Buffer), beside a NumPy ufunc on the same array and `numexpr.evaluate`; a torch call
that makes a new tensor, beside torch's own; and the cost of `torch.from_dlpack(buffer)` and
`np.from_dlpack(buffer)`. Not a test: it prints a table.

    python benchmarks/dispatch.py

Target (issue 4): within 2x of the NumPy ufunc call (ufunc/g.map >= 0.5).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import interleaved, median_ratio, summarize  # noqa: E402

import gompute as g  # noqa: E402


class _Params(g.Params):
    scale: g.f32


@g.map_kernel
def scale(x: g.f32, p: _Params) -> g.f32:
    return x * p.scale


def contestants() -> dict:
    import numexpr as ne

    kernel = g.map(scale)
    two = np.float32(1)  # x stays 1 however many calls run
    x = np.ones(1, np.float32)
    c = {
        "np.multiply(x, s, out=x)": lambda: np.multiply(x, two, out=x),
        "g.map on NumPy": lambda: kernel(x, out=x, scale=two),
        "numexpr.evaluate('x * s')": lambda: ne.evaluate(
            "x * two", local_dict={"x": x, "two": two}, out=x, casting="same_kind"
        ),
    }
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        t = torch.ones(1)
        c["torch.mul_ (torch CPU)"] = lambda: t.mul_(1.0)
        c["g.map on torch CPU"] = lambda: kernel(t, out=t, scale=two)
        # A new result each call (not a target row: no ufunc call allocates as little)
        c["new tensor: torch.mul(t, s)"] = lambda: torch.mul(t, 1.0)
        c["new tensor: g.map on torch CPU"] = lambda: kernel(t, scale=two)
    compute = g.runtime.host.Compute.init()
    buf = compute.empty(1, g.f32)
    np.asarray(buf)[:] = 1
    c["g.map on a gompute Buffer"] = lambda: kernel(buf, out=buf, scale=two)
    c["np.from_dlpack(buffer)"] = lambda: np.from_dlpack(buf)
    if torch is not None:
        c["torch.from_dlpack(buffer)"] = lambda: torch.from_dlpack(buf)
    return c


def measure(repeats: int = 9, log=print) -> list[dict]:
    """One row per contestant: median ns per call and the ufunc's time over it."""
    samples = interleaved(contestants(), repeats, target_s=0.02)
    base = "np.multiply(x, s, out=x)"
    medians = summarize(samples)
    rows = []
    for name, seconds in medians.items():
        row = {"call": name, "ns": seconds * 1e9, "ufunc/this": median_ratio(samples, base, name)}
        rows.append(row)
        log(f"dispatch {name:<28} {row['ns']:8.0f} ns   ufunc/this {row['ufunc/this']:.2f}")
    return rows


def main() -> int:
    measure()
    return 0


if __name__ == "__main__":
    sys.exit(main())
