"""Every CUDA driver entry point gompute resolves, failed once on the fake libcuda.

tests/fakes/fake_libcuda.cpp fails the nth call of any entry point with a chosen code
(`fake_cuda_fail`, or FAKE_CUDA_FAIL for calls made while a process starts). For each entry
point a scenario makes gompute call it, with the call failing: the user sees the gompute
exception of that kind of call, naming the call and the driver's code; nothing is left
behind, neither in gompute's counters nor in the driver's objects; and the same scenario
works at once afterwards. A release the driver refuses (a free, a destroy, an unload) cannot
raise, from a destructor or at shutdown: it is a warning naming the call and the code, and
gompute's books still balance.

Runs where the CUDA backend is the fake (`make test`'s second pass); skips elsewhere.
"""

from __future__ import annotations

import ctypes
import gc
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

import gompute as g
from gompute import _core
from tests.conftest import REPO, open_compute
from tests.fakes import images
from tests.runtime.test_driver_declarations import _resolved

UNKNOWN, OUT_OF_MEMORY = 999, 2  # CUDA_ERROR_UNKNOWN, CUDA_ERROR_OUT_OF_MEMORY
DRIVER_KINDS = ("allocations", "bytes", "pinned", "streams", "events", "modules")

# A kernel of the fault matrix's own, so that its module is loaded by the scenarios here only.
FILL_TEXT = """
extern "C" __global__ void fault_matrix_fill(float* out, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = 7.0f;
}
"""


FAILED_BY_TESTS: set[str] = set()  # the entry points the tests below fail outside the tables


def fails(*slots: str):
    """Marks a test as one that fails `slots`."""
    FAILED_BY_TESTS.update(slots)
    return lambda test: test


def _symbols() -> dict[str, list[str]]:
    """Api slot -> the exported symbols driver_cuda.cpp resolves it from."""
    found: dict[str, list[str]] = {}
    for slot, symbol in _resolved():
        found.setdefault(slot, []).append(symbol)
    return found


@pytest.fixture
def cuda():
    compute = open_compute(g.Backend.cuda)
    if not images.is_fake(compute):
        pytest.skip("the fault matrix needs the fake libcuda (GOMPUTE_LIBCUDA), which can fail any call")
    return compute


@pytest.fixture
def fake(cuda):
    """The fake driver gompute loaded (dlopen of the same path gives the same library)."""
    lib = ctypes.CDLL(os.environ["GOMPUTE_LIBCUDA"])
    lib.fake_cuda_live.restype = ctypes.c_longlong
    lib.fake_cuda_live.argtypes = [ctypes.c_char_p]
    lib.fake_cuda_fail.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    return lib


@pytest.fixture(scope="module")
def fill_image() -> bytes:
    return images.gpu_text_image(FILL_TEXT, ["fault_matrix_fill"], "fault_matrix_fill")


class Driver:
    """Arms faults in the fake and reads what it holds."""

    def __init__(self, lib):
        self.lib = lib

    def fail(self, slot: str, code: int, nth: int = 1) -> None:
        for symbol in _symbols()[slot]:
            self.lib.fake_cuda_fail(symbol.encode(), nth, code)

    def disarm(self, slot: str) -> int:
        """Disarms `slot`'s faults; returns how many had fired."""
        armed, symbols = self.lib.fake_cuda_armed(), _symbols()[slot]
        for symbol in symbols:
            self.lib.fake_cuda_fail(symbol.encode(), 0, 0)
        return len(symbols) - (armed - self.lib.fake_cuda_armed())

    def held(self) -> dict[str, int]:
        """gompute's live buffers and bytes, and the driver's live objects, once what was let go
        is freed (a GPU context frees memory at its next synchronize)."""
        gc.collect()
        g.runtime.cuda.Compute.init().synchronize()
        stats = g.runtime.stats()
        held = {"buffers_live": stats["buffers_live"], "bytes_live": stats["bytes_live"]}
        held.update({kind: self.lib.fake_cuda_live(kind.encode()) for kind in DRIVER_KINDS})
        return held


