"""Lifetimes: exporting Buffers and imported producers live exactly as long as someone uses them,
capsules never consumed free themselves, and a deleter may run on any thread."""

from __future__ import annotations

import ctypes
import sys
import threading
import weakref

import numpy as np
import pytest

import gompute as g
from gompute import interop

from .conftest import drain_releases
from .dlpack_abi import USED_VERSIONED, Producer, capi, managed

try:
    import torch
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def _live_bytes() -> int:
    return g.runtime.stats()["bytes_live"]


def test_exported_buffer_outlives_every_handle(host):
    drain_releases()  # earlier tests' garbage must not be released mid-test
    before = _live_bytes()
    buf = host.alloc(64)
    buf.upload(np.arange(16, dtype=np.float32))
    view = buf.view(g.f32, (4, 4))
    from_numpy = np.from_dlpack(view)
    from_torch = torch.from_dlpack(view) if torch is not None else None
    capsule = buf.view(g.f32, (16,)).__dlpack__(max_version=(1, 0))
    del view
    buf.free()  # this handle goes; the memory stays while the consumers hold it
    drain_releases()
    assert buf.freed
    assert _live_bytes() == before + 64
    np.testing.assert_array_equal(from_numpy, np.arange(16, dtype=np.float32).reshape(4, 4))
    if from_torch is not None:
        from_torch[3, 3] = -1
        assert from_numpy[3, 3] == -1
        del from_torch
    np.testing.assert_array_equal(np.from_dlpack(Producer(capsule))[:3], [0, 1, 2])
    del from_numpy, capsule
    drain_releases()
    assert _live_bytes() == before


@pytest.mark.parametrize("export", ["asarray", "memoryview", "frombuffer"])
def test_memory_exported_by_pointer_outlives_free(host, export):
    """The buffer protocol and __array_interface__ keep the Buffer object alive, not its memory:
    free() must leave that memory to the Buffer object's end, or the consumer reads and writes
    freed memory (it read the next allocation's bytes)."""
    drain_releases()
    before = _live_bytes()
    buf = host.alloc(64)
    buf.upload(np.arange(16, dtype=np.float32))
    typed = buf.view(g.f32, (16,))
    if export == "asarray":
        consumer = np.asarray(typed)
    elif export == "memoryview":
        consumer = np.asarray(memoryview(typed))
    else:
        consumer = np.frombuffer(typed, np.float32)
    typed.free()
    buf.free()
    drain_releases()
    assert typed.freed and _live_bytes() == before + 64
    other = host.alloc(64)
    other.upload(np.full(16, 9, np.float32))
    np.testing.assert_array_equal(consumer, np.arange(16, dtype=np.float32))
    del typed, other
    drain_releases()
    assert _live_bytes() == before + 64  # the consumer still holds the exporting Buffer
    del consumer
    drain_releases()
    assert _live_bytes() == before


def test_freeing_a_view_handle_keeps_the_parent_usable(pattern):
    view = pattern.view(g.u8, (4,))
    view.free()
    assert view.freed and not pattern.freed
    assert np.asarray(pattern)[:4].tolist() == [0, 1, 2, 3]


def test_export_of_a_freed_buffer_is_refused(host):
    buf = host.alloc(16)
    buf.free()
    with pytest.raises(g.BufferFreed):
        buf.__dlpack__(max_version=(1, 0))


def test_unconsumed_capsule_releases_its_producer(host):
    a = np.arange(8.0)
    alive = weakref.ref(a)
    buf = interop.asbuffer(a)
    capsule = buf.__dlpack__(max_version=(1, 0))
    del a, buf
    drain_releases()
    assert alive() is not None, "the capsule must keep the producer alive"
    del capsule
    drain_releases()
    assert alive() is None


