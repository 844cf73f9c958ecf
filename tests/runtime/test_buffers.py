"""Buffers: transfers, bounds checks, device-to-device copies, free, pinned memory."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import gompute as g


def _pattern(n: int) -> np.ndarray:
    return (np.arange(n) * 7 % 251).astype(np.uint8)


def _contents(buf) -> np.ndarray:
    out = np.empty(buf.nbytes, np.uint8)
    buf.download(out)
    return out


@pytest.fixture
def buf(compute):
    """A 256-byte buffer holding _pattern(256)."""
    b = compute.alloc(256)
    b.upload(_pattern(256))
    yield b
    b.free()


# ---- what a buffer is -------------------------------------------------------------


def test_buffer_properties(compute):
    with compute.alloc(100) as b:
        assert b.nbytes == 100
        assert b.offset == 0
        assert not b.freed
        assert b.backend is compute.backend
        assert b.device == compute.ordinal
        assert b.device_addr() != 0
        assert b.arg_ptr().is_buffer and b.arg_ptr().nbytes == 8
        assert int.from_bytes(b.arg_ptr().data, "little") == b.device_addr()
    assert b.freed


def test_a_buffer_does_not_pickle_or_copy_and_says_what_to_send(compute):
    buf = compute.alloc(16)
    for act in (pickle.dumps, copy.copy, copy.deepcopy):
        with pytest.raises(g.ArgumentError, match=r"does not pickle or copy; send its values instead"):
            act(buf)


def test_a_gpu_refuses_a_view_whose_elements_are_not_aligned_to_their_size(compute):
    """A GPU faults on a misaligned element (CUDA_ERROR_MISALIGNED_ADDRESS ends the context); the
    host reads any address. Aligned views, byte views and empty ones are fine everywhere."""
    buf = compute.alloc(64)
    misaligned = [lambda: buf.view(g.f32, (4,), offset=1), lambda: buf.view(g.f64, (2, 2), (16, 6), offset=8)]
    misaligned.append(lambda: buf.view_bytes(2, 40).view(g.i32, (4,)))
    for view in misaligned:
        if compute.backend is g.Backend.host:
            assert view().size > 0
        else:
            with pytest.raises(g.ArgumentError, match=r"reads a \d-byte element only at an address that is a multiple"):
                view()
    assert buf.view(g.f32, (4,), offset=4).size == 4 and buf.view(g.u8, (3,), offset=1).size == 3
    assert buf.view(g.f32, (0,), offset=1).size == 0 and buf.view(g.f64, (2,), (-8,), offset=8).size == 2
    if compute.backend is g.Backend.cuda:  # another library's array, through the CUDA Array Interface

        class Foreign:
            __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (buf.device_addr() + 2, False)}
            __cuda_array_interface__ |= {"version": 3, "strides": None, "stream": None}

        with pytest.raises(g.ArgumentError, match="first element or strides are not; copy it"):
            g.asbuffer(Foreign())


def test_host_buffers_are_64_byte_aligned(host):
    buffers = [host.alloc(n) for n in (1, 3, 64, 65, 1000)]
    assert all(b.device_addr() % 64 == 0 for b in buffers)
    for b in buffers:
        b.free()


def test_alloc_counts_live_bytes(compute):
    before = g.runtime.stats()
    b = compute.alloc(4096)
    during = g.runtime.stats()
    b.free()
    after = g.runtime.stats()
    assert during["buffers_allocated"] == before["buffers_allocated"] + 1
    assert during["bytes_live"] == before["bytes_live"] + 4096
    assert after["bytes_live"] == before["bytes_live"]
    assert after["buffers_live"] == before["buffers_live"]


@pytest.mark.parametrize("bad", [-1, 2.5, "8", True], ids=repr)
def test_alloc_refuses_a_size_that_is_not_a_count_of_bytes(compute, bad):
    with pytest.raises((g.ArgumentError, g.AllocFailed)):
        compute.alloc(bad)


def test_a_huge_alloc_fails_politely(compute):
    with pytest.raises(g.AllocFailed):
        compute.alloc(1 << 62)


# ---- upload and download --------------------------------------------------------


@pytest.mark.parametrize(
    "make_src",
    [
        lambda d: d,
        lambda d: bytes(d),
        lambda d: bytearray(d),
        lambda d: memoryview(bytes(d)),
        lambda d: d.view(np.float32),
    ],
    ids=["ndarray", "bytes", "bytearray", "memoryview", "float32-view"],
)
def test_upload_download_roundtrip_any_buffer_protocol_object(compute, make_src):
    data = _pattern(64)
    with compute.alloc(64) as b:
        b.upload(make_src(data))
        out_array = np.zeros(64, np.uint8)
        b.download(out_array)
        out_bytes = bytearray(64)
        b.download(out_bytes)
    np.testing.assert_array_equal(out_array, data)
    assert bytes(out_bytes) == data.tobytes()


def test_upload_a_read_only_source_is_fine(compute):
    data = _pattern(32)
    data.flags.writeable = False
    with compute.alloc(32) as b:
        b.upload(data)
        np.testing.assert_array_equal(_contents(b), data)


def test_partial_upload_and_download_with_nbytes_and_offset(buf):
    buf.upload(np.full(16, 0xEE, np.uint8), nbytes=8, offset=100)
    expected = _pattern(256)
    expected[100:108] = 0xEE
    np.testing.assert_array_equal(_contents(buf), expected)
    out = np.zeros(16, np.uint8)
    buf.download(out, nbytes=10, offset=98)
    np.testing.assert_array_equal(out[:10], expected[98:108])
    assert (out[10:] == 0).all()


def test_upload_at_and_download_at(buf):
    """The seed's uploadAt / downloadAt: offset first, then the byte count."""
    buf.upload_at(np.full(8, 0x11, np.uint8), 200)
    buf.upload_at(np.full(8, 0x22, np.uint8), 40, 4)
    expected = _pattern(256)
    expected[200:208] = 0x11
    expected[40:44] = 0x22
    out = np.zeros(256, np.uint8)
    buf.download_at(out, 0)
    np.testing.assert_array_equal(out, expected)
    tail = np.zeros(6, np.uint8)
    buf.download_at(tail, 250)
    np.testing.assert_array_equal(tail, expected[250:])
    part = np.zeros(6, np.uint8)
    buf.download_at(part, 200, 3)
    np.testing.assert_array_equal(part, [0x11, 0x11, 0x11, 0, 0, 0])


