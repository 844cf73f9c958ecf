"""The CUDA backend (csrc/driver_cuda.cpp) over a fake libcuda, so it is tested without a GPU.

tests/fakes/fake_libcuda.cpp implements the driver API over host memory and runs host-ABI
shared objects as its "cubins" (see its header for what it does and doesn't model). The
driver is loaded once per process, so the scenarios below run in batches, each batch in
its own interpreter with GOMPUTE_LIBCUDA pointing at the fake; pytest reports each
scenario as a test of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import gompute as g
from tests.fakes import images

REPO = Path(__file__).resolve().parents[2]
KERNEL_SOURCE = Path(__file__).with_name("host_kernels.cpp")
MODULE_ENV = "GOMPUTE_TEST_FAKE_CUBIN"  # host_kernels.cpp built for the fake (the fake_cubin fixture)
KERNELS_ENV = "GOMPUTE_TEST_HOST_KERNELS"  # their names, comma-separated
MIB = 2**20


@dataclass(frozen=True)
class Batch:
    """Scenarios sharing one interpreter, run in the order they are defined."""

    library: str = "fake"  # "fake", "old" (built without cuLaunchKernel) or "missing" (no such file)
    env: dict[str, str] = field(default_factory=dict)


BATCHES = {
    "main": Batch(),
    "fault": Batch(env={"FAKE_CUDA_CC": "8.6"}),  # a kernel fault is sticky: a process of its own
    "init_error": Batch(env={"FAKE_CUDA_INIT_ERROR": "100"}),
    "no_device": Batch(env={"FAKE_CUDA_DEVICES": "0"}),
    "old_driver": Batch(library="old"),
    "missing_library": Batch(library="missing"),
    "not_cuda": Batch(library="not_cuda"),
}
SCENARIOS: dict[str, list] = {name: [] for name in BATCHES}


def scenario(batch: str):
    """Registers a function to run in `batch`'s interpreter (not in pytest's)."""

    def register(fn):
        SCENARIOS[batch].append(fn)
        return fn

    return register


class Scale(g.Params):
    scale: g.f32


def _cuda() -> g.runtime.cuda.Compute:
    return g.runtime.cuda.Compute.init()


def _kernels(compute):
    return compute.load_module(Path(os.environ[MODULE_ENV]).read_bytes())


def _scale_relu_args(buf, n: int, scale: float) -> list:
    return [buf.arg_ptr(), g.interface.arg(g.u64(n)), g.interface.arg(g.abi.pack(Scale, scale=scale))]


def _download(buf, dtype=np.float32) -> np.ndarray:
    out = np.empty(buf.nbytes // np.dtype(dtype).itemsize, dtype)
    buf.download(out)
    return out


# ---- main: a working fake ------------------------------------------------------------------


@scenario("main")
def device_info_describes_the_fake_device():
    with _cuda() as c:
        info = c.device_info()
    assert (info.backend, info.ordinal, info.name) == (g.Backend.cuda, 0, "Fake CUDA Device")
    assert (info.arch, info.compute_capability) == ("sm_90", (9, 0))
    assert (info.total_memory, info.multiprocessors, info.driver_version) == (2**30, 132, 12080)


@scenario("main")
def the_dynamic_probe_picks_cuda():
    with g.runtime.dynamic.Compute.init() as c:
        assert c.backend is g.Backend.cuda
        assert c.device_info().name == "Fake CUDA Device"


@scenario("main")
def buffers_round_trip():
    x = np.arange(256, dtype=np.float32)
    with _cuda() as c, c.alloc(x.nbytes) as a, c.alloc(x.nbytes) as b:
        a.upload(x)
        np.testing.assert_array_equal(_download(a), x)
        a.upload_at(np.full(16, -1, np.float32), offset=64)  # bytes [64, 128): elements 16..31
        b.copy_from(a)
        expected = x.copy()
        expected[16:32] = -1
        np.testing.assert_array_equal(_download(b), expected)
        b.view_bytes(512, 256).copy_from(a, src_offset=0, nbytes=256)  # elements 128..191 <- 0..63
        expected[128:192] = expected[:64]
        np.testing.assert_array_equal(_download(b), expected)
        tail = np.empty(4, np.float32)
        b.download_at(tail, offset=b.nbytes - 16)
        np.testing.assert_array_equal(tail, expected[-4:])
        with c.alloc(0) as empty:  # no driver call: cuMemAlloc refuses 0 bytes
            empty.upload(b"")
            b.copy_from(empty, nbytes=0)


@scenario("main")
def async_copies_and_pinned_memory_round_trip():
    with _cuda() as c, c.create_stream() as s, c.alloc(1024) as a, c.alloc(1024) as b:
        pinned = c.alloc_pinned(1024)
        host = np.asarray(pinned)
        host[:] = np.arange(1024) % 251
        a.upload(host, stream=s)
        b.copy_from(a, stream=s)
        out = np.zeros(1024, np.uint8)
        b.download(out, stream=s)
        s.synchronize()
        np.testing.assert_array_equal(out, host)


@scenario("main")
def overlapping_copy_from_gives_the_source_bytes():
    """A GPU copy of overlapping ranges is undefined (the fake scrambles it); gompute stages it."""
    x = np.arange(64, dtype=np.float32)
    with _cuda() as c, c.alloc(x.nbytes) as buf, c.create_stream() as s:
        for stream in (None, s):
            for src, dst in ((0, 16), (16, 0)):  # the destination after, then before, the source
                buf.upload(x)
                buf.copy_from(buf, src_offset=src, dst_offset=dst, nbytes=128, stream=stream)
                if stream:
                    stream.synchronize()
                expected = x.copy()
                expected[dst // 4 : dst // 4 + 32] = x[src // 4 : src // 4 + 32]
                np.testing.assert_array_equal(_download(buf), expected, err_msg=f"{src}->{dst} {stream}")
        buf.upload(x)
        buf.view_bytes(8, 200).copy_from(buf.view_bytes(0, 200))  # two views of one allocation
        expected = x.copy()
        expected[2:52] = x[:50]
        np.testing.assert_array_equal(_download(buf), expected)


@scenario("main")
def an_alloc_past_free_memory_is_out_of_memory():
    with _cuda() as c:
        with pytest.raises(g.AllocFailed, match="cuMemAlloc") as too_big:
            c.alloc(2**30 + 1)
        assert too_big.value.code == "CUDA_ERROR_OUT_OF_MEMORY"
        big = c.alloc(768 * MIB)
        with pytest.raises(g.AllocFailed) as no_room:
            c.alloc(512 * MIB)
        assert no_room.value.code == "CUDA_ERROR_OUT_OF_MEMORY"
        big.free()
        c.alloc(512 * MIB).free()  # the freed memory is free again


@scenario("main")
def streams_and_events():
    x = np.ones(1 << 16, np.float32)
    with _cuda() as c, c.create_stream() as s, c.create_stream() as t, c.alloc(x.nbytes) as buf:
        start, end = c.create_event(), c.create_event()
        start.record(s)
        buf.upload(x, stream=s)
        end.record(s)
        end.wait(t)  # t waits for s without blocking the host
        end.synchronize()
        assert end.query()
        ms = start.elapsed_ms(end)
        assert isinstance(ms, float) and ms >= 0
        untimed = c.create_event(timing=False)
        untimed.record(s)
        with pytest.raises(g.ArgumentError, match="timing=False"):  # said before the driver's INVALID_HANDLE
            start.elapsed_ms(untimed)
        t.synchronize()
        assert s.handle != 0 and s.handle != t.handle
        assert s.__cuda_stream__() == (0, s.handle)
        assert c.default_stream.__cuda_stream__() == (0, 0)
    with pytest.raises(g.InvalidHandle, match="deinit"):
        s.synchronize()


@scenario("main")
def a_launch_by_hand():
    """The seed's example: alloc, upload, pack, launch, synchronize, download."""
    N = 1024
    host_data = np.linspace(-4, 4, N, dtype=np.float32)
    expected = np.maximum(host_data * 2, 0)
    with _cuda() as compute:
        kernel = _kernels(compute).get_kernel("scale_relu")
        buffer = compute.alloc(N * 4)
        try:
            buffer.upload(host_data, N * 4)
            args = [buffer.arg_ptr(), g.interface.arg(g.u64(N)), g.interface.arg(g.abi.pack(Scale, scale=2))]
            kernel.launch(g.Dim3.linear(N, 256), g.Dim3(256), 0, args)
            compute.synchronize()
            buffer.download(host_data, N * 4)
        finally:
            buffer.free()
    np.testing.assert_array_equal(host_data, expected)


