"""g.reduce on the host against NumPy, PyTorch and a two-thread read of the same bytes (issue 32's
aims: a 1e7+ f32 full sum reads at >= 0.8x the two-thread read and beats np.sum and torch.sum;
row and column reductions of a 2-D array within 1.5x of the full one). Not a test: it prints
a table of medians and of ratios taken per repetition (benchmarks/timing.py).

    .venv/bin/python benchmarks/reductions.py            # 1e7 and 5e7 f32
    .venv/bin/python benchmarks/reductions.py --sizes 1e8

torch runs with OMP_WAIT_POLICY=PASSIVE (unless set otherwise): its OpenMP threads otherwise spin
between calls and take the cores from gompute's pool when the two alternate.

The read baselines pass over the array's bytes as int32 with nothing else to do: the 2-thread
read is `np.add.reduce(..., dtype=int32)` on each half in a Python thread pool (NumPy releases the
GIL there; the pool's hand-off is in its time), the 1-thread read the same on the whole array in
the calling thread, and the g.reduce read an int32 sum through g.reduce (an exact combine: one
pass, no pairwise tree), so against it the f32 sum's own arithmetic shows, not the pool or memory.
At 1e7 f32 (40 MB) a 32 MiB L3 holds much of the array between calls, and how much depends on
each contestant's own access order: read those ratios as warm-cache figures.
"""

from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from timing import interleaved, machine, median_ratio, summarize  # noqa: E402

import gompute as g  # noqa: E402


@g.reduce_kernel(identity=0)
def total(x: g.f32) -> g.f32:
    return x


@g.reduce_kernel(identity=0)
def words(x: g.i32) -> g.i32:
    return x


@g.reduce_kernel(identity=0)
def sumsq(x: g.f32) -> g.f32:
    return x * x


@g.reduce_kernel(combine=g.max)
def largest(x: g.f32) -> g.f32:
    return x


@g.reduce_kernel(identity=0)
def dot(x: g.f32, y: g.f32) -> g.f32:
    return x * y


def two_thread_read(pool: ThreadPoolExecutor, x: np.ndarray):
    words = x.reshape(-1).view(np.int32)
    half = words.size // 2
    parts = pool.map(lambda w: np.add.reduce(w, dtype=np.int32), (words[:half], words[half:]))
    return sum(int(p) for p in parts)


def contests(n: int, pool: ThreadPoolExecutor, torch) -> list[tuple[str, dict, str]]:
    """(what, contestants, the gompute contestant's name) for arrays of n f32."""
    rng = np.random.default_rng(0)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    cols = 1000
    m = x.reshape(n // cols, cols)
    m2 = x[: n // 1024 * 1024].reshape(-1, 1024)  # rows a multiple of 4 KB apart: their own loop
    short = x[: n // 3 * 3].reshape(n // 3, 3)
    w = x.view(np.int32)
    read = {
        "2-thread read": lambda: two_thread_read(pool, x),
        "1-thread read": lambda: np.add.reduce(w, dtype=np.int32),
        "g.reduce read": lambda: g.reduce(words)(w),
    }
    found = [
        ("sum", {"g.reduce": lambda: g.reduce(total)(x), "np.sum": lambda: np.sum(x), **read}),
        ("sum of squares", {"g.reduce": lambda: g.reduce(sumsq)(x), "np.linalg.norm": lambda: np.linalg.norm(x)}),
        ("max", {"g.reduce": lambda: g.reduce(largest)(x), "np.max": lambda: np.max(x)}),
        ("dot", {"g.reduce": lambda: g.reduce(dot)(x, y), "np.dot": lambda: np.dot(x, y)}),
        (
            f"2-D ({n // cols}, {cols}): full, rows, columns; columns of ({n // 1024}, 1024)",
            {
                "full": lambda: g.reduce(total)(m),
                "rows": lambda: g.reduce(total)(m, axis=1),
                "columns": lambda: g.reduce(total)(m, axis=0),
                "columns, 1024 wide": lambda: g.reduce(total)(m2, axis=0),
                "np rows": lambda: np.sum(m, axis=1),
                "np columns": lambda: np.sum(m, axis=0),
            },
        ),
        (
            f"2-D ({n // 3}, 3): full, short rows",
            {
                "full": lambda: g.reduce(total)(short),
                "short rows": lambda: g.reduce(total)(short, axis=1),
                "np short rows": lambda: np.sum(short, axis=1),
            },
        ),
    ]
    if torch is not None:
        t, u = torch.from_numpy(x), torch.from_numpy(y)
        found[0][1]["torch.sum"] = lambda: torch.sum(t)
        found[1][1]["torch.linalg.norm"] = lambda: torch.linalg.norm(t)
        found[2][1]["torch.max"] = lambda: torch.max(t)
        found[3][1]["torch.dot"] = lambda: torch.dot(t, u)
    return [(what, c, "full" if "full" in c else "g.reduce") for what, c in found]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", type=float, default=[1e7, 5e7])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read when torch loads its OpenMP runtime
    try:
        import torch
    except ImportError:
        torch = None
    info = machine(0)
    threads = torch.get_num_threads() if torch else "-"
    print(
        f"{info['cpu']}, {info['cores']} cores, torch threads {threads}, OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}"
    )
    print(f"gompute {info['git_commit']}, numpy {info['versions']['numpy']}, torch {info['versions']['torch']}\n")
    print("| n (f32) | reduction | contestant | median ms | GB/s | ratio: contestant / gompute time |")
    print("|---|---|---|---|---|---|")
    with ThreadPoolExecutor(2) as pool:
        for size in args.sizes:
            n = int(size) // 1000 * 1000
            for what, contestants, ours in contests(n, pool, torch):
                samples = interleaved(contestants, args.repeats)
                medians = summarize(samples)
                nbytes = n * 4 * (2 if what == "dot" else 1)
                for name, seconds in medians.items():
                    ratio = "" if name == ours else f"{median_ratio(samples, name, ours):.2f}"
                    print(
                        f"| {n:.0e} | {what} | {name} | {seconds * 1e3:.2f} | {nbytes / seconds / 1e9:.1f} | {ratio} |"
                    )


if __name__ == "__main__":
    main()