def test_upload_at_and_download_at_are_bounds_checked(buf):
    with pytest.raises(g.CopyFailed, match=r"256.*\[250, 258\)|\[250, 258\).*256"):
        buf.upload_at(np.zeros(8, np.uint8), 250)
    with pytest.raises(g.CopyFailed, match=r"256"):
        buf.download_at(np.zeros(8, np.uint8), 257, 0)


def test_upload_and_download_on_a_stream(compute, buf):
    with compute.create_stream() as s:
        src = np.full(256, 5, np.uint8)
        buf.upload(src, stream=s)
        out = np.zeros(256, np.uint8)
        buf.download(out, stream=s)
        s.synchronize()
    np.testing.assert_array_equal(out, src)


def test_offsets_at_the_very_end_of_a_buffer(buf):
    buf.upload(np.array([0xAA], np.uint8), offset=255)
    last = np.zeros(1, np.uint8)
    buf.download(last, offset=255)
    assert last[0] == 0xAA
    buf.upload(b"", offset=256)  # an empty transfer at the end is in range
    buf.download(bytearray(), offset=256)


# ---- bounds checks and bad host objects ---------------------------------------------


@pytest.mark.parametrize(
    "nbytes, offset, span",
    [
        (257, 0, "[0, 257)"),
        (8, 250, "[250, 258)"),
        (0, 257, "[257, 257)"),
        (1, 256, "[256, 257)"),
        (8, 2**64 - 2, "[18446744073709551614, past 2**64)"),  # the end wrapped around to 6
    ],
)
def test_overruns_are_refused_naming_size_and_range(buf, nbytes, offset, span):
    src = np.zeros(max(nbytes, 1), np.uint8)
    with pytest.raises(g.CopyFailed) as up:
        buf.upload(src, nbytes=nbytes, offset=offset)
    with pytest.raises(g.CopyFailed) as down:
        buf.download(np.zeros(max(nbytes, 1), np.uint8), nbytes=nbytes, offset=offset)
    for err in (up, down):
        assert "256" in str(err.value) and span in str(err.value)
    np.testing.assert_array_equal(_contents(buf), _pattern(256))  # nothing was written


def test_nbytes_larger_than_the_host_object_is_refused(buf):
    with pytest.raises(g.CopyFailed, match="holds only 8 bytes"):
        buf.upload(np.zeros(8, np.uint8), nbytes=16)
    with pytest.raises(g.CopyFailed, match="holds only 8 bytes"):
        buf.download(np.zeros(8, np.uint8), nbytes=16)


@pytest.mark.parametrize("dst", [b"\x00" * 16, memoryview(b"\x00" * 16)], ids=["bytes", "memoryview"])
def test_download_into_read_only_memory_is_refused(buf, dst):
    with pytest.raises(g.CopyFailed, match="read-only"):
        buf.download(dst)


def test_download_into_a_read_only_array_is_refused(buf):
    dst = np.zeros(16, np.uint8)
    dst.flags.writeable = False
    with pytest.raises(g.CopyFailed, match="read-only"):
        buf.download(dst)
    assert (dst == 0).all()


