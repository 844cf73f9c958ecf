"""Timing on a GPU, shared by gpu_check.py and the scenario modules it runs: the GPU time of a
call between two events, and the host's cost of submitting one."""

from __future__ import annotations

import time

import numpy as np

WARM_UPS, BATCH, BATCHES = 50, 500, 20


def per_call_ms(fn, start, end, elapsed, calls: int = 20, repeats: int = 7) -> float:
    """Median milliseconds one `fn()` takes on the GPU: `calls` of them back to back between the
    events `start()` and `end()` record (`elapsed()` reads their time once the end is reached),
    after three warm-up calls. Several calls between the two events, because one alone would time
    the host's cost of the call too: the GPU idles until its work arrives."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        start()
        for _ in range(calls):
            fn()
        end()
        times.append(elapsed() / calls)
    return float(np.median(times))


def host_us(fn, sync) -> float:
    """Median microseconds of host time one `fn()` takes to submit, over `BATCHES` batches of
    `BATCH` calls, each begun on an idle device (`sync()`), after `WARM_UPS` calls. A batch is
    short enough that the driver's launch queue does not fill, so the figure is the host's cost of
    a call, not how fast the GPU drains tiny kernels."""
    for _ in range(WARM_UPS):
        fn()
    per = []
    for _ in range(BATCHES):
        sync()
        start = time.perf_counter()
        for _ in range(BATCH):
            fn()
        per.append((time.perf_counter() - start) / BATCH)
    sync()
    return float(np.median(per)) * 1e6


def event_ms(gpu, stream, fn, calls: int = 20, repeats: int = 7) -> float:
    """per_call_ms of `fn()` on `stream`, timed with gompute's events."""
    begin, done = gpu.create_event(), gpu.create_event()

    def elapsed() -> float:
        done.synchronize()
        return begin.elapsed_ms(done)

    return per_call_ms(fn, lambda: begin.record(stream), lambda: done.record(stream), elapsed, calls, repeats)


def cupy_ms(cupy, fn, calls: int = 20, repeats: int = 7) -> float:
    """per_call_ms of `fn()` on CuPy's current stream, timed with CuPy's events."""
    start, end = cupy.cuda.Event(), cupy.cuda.Event()

    def elapsed() -> float:
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end)

    return per_call_ms(fn, start.record, end.record, elapsed, calls, repeats)


def torch_ms(torch, fn, calls: int = 20, repeats: int = 7) -> float:
    """per_call_ms of `fn()` on torch's current stream, timed with torch's events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def elapsed() -> float:
        end.synchronize()
        return start.elapsed_time(end)

    return per_call_ms(fn, start.record, end.record, elapsed, calls, repeats)