def test_unconsumed_capsule_restores_the_refcount(host):
    a = np.arange(8.0)
    baseline = sys.getrefcount(a)
    buf = interop.asbuffer(a)
    for max_version in (None, (1, 0)):
        capsule = buf.__dlpack__(max_version=max_version)
        del capsule
    del buf
    drain_releases()
    assert sys.getrefcount(a) == baseline


def test_consumed_capsule_is_released_once_by_the_consumer(host):
    a = np.arange(8.0)
    alive = weakref.ref(a)
    consumer = np.from_dlpack(interop.asbuffer(a))
    del a
    drain_releases()
    assert alive() is not None
    assert consumer.tolist() == list(range(8))
    del consumer
    drain_releases()
    assert alive() is None


@needs_torch
def test_torch_consumer_releases_the_producer(host):
    a = np.arange(8.0)
    alive = weakref.ref(a)
    tensor = torch.from_dlpack(interop.asbuffer(a))
    del a
    drain_releases()
    assert alive() is not None and tensor.sum().item() == 28
    del tensor
    drain_releases()
    assert alive() is None


@needs_torch
def test_torch_producer_stays_alive_while_imported(host):
    tensor = torch.arange(6, dtype=torch.int64)
    alive = weakref.ref(tensor)
    out = np.from_dlpack(interop.asbuffer(tensor))
    del tensor
    drain_releases()
    assert alive() is not None and out.tolist() == list(range(6))
    del out
    drain_releases()
    assert alive() is None


def test_deleter_called_from_another_thread_without_the_gil(host):
    a = np.arange(8.0)
    alive = weakref.ref(a)
    capsule = interop.asbuffer(a).__dlpack__(max_version=(1, 0))
    m = managed(capsule)
    capi.PyCapsule_SetName(capsule, USED_VERSIONED)  # what a consumer does when it takes ownership
    del a, capsule
    drain_releases()
    assert alive() is not None
    # A CFUNCTYPE call releases the GIL for its duration: the deleter runs as a foreign thread would.
    worker = threading.Thread(target=m.deleter, args=(ctypes.pointer(m),))
    worker.start()
    worker.join()
    drain_releases()
    assert alive() is None


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
@pytest.mark.parametrize("max_version", [None, (1, 0)], ids=["legacy", "versioned"])
def test_100k_dropped_capsules_leak_nothing(pattern, max_version):
    view = pattern.view(g.f32, (8, 8))
    buffers = g.runtime.stats()["buffers_live"]
    for _ in range(1_000):  # warm the allocator
        view.__dlpack__(max_version=max_version)
    start = _rss_bytes()
    for _ in range(100_000):
        view.__dlpack__(max_version=max_version)
    drain_releases()
    assert _rss_bytes() - start < 4 << 20  # a leak would be about 100 bytes each, 10+ MB
    assert g.runtime.stats()["buffers_live"] == buffers


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_capsules_held_then_dropped_together_leak_nothing(pattern):
    view = pattern.view(g.f32, (8, 8))

    def round_trip():
        held = [view.__dlpack__(max_version=(1, 0)) for _ in range(20_000)]
        del held
        drain_releases()

    round_trip()
    start = _rss_bytes()
    for _ in range(5):
        round_trip()
    assert _rss_bytes() - start < 4 << 20


def test_a_thread_queueing_copies_releases_what_earlier_copies_held_while_main_is_blocked(host):
    """Finished host work hands its arrays back through a pending call, which only the main
    thread runs; with main blocked in join(), a thread queueing more copies releases them."""
    stream, buf, alive = host.create_stream(), host.alloc(8000), []

    def copies():
        refs = []
        for _ in range(200):
            a = np.ones(1000)
            refs.append(weakref.ref(a))
            buf.upload(a, stream=stream)
            del a
            stream.synchronize()
        alive.append(sum(r() is not None for r in refs))

    worker = threading.Thread(target=copies)
    worker.start()
    worker.join()
    assert alive[0] <= 1  # the last copy's array, until the next call into gompute
