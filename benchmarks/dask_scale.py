"""g.map on Dask arrays on a cluster of 1 and 2 worker processes, beside Dask's own NumPy.

Throughput: the fused f32 map clamp(a·x + b·y + z, lo, hi) over n elements (1e8 by default) on a
`distributed.LocalCluster` of one, then two, worker processes of one Dask thread each, the host
pool of each (GOMPUTE_HOST_THREADS) sized to its share of the cores; against the same expression
in Dask's NumPy (`da.clip(a * x + b * y + z, lo, hi)`) on the same cluster. Each figure is the time
to persist the result of inputs already persisted on the workers; bytes are 16 per element (three
read, one written).

Per-task overhead: a one-input map over 1000 chunks of 100 to 100,000 elements on the two-worker
cluster, g.map against `x.map_blocks(np.negative)`: wall time over the number of tasks.

Contestants alternate in a rotating order for --repeats repetitions; medians are reported, ratios
taken per repetition (benchmarks/timing.py).

    .venv/bin/python benchmarks/dask_scale.py [--n 1e8] [--repeats 3] [--save]

--save writes benchmarks/results/<date>-dask.md.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import statistics
import time
from pathlib import Path

import dask
import dask.array as da
import distributed
import numpy as np
import timing

import gompute as g


class Fused(g.Params):
    a: g.f32
    b: g.f32
    lo: g.f32
    hi: g.f32


@g.map_kernel
def fused(x: g.f32, y: g.f32, z: g.f32, p: Fused) -> g.f32:
    return g.clamp(p.a * x + p.b * y + z, p.lo, p.hi)


@g.map_kernel
def negate(x: g.f32) -> g.f32:
    return -x


A, B, LO, HI = 1.5, -0.5, -1.0, 1.0
THROUGHPUT_CHUNKS = (1_000_000, 10_000_000)
OVERHEAD_CHUNKS = (100, 10_000, 100_000)
OVERHEAD_TASKS = 1000


def persist_seconds(make) -> float:
    """Seconds to build and persist `make()`'s array on the cluster, its chunks released after."""
    start = time.perf_counter()
    result = make().persist()
    distributed.wait(result)
    seconds = time.perf_counter() - start
    del result
    return seconds


def rotating(contestants: dict, repeats: int) -> dict[str, list[float]]:
    """One sample per contestant per repetition, in a rotating order, after one warm-up call each
    (each worker compiles, or loads from the disk cache, once)."""
    names = list(contestants)
    for name in names:
        persist_seconds(contestants[name])
    samples = {name: [] for name in names}
    for rep in range(repeats):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            samples[name].append(persist_seconds(contestants[name]))
    return samples


def cluster(workers: int) -> distributed.LocalCluster:
    share = max(1, (os.cpu_count() or 1) // workers)
    return distributed.LocalCluster(
        n_workers=workers,
        processes=True,
        threads_per_worker=1,
        dashboard_address=None,
        silence_logs=logging.ERROR,
        env={"GOMPUTE_HOST_THREADS": str(share)},
    )


def throughput(workers: int, n: int, repeats: int) -> list[dict]:
    rows = []
    with cluster(workers) as c, distributed.Client(c):
        for chunk in THROUGHPUT_CHUNKS:
            rng = da.random.default_rng(0)
            x, y, z = (rng.random(n, dtype=np.float32, chunks=chunk).persist() for _ in range(3))
            distributed.wait([x, y, z])
            samples = rotating(
                {
                    "g.map": lambda: g.map(fused)(x, y, z, a=A, b=B, lo=LO, hi=HI),
                    "dask numpy": lambda: da.clip(A * x + B * y + z, LO, HI),
                },
                repeats,
            )
            for name, s in samples.items():
                seconds = statistics.median(s)
                rows.append({"workers": workers, "chunk": chunk, "contestant": name, "seconds": seconds, "n": n})
            rows[-1]["numpy / g.map"] = timing.median_ratio(samples, "dask numpy", "g.map")
    return rows


def overhead(repeats: int) -> list[dict]:
    rows = []
    with cluster(2) as c, distributed.Client(c):
        for chunk in OVERHEAD_CHUNKS:
            x = da.ones(chunk * OVERHEAD_TASKS, dtype=np.float32, chunks=chunk).persist()
            distributed.wait(x)
            samples = rotating(
                {"g.map": lambda: g.map(negate)(x), "map_blocks(np.negative)": lambda: x.map_blocks(np.negative)},
                repeats,
            )
            ratio = timing.median_ratio(samples, "g.map", "map_blocks(np.negative)")
            us = {name: statistics.median(s) / OVERHEAD_TASKS * 1e6 for name, s in samples.items()}
            rows.append({"chunk": chunk, **us, "g.map / map_blocks": ratio})
    return rows


def report(rows_1: list[dict], rows_2: list[dict], overhead_rows: list[dict], n: int, load: str) -> str:
    lines = [
        f"# Dask scaling, {datetime.date.today()}",
        "",
        "`benchmarks/dask_scale.py`: the fused f32 map clamp(a·x + b·y + z, lo, hi) over "
        f"{n:.0e} elements on a LocalCluster of worker processes (one Dask thread each, GOMPUTE_HOST_THREADS "
        "= cores / workers), against Dask's NumPy expression on the same cluster; time to persist the result "
        "of inputs persisted on the workers, 16 bytes per element.",
        "",
        f"Machine: {timing.machine(0)['cpu']}, {os.cpu_count()} cores shared with other jobs "
        f"(load average before the run: {load}); gompute {timing.git_commit(Path(__file__).parent)}, "
        f"dask {dask.__version__}, distributed {distributed.__version__}, numpy {np.__version__}.",
        "",
        "| workers | chunk | contestant | seconds | GB/s | numpy / g.map |",
        "|---|---|---|---|---|---|",
    ]
    for row in (*rows_1, *rows_2):
        ratio = f"{row['numpy / g.map']:.2f}" if "numpy / g.map" in row else ""
        gbs = 16 * row["n"] / row["seconds"] / 1e9
        lines.append(
            f"| {row['workers']} | {row['chunk']:.0e} | {row['contestant']} | {row['seconds']:.3f} | {gbs:.2f} | {ratio} |"
        )
    lines += ["", "Scaling, one worker process to two (time on 1 / time on 2):", ""]
    for one, two in zip(rows_1, rows_2):
        lines.append(f"- {one['contestant']}, chunk {one['chunk']:.0e}: {one['seconds'] / two['seconds']:.2f}x")
    lines += [
        "",
        f"Per-task overhead on two workers, {OVERHEAD_TASKS} chunks (µs per task, wall time / tasks):",
        "",
        "| chunk | g.map | map_blocks(np.negative) | g.map / map_blocks |",
        "|---|---|---|---|",
    ]
    for row in overhead_rows:
        lines.append(
            f"| {row['chunk']:.0e} | {row['g.map']:.0f} | {row['map_blocks(np.negative)']:.0f} "
            f"| {row['g.map / map_blocks']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    n = int(args.n)
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    rows_1 = throughput(1, n, args.repeats)
    rows_2 = throughput(2, n, args.repeats)
    text = report(rows_1, rows_2, overhead(args.repeats), n, load)
    print(text)
    if args.save:
        path = Path(__file__).parent / "results" / f"{datetime.date.today()}-dask.md"
        path.write_text(text)
        print(f"written to {path}")


if __name__ == "__main__":
    main()