@pytest.mark.parametrize("obj", [[1, 2, 3], 42, "text", None], ids=repr)
def test_objects_without_the_buffer_protocol_are_refused(buf, obj):
    with pytest.raises(g.ArgumentError, match="buffer protocol"):
        buf.upload(obj)
    with pytest.raises(g.ArgumentError, match="buffer protocol"):
        buf.download(obj)


def test_a_non_contiguous_array_is_refused(buf):
    strided = np.zeros(32, np.uint8)[::2]
    with pytest.raises(g.GomputeError, match="contiguous"):
        buf.upload(strided)
    with pytest.raises(g.GomputeError, match="contiguous"):
        buf.download(strided)


# ---- zero bytes ---------------------------------------------------------------------


def test_zero_byte_buffers_and_transfers(compute):
    with compute.alloc(0) as empty:
        assert empty.nbytes == 0
        empty.upload(b"")
        empty.upload(np.zeros(0, np.float32))
        empty.download(bytearray())
        empty.download(np.zeros(4, np.uint8), nbytes=0)
        empty.copy_from(empty)
        assert empty.arg_ptr().nbytes == 8
        with pytest.raises(g.CopyFailed, match="0-byte"):
            empty.upload(b"x")
    with compute.alloc(16) as b:
        b.upload(_pattern(16))
        b.upload(b"")
        b.copy_from(b, src_offset=4, dst_offset=0, nbytes=0)
        np.testing.assert_array_equal(_contents(b), _pattern(16))


# ---- copy_from ----------------------------------------------------------------------


def test_copy_from_whole_and_partial(compute, buf):
    with compute.alloc(256) as dst:
        dst.upload(np.zeros(256, np.uint8))
        dst.copy_from(buf)
        np.testing.assert_array_equal(_contents(dst), _pattern(256))
        dst.upload(np.zeros(256, np.uint8))
        dst.copy_from(buf, src_offset=16, dst_offset=100, nbytes=32)
        expected = np.zeros(256, np.uint8)
        expected[100:132] = _pattern(256)[16:48]
        np.testing.assert_array_equal(_contents(dst), expected)
        dst.copy_from(buf, src_offset=240)  # default nbytes: the rest of the source
        expected[:16] = _pattern(256)[240:]
        np.testing.assert_array_equal(_contents(dst), expected)


def test_copy_from_on_a_stream(compute, buf):
    with compute.alloc(256) as dst, compute.create_stream() as s:
        dst.copy_from(buf, stream=s)
        s.synchronize()
        np.testing.assert_array_equal(_contents(dst), _pattern(256))


def test_a_copy_without_a_stream_is_done_when_it_returns(compute, buf):
    """Work on a stream sees it. The CUDA driver's synchronous copies from pageable memory and
    between device buffers may return before their bytes land on the legacy default stream,
    which gompute's non-blocking streams do not wait for (the fake driver returns early too)."""
    new = _pattern(256)[::-1].copy()
    with compute.alloc(256) as dst, compute.create_stream() as s:
        buf.upload(new)
        dst.copy_from(buf, stream=s)
        seen = np.empty(256, np.uint8)
        dst.download(seen, stream=s)
        s.synchronize()
        np.testing.assert_array_equal(seen, new)
        dst.upload(np.zeros(256, np.uint8), stream=s)
        s.synchronize()
        dst.copy_from(buf)
        dst.download(seen, stream=s)
        s.synchronize()
        np.testing.assert_array_equal(seen, new)


@pytest.mark.parametrize("src_offset, dst_offset", [(0, 8), (8, 0), (0, 100), (100, 3)], ids=str)
@pytest.mark.parametrize("on_stream", [False, True], ids=["sync", "stream"])
def test_overlapping_copy_within_one_buffer_is_a_memmove(compute, buf, src_offset, dst_offset, on_stream):
    n = 120
    expected = _pattern(256)
    expected[dst_offset : dst_offset + n] = _pattern(256)[src_offset : src_offset + n].copy()
    with compute.create_stream() as s:
        stream = s if on_stream else None
        buf.copy_from(buf, src_offset=src_offset, dst_offset=dst_offset, nbytes=n, stream=stream)
        s.synchronize()
    np.testing.assert_array_equal(_contents(buf), expected)


@pytest.mark.parametrize("forward", [True, False])
def test_overlapping_copy_between_views_of_one_buffer(buf, forward):
    low, high = buf.view_bytes(0, 200), buf.view_bytes(40, 200)
    assert (low.offset, high.offset) == (0, 40)
    assert high.device_addr() == buf.device_addr() + 40
    dst, src = (high, low) if forward else (low, high)
    dst.copy_from(src)
    expected = _pattern(256)
    if forward:
        expected[40:240] = _pattern(256)[0:200]
    else:
        expected[0:200] = _pattern(256)[40:240]
    np.testing.assert_array_equal(_contents(buf), expected)