@scenario("main")
def the_module_lists_its_kernels():
    with _cuda() as c:
        module = _kernels(c)
        assert set(module.function_names) == set(os.environ[KERNELS_ENV].split(","))
        assert _kernels(c).id == module.id  # the same image loads once
        with pytest.raises(g.KernelNotFound, match="no kernel named 'scale_reLU'") as missing:
            module.get_kernel("scale_reLU")
        assert "scale_relu" in str(missing.value) and "checked_sqrt" in str(missing.value)


@scenario("main")
def the_driver_reported_arity_is_checked_before_launch():
    with _cuda() as c, c.alloc(64) as buf:
        module = _kernels(c)
        scale_relu = module.get_kernel("scale_relu")
        assert scale_relu.arity == 3
        buf.upload(np.full(16, -1, np.float32))
        with pytest.raises(g.LaunchFailed, match="takes 3 arguments; the launch passed 2"):
            scale_relu.launch(1, 16, 0, _scale_relu_args(buf, 16, 2.0)[:2])
        c.synchronize()
        np.testing.assert_array_equal(_download(buf), np.full(16, -1, np.float32))  # nothing ran
        fill = module.get_kernel("fill_u32")  # exports no arity: the driver can't tell
        assert fill.arity is None
        fill.launch(1, 16, 0, [buf.arg_ptr(), g.interface.arg(g.u64(16)), g.interface.arg(g.u32(7))])
        c.synchronize()
        np.testing.assert_array_equal(_download(buf, np.uint32), np.full(16, 7, np.uint32))