@dataclass
class Case:
    """`run(compute, image)` makes gompute call `slot`; failed, it raises `error`."""

    slot: str
    run: Callable
    error: type[Exception]
    code: int = UNKNOWN


def _filled(compute, n=1000):
    buf = compute.empty((n,), g.f32)
    buf.upload(np.linspace(-1, 1, n, dtype=np.float32))
    return buf


def _map_new_result(compute, image):
    """g.map making its result: a failure after the result was allocated must free it."""
    x = _filled(compute)
    with images.host_images():
        y = g.map(doubled)(x)
    compute.synchronize()
    return y


def _map_into(compute, image):
    """g.map into a given output, the C++ fast path after the first call."""
    x, y = _filled(compute), compute.empty((1000,), g.f32)
    with images.host_images():
        k = g.map(doubled)
        k(x, out=y)
        k(x, out=y)
    compute.synchronize()


def _alloc(compute, image):
    compute.alloc(64)


def _alloc_pinned(compute, image):
    compute.alloc_pinned(64)


def _synchronize(compute, image):
    compute.synchronize()


def _device_info(compute, image):
    compute.device_info()


def _launch(compute, image):
    out = compute.empty((64,), g.f32)
    kernel = compute.load_module(image).get_kernel("fault_matrix_fill")
    kernel.launch(g.Dim3(1), g.Dim3(64), 0, [out.arg_ptr(), g.interface.arg(g.u64(64))])
    host = np.zeros(64, np.float32)
    compute.synchronize()
    out.download(host)
    assert (host == 7).all()


def _copies(compute, image, stream=None):
    a, b, host = compute.alloc(64), compute.alloc(64), np.arange(16, dtype=np.float32)
    a.upload(host, stream=stream)
    b.copy_from(a, stream=stream)
    back = np.zeros(16, np.float32)
    b.download(back, stream=stream)
    if stream is not None:
        stream.synchronize()
    np.testing.assert_array_equal(back, host)


def _async_copies(compute, image):
    with compute.create_stream() as s:
        _copies(compute, image, s)


def _events(compute, image):
    start, end = compute.create_event(), compute.create_event()
    with compute.create_stream() as s:
        start.record(s)
        end.record(s)
        end.wait(compute.default_stream)
        end.synchronize()
        assert start.query()
        assert start.elapsed_ms(end) >= 0


def _stream(compute, image):
    with compute.create_stream() as s:
        s.synchronize()


def _on_a_new_thread(compute, image):
    """A thread's first call makes the context current there; a failure must not mark it so."""
    errors = []

    def work():
        for _ in range(2):  # the second, with the context current, must work
            try:
                compute.alloc(64)
            except g.GomputeError as e:
                errors.append(e)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]


@g.map_kernel
def doubled(x: g.f32) -> g.f32:
    return x * 2


