"""Repeated g.map calls take the C++ fast path; every call it cannot take exactly falls back.

Each test warms the kernel up first (the general path teaches the fast path), then checks
the calls that follow, which are the fast path's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gompute as g

from .calls import counting
from .kernels import add, axpy, double, is_positive, scale_relu

rng = np.random.default_rng(11)


def expected(x, scale):
    return np.maximum(x * np.float32(scale), 0).astype(np.float32)


@pytest.fixture
def warm():
    """A fresh g.map of scale_relu that has already run once in place and once out of place."""
    k = g.map(scale_relu)
    x = np.ones(8, np.float32)
    k(x, out=x, scale=1)
    k(x, scale=1)
    return k


def test_repeated_calls_launch_and_compute(warm):
    for n in (1, 255, 256, 257, 10_000):
        x = rng.standard_normal(n).astype(np.float32)
        before = g.runtime.stats()["launches"]
        y = warm(x, scale=2)
        np.testing.assert_array_equal(y, expected(x, 2))
        assert y.dtype == np.float32 and y.shape == x.shape
        want = expected(x, 3)
        assert warm(x, out=x, scale=3) is x
        np.testing.assert_array_equal(x, want)
        assert g.runtime.stats()["launches"] == before + 2


def test_multi_dimensional_contiguous(warm):
    x = rng.standard_normal((7, 9, 3)).astype(np.float32)
    np.testing.assert_array_equal(warm(x, scale=2), expected(x, 2))


def test_non_contiguous_after_warm_up_still_reads_the_right_elements(warm):
    x = rng.standard_normal((50, 40)).astype(np.float32)
    for view in (x.T, x[::2], x[:, ::-1]):
        np.testing.assert_array_equal(warm(view, scale=2), expected(view, 2))


def test_bad_params_after_warm_up_still_raise(warm):
    x = np.ones(4, np.float32)
    with pytest.raises(g.ArgumentError, match="scale"):
        warm(x)
    with pytest.raises(g.ArgumentError, match="bias"):
        warm(x, scale=1, bias=2)
    with pytest.raises(g.ArgumentError, match="overflow"):
        warm(x, scale=1e39)
    with pytest.raises(g.ArgumentError):
        warm(x, scale="big")
    np.testing.assert_array_equal(warm(x, scale=np.float32(2)), expected(x, 2))  # a NumPy scalar is fine


def test_bad_outputs_after_warm_up_still_raise(warm):
    x = np.ones(8, np.float32)
    frozen = np.zeros(8, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(g.ArgumentError, match="read-only"):
        warm(x, out=frozen, scale=1)
    with pytest.raises(g.ArgumentError, match="read-only"):
        warm(frozen, out=frozen, scale=1)  # in place: the input is read once, as the output
    with pytest.raises(g.ArgumentError, match="shape"):
        warm(x, out=np.zeros(9, np.float32), scale=1)
    a = np.arange(16, dtype=np.float32)
    with pytest.raises(g.ArgumentError, match="shares memory with input"):
        warm(a[:8], out=a[4:12], scale=1)


def test_other_dtypes_after_warm_up(warm):
    small = np.arange(-4, 4, dtype=np.int16)
    np.testing.assert_array_equal(warm(small, scale=2), expected(small.astype(np.float32), 2))
    np.testing.assert_array_equal(warm(small, scale=2), expected(small.astype(np.float32), 2))
    with pytest.raises(g.ArgumentError, match="int64"):
        warm(np.arange(3, dtype=np.int64), scale=1)
    out = np.empty(8, np.float64)
    warm(small, out=out, scale=2)
    warm(small, out=out, scale=3)
    np.testing.assert_array_equal(out, expected(small.astype(np.float32), 3).astype(np.float64))


def test_multi_input_and_generic_kernels():
    k = g.map(axpy)
    a, x, y = (rng.standard_normal(1000) for _ in range(3))
    for _ in range(3):
        np.testing.assert_array_equal(k(a, x, y), a * x + y)
    for _ in range(2):  # out is an input: each element is read before it is written
        want = a * x + y
        k(a, x, y, out=y)
        np.testing.assert_array_equal(y, want)
    add_k = g.map(add)
    for dtype in (np.int32, np.float64, np.int32):
        u = rng.integers(-9, 9, 300).astype(dtype)
        for _ in range(2):
            z = add_k(u, u)
            assert z.dtype == dtype
            np.testing.assert_array_equal(z, u + u)


def test_bool_output_and_no_params():
    k, d = g.map(is_positive), g.map(double)
    x = rng.standard_normal(100).astype(np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(k(x), x > 0)
        np.testing.assert_array_equal(d(x), x * 2)
    with pytest.raises(g.ArgumentError, match="no params"):
        d(x, scale=1)


def test_zero_size_after_warm_up(warm):
    y = warm(np.zeros(0, np.float32), scale=1)
    assert y.shape == (0,) and y.dtype == np.float32


def test_torch_tensors_take_the_fast_path_through_dlpack():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    k = g.map(scale_relu)
    t = torch.randn(5000)
    for scale in (2, 3, 0.5):
        want = expected(t.numpy(), scale)
        before = g.runtime.stats()["launches"]
        assert k(t, out=t, scale=scale) is t
        np.testing.assert_array_equal(t.numpy(), want)
        assert g.runtime.stats()["launches"] == before + 1
    view = torch.randn(40, 30).t()  # not contiguous: the general path, still right
    np.testing.assert_array_equal(k(view, scale=2).numpy(), expected(view.numpy(), 2))
    y = k(t, scale=1)  # a new torch result comes from the general path
    assert isinstance(y, torch.Tensor)
    np.testing.assert_array_equal(y.numpy(), expected(t.numpy(), 1))


def test_f16_params_pack_like_numpy():
    from .kernels import scale_half

    k = g.map(scale_half)
    x = rng.standard_normal(100).astype(np.float16)
    for scale in (0.1, 3.3, 1 / 3):
        got = k(x, scale=scale)
        np.testing.assert_array_equal(got, x * np.float16(scale))
    with pytest.raises(g.ArgumentError, match="overflow"):
        k(x, scale=1e6)


def test_call_slot_is_an_ordinary_call(warm):
    x = rng.standard_normal(16).astype(np.float32)
    np.testing.assert_array_equal(warm.__call__(x, scale=2), expected(x, 2))
    np.testing.assert_array_equal(type(warm).__call__(warm, x, scale=2), expected(x, 2))
    with pytest.raises(g.ArgumentError, match="takes 1 array"):
        g.map(scale_relu)(x, x, scale=2)  # one array too many: the general path's error
    assert warm(x, stream=None, scale=2).shape == x.shape  # stream=None is no stream


def test_g_map_binds_again_after_shutdown():
    # shutdown() ends every handle of the runtime; a g.map is not one: its next call, on
    # either path, binds to the new runtime. In a child process, since shutdown ends every
    # host handle of the process.
    script = """
