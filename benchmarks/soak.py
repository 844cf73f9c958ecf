"""Soak and load: gompute's repeated paths keep their memory flat and their results right. Not a
test and not a timing: each scenario prints the process's resident memory (RSS), its live gompute
Buffers and its OS threads at its start, half way and at its end.

    python benchmarks/soak.py                   # every scenario
    python benchmarks/soak.py --only dlpack threads
    python benchmarks/soak.py --scale 0.1       # a tenth of every count, for a quick look
    python benchmarks/soak.py --save            # also writes benchmarks/results/<date>-soak.md

Scenarios:
  calls    1,000,000 cached g.map calls on a 16-element f32 array, alternately into out= and into
           a new result
  dlpack   100,000 DLPack round trips of a NumPy array through gompute (g.from_dlpack, then
           np.from_dlpack of the Buffer), and as many of a torch tensor where torch is installed
  threads  8 threads x 2,000 mixed operations on one host Compute: alloc, upload, download and
           free; g.map on NumPy and on Buffers; a stream and an event ordering an upload before a
           download on another stream; a DLPack export

The first half of a scenario warms what is cached (kernels, allocator pools), so a leak shows as
growth over the second half. A scenario fails, and the script exits with status 1, when a result
is wrong, when it leaves a Buffer behind, or when its second half adds threads or more than
GROWTH_LIMIT of RSS.
"""

from __future__ import annotations

import argparse
import datetime
import os
import resource
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import report  # noqa: E402
from timing import machine  # noqa: E402

import gompute as g  # noqa: E402

RESULTS = HERE / "results"
GROWTH_LIMIT = 16 << 20  # bytes of RSS over a scenario's second half; a per-call leak of 16 bytes exceeds it


class Scale(g.Params):
    scale: g.f32


@g.map_kernel
def axpy(x: g.f32, y: g.f32, p: Scale) -> g.f32:
    return x * p.scale + y


