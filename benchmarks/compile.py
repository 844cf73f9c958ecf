"""Compile times of one map kernel (the README's scale_relu): cold, warm from the disk cache, and
warm in memory, on the host compiler and on NVRTC; and a reduction's two modules (an f32 sum of
squares) cold on the host, each many large loops (the README's "a first call compiles for seconds").
Not a test: it prints a table.

    python benchmarks/compile.py

Targets (issue 3): in-memory dispatch well under a microsecond; disk-cache load under 5 ms;
cold NVRTC under 150 ms.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gompute.lang as g  # noqa: E402
from gompute.compile import cache, nvrtc  # noqa: E402
from gompute.lang.kernel import MapKernel  # noqa: E402
from gompute.lang.reduce_kernel import ReduceKernel  # noqa: E402


class Params(g.Params):
    scale: g.f32


def scale_relu(x: g.f32, p: Params) -> g.f32:
    y = x * p.scale
    return y if y > 0 else g.f32(0)


def sumsq(x: g.f32) -> g.f32:
    return x * x


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.2f} ms"


def measure(backend: str, arch: str | None, repeats: int = 5) -> list[tuple[str, str]]:
    cold, disk = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as root:
            os.environ[cache.ENV_VAR] = root
            t0 = time.perf_counter()
            MapKernel(scale_relu).compile_for(backend, arch)  # a fresh kernel object and an empty cache
            cold.append(time.perf_counter() - t0)
            kernel = MapKernel(scale_relu)
            kernel.specialize()
            t0 = time.perf_counter()
            kernel.compile_for(backend, arch)  # in the disk cache, not in this object's memory
            disk.append(time.perf_counter() - t0)
    n = 200_000
    per_call = timeit.timeit(lambda: kernel.compile_for(backend, arch), number=n) / n
    name = f"{backend} {arch or ''}".strip()
    return [
        (f"{name}: cold compile (median of {repeats})", _ms(statistics.median(cold))),
        (f"{name}: disk cache load (median of {repeats})", _ms(statistics.median(disk))),
        (f"{name}: in-memory dispatch", f"{per_call * 1e9:8.0f} ns"),
    ]


def measure_reduction(repeats: int = 3) -> list[tuple[str, str]]:
    """A first g.reduce call's compile: the rows module (a full sum, axis=-1) and the columns one (axis=0),
    each cold."""
    cold = {"rows": [], "columns": []}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as root:
            os.environ[cache.ENV_VAR] = root
            kernel = ReduceKernel(sumsq, identity=0)
            for kind, times in cold.items():
                t0 = time.perf_counter()
                kernel.image_of(kernel.variant((g.f32,)).part(kind), "host")
                times.append(time.perf_counter() - t0)
    return [
        (f"host: a reduction's {kind} module, cold compile (median of {repeats})", _ms(statistics.median(times)))
        for kind, times in cold.items()
    ]


def main() -> int:
    rows = measure("host", None) + measure_reduction()
    if nvrtc.available():
        rows += measure("cuda", "sm_90") + measure("cuda", "compute_90")
    else:
        rows.append(("cuda", "skipped: NVRTC not installed"))
    width = max(len(r[0]) for r in rows)
    for what, figure in rows:
        print(f"{what:<{width}}  {figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
