"""shutdown(): the process-wide teardown. Each test runs in its own interpreter, since
shutdown ends every handle in the process, including the other tests'."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

PRELUDE = """
import sys
import numpy as np
import gompute as g

IMAGE = open(sys.argv[1], "rb").read()

class Scale(g.Params):
    scale: g.f32

def expect(error, call, what):
    try:
        call()
    except error as e:
        print(f"ok {what}: {type(e).__name__}: {e}")
        return
    except BaseException as e:
        raise AssertionError(f"{what}: raised {type(e).__name__}: {e}, expected {error.__name__}") from e
    raise AssertionError(f"{what}: did not raise {error.__name__}")

def scale_relu_works(compute, n=1 << 15):
    x = np.linspace(-1, 1, n, dtype=np.float32)
    with compute.alloc(x.nbytes) as buf:
        buf.upload(x)
        kernel = compute.load_module(IMAGE).get_kernel("scale_relu")
        kernel.launch(g.Dim3.linear(n, 256), 256, 0,
                      [buf.arg_ptr(), g.interface.arg(g.u64(n)), g.interface.arg(g.abi.pack(Scale, scale=2))])
        compute.synchronize()
        out = np.empty_like(x)
        buf.download(out)
    np.testing.assert_array_equal(out, np.maximum(x * 2, 0))
"""


def _run(host_module_path, body: str) -> subprocess.CompletedProcess:
    script = PRELUDE + textwrap.dedent(body)
    result = subprocess.run(
        [sys.executable, "-c", script, str(host_module_path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result


@pytest.mark.parametrize(
    "shutdown", ["g.runtime.shutdown()", "g.runtime.dynamic.shutdown()", "g.runtime.host.shutdown()"]
)
def test_old_handles_raise_after_shutdown_and_a_new_init_works(host_module_path, shutdown):
    body = f"""
    c = g.runtime.host.Compute.init()
    scale_relu_works(c)
    buf = c.alloc(64)
    view = buf.view_bytes(8, 8)
    stream = c.create_stream()
    event = c.create_event()
    module = c.load_module(IMAGE)
    kernel = module.get_kernel("fill_u32")
    args = [buf.arg_ptr(), g.interface.arg(g.u64(16)), g.interface.arg(g.u32(1))]
    pinned = c.alloc_pinned(64)  # a GPU driver frees it with its context
    loaded = g.runtime.stats()["modules_loaded"]

    {shutdown}

    expect(g.InvalidHandle, lambda: buf.upload(b"x" * 8), "upload")
    expect(g.InvalidHandle, lambda: buf.download(bytearray(8)), "download")
    expect(g.InvalidHandle, lambda: view.download(bytearray(8)), "download of a view")
    expect(g.InvalidHandle, lambda: buf.copy_from(view), "copy_from")
    expect(g.InvalidHandle, buf.arg_ptr, "arg_ptr")
    expect(g.InvalidHandle, lambda: kernel.launch(1, 16, 0, args), "launch")
    expect(g.InvalidHandle, lambda: module.get_kernel("add"), "get_kernel")
    expect(g.InvalidHandle, stream.synchronize, "stream.synchronize")
    expect(g.InvalidHandle, lambda: event.record(), "event.record")
    expect(g.InvalidHandle, event.query, "event.query")
    expect(g.InvalidHandle, lambda: c.alloc(8), "alloc")
    expect(g.InvalidHandle, c.synchronize, "synchronize")
    expect(g.InvalidHandle, c.create_stream, "create_stream")
    expect(g.InvalidHandle, lambda: c.load_module(IMAGE), "load_module")
    expect(g.InvalidHandle, lambda: memoryview(pinned), "a view of pinned memory")
    buf.free()
    buf.free()
    stream.deinit()
    module.deinit()
    {shutdown}  # a second shutdown is harmless

    fresh = g.runtime.host.Compute.init()
    assert not fresh._device.same_context(c._device)
    scale_relu_works(fresh)
    assert g.runtime.stats()["modules_loaded"] == loaded + 1, "the module is loaded anew"
    with g.runtime.dynamic.Compute.init(g.Backend.host) as again:
        scale_relu_works(again)
    # Old handles beside new ones: InvalidHandle too (they read "host:0, but ... host:0")
    new_kernel = fresh.load_module(IMAGE).get_kernel("fill_u32")
    new_buf = fresh.alloc(64)
    expect(g.InvalidHandle, lambda: new_kernel.launch(1, 16, 0, args), "a new kernel with an old buffer")
    new_args = [new_buf.arg_ptr(), g.interface.arg(g.u64(16)), g.interface.arg(g.u32(1))]
    expect(g.InvalidHandle, lambda: kernel.launch(1, 16, 0, new_args), "an old kernel with a new buffer")
    expect(g.InvalidHandle, lambda: new_buf.upload(pinned), "old pinned memory into a new buffer")
    print("ok reinit")
    """
    out = _run(host_module_path, body).stdout
    assert out.count("ok ") == 19
    assert "InvalidHandle: this handle belongs to the host:0 runtime, which was shut down" in out
    assert "ok reinit" in out


def test_shutdown_waits_for_queued_work_and_reports_a_pending_fault_as_a_warning(host_module_path):
    body = """
    c = g.runtime.host.Compute.init()
    n = 1 << 16
    with c.create_stream() as s:
        data = c.alloc(n * 4)
        data.upload(np.full(n, 4.0, np.float32))
        bad = c.alloc(4)
        bad.upload(np.array([-1], np.float32))
        module = c.load_module(IMAGE)
        module.get_kernel("checked_sqrt").launch(1, 1, 0, [bad.arg_ptr(), g.interface.arg(g.u64(1))])
        module.get_kernel("checked_sqrt").launch(g.Dim3.linear(n, 256), 256, 0,
                                                 [data.arg_ptr(), g.interface.arg(g.u64(n))], stream=s)
        g.runtime.shutdown()  # must not raise: the fault becomes a warning
    expect(g.InvalidHandle, lambda: data.download(bytearray(4)), "download after shutdown")
    fresh = g.runtime.host.Compute.init()
    fresh.synchronize()  # the old fault does not leak into the new runtime
    scale_relu_works(fresh)
    print("ok clean")
    """
    result = _run(host_module_path, body)
    assert "ok clean" in result.stdout
    assert "warning" in result.stderr and "checked_sqrt" in result.stderr


def test_shutting_down_one_gpu_backend_leaves_host_handles_alone(host_module_path):
    body = """
    c = g.runtime.host.Compute.init()
    buf = c.alloc(16)
    buf.upload(b"a" * 16)
    g.runtime.cuda.shutdown()
    g.runtime.hip.shutdown()
    out = bytearray(16)
    buf.download(out)
    assert out == b"a" * 16
    scale_relu_works(c)
    print("ok untouched")
    """
    assert "ok untouched" in _run(host_module_path, body).stdout
