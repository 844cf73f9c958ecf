"""Interleaved timing and the machine description, shared by suite.py and dispatch.py.

Every figure the benchmarks report is a ratio against a baseline timed in the same run: the
contestants of one measurement are called in turn, in a rotating order, for several
repetitions, and each repetition's ratio is taken before the median, so a slow moment of a
noisy machine hits baseline and candidate alike.
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path


def calibrate(fn: Callable, target_s: float) -> int:
    """How many back-to-back calls of `fn` take about `target_s` (at least one)."""
    fn()
    number = 1
    while True:
        t = time.perf_counter()
        for _ in range(number):
            fn()
        took = time.perf_counter() - t
        if took >= target_s / 4 or number >= 1 << 20:
            return max(1, int(number * target_s / max(took, 1e-9)))
        number *= 4


def interleaved(contestants: dict[str, Callable], repeats: int, target_s: float = 0.02) -> dict[str, list[float]]:
    """Seconds per call of each contestant, one sample per repetition, taken in rotating order."""
    names = list(contestants)
    numbers = {n: calibrate(contestants[n], target_s) for n in names}
    samples: dict[str, list[float]] = {n: [] for n in names}
    for rep in range(repeats):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            fn, number = contestants[name], numbers[name]
            t = time.perf_counter()
            for _ in range(number):
                fn()
            samples[name].append((time.perf_counter() - t) / number)
    return samples


def median_ratio(samples: dict[str, list[float]], baseline: str, candidate: str) -> float:
    """Median over repetitions of baseline time / candidate time (> 1: the candidate is faster)."""
    return statistics.median(b / c for b, c in zip(samples[baseline], samples[candidate]))


def summarize(samples: dict[str, list[float]]) -> dict[str, float]:
    return {name: statistics.median(s) for name, s in samples.items()}


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        return None


def _compiler() -> str | None:
    from gompute.compile.host import find_compiler

    try:
        c = find_compiler()
    except Exception:  # noqa: BLE001 - the description says what it could find
        return None
    return f"{c.identity} (-march=native = {c.target_cpu})"


def git_commit(folder: Path) -> str:
    """The commit `folder` is checked out at, "-dirty" after it when the tree has uncommitted
    changes (the figures are then not the commit's); "" outside a git checkout."""
    describe = ["git", "describe", "--always", "--dirty"]
    try:
        return subprocess.run(describe, cwd=folder, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def machine(threads: int) -> dict:
    """Where and with what the numbers were measured."""
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "host": platform.node(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "gompute_host_threads": threads,
        "compiler": _compiler(),
        "git_commit": git_commit(Path(__file__).resolve().parent),
        "versions": {p: _version(p) for p in ("gompute", "numpy", "numexpr", "torch", "matplotlib")},
        "env": {
            k: os.environ[k]
            for k in ("GOMPUTE_HOST_THREADS", "OMP_NUM_THREADS", "OPENBLAS_CORETYPE")
            if k in os.environ
        },
    }