import numpy as np, gompute as g
from tests.map.kernels import scale_relu
k = g.map(scale_relu)
x = np.ones(4, np.float32)
k(x, out=x, scale=1)
k(x, out=x, scale=1)
before = g.runtime.host.Compute.init().empty((4,), g.f32)
k(before, scale=1)
k(before, scale=1)  # the C++ path makes Buffer results with this runtime's Compute now
bound = g.BoundKernel(scale_relu, g.Backend.host)
g.runtime.shutdown()
calls, general = [], k._general
k._general = lambda *a, **kw: (calls.append(1), general(*a, **kw))[1]
for scale in (2, 3, 1):
    k(x, out=x, scale=scale)
print("after", x.tolist(), "general calls", len(calls))
try:
    bound(x, out=x, scale=1)
except g.InvalidHandle as e:
    print("InvalidHandle:", e)
# A result made like an earlier runtime's (a new Buffer): the C++ path had kept the old
# Compute's maker, and raised InvalidHandle for every call.
c = g.runtime.host.Compute.init()
b = c.empty((4,), g.f32)
np.asarray(b)[:] = 1
made = [np.asarray(k(b, scale=3)).tolist() for _ in range(3)]
print("new buffers", made)
"""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "after [6.0, 6.0, 6.0, 6.0] general calls 1" in done.stdout  # then the fast path again
    assert "InvalidHandle: " in done.stdout and "shut down" in done.stdout  # g.BoundKernel is a handle
    assert "new buffers [[3.0, 3.0, 3.0, 3.0], [3.0, 3.0, 3.0, 3.0], [3.0, 3.0, 3.0, 3.0]]" in done.stdout


def test_new_outputs_are_made_by_the_first_arrays_library_in_cpp():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    k, calls = counting(scale_relu)
    x = rng.standard_normal((30, 7)).astype(np.float32)
    t = torch.from_numpy(x.copy())
    host = g.runtime.host.Compute.init()
    buf = host.empty(x.shape, g.f32)
    np.asarray(buf)[...] = x
    for _ in range(3):
        y = k(x, scale=2)
        assert isinstance(y, np.ndarray) and y.dtype == np.float32
        np.testing.assert_array_equal(y, expected(x, 2))
        u = k(t, scale=2)
        assert isinstance(u, torch.Tensor) and u.dtype == torch.float32 and tuple(u.shape) == x.shape
        np.testing.assert_array_equal(u.numpy(), expected(x, 2))
        b = k(buf, scale=2)
        assert isinstance(b, g.Buffer) and tuple(b.shape) == x.shape
        np.testing.assert_array_equal(np.asarray(b), expected(x, 2))
        assert b is not buf and np.asarray(b) is not np.asarray(buf)
    assert calls == ["ndarray", "Tensor", "Buffer"]  # each library's first call only
    w = k(t[::2], scale=3)  # strided in C order: a new C-contiguous tensor, once general then in C++
    w = k(t[::2], scale=3)
    np.testing.assert_array_equal(w.numpy(), expected(x[::2], 3))
    assert w.is_contiguous() and len(calls) == 4
    v = k(t.T, scale=3)  # a transpose: a new tensor laid out like it, which only the general path makes
    v = k(t.T, scale=3)
    np.testing.assert_array_equal(v.numpy(), expected(x.T, 3))
    assert v.stride() == t.T.stride() and len(calls) == 6


def test_g_map_is_one_object_per_kernel_so_inline_calls_are_cached():
    assert g.map(double) is g.map(double)
    x = np.arange(6.0)
    g.run(double, x)  # the seed's run shares it too
    launches = g.runtime.stats()["launches"]
    for _ in range(3):
        g.map(double)(x, out=x)
    np.testing.assert_array_equal(x, np.arange(6.0) * 16)
    assert g.runtime.stats()["launches"] == launches + 3
    with pytest.raises(g.ArgumentError, match="map_kernel"):
        g.map(lambda v: v)


def test_buffers_read_in_place_after_warm_up_still_refuse_what_they_should(host):
    k, calls = counting(scale_relu)
    x = rng.standard_normal(64).astype(np.float32)
    buf, out = host.empty(64, g.f32), host.empty(64, g.f32)
    np.asarray(buf)[:] = x
    for _ in range(2):
        assert k(buf, out=out, scale=2) is out
        np.testing.assert_array_equal(np.asarray(out), expected(x, 2))
    assert calls == ["Buffer"]
    frozen = x.copy()
    frozen.flags.writeable = False
    with pytest.raises(g.ArgumentError, match="read-only"):
        k(buf, out=g.asbuffer(frozen), scale=1)
    gone = host.empty(64, g.f32)
    gone.free()
    with pytest.raises(g.BufferFreed):
        k(gone, out=out, scale=1)
    assert len(calls) == 3


def test_a_buffer_freed_by_another_thread_during_a_launch_stays_until_it_ends():
    """A big host launch releases the GIL; the C++ path held only the Buffers' addresses, so
    another thread's free() released the memory under the running kernel (SIGSEGV). In a
    child process, so that the bug, were it back, fails this test rather than the run."""
    script = """
