"""Wrong arguments to the runtime's calls: an ArgumentError naming the argument and what it
takes, never pybind11's "incompatible function arguments" or a wrapped-around size."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g

BYTES = np.zeros(8, np.uint8)

# (call on a 64-byte buffer `b` and a Compute `c`, the message it must carry)
BUFFER_CALLS = {
    "upload offset -1": (lambda b, c: b.upload(BYTES, offset=-1), "upload: offset must be from 0 to 2**64 - 1, got -1"),
    "upload nbytes 1.5": (lambda b, c: b.upload(BYTES, nbytes=1.5), "upload: nbytes must be an int, got float"),
    "upload stream 5": (lambda b, c: b.upload(BYTES, stream=5), "upload: stream takes a gompute Stream or None"),
    "upload_at -8": (lambda b, c: b.upload_at(BYTES, -8), "upload: offset must be from 0"),
    "download nbytes -1": (lambda b, c: b.download(BYTES, nbytes=-1), "download: nbytes must be from 0"),
    "download stream str": (lambda b, c: b.download(BYTES, stream="s"), "download: stream takes a gompute Stream"),
    "download_at 2**64": (lambda b, c: b.download_at(BYTES, 2**64), "download: offset must be from 0 to 2**64 - 1"),
    "copy_from an ndarray": (lambda b, c: b.copy_from(BYTES), "copy_from copies from another gompute Buffer"),
    "copy_from src_offset -1": (lambda b, c: b.copy_from(b, -1), "copy_from: src_offset must be from 0"),
    "copy_from dst_offset 2**64": (lambda b, c: b.copy_from(b, 0, 2**64), "copy_from: dst_offset must be from 0"),
    "copy_from stream 5": (lambda b, c: b.copy_from(b, stream=5), "copy_from: stream takes a gompute Stream"),
    "view_bytes -1": (lambda b, c: b.view_bytes(-1, 4), "view_bytes: offset must be from 0"),
    "view shape of floats": (lambda b, c: b.view(g.u8, (2.0,)), "view: shape (each entry) must be an int, got float"),
    "view shape str": (lambda b, c: b.view(g.u8, "ab"), "view: shape must be an int or a tuple of ints, got str"),
    "view strides None entry": (lambda b, c: b.view(g.u8, (2,), (None,)), "view: strides (each entry) must be an int"),
    "view offset 2**63": (lambda b, c: b.view(g.u8, 1, 1, 2**63), "view: offset must be from -2**63 to 2**63 - 1"),
    "stream = 5": (lambda b, c: setattr(b, "stream", 5), "Buffer.stream takes a gompute Stream or None, got int"),
    "alloc 2**64": (lambda b, c: c.alloc(2**64), "alloc: nbytes must be from 0 to 2**64 - 1"),
    "empty shape None": (lambda b, c: c.empty(None, g.f32), "a shape is an int or a tuple of non-negative ints"),
    "create_event timing": (lambda b, c: c.create_event(timing="yes"), "create_event: timing is True or False"),
    "alloc_pinned 2**64": (lambda b, c: c.alloc_pinned(2**64), "alloc_pinned: nbytes must be from 0 to 2**64 - 1"),
    "record on 5": (lambda b, c: c.create_event().record(5), "Event.record: stream takes a gompute Stream"),
    "wait on 5": (lambda b, c: c.create_event().wait(5), "Event.wait: stream takes a gompute Stream"),
    "elapsed_ms(None)": (lambda b, c: c.create_event().elapsed_ms(None), "elapsed_ms(end) takes the Event"),
    "init_device 2**40": (lambda b, c: type(c).init_device(2**40), "device ordinal 1099511627776 is out of range"),
}


@pytest.mark.parametrize("name", BUFFER_CALLS)
def test_a_wrong_argument_is_an_argument_error_naming_it(compute, name):
    call, message = BUFFER_CALLS[name]
    with compute.alloc(64) as b:
        with pytest.raises(g.ArgumentError) as raised:
            call(b, compute)
    assert message in str(raised.value)


def test_numpy_integers_are_sizes_and_shapes(compute):
    with compute.alloc(np.int64(16)) as b:
        assert b.nbytes == 16
        b.upload(np.arange(4, dtype=np.uint8), nbytes=np.uint32(4), offset=np.int16(12))
        assert b.view(g.u8, (np.int64(4),), offset=np.int8(12)).shape == (4,)
    assert compute.empty((np.int64(2), np.uint8(3)), g.f32).shape == (2, 3)


def test_a_size_near_2_to_the_64_does_not_wrap_to_a_small_allocation(compute):
    """Rounding 2**64 - 1 up to whole 64-byte units wrapped to a few bytes: a "huge" buffer
    over a tiny allocation."""
    with pytest.raises(g.AllocFailed):
        compute.alloc(2**64 - 1)


# ---- the buffer protocol says why it cannot ----------------------------------------------


def test_the_buffer_protocol_on_a_freed_buffer_is_buffer_freed(host):
    b = host.alloc(16)
    b.free()
    with pytest.raises(g.BufferFreed, match="freed"):
        memoryview(b)
    with pytest.raises(g.BufferFreed, match="freed"):
        host.alloc(16).upload(b)


def test_the_buffer_protocol_on_bfloat16_says_to_use_dlpack(host):
    with pytest.raises(g.ArgumentError, match="bfloat16 has no buffer-protocol format; exchange it through DLPack"):
        memoryview(host.alloc(16).view(g.bf16, 8))


def test_uploading_from_a_device_buffer_says_to_copy_between_buffers(compute):
    if compute.backend is g.Backend.host:
        pytest.skip("a host Buffer is host memory, a fine upload source")
    with compute.alloc(16) as src, compute.alloc(16) as dst:
        with pytest.raises(g.ArgumentError, match="is device memory; copy between Buffers with copy_from"):
            dst.upload(src)


# ---- raw launches ---------------------------------------------------------------------------

LAUNCH_CALLS = {
    "shared_bytes -1": (dict(shared_bytes=-1), "launch: shared_bytes must be from 0 to 4294967295, got -1"),
    "shared_bytes 2**32": (dict(shared_bytes=2**32), "launch: shared_bytes must be from 0 to 4294967295"),
    "grid 2**64": (dict(grid=2**64), "Dim3.x must be between 1 and 2147483647, got 18446744073709551616"),
    "block 0": (dict(block=(4, 0)), "Dim3.y must be between 1 and 2147483647, got 0"),
    "args None": (dict(args=None), "launch: args must be a list or tuple of kernel arguments"),
    "args one Arg": (dict(args="one"), "launch: args is a list of arguments; pass [arg]"),
    "args a generator": (dict(args="generator"), "got generator"),
    "stream 5": (dict(stream=5), "launch: stream takes a gompute Stream or None, got int"),
}


def _fill_args(b, n=16, value=7):
    return [b.arg_ptr(), g.interface.arg(g.u64(n)), g.interface.arg(g.u32(value))]


@pytest.mark.parametrize("name", LAUNCH_CALLS)
def test_a_wrong_launch_argument_is_an_argument_error_naming_it(compute, kernels, name):
    changes, message = LAUNCH_CALLS[name]
    fill = kernels.get_kernel("fill_u32")
    with compute.alloc(64) as b:
        call = dict(grid=1, block=16, shared_bytes=0, args=_fill_args(b), stream=None)
        call.update(changes)
        if call["args"] == "one":
            call["args"] = b.arg_ptr()
        elif call["args"] == "generator":
            call["args"] = (a for a in _fill_args(b))
        with pytest.raises(g.ArgumentError) as raised:
            fill.launch(call["grid"], call["block"], call["shared_bytes"], call["args"], stream=call["stream"])
    assert message in str(raised.value)


def test_launch_takes_numpy_integers_lists_and_tuples(compute, kernels):
    fill = kernels.get_kernel("fill_u32")
    with compute.alloc(64) as b:
        fill.launch(np.int64(2), [8], np.uint32(0), tuple(_fill_args(b)), wait=True)
        assert (np.asarray(b.view(g.u32, 16)) == 7).all()


def test_launch_on_stream_needs_a_stream(compute, kernels):
    fill = kernels.get_kernel("fill_u32")
    with compute.alloc(64) as b:
        with pytest.raises(g.ArgumentError, match="launch_on_stream needs a Stream; for the default stream use launch"):
            fill.launch_on_stream(1, 16, 0, _fill_args(b), None)