RAISING = [
    Case("cuMemAlloc", _alloc, g.AllocFailed, OUT_OF_MEMORY),
    Case("cuMemAllocHost", _alloc_pinned, g.AllocFailed, OUT_OF_MEMORY),
    Case("cuMemcpyHtoD", _copies, g.CopyFailed),
    Case("cuMemcpyDtoD", _copies, g.CopyFailed),
    Case("cuMemcpyDtoH", _copies, g.CopyFailed),
    Case("cuMemcpyHtoDAsync", _async_copies, g.CopyFailed),
    Case("cuMemcpyDtoDAsync", _async_copies, g.CopyFailed),
    Case("cuMemcpyDtoHAsync", _async_copies, g.CopyFailed),
    Case("cuStreamCreate", _stream, g.DeviceError),
    Case("cuStreamSynchronize", _stream, g.SyncFailed),
    Case("cuEventCreate", _events, g.DeviceError),
    Case("cuEventRecord", _events, g.DeviceError),
    Case("cuStreamWaitEvent", _events, g.DeviceError),
    Case("cuEventSynchronize", _events, g.SyncFailed),
    Case("cuEventQuery", _events, g.SyncFailed),
    Case("cuEventElapsedTime", _events, g.DeviceError),
    Case("cuCtxSynchronize", _synchronize, g.SyncFailed),
    Case("cuCtxSetCurrent", _on_a_new_thread, g.DeviceError),
    Case("cuDeviceGetName", _device_info, g.DeviceError),
    Case("cuDeviceGetAttribute", _device_info, g.DeviceError),
    Case("cuDeviceTotalMem", _device_info, g.DeviceError),
    Case("cuDeviceGet", _device_info, g.DeviceError),
    Case("cuModuleGetFunction", _launch, g.DeviceError),
    Case("cuLaunchKernel", _launch, g.LaunchFailed),
    Case("cuLaunchKernel", _map_new_result, g.LaunchFailed),
    Case("cuLaunchKernel", _map_into, g.LaunchFailed),
    Case("cuMemAlloc", _map_new_result, g.AllocFailed, OUT_OF_MEMORY),
]
CODE_NAMES = {UNKNOWN: "CUDA_ERROR_UNKNOWN", OUT_OF_MEMORY: "CUDA_ERROR_OUT_OF_MEMORY"}


def _raised(kind: type[Exception], fn: Callable, *args) -> str:
    """The message and code of the `kind` that fn(*args) raises; its traceback, which holds
    the scenario's buffers, is let go."""
    with pytest.raises(kind) as raised:
        fn(*args)
    return f"{raised.value} [{raised.value.code}]"


@pytest.mark.parametrize("case", RAISING, ids=lambda c: f"{c.slot}-{c.run.__name__.strip('_')}")
def test_a_failed_call_raises_names_it_and_leaves_nothing(cuda, fake, fill_image, case):
    driver = Driver(fake)
    case.run(cuda, fill_image)  # warm: modules loaded, kernels compiled, nothing deferred
    cuda.synchronize()
    before = driver.held()
    driver.fail(case.slot, case.code)
    error = _raised(case.error, case.run, cuda, fill_image)
    assert driver.disarm(case.slot) == 1, f"{case.slot} was not called"
    assert case.slot in error and CODE_NAMES[case.code] in error
    cuda.synchronize()
    assert driver.held() == before
    case.run(cuda, fill_image)


@fails("cuModuleLoadDataEx")
def test_module_load_failure_loads_nothing_and_the_next_load_works(cuda, fake):
    driver = Driver(fake)
    text = FILL_TEXT.replace("fault_matrix_fill", "fault_matrix_load")
    image = images.gpu_text_image(text, ["fault_matrix_load"], "fault_matrix_load")
    before = driver.held()
    driver.fail("cuModuleLoadDataEx", UNKNOWN)
    with pytest.raises(g.ModuleLoadFailed, match="cuModuleLoadDataEx") as raised:
        cuda.load_module(image)
    assert raised.value.code == "CUDA_ERROR_UNKNOWN"
    assert driver.held() == before
    assert cuda.load_module(image).get_kernel("fault_matrix_load").name == "fault_matrix_load"


@fails("cuGetErrorName", "cuGetErrorString")
def test_a_failed_error_name_lookup_still_names_the_call(cuda, fake):
    driver = Driver(fake)
    for lookup in ("cuGetErrorName", "cuGetErrorString"):
        driver.fail("cuMemAlloc", OUT_OF_MEMORY)
        driver.fail(lookup, UNKNOWN)
        with pytest.raises(g.AllocFailed, match="cuMemAlloc") as raised:
            cuda.alloc(64)
        assert driver.disarm(lookup) == 1
        assert raised.value.code == ("CUDA_ERROR_2" if lookup == "cuGetErrorName" else "CUDA_ERROR_OUT_OF_MEMORY")
    cuda.alloc(64)


# ---- releases: a warning, never an exception -------------------------------------------


def _free(compute, image):
    compute.alloc(64).free()
    compute.synchronize()  # where gompute frees what was released