def rss_bytes() -> int:
    """Resident memory now (/proc/self/statm); where there is none, the peak (getrusage)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)


def os_threads() -> int:
    """The process's threads, gompute's workers and stream queues included (threading sees only Python's)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


class Probe:
    """RSS, live Buffers and threads at the start, middle and end of a scenario."""

    def __init__(self, name: str, count: str):
        self.name, self.count = name, count
        self.points: list[tuple[str, int, int, int]] = []
        self.failures: list[str] = []
        self.started = time.perf_counter()
        self.seconds = 0.0
        self.mark("start")

    def mark(self, label: str) -> None:
        self.points.append((label, rss_bytes(), g.runtime.stats()["buffers_live"], os_threads()))
        label, rss, buffers, threads = self.points[-1]
        print(f"  {self.name:8s} {label:6s} RSS {rss / 2**20:8.1f} MiB  buffers {buffers:3d}  threads {threads:3d}")

    def end(self, errors: list[str] | None = None) -> Probe:
        """Marks the end and judges the scenario: `errors` (wrong results) and what it left behind
        become `failures`, empty when it passed."""
        self.mark("end")
        self.seconds = time.perf_counter() - self.started
        (_, _, buffers0, _), (_, rss1, _, threads1), (_, rss2, buffers2, threads2) = self.points
        failures = list(errors or [])
        if rss2 - rss1 > GROWTH_LIMIT:
            failures.append(f"RSS grew {(rss2 - rss1) / 2**20:.1f} MiB over the second half")
        if buffers2 != buffers0:
            failures.append(f"{buffers2 - buffers0} Buffer(s) outlived it")
        if threads2 > threads1:  # the first half starts gompute's own: its workers, a stream's queue
            failures.append(f"{threads2 - threads1} more thread(s) at its end than half way")
        self.failures = failures
        return self

    def row(self) -> str:
        mib = [f"{rss / 2**20:.1f}" for _, rss, _, _ in self.points]
        growth = (self.points[2][1] - self.points[1][1]) / 2**20
        verdict = "; ".join(self.failures) or "flat"
        threads = "/".join(str(t) for *_, t in self.points)
        return f"| {self.name} | {self.count} | {' / '.join(mib)} | {growth:+.1f} | {threads} | {self.seconds:.1f} | {verdict} |"


def halves(n: int, probe: Probe) -> Iterator[int]:
    """range(n), marking the probe half way."""
    for i in range(n):
        if i == n // 2:
            probe.mark("middle")
        yield i


def soak_calls(n: int) -> Probe:
    """n cached g.map calls, alternately into out= and into a new result."""
    probe = Probe("calls", f"{n:,} g.map calls")
    kernel = g.map(axpy)
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    y = np.ones(16, np.float32)
    out = np.empty_like(x)
    want = x * np.float32(2) + y
    for i in halves(n, probe):
        result = kernel(x, y, scale=2) if i % 2 else kernel(x, y, out=out, scale=2)
        if i % 65_536 == 0:
            np.testing.assert_array_equal(result, want)
    np.testing.assert_array_equal(out, want)
    return probe.end()


def soak_dlpack(n: int) -> Probe:
    """n round trips NumPy -> gompute -> NumPy (and torch -> gompute -> torch), each a view of the
    same memory."""
    try:
        import torch
    except ImportError:
        torch = None
    label = f"{n:,} round trips" + (" each, NumPy and torch" if torch is not None else ", NumPy")
    probe = Probe("dlpack", label)
    x = np.arange(64, dtype=np.float32)
    t = torch.arange(64, dtype=torch.float32) if torch is not None else None
    for i in halves(n, probe):
        back = np.from_dlpack(g.from_dlpack(x))
        if t is not None:
            tback = torch.from_dlpack(g.from_dlpack(t))
        if i % 65_536 == 0:
            assert back.ctypes.data == x.ctypes.data, "a NumPy round trip copied"
            assert t is None or tback.data_ptr() == t.data_ptr(), "a torch round trip copied"
    back = tback = None  # the last round trip's views go before the count of live Buffers
    return probe.end()


def _mixed_ops(compute, kernel, seed: int, ops: int, errors: list[str]) -> None:
    """One thread's share of the load: `ops` operations, chosen at random, each checked."""
    rng = np.random.default_rng(seed)
    for _ in range(ops):
        n = int(rng.integers(1, 4096))
        data = rng.standard_normal(n).astype(np.float32)
        op = int(rng.integers(0, 5))
        try:
            _one_op(compute, kernel, op, data)
        except Exception as e:  # noqa: BLE001 - every failure is reported, with its operation
            errors.append(f"op {op} on {n} elements: {type(e).__name__}: {e}")
            return


def _one_op(compute, kernel, op: int, data: np.ndarray) -> None:
    n = data.size
    back = np.empty_like(data)
    if op == 0:  # alloc, upload, download, free
        buf = compute.alloc(data.nbytes)
        buf.upload(data)
        buf.download(back)
        buf.free()
        np.testing.assert_array_equal(back, data)
    elif op == 1:  # g.map on NumPy, a new result
        np.testing.assert_array_equal(kernel(data, data, scale=3), data * np.float32(3) + data)
    elif op == 2:  # g.map on Buffers, in place
        buf = compute.empty(n, g.f32)
        buf.upload(data)
        kernel(buf, buf, out=buf, scale=-1)
        buf.download(back)
        np.testing.assert_array_equal(back, np.zeros_like(data))
    elif op == 3:  # an upload on one stream, a download on another, ordered by an event
        stream, other = compute.create_stream(), compute.create_stream()
        buf = compute.alloc(data.nbytes)
        buf.upload(data, stream=stream)
        done = compute.create_event()
        done.record(stream)
        done.wait(other)
        buf.download(back, stream=other)
        other.synchronize()
        stream.deinit()
        other.deinit()
        np.testing.assert_array_equal(back, data)
    else:  # a DLPack export, read through NumPy
        buf = compute.empty(n, g.f32)
        buf.upload(data)
        np.testing.assert_array_equal(np.from_dlpack(buf), data)


def soak_threads(threads: int, ops: int) -> Probe:
    """`threads` threads doing `ops` mixed operations each on one host Compute; the middle mark
    falls between two rounds of half the operations."""
    probe = Probe("threads", f"{threads} threads x {ops:,} ops")
    compute = g.runtime.host.Compute.init()
    kernel = g.map(axpy)
    kernel(np.zeros(1, np.float32), np.zeros(1, np.float32), scale=1)  # compiled once, before the threads race
    errors: list[str] = []
    for round_ in range(2):
        workers = [
            threading.Thread(target=_mixed_ops, args=(compute, kernel, 1000 * round_ + i, ops // 2, errors))
            for i in range(threads)
        ]
        for w in workers:
            w.start()
        # Short joins keep the main thread running Python: gompute gives back the Python objects
        # queued host work held through a pending call, which only the main thread runs, so a
        # join() that blocks for the whole round lets them pile up (an upload's array, its Buffer).
        while any(w.is_alive() for w in workers):
            workers[0].join(0.01)
        if round_ == 0:
            probe.mark("middle")
    compute.synchronize()
    return probe.end(errors[:3])


SCENARIOS: dict[str, Callable[[float], Probe]] = {
    "calls": lambda s: soak_calls(int(1_000_000 * s)),
    "dlpack": lambda s: soak_dlpack(int(100_000 * s)),
    "threads": lambda s: soak_threads(8, int(2_000 * s)),
}


def save(probes: list[Probe], scale: float) -> Path:
    threads = int(g.runtime.host.Compute.init().device_info().multiprocessors)
    day = datetime.date.today().isoformat()
    path = RESULTS / f"{day}-soak.md"
    lines = [
        f"# Soak and load ({day})",
        "",
        "`benchmarks/soak.py`" + (f" --scale {scale}" if scale != 1 else "") + ": RSS at the start, middle "
        "and end of each scenario, its growth over the second half (what a leak would show as), the "
        f"process's OS threads at the same points, and the wall time. A scenario fails past "
        f"{GROWTH_LIMIT >> 20} MiB of growth, a Buffer or thread left behind, or a wrong result.",
        "",
        report._machine_md(machine(threads)),
        "",
        "| scenario | count | RSS MiB start / middle / end | second half MiB | threads | s | verdict |",
        "|---|---|---|---|---|---|---|",
        *[p.row() for p in probes],
        "",
    ]
    path.write_text("\n".join(lines))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every count (default 1)")
    parser.add_argument("--save", action="store_true", help=f"write {RESULTS.name}/<date>-soak.md")
    args = parser.parse_args(argv)
    probes = []
    for name in args.only:
        print(f"{name}:", flush=True)
        probes.append(SCENARIOS[name](args.scale))
        for failure in probes[-1].failures:
            print(f"  FAILED: {failure}")
    if args.save:
        print(f"wrote {save(probes, args.scale).relative_to(HERE.parent)}")
    return 1 if any(p.failures for p in probes) else 0


if __name__ == "__main__":
    sys.exit(main())
