"""Streams and events: asynchronous work, ordering within and across streams, timing.

What runs when is made deterministic with the `gate` kernel: it holds its stream until
the test sets a flag, so "not done yet" is a fact, not a race.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import gompute as g

BIG_GRID, BLOCK = g.Dim3(128), g.Dim3(256)  # 32768 threads: work the host hands to its pool


class Gate:
    """A launched `gate` kernel holding `stream` until open() is called."""

    def __init__(self, compute, kernels, stream, grid=BIG_GRID, block=BLOCK, timeout_ms=20_000):
        self.flag, self.seen = compute.alloc(4), compute.alloc(4)
        self.flag.upload(np.zeros(1, np.uint32))
        self.seen.upload(np.zeros(1, np.uint32))
        args = [self.flag.arg_ptr(), self.seen.arg_ptr(), g.interface.arg(g.u64(timeout_ms))]
        kernels.get_kernel("gate").launch(grid, block, 0, args, stream=stream)

    def open(self):
        self.flag.upload(np.ones(1, np.uint32))

    def passed(self) -> bool:
        out = np.zeros(1, np.uint32)
        self.seen.download(out)
        return out[0] == 2


def _floats(buf) -> np.ndarray:
    out = np.empty(buf.nbytes // 4, np.float32)
    buf.download(out)
    return out


# ---- streams as handles ---------------------------------------------------------------


def test_stream_properties(compute):
    with compute.create_stream() as s:
        assert s.backend is compute.backend
        assert s.device == compute.ordinal
        assert s.owned
        assert s.handle != 0
        assert s.handle != compute.create_stream().handle
    default = compute.default_stream
    assert default.handle == 0 and not default.owned
    default.synchronize()


def test_cuda_stream_protocol_only_on_cuda(compute):
    with compute.create_stream() as s:
        if compute.backend is g.Backend.cuda:
            assert s.__cuda_stream__() == (0, s.handle)
        else:
            assert not hasattr(s, "__cuda_stream__")


def test_a_deinit_stream_refuses_work(compute):
    s = compute.create_stream()
    s.deinit()
    s.deinit()  # idempotent
    with compute.alloc(16) as buf:
        for call in (
            s.synchronize,
            lambda: s.handle,
            lambda: buf.upload(b"1234", stream=s),
            lambda: buf.download(bytearray(4), stream=s),
            lambda: compute.create_event().record(s),
        ):
            with pytest.raises(g.InvalidHandle, match="deinit"):
                call()
    with compute.create_stream() as s2:
        pass
    with pytest.raises(g.InvalidHandle):
        s2.synchronize()


def test_an_event_that_was_never_recorded(compute):
    ev = compute.create_event()
    assert ev.query()
    ev.synchronize()
    with pytest.raises(g.GomputeError):
        ev.elapsed_ms(compute.create_event())


def test_events_on_the_default_stream(compute):
    start, end = compute.create_event(), compute.create_event()
    start.record()
    end.record()
    end.synchronize()
    assert start.query() and end.query()
    assert start.elapsed_ms(end) >= 0


# ---- asynchrony -------------------------------------------------------------------------


def test_launch_returns_before_the_kernel_is_done(compute, kernels):
    with compute.create_stream() as s:
        done = compute.create_event()
        gate = Gate(compute, kernels, s)
        done.record(s)
        try:
            assert not done.query()
            assert not gate.passed()
        finally:
            gate.open()
        s.synchronize()
        assert done.query()
        assert gate.passed()


def test_a_small_launch_also_returns_before_the_kernel_is_done(compute, kernels):
    """A one-thread launch is as asynchronous as a big one, as on a GPU (else a kernel
    waiting for the host would deadlock the host; here the gate times out instead)."""
    with compute.create_stream() as s:
        done = compute.create_event()
        gate = Gate(compute, kernels, s, grid=1, block=1, timeout_ms=2_000)
        done.record(s)
        try:
            assert not done.query()
        finally:
            gate.open()
            try:
                s.synchronize()
            except g.SyncFailed:
                pass  # the gate timed out because the launch ran on this thread
        assert gate.passed()


def test_async_copies_return_before_they_are_done(compute, kernels):
    new = np.arange(64, dtype=np.float32)
    with compute.alloc(256) as buf, compute.create_stream() as s, compute.create_stream() as probe:
        buf.upload(np.zeros(64, np.float32))
        gate = Gate(compute, kernels, s)
        buf.upload(new, stream=s)  # queued behind the gate
        uploaded = compute.create_event()
        uploaded.record(s)
        try:
            assert not uploaded.query()
            seen = np.full(64, -1, np.float32)
            buf.download(seen, stream=probe)  # another stream is not held up
            probe.synchronize()
            np.testing.assert_array_equal(seen, np.zeros(64, np.float32))
        finally:
            gate.open()
        s.synchronize()
        np.testing.assert_array_equal(_floats(buf), new)


def test_a_stream_keeps_the_host_object_of_an_async_upload_alive(compute, kernels):
    with compute.alloc(4096) as buf, compute.create_stream() as s:
        gate = Gate(compute, kernels, s)
        buf.upload(np.full(1024, 3.0, np.float32), stream=s)  # the only reference is the stream's
        gate.open()
        s.synchronize()
        g._core.run_deferred_releases()
        assert (_floats(buf) == 3.0).all()


# ---- ordering ---------------------------------------------------------------------------


class _Scale(g.Params):
    scale: g.f32


def test_work_on_one_stream_runs_in_order(compute, kernels):
    n = 1 << 15
    x = np.linspace(-1, 1, n, dtype=np.float32)
    scale_relu, add = kernels.get_kernel("scale_relu"), kernels.get_kernel("add")
    with compute.alloc(x.nbytes) as a, compute.alloc(x.nbytes) as b, compute.create_stream() as s:
        out = np.empty_like(x)
        a.upload(x, stream=s)
        params = g.interface.arg(g.abi.pack(_Scale, scale=3))
        relu_args = [a.arg_ptr(), g.interface.arg(g.u64(n)), params]
        scale_relu.launch(g.Dim3.linear(n, 256), 256, 0, relu_args, stream=s)
        b.copy_from(a, stream=s)
        add_args = [a.arg_ptr(), a.arg_ptr(), b.arg_ptr(), g.interface.arg(g.u64(n))]
        add.launch(g.Dim3.linear(n, 256), 256, 0, add_args, stream=s)
        a.download(out, stream=s)
        s.synchronize()
    np.testing.assert_array_equal(out, np.maximum(x * 3, 0) * 2)


def test_event_wait_orders_work_across_streams_without_blocking_the_host(compute, kernels):
    n = 4096
    x = np.arange(n, dtype=np.float32)
    add = kernels.get_kernel("add")
    with (
        compute.alloc(x.nbytes) as data,
        compute.alloc(x.nbytes) as out,
        compute.create_stream() as producer,
        compute.create_stream() as consumer,
    ):
        data.upload(np.zeros(n, np.float32))
        ready, finished = compute.create_event(), compute.create_event()
        gate = Gate(compute, kernels, producer)
        data.upload(x, stream=producer)
        ready.record(producer)
        try:
            ready.wait(consumer)  # returns at once: the host is not held up by the gate
            add_args = [out.arg_ptr(), data.arg_ptr(), data.arg_ptr(), g.interface.arg(g.u64(n))]
            add.launch(g.Dim3.linear(n, 256), 256, 0, add_args, stream=consumer)
            finished.record(consumer)
            assert not ready.query() and not finished.query()
        finally:
            gate.open()
        consumer.synchronize()
        assert ready.query() and finished.query()
        np.testing.assert_array_equal(_floats(out), 2 * x)  # the add saw the producer's upload


def test_two_streams_overlap_a_copy_with_a_launch(compute, kernels):
    """A copy from pinned memory on one stream finishes while a kernel on another still runs."""
    pinned = compute.alloc_pinned(1 << 16)
    np.frombuffer(pinned, np.uint8)[:] = 7
    with compute.alloc(1 << 16) as buf, compute.create_stream() as kernel_s, compute.create_stream() as copy_s:
        gate = Gate(compute, kernels, kernel_s)
        try:
            buf.upload(pinned, stream=copy_s)
            copy_s.synchronize()
            assert not gate.passed()  # the kernel is still running
            out = np.empty(1 << 16, np.uint8)
            buf.download(out, stream=copy_s)
            copy_s.synchronize()
            assert (out == 7).all()
        finally:
            gate.open()
        kernel_s.synchronize()
        assert gate.passed()


def test_device_synchronize_waits_for_every_stream(compute, kernels):
    fill = kernels.get_kernel("fill_u32")
    with compute.alloc(64) as buf, compute.create_stream() as s:
        gate = Gate(compute, kernels, s)
        args = [buf.arg_ptr(), g.interface.arg(g.u64(16)), g.interface.arg(g.u32(9))]
        fill.launch(1, 16, 0, args, stream=s)
        gate.open()
        compute.synchronize()
        assert gate.passed()
        out = np.zeros(16, np.uint32)
        buf.download(out)
        assert (out == 9).all()


# ---- timing -------------------------------------------------------------------------------


def test_elapsed_ms_measures_the_work_between_two_events(compute, kernels):
    with compute.create_stream() as s:
        start, end = compute.create_event(timing=True), compute.create_event(timing=True)
        start.record(s)
        start.synchronize()
        gate = Gate(compute, kernels, s)
        end.record(s)
        try:
            with pytest.raises(g.GomputeError):
                start.elapsed_ms(end)  # end has not happened yet
            time.sleep(0.05)
        finally:
            gate.open()
        end.synchronize()
        # The gate opened at least 50 ms after `start` completed, and `end` follows the gate.
        assert start.elapsed_ms(end) >= 45
        assert end.elapsed_ms(start) <= -45


def test_a_stream_dropped_without_deinit_is_destroyed():
    """And its thread (on the host) ends with it: a dropped stream must not hold a thread until
    the process ends, out of shutdown()'s reach."""
    with g.runtime.host.Compute.init() as c:
        before = _os_threads()
        for _ in range(50):
            s = c.create_stream()
            c.alloc(16).upload(np.zeros(16, np.uint8), stream=s)
            del s
        c.synchronize()
        assert _os_threads() <= before + 2


def _os_threads() -> int:
    import os

    return len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 0


@pytest.mark.parametrize("untimed", ["start", "end"])
def test_an_event_made_without_timing_cannot_be_timed(compute, untimed):
    """The host answered with a time; CUDA answers CUDA_ERROR_INVALID_HANDLE. Both say why now."""
    start = compute.create_event(timing=untimed != "start")
    end = compute.create_event(timing=untimed != "end")
    start.record()
    end.record()
    end.synchronize()
    with pytest.raises(g.ArgumentError, match=r"create_event\(timing=False\) cannot be timed"):
        start.elapsed_ms(end)