def test_a_view_outside_its_buffer_is_refused(buf):
    with pytest.raises(g.ArgumentError, match="256-byte"):
        buf.view_bytes(200, 57)


@pytest.mark.parametrize(
    "kwargs, which",
    [
        (dict(src_offset=200, nbytes=100), "source"),
        (dict(dst_offset=200, nbytes=100), "destination"),
        (dict(src_offset=300, nbytes=0), "source"),
    ],
    ids=["source", "destination", "source-offset"],
)
def test_copy_from_overruns_are_refused(compute, buf, kwargs, which):
    with compute.alloc(256) as dst:
        with pytest.raises(g.CopyFailed, match=f"{which}.*256"):
            dst.copy_from(buf, **kwargs)


def test_buffers_of_two_computes_on_one_device_share_the_context(compute):
    other = type(compute).init_device(compute.ordinal)
    try:
        assert compute._device.same_context(other._device)
        with compute.alloc(32) as a, other.alloc(32) as b:
            a.upload(_pattern(32))
            b.copy_from(a)
            np.testing.assert_array_equal(_contents(b), _pattern(32))
    finally:
        other.deinit()


# ---- free ---------------------------------------------------------------------------


def test_free_is_idempotent_and_use_after_free_raises(compute):
    b = compute.alloc(64)
    b.free()
    b.free()
    assert b.freed
    assert b.nbytes == 64
    calls = {
        "upload": lambda: b.upload(np.zeros(8, np.uint8)),
        "download": lambda: b.download(np.zeros(8, np.uint8)),
        "upload_empty": lambda: b.upload(b""),
        "copy_into": lambda: b.copy_from(live),
        "copy_out_of": lambda: live.copy_from(b),
        "arg_ptr": b.arg_ptr,
        "device_addr": b.device_addr,
        "view_bytes": lambda: b.view_bytes(0, 8),
    }
    with compute.alloc(64) as live:
        for name, call in calls.items():
            with pytest.raises(g.BufferFreed, match="freed"):
                call()
            assert name


def test_with_frees_the_buffer(compute):
    before = g.runtime.stats()["bytes_live"]
    with compute.alloc(1024) as b:
        assert g.runtime.stats()["bytes_live"] == before + 1024
    assert b.freed
    assert g.runtime.stats()["bytes_live"] == before
    with pytest.raises(g.BufferFreed):
        b.upload(b"1234")


# ---- pinned host memory ---------------------------------------------------------------


def test_pinned_memory_is_viewable_and_a_transfer_source(compute):
    pinned = compute.alloc_pinned(4096)
    assert pinned.nbytes == 4096
    view = np.frombuffer(pinned, np.float32)
    assert view.size == 1024
    view[:] = np.arange(1024, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(pinned).view(np.float32), view)  # the same memory
    with compute.alloc(4096) as b, compute.create_stream() as s:
        b.upload(pinned, stream=s)
        back = compute.alloc_pinned(4096)
        b.download(back, stream=s)
        s.synchronize()
        np.testing.assert_array_equal(np.frombuffer(back, np.float32), np.arange(1024, dtype=np.float32))


def test_zero_byte_pinned_memory(compute):
    pinned = compute.alloc_pinned(0)
    assert pinned.nbytes == 0
    assert np.asarray(pinned).size == 0


def test_transfers_through_a_view_address_its_elements(host):
    """upload/download/copy_from of a typed view wrote and read from the buffer's first byte."""
    with host.alloc(32) as b:
        b.upload(np.zeros(32, np.uint8))
        v = b.view(g.u32, 4, offset=16)  # elements at bytes [16, 32)
        v.upload(np.array([1, 2, 3, 4], np.uint32))
        np.testing.assert_array_equal(np.frombuffer(bytes(memoryview(b)), np.uint32), [0, 0, 0, 0, 1, 2, 3, 4])
        out = np.zeros(4, np.uint32)
        v.download(out)
        np.testing.assert_array_equal(out, [1, 2, 3, 4])
        w = b.view(g.u32, 4, offset=0)
        w.copy_from(v)
        np.testing.assert_array_equal(np.asarray(w), [1, 2, 3, 4])
        with pytest.raises(g.CopyFailed, match="overruns the 16-byte buffer"):
            v.upload(np.zeros(5, np.uint32))


def test_a_transfer_through_a_strided_view_is_refused(host):
    with host.alloc(16) as b:
        reversed_view = b.view(g.u32, 4, strides=-4, offset=12)
        with pytest.raises(g.CopyFailed, match="not one run of bytes.*np.asarray"):
            reversed_view.download(np.zeros(4, np.uint32))
