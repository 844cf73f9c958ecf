"""Getting a Compute: the bound backends, the dynamic probe, the cpu arm, GOMPUTE_BACKEND, ordinals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import gompute as g

GPU_BACKENDS = (g.Backend.cuda, g.Backend.hip)  # the probe's order
REPO = Path(__file__).resolve().parents[2]


def _usable(backend: g.Backend) -> bool:
    try:
        getattr(g.runtime, backend.value).Compute.init().deinit()
        return True
    except g.BackendUnavailable:
        return False


@pytest.fixture
def no_env_backend(monkeypatch):
    monkeypatch.delenv("GOMPUTE_BACKEND", raising=False)


# ---- bound backends ---------------------------------------------------------------------


def test_compute_describes_its_device(compute):
    assert compute.ordinal == 0
    info = compute.device_info()
    assert isinstance(info, g.runtime.DeviceInfo)
    assert info.backend is compute.backend and info.ordinal == 0
    assert info.name and info.arch
    assert info.total_memory > 0 and info.multiprocessors >= 1 and info.driver_version > 0
    assert compute.backend.value in repr(compute)


def test_host_device_info_is_this_machine(host):
    info = host.device_info()
    assert info.arch == os.uname().machine
    assert info.multiprocessors == int(os.environ.get("GOMPUTE_HOST_THREADS") or os.cpu_count())


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
def test_a_missing_gpu_backend_says_why(backend):
    if _usable(backend):
        pytest.skip(f"{backend} is usable here")
    with pytest.raises(g.BackendUnavailable) as info:
        getattr(g.runtime, backend.value).Compute.init()
    message = str(info.value)
    assert {"cuda": "CUDA", "hip": "HIP"}[backend.value] in message
    assert any(why in message for why in ("not found", "no device", "too old", "failed")), message


@pytest.mark.parametrize("past", [0, 99, None], ids=["count", "count+99", "negative"])
def test_an_ordinal_past_the_devices_is_refused(compute, past):
    count = g._core.probe(compute.backend.kind)[3]
    ordinal = -1 if past is None else count + past
    with pytest.raises(g.ArgumentError, match=f"has {count} device.*ordinal {ordinal} is out of range"):
        type(compute).init_device(ordinal)


@pytest.mark.parametrize("ordinal", ["0", 0.0, None, True], ids=repr)
def test_an_ordinal_must_be_an_int(ordinal):
    with pytest.raises(g.ArgumentError, match="ordinal"):
        g.runtime.host.Compute.init_device(ordinal)


def test_two_computes_share_one_context(compute):
    retained = g.runtime.stats()["contexts_retained"]
    other = type(compute).init()
    assert compute._device.same_context(other._device)
    assert g.runtime.stats()["contexts_retained"] == retained  # retained once per device per process
    other.deinit()


def test_deinit_releases_the_handle_only(compute):
    other = type(compute).init()
    buf = other.alloc(16)
    other.deinit()
    other.deinit()  # idempotent
    for call in (
        lambda: other.alloc(4),
        other.create_stream,
        other.synchronize,
        lambda: other.ordinal,
        other.create_event,
        lambda: other.default_stream,
        other.device_info,
    ):
        with pytest.raises(g.InvalidHandle, match="deinit"):
            call()
    buf.upload(b"\x01" * 16)  # what it made lives on: the context is still there
    out = bytearray(16)
    buf.download(out)
    assert out == b"\x01" * 16
    buf.free()
    compute.synchronize()


def test_with_deinits_the_compute(compute):
    with type(compute).init() as c:
        c.alloc(8).free()
    with pytest.raises(g.InvalidHandle):
        c.alloc(8)


def test_bound_modules_have_the_same_shape():
    for name in ("cuda", "hip", "host"):
        module = getattr(g.runtime, name)
        assert callable(module.Compute.init) and callable(module.Compute.init_device)
        assert callable(module.shutdown)
        for method in (
            "alloc",
            "alloc_pinned",
            "load_module",
            "create_stream",
            "create_event",
            "synchronize",
            "deinit",
            "device_info",
        ):
            assert hasattr(module.Compute, method), (name, method)


# ---- the dynamic facade ----------------------------------------------------------------


def test_probe_picks_a_usable_gpu_or_the_cpu_arm(no_env_backend):
    c = g.runtime.dynamic.Compute.init()
    first_usable = next((b for b in GPU_BACKENDS if _usable(b)), g.Backend.cpu)
    assert c.backend is first_usable
    assert c.backend is not g.Backend.host  # the host is never picked by probing


@pytest.mark.parametrize("backend", [g.Backend.host, *GPU_BACKENDS], ids=str)
def test_demanding_a_backend(no_env_backend, backend):
    if not _usable(backend):
        with pytest.raises(g.BackendUnavailable, match=backend.value.upper()):
            g.runtime.dynamic.Compute.init(backend)
        return
    with g.runtime.dynamic.Compute.init(backend) as c:
        assert c.backend is backend
        with c.alloc(8) as buf:
            assert buf.backend is backend
    with g.runtime.dynamic.Compute.init_device(backend, 0) as c:
        assert c.ordinal == 0


def test_dynamic_accepts_a_backend_name_and_refuses_an_unknown_one(no_env_backend):
    assert g.runtime.dynamic.Compute.init("host").backend is g.Backend.host
    with pytest.raises(g.ArgumentError, match="unknown backend 'metal'.*host"):
        g.runtime.dynamic.Compute.init("metal")


def test_dynamic_refuses_a_bad_ordinal(no_env_backend):
    with pytest.raises(g.ArgumentError, match="out of range"):
        g.runtime.dynamic.Compute.init_device(g.Backend.host, 5)


# ---- the cpu arm ------------------------------------------------------------------------


@pytest.fixture
def cpu_arm(no_env_backend):
    c = g.runtime.dynamic.Compute.init(g.Backend.cpu)
    assert c.backend is g.Backend.cpu
    return c


def _assert_explains(message: str, call: str) -> None:
    assert call in message
    for backend in GPU_BACKENDS:
        assert f"{backend.value}:" in message  # why each GPU backend was not usable
    assert "Backend.host" in message and "g.runtime.host.Compute.init()" in message


def test_cpu_arm_alloc_fails_with_the_reasons(cpu_arm):
    with pytest.raises(g.AllocFailed) as info:
        cpu_arm.alloc(16)
    _assert_explains(str(info.value), "alloc")


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda c: c.load_module(b"\x7fELF"), "load_module"),
        (lambda c: c.create_stream(), "create_stream"),
        (lambda c: c.create_event(), "create_event"),
        (lambda c: c.synchronize(), "synchronize"),
        (lambda c: c.alloc_pinned(16), "alloc_pinned"),
        (lambda c: c.default_stream, "default_stream"),
        (lambda c: c.device_info(), "call"),
        (lambda c: c.ordinal, "call"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_cpu_arm_device_calls_fail_politely(cpu_arm, call, name):
    with pytest.raises(g.BackendUnavailable) as info:
        call(cpu_arm)
    _assert_explains(str(info.value), name)


def test_cpu_arm_is_harmless_to_hold(cpu_arm):
    assert "cpu" in repr(cpu_arm)
    cpu_arm.deinit()
    with g.runtime.dynamic.Compute.init(g.Backend.cpu) as c:
        assert c.backend is g.Backend.cpu


def test_the_cpu_arm_is_the_backend_with_no_device(cpu_arm):
    """Backend.cpu is a backend the C++ core does not know: no kind, no device, nothing to shut down."""
    assert isinstance(cpu_arm, g.runtime.dynamic.Compute) and str(cpu_arm.backend) == "cpu"
    assert g.Backend.cpu.kind is None and not g.Backend.cpu.has_device
    assert all(b.has_device and isinstance(b.kind, int) for b in g.Backend if b is not g.Backend.cpu)
    with pytest.raises(g.BackendUnavailable, match="cpu is the arm with no device"):
        g.runtime.device_info(g.Backend.cpu)
    with g.runtime.host.Compute.init() as host:
        buf = host.alloc(8)
        g.runtime.shutdown(g.Backend.cpu)  # releases nothing: the host buffer stays usable
        buf.upload(b"12345678")


def test_a_raw_kernel_on_the_cpu_arm_says_to_name_the_host(monkeypatch):
    """The refusal says how to run on the CPU, not that the backend (an argument the caller may
    never have passed) is not one kernels compile for."""
    monkeypatch.setenv("GOMPUTE_BACKEND", "cpu")
    for make in (lambda: g.RawKernel("", "k"), lambda: g.raw_kernel_by_name(None, "k")):
        with pytest.raises(g.BackendUnavailable, match=r"backend=g\.Backend\.host builds it for the CPU"):
            make()


def test_probe_falls_back_to_the_cpu_arm_with_each_reason(no_env_backend):
    if any(_usable(b) for b in GPU_BACKENDS):
        pytest.skip("a GPU backend is usable here, so the probe does not fall back")
    c = g.runtime.dynamic.Compute.init()
    with pytest.raises(g.AllocFailed) as info:
        c.alloc(4)
    message = str(info.value)
    for backend in GPU_BACKENDS:
        with pytest.raises(g.BackendUnavailable) as direct:
            getattr(g.runtime, backend.value).Compute.init()
        assert str(direct.value) in message  # the exact reason, not a paraphrase


# ---- GOMPUTE_BACKEND ------------------------------------------------------------------


@pytest.mark.parametrize("value", ["host", "HOST", " host "], ids=repr)
def test_env_selects_host(monkeypatch, value):
    monkeypatch.setenv("GOMPUTE_BACKEND", value)
    assert g.runtime.dynamic.Compute.init().backend is g.Backend.host
    assert g.runtime.dynamic.Compute.init_device(None, 0).backend is g.Backend.host


def test_env_selects_the_cpu_arm(monkeypatch):
    monkeypatch.setenv("GOMPUTE_BACKEND", "cpu")
    c = g.runtime.dynamic.Compute.init()
    assert c.backend is g.Backend.cpu
    with pytest.raises(g.AllocFailed, match="Backend.host"):
        c.alloc(1)


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
def test_env_demands_a_gpu_backend(monkeypatch, backend):
    monkeypatch.setenv("GOMPUTE_BACKEND", backend.value)
    if _usable(backend):
        assert g.runtime.dynamic.Compute.init().backend is backend
    else:
        with pytest.raises(g.BackendUnavailable):
            g.runtime.dynamic.Compute.init()


def test_env_is_read_at_each_init(monkeypatch):
    monkeypatch.setenv("GOMPUTE_BACKEND", "host")
    assert g.runtime.dynamic.Compute.init().backend is g.Backend.host
    monkeypatch.setenv("GOMPUTE_BACKEND", "cpu")
    assert g.runtime.dynamic.Compute.init().backend is g.Backend.cpu


def test_an_explicit_backend_wins_over_the_env(monkeypatch):
    monkeypatch.setenv("GOMPUTE_BACKEND", "cpu")
    assert g.runtime.dynamic.Compute.init(g.Backend.host).backend is g.Backend.host


def test_an_invalid_env_value_is_refused(monkeypatch):
    monkeypatch.setenv("GOMPUTE_BACKEND", "opencl")
    with pytest.raises(g.ArgumentError, match="GOMPUTE_BACKEND='opencl'.*cuda\\|hip\\|host\\|cpu"):
        g.runtime.dynamic.Compute.init()


def test_an_empty_env_value_means_probe(monkeypatch):
    monkeypatch.setenv("GOMPUTE_BACKEND", "")
    assert g.runtime.dynamic.Compute.init().backend is not g.Backend.host


# ---- python -m gompute info -------------------------------------------------------------


def test_info_explains_each_backend():
    """With the GPU libraries pointed at paths that do not exist, info names those paths."""
    env = {
        **os.environ,
        "GOMPUTE_LIBCUDA": "/nonexistent/libcuda-test.so",
        "GOMPUTE_LIBHIP": "/nonexistent/libhip-test.so",
    }
    result = subprocess.run(
        [sys.executable, "-m", "gompute", "info"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = {line.split()[0]: line for line in result.stdout.splitlines() if line and not line[0].isspace()}
    assert "unavailable" in lines["cuda"] and "/nonexistent/libcuda-test.so" in lines["cuda"]
    assert "unavailable" in lines["hip"] and "/nonexistent/libhip-test.so" in lines["hip"]
    assert "usable" in lines["host"]
    assert os.uname().machine in result.stdout  # the host device, with its architecture
    assert "cpu" in lines