import threading, time
import numpy as np, gompute as g
from tests.map.kernels import relax
c = g.runtime.host.Compute.init()
k = g.map(relax)
small = c.empty((1000,), g.f64)
k(small, out=small, steps=1)
k(small, out=small, steps=1)  # the C++ path now takes f64 Buffers in place
x = c.empty((1 << 24,), g.f64)  # 128 MiB: glibc maps it alone, and unmaps it at free
x.upload(np.zeros(1 << 24))  # (not through np.asarray: memory exported by pointer is kept for good)
started = threading.Event()
def free_soon():
    started.wait()
    time.sleep(0.05)
    x.free()
freer = threading.Thread(target=free_soon)
freer.start()
started.set()
k(x, out=x, steps=300)  # a second or so of work, on the C++ path
freer.join()
print("survived", x.freed)
"""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root, timeout=120)
    assert done.returncode == 0, f"the child died ({done.returncode}): {done.stderr[-2000:]}"
    assert "survived True" in done.stdout


class _Capsules:
    """A DLPack producer whose capsules `Handmade` builds over `array`, then `edit` changes."""

    def __init__(self, array, edit, **handmade):
        self.array, self.edit, self.handmade, self.made = array, edit, handmade, []

    def __dlpack__(self, **_):
        from tests.interop.dlpack_abi import Handmade

        made = Handmade(self.array, **self.handmade)
        self.edit(made)
        self.made.append(made)  # kept alive while the capsule is
        return made.capsule

    def __dlpack_device__(self):
        return (1, 0)


def _negative_extent(made):
    made.shape[0] = -1000


def _huge_stride(made):
    made.strides[0] = 2**62


@pytest.mark.parametrize(
    ("edit", "handmade", "message"),
    [
        (_negative_extent, {}, "a shape cannot be negative"),
        (_huge_stride, {}, "2\\*\\*63"),
        (lambda made: None, {"major": 2}, "DLPack version 2 is not supported"),
    ],
    ids=["negative extent", "stride past 2**63 bytes", "DLPack 2.x"],
)
def test_a_dlpack_capsule_the_general_path_refuses_is_refused_after_warm_up(warm, edit, handmade, message):
    """The C++ path read versioned capsules without checking their major version, extents or
    the reach of their strides: shape (-1000,) launched ~2**64 elements over 16."""
    x = np.zeros(16, np.float32)
    warm(x, out=x, scale=2)
    warm(x, out=x, scale=2)  # in place: the C++ path's
    bad = _Capsules(x, edit, **handmade)
    for _ in range(2):
        with pytest.raises(g.ArgumentError, match=message):
            warm(bad, out=bad, scale=2)
    np.testing.assert_array_equal(x, 0)
