"""The runtime is callable from many threads at once."""

from __future__ import annotations

import threading
from functools import partial

import numpy as np

import gompute as g

THREADS, ROUNDS = 8, 6


def _run_threads(worker, timeout: float) -> None:
    """Runs worker(0..THREADS-1) on THREADS threads; fails with the first error any of them raised."""
    errors: list[BaseException] = []

    def guarded(tid: int) -> None:
        try:
            worker(tid)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    assert not any(t.is_alive() for t in threads), "a worker thread hung"
    if errors:
        raise errors[0]


class _Scale(g.Params):
    scale: g.f32


def test_eight_threads_each_with_streams_buffers_and_launches(compute, kernels):
    scale_relu, add = kernels.get_kernel("scale_relu"), kernels.get_kernel("add")
    barrier = threading.Barrier(THREADS)

    def worker(tid: int) -> None:
        barrier.wait()  # all threads start together, to meet in the runtime
        for r in range(ROUNDS):
            n = 1000 + 4096 * (tid + 1) + r  # small and pool-sized launches, ragged lengths
            x = np.random.default_rng(tid * 100 + r).standard_normal(n).astype(np.float32)
            scale = float(tid + 1)
            with compute.create_stream() as s, compute.alloc(x.nbytes) as a, compute.alloc(x.nbytes) as b:
                a.upload(x, stream=s)
                scale_relu.launch(
                    g.Dim3.linear(n, 256),
                    256,
                    0,
                    [a.arg_ptr(), g.interface.arg(g.u64(n)), g.interface.arg(g.abi.pack(_Scale, scale=scale))],
                    stream=s,
                )
                add.launch(
                    g.Dim3.linear(n, 128),
                    128,
                    0,
                    [b.arg_ptr(), a.arg_ptr(), a.arg_ptr(), g.interface.arg(g.u64(n))],
                    stream=s,
                )
                out = np.empty_like(x)
                b.download(out, stream=s)
                s.synchronize()
                np.testing.assert_array_equal(out, np.maximum(x * np.float32(scale), 0) * 2)
                if r % 2:
                    compute.synchronize()  # device-wide sync while other threads submit work

    _run_threads(worker, timeout=60)


def test_threads_can_each_open_their_own_compute(compute):
    results: dict[int, bytes] = {}

    def worker(tid: int) -> None:
        with type(compute).init_device(compute.ordinal) as c, c.alloc(64) as buf:
            buf.upload(bytes([tid]) * 64)
            out = bytearray(64)
            buf.download(out)
            results[tid] = bytes(out)

    _run_threads(worker, timeout=30)
    assert results == {t: bytes([t]) * 64 for t in range(THREADS)}


def _copy_until_freed(copy, started: threading.Event, outcome: list) -> None:
    started.set()
    try:
        while True:
            copy()
    except g.BufferFreed:
        outcome.append("freed")


def test_a_free_from_another_thread_leaves_a_copy_in_flight_its_memory(compute):
    """upload, download and copy_from run with the GIL released; a free() meanwhile drops the
    Buffer's handle, not the memory under the copy (the host frees at once): the copying thread's
    next call raises BufferFreed, and nothing crashes."""
    data = np.ones(64 << 20, np.uint8)
    for name in ("upload", "download", "copy_from"):
        b, other = compute.alloc(data.nbytes), compute.alloc(data.nbytes)
        copy = {"upload": partial(b.upload, data), "download": partial(b.download, data)}
        copy["copy_from"] = partial(other.copy_from, b)
        started, outcome = threading.Event(), []
        thread = threading.Thread(target=_copy_until_freed, args=(copy[name], started, outcome))
        thread.start()
        started.wait()
        b.free()
        thread.join(timeout=60)
        assert not thread.is_alive() and outcome == ["freed"], name
        other.free()