def _free_pinned(compute, image):
    compute.alloc_pinned(64)


def _destroy_stream(compute, image):
    with compute.create_stream():
        pass


def _destroy_event(compute, image):
    compute.create_event()


RELEASES = [
    Case("cuMemFree", _free, g.GomputeError),
    Case("cuMemFreeHost", _free_pinned, g.GomputeError),
    Case("cuStreamDestroy", _destroy_stream, g.GomputeError),
    Case("cuEventDestroy", _destroy_event, g.GomputeError),
]
REFUSED = {"cuMemFree": {"allocations": 1, "bytes": 64}, "cuMemFreeHost": {"pinned": 1},
           "cuStreamDestroy": {"streams": 1}, "cuEventDestroy": {"events": 1}}  # fmt: skip


@pytest.mark.parametrize("case", RELEASES, ids=lambda c: c.slot)
def test_a_refused_release_warns_with_the_call_and_code(cuda, fake, case, capfd):
    driver = Driver(fake)
    case.run(cuda, None)
    before = driver.held()
    driver.fail(case.slot, UNKNOWN)
    case.run(cuda, None)
    gc.collect()
    assert driver.disarm(case.slot) == 1
    warning = capfd.readouterr().err
    assert "gompute: warning" in warning and case.slot in warning and "CUDA_ERROR_UNKNOWN" in warning
    after = driver.held()
    # The driver still holds what it refused to release, and only that; gompute's books balance.
    assert {k: after[k] - before[k] for k in after if after[k] != before[k]} == REFUSED[case.slot]
    case.run(cuda, None)
    assert capfd.readouterr().err == ""


# ---- queries that have an answer without the driver ------------------------------------


@fails("cuModuleGetFunctionCount", "cuModuleEnumerateFunctions", "cuFuncGetName")
def test_failed_function_listing_still_finds_kernels(cuda, fake):
    driver = Driver(fake)
    for n, slot in enumerate(("cuModuleGetFunctionCount", "cuModuleEnumerateFunctions", "cuFuncGetName")):
        name = f"fault_matrix_list{n}"
        image = images.gpu_text_image(FILL_TEXT.replace("fault_matrix_fill", name), [name], name)
        driver.fail(slot, UNKNOWN)
        module = cuda.load_module(image)
        assert driver.disarm(slot) == 1
        assert module.get_kernel(name).name == name


@fails("cuFuncGetParamInfo")
def test_a_failed_parameter_query_leaves_the_arity_unknown(cuda, fake, fill_image):
    driver = Driver(fake)
    module = cuda.load_module(fill_image)
    driver.fail("cuFuncGetParamInfo", UNKNOWN)
    assert module.get_kernel("fault_matrix_fill").arity is None
    assert driver.disarm("cuFuncGetParamInfo") == 1
    assert module.get_kernel("fault_matrix_fill").arity == 2


@fails("cuPointerGetAttribute")
def test_a_failed_pointer_query_answers_unknown_once(cuda, fake):
    driver = Driver(fake)
    buf = open_compute_on(1).alloc(64)
    driver.fail("cuPointerGetAttribute", UNKNOWN)
    assert _core.pointer_device(g.Backend.cuda.kind, buf.device_addr()) == -1
    assert driver.disarm("cuPointerGetAttribute") == 1
    assert _core.pointer_device(g.Backend.cuda.kind, buf.device_addr()) == 1


def open_compute_on(ordinal: int):
    try:
        return g.runtime.cuda.Compute.init_device(ordinal)
    except g.ArgumentError as e:
        pytest.skip(f"the fake has one device here (FAKE_CUDA_DEVICES): {e}")


# ---- the context: retained at first use, released at shutdown --------------------------