@scenario("main")
def a_launch_the_driver_refuses_is_launch_failed():
    with _cuda() as c, c.alloc(64) as buf:
        kernel = _kernels(c).get_kernel("scale_relu")
        with pytest.raises(g.LaunchFailed, match="cuLaunchKernel") as refused:
            kernel.launch(1, 2048, 0, _scale_relu_args(buf, 16, 1.0))  # over 1024 threads per block
        assert refused.value.code == "CUDA_ERROR_INVALID_VALUE"
        c.synchronize()  # a refused launch is no fault


@scenario("main")
def ptx_the_driver_rejects_carries_the_jit_log():
    with _cuda() as c, pytest.raises(g.ModuleLoadFailed) as failed:
        c.load_module(".version 8.0\n.target sm_90\n.address_size 64\n")
    assert failed.value.code == "CUDA_ERROR_INVALID_PTX"
    message = str(failed.value)
    assert "cuModuleLoadDataEx" in message and "a PTX JIT compilation failed" in message
    assert "JIT log: ptxas fatal   : the fake CUDA driver cannot compile PTX" in message


@scenario("main")
def four_threads_launch_at_once():
    threads_count, rounds = 4, 5
    c = _cuda()
    kernel = _kernels(c).get_kernel("scale_relu")
    barrier = threading.Barrier(threads_count)
    failures: list[BaseException] = []

    def worker(tid: int) -> None:
        try:
            barrier.wait()
            for r in range(rounds):
                n = 3000 + 1000 * tid + r
                x = np.random.default_rng(10 * tid + r).standard_normal(n).astype(np.float32)
                with c.create_stream() as s, c.alloc(x.nbytes) as buf:
                    buf.upload(x, stream=s)
                    kernel.launch(g.Dim3.linear(n, 256), 256, 0, _scale_relu_args(buf, n, tid + 1), stream=s)
                    out = np.empty_like(x)
                    buf.download(out, stream=s)
                    s.synchronize()
                    np.testing.assert_array_equal(out, np.maximum(x * np.float32(tid + 1), 0))
        except BaseException as e:  # noqa: BLE001 - reported below
            failures.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(threads_count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a worker thread hung"
    assert not failures, failures[0]
    c.deinit()


@scenario("main")
def shutdown_invalidates_old_handles_and_init_works_again():
    c = _cuda()
    kernel = _kernels(c).get_kernel("scale_relu")
    kept = c.alloc(768 * MIB)  # never freed: its memory goes with the context
    buf, stream = c.alloc(64), c.create_stream()
    g.runtime.cuda.shutdown()
    for call in (
        lambda: buf.upload(b"\0" * 64),
        stream.synchronize,
        lambda: c.alloc(4),
        c.synchronize,
        lambda: kernel.launch(1, 16, 0, _scale_relu_args(buf, 16, 1.0)),
    ):
        with pytest.raises(g.InvalidHandle):
            call()
    del kept
    with _cuda() as again, again.alloc(768 * MIB) as big:
        big.upload(np.arange(16, dtype=np.float32))
        kernel = _kernels(again).get_kernel("scale_relu")
        kernel.launch(1, 16, 0, _scale_relu_args(big, 16, -1.0))
        again.synchronize()
        out = np.empty(16, np.float32)
        big.download(out)
    np.testing.assert_array_equal(out, np.maximum(-np.arange(16, dtype=np.float32), 0))


# ---- fault: a kernel trap poisons the process, as on a GPU --------------------------------------


@scenario("fault")
def the_architecture_comes_from_the_driver():
    with _cuda() as c:
        assert (c.device_info().arch, c.device_info().compute_capability) == ("sm_86", (8, 6))


@scenario("fault")
def a_trap_is_a_sticky_launch_failure():
    with _cuda() as c, c.alloc(16) as buf:
        buf.upload(np.array([4, 9, -1, 16], np.float32))
        kernel = _kernels(c).get_kernel("checked_sqrt")
        kernel.launch(1, 4, 0, [buf.arg_ptr(), g.interface.arg(g.u64(4))])  # returns: the fault is async
        for _ in range(2):  # sticky: every later synchronize fails too
            with pytest.raises(g.SyncFailed, match="cuCtxSynchronize") as fault:
                c.synchronize()
            assert fault.value.code == "CUDA_ERROR_LAUNCH_FAILED"
        with pytest.raises(g.SyncFailed, match="cuStreamSynchronize"):
            c.default_stream.synchronize()
        with pytest.raises(g.AllocFailed) as alloc:
            c.alloc(16)
        assert alloc.value.code == "CUDA_ERROR_LAUNCH_FAILED"


# ---- unavailable: each reason CUDA can't be used ------------------------------------------------


def _assert_unavailable(*fragments: str) -> None:
    with pytest.raises(g.BackendUnavailable) as why:
        _cuda()
    message = str(why.value)
    assert message.startswith("CUDA is unavailable: "), message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    with g.runtime.dynamic.Compute.init() as c:  # the probe falls back and keeps the reason
        assert c.backend is g.Backend.cpu
        with pytest.raises(g.AllocFailed) as arm:
            c.alloc(4)
        assert f"(cuda: {message};" in str(arm.value)


@scenario("init_error")
def a_failing_cuinit_names_its_error():
    _assert_unavailable(
        "cuInit failed with CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)",
        "(from GOMPUTE_LIBCUDA)",
    )


@scenario("no_device")
def no_device_is_unavailable():
    _assert_unavailable("no CUDA device (driver 12.8)")


@scenario("old_driver")
def a_driver_without_culaunchkernel_is_too_old():
    _assert_unavailable("driver too old: ", "(from GOMPUTE_LIBCUDA) lacks cuLaunchKernel")


@scenario("not_cuda")
def a_library_that_is_not_a_cuda_driver_says_so():
    """The C math library said "driver too old", as though an update would help."""
    _assert_unavailable("not a CUDA driver: ", "(from GOMPUTE_LIBCUDA) lacks cuInit")


@scenario("missing_library")
def a_missing_override_library_says_where_it_looked():
    _assert_unavailable("library not found (tried ", "no-such-libcuda.so (from GOMPUTE_LIBCUDA)")


# ---- the harness ------------------------------------------------------------------------------


def run_batch(batch: str, out: str) -> None:
    """Runs `batch`'s scenarios in this interpreter; writes {name: traceback or None} to `out`."""
    results = {}
    for fn in SCENARIOS[batch]:
        try:
            fn()
            results[fn.__name__] = None
        except BaseException:  # noqa: BLE001 - every failure is reported to pytest
            results[fn.__name__] = traceback.format_exc()
    Path(out).write_text(json.dumps(results))


@pytest.fixture(scope="session")
def fake_cubin(build_host, kernel_names) -> Path:
    """host_kernels.cpp with the kernel table the fake reads in place of a CUBIN's."""
    return build_host(f"{KERNEL_SOURCE.read_text()}\n{images.kernel_table(sorted(kernel_names))}\n")


@dataclass
class BatchRun:
    """What a batch's interpreter said: a traceback (or None) per scenario, its exit and stderr."""

    results: dict[str, str | None]
    returncode: int
    stderr: str


@pytest.fixture(scope="session")
def run_fake_batch(fake_libcuda, fake_cubin, kernel_names, tmp_path_factory):
    """run_fake_batch(name) -> BatchRun: the batch's interpreter, run once per session."""
    runs: dict[str, BatchRun] = {}

    def run(name: str) -> BatchRun:
        if name not in runs:
            batch = BATCHES[name]
            out = tmp_path_factory.mktemp(f"batch-{name}") / "results.json"
            env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_CUDA_", "GOMPUTE_BACKEND"))}
            env.update(
                batch.env,
                GOMPUTE_LIBCUDA=str(fake_libcuda[batch.library]),
                **{MODULE_ENV: str(fake_cubin), KERNELS_ENV: ",".join(sorted(kernel_names))},
            )
            code = (
                f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
                f"import {Path(__file__).stem} as t; t.run_batch({name!r}, {str(out)!r})"
            )
            proc = subprocess.run(
                [sys.executable, "-c", code],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            results = json.loads(out.read_text()) if out.exists() else {}
            runs[name] = BatchRun(results, proc.returncode, proc.stderr)
        return runs[name]

    return run


ALL_SCENARIOS = [(batch, fn.__name__) for batch, fns in SCENARIOS.items() for fn in fns]


@pytest.mark.parametrize("batch, name", ALL_SCENARIOS, ids=[f"{b}:{n}" for b, n in ALL_SCENARIOS])
def test_on_fake_cuda(run_fake_batch, batch, name):
    run = run_fake_batch(batch)
    if name not in run.results:
        pytest.fail(f"the {batch} batch's interpreter died (exit {run.returncode}):\n{run.stderr}")
    if run.results[name] is not None:
        pytest.fail(f"{run.results[name]}\n--- the batch's stderr ---\n{run.stderr}", pytrace=False)


def test_a_clean_run_warns_nothing(run_fake_batch):
    """No driver call failed in a destructor or at shutdown (those print warnings)."""
    run = run_fake_batch("main")
    assert run.returncode == 0 and "warning" not in run.stderr, run.stderr


def test_info_shows_the_fake_device(fake_libcuda):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_CUDA_")}
    env.update(GOMPUTE_LIBCUDA=str(fake_libcuda["fake"]))
    proc = subprocess.run(
        [sys.executable, "-m", "gompute", "info"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "cuda  usable: CUDA driver 12.8, 1 device(s)" in proc.stdout
    assert "[0] Fake CUDA Device: sm_90 (compute capability 9.0), 1.0 GiB, 132 multiprocessors" in proc.stdout