@fails("cuDevicePrimaryCtxRetain")
def test_a_failed_retain_registers_nothing_and_shutdown_still_works(cuda, fake):
    driver = Driver(fake)
    g.runtime.shutdown(g.Backend.cuda)
    driver.fail("cuDevicePrimaryCtxRetain", UNKNOWN)
    with pytest.raises(g.DeviceError, match="cuDevicePrimaryCtxRetain") as raised:
        g.runtime.cuda.Compute.init()
    assert raised.value.code == "CUDA_ERROR_UNKNOWN"
    g.runtime.shutdown(g.Backend.cuda)  # once crashed on the failed context's empty registry slot
    g.runtime.cuda.Compute.init().alloc(64)


@fails("cuModuleUnload", "cuDevicePrimaryCtxRelease")
@pytest.mark.parametrize("slot", ["cuModuleUnload", "cuDevicePrimaryCtxRelease"])
def test_a_refused_unload_or_release_at_shutdown_warns(cuda, fake, fill_image, slot, capfd):
    driver = Driver(fake)
    g.runtime.cuda.Compute.init().load_module(fill_image)
    driver.fail(slot, UNKNOWN)
    g.runtime.shutdown(g.Backend.cuda)
    assert driver.disarm(slot) == 1
    warning = capfd.readouterr().err
    assert slot in warning and "CUDA_ERROR_UNKNOWN" in warning
    _launch(g.runtime.cuda.Compute.init(), fill_image)


# ---- calls made while the driver starts: a process each --------------------------------

STARTUP = {
    "cuInit": "cuInit failed with CUDA_ERROR_UNKNOWN",
    "cuDriverGetVersion": "cuDriverGetVersion failed with CUDA_ERROR_UNKNOWN",
    "cuDeviceGetCount": "cuDeviceGetCount failed with CUDA_ERROR_UNKNOWN",
}
PROBE = """
import gompute as g
try:
    g.runtime.cuda.Compute.init()
except g.BackendUnavailable as e:
    print("unavailable:", e)
"""


@pytest.mark.parametrize("slot", STARTUP)
def test_a_failed_startup_call_makes_cuda_unavailable_saying_why(cuda, slot):
    env = dict(os.environ, FAKE_CUDA_FAIL=",".join(f"{s}:1:{UNKNOWN}" for s in _symbols()[slot]))
    run = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "unavailable:" in run.stdout and STARTUP[slot] in run.stdout


def test_every_resolved_entry_point_is_failed_by_a_scenario():
    covered = {c.slot for c in RAISING + RELEASES} | set(STARTUP)
    covered |= FAILED_BY_TESTS
    assert covered == set(_symbols())


# ---- the fake's streams run behind the host ---------------------------------------------

GATE_TEXT = """
extern "C" __global__ void fault_matrix_gate(const volatile unsigned* open, unsigned long long spins) {
  for (unsigned long long i = 0; i < spins && *open == 0; ++i) {
  }
}
"""


def test_work_on_a_stream_runs_behind_the_host(cuda, fill_image):
    """What makes a missing wait a wrong result rather than a pass: a stream's work is not
    done when its launch returns, and a copy on the legacy stream does not wait for it."""
    gate = cuda.load_module(images.gpu_text_image(GATE_TEXT, ["fault_matrix_gate"], "fault_matrix_gate"))
    fill = cuda.load_module(fill_image).get_kernel("fault_matrix_fill")
    flag, out, host = cuda.alloc(4), cuda.empty((64,), g.f32), np.zeros(64, np.float32)
    flag.upload(np.zeros(1, np.uint32))
    out.upload(host)
    with cuda.create_stream() as s:
        gate.get_kernel("fault_matrix_gate").launch(1, 1, 0, [flag.arg_ptr(), g.interface.arg(g.u64(2**34))], stream=s)
        fill.launch(1, 64, 0, [out.arg_ptr(), g.interface.arg(g.u64(64))], stream=s)
        out.download(host)  # no wait for `s`, which the gate holds
        assert (host == 0).all()
        flag.upload(np.ones(1, np.uint32))  # the legacy stream: not behind `s`
        s.synchronize()
    out.download(host)
    assert (host == 7).all()
