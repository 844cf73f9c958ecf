"""What every test directory shares: a kernel cache of the run's own, the cuda/hip/slow markers,
a count of skips by reason at the end, a Compute per present backend, and the host C++ compiler."""

from __future__ import annotations

import collections
import hashlib
import os
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

import pytest

import gompute as g
from gompute.compile.cache import ENV_VAR as CACHE_ENV_VAR

REPO = Path(__file__).resolve().parent.parent
INCLUDE = REPO / "gompute" / "include"
GPU_BACKENDS = (g.Backend.cuda, g.Backend.hip)

# Tests that need the CUDA backend without taking it from the `compute` fixture: they skip
# without a GPU or the fake driver (GOMPUTE_LIBCUDA, as `make test`'s second run sets it).
CUDA_TESTS = (
    "tests/interop/test_capsules.py::test_the_default_stream_is_asked_for_as_the_array_apis_1_on_cuda",
    "tests/interop/test_capsules.py::test_stream_minus_one_asks_for_no_ordering_and_names_no_stream",
    "tests/map/test_gpu_check.py",
    "tests/map/test_gpu_devices.py",
    "tests/map/test_gpu_paths.py",
    "tests/map/test_gpu_tuning.py",
    "tests/map/test_torch_cuda_path.py",
    "tests/reduce/test_fake_cuda.py",
    "tests/runtime/test_cuda_adapter.py",
)

# The slowest tests on the host backend (pytest --durations=15): `pytest -m "not slow"` leaves
# them out for a quick run. A test id, or a file for all of its tests (test_ops compiles every
# operator for every type into one module before its first test).
SLOW_TESTS = (
    "tests/compile/test_hip_real.py::test_every_operator_and_builtin_compiles_for_hip",
    "tests/interop/test_lifetimes.py::test_capsules_held_then_dropped_together_leak_nothing",
    "tests/lang/test_nvrtc.py::test_every_operator_and_builtin_compiles_for_cuda",
    "tests/lang/test_fuzz.py",
    "tests/lang/test_ops.py",
    "tests/map/test_kernel_loops.py::test_a_wide_range_past_two_to_the_32_runs_every_trip",
    "tests/map/test_pool_settings.py::test_maps_are_exact_under_every_pool_setting",
    "tests/map/test_thread_stacks.py::test_maps_on_a_32_kib_thread_stack",
    "tests/test_cli.py::test_demo_runs_and_checks_its_results",
)


def pytest_configure(config):
    """Kernels compile into a cache of the run's own, unless GOMPUTE_CACHE_DIR names one: no test
    writes into the user's cache or finds a kernel an earlier run left there. Set here, not in a
    fixture, so that kernels compiled while modules are collected, and the processes tests start,
    use it too."""
    if os.environ.get(CACHE_ENV_VAR):
        return
    folder = tempfile.mkdtemp(prefix="gompute-test-cache-")
    os.environ[CACHE_ENV_VAR] = folder

    def remove():
        os.environ.pop(CACHE_ENV_VAR, None)
        shutil.rmtree(folder, ignore_errors=True)

    config.add_cleanup(remove)


def _listed(item: pytest.Item, entries) -> str | None:
    """The entry of `entries` (a file, or a test id without its parameters) that names `item`."""
    path, _, name = item.nodeid.partition("::")
    test = f"{path}::{name.partition('[')[0]}"
    return next((e for e in entries if e in (path, test)), None)


def pytest_collection_modifyitems(config, items):
    """cuda and hip: tests given a Compute of that backend by the `compute` fixture or listed in
    CUDA_TESTS; slow: those listed in SLOW_TESTS. An entry that names no collected test (renamed,
    removed) is warned about, so that the lists do not rot unseen."""
    used = set()
    for item in items:
        params = getattr(item, "callspec", None)
        backend = params.params.get("compute") if params else None
        if backend in GPU_BACKENDS:
            item.add_marker(backend.value)
        for entries, marker in ((CUDA_TESTS, "cuda"), (SLOW_TESTS, "slow")):
            entry = _listed(item, entries)
            if entry:
                item.add_marker(marker)
                used.add(entry)
    collected = {item.nodeid.partition("::")[0] for item in items}
    for entry in {*CUDA_TESTS, *SLOW_TESTS} - used:
        if entry.partition("::")[0] in collected:
            warnings.warn(pytest.PytestWarning(f"tests/conftest.py lists {entry}, which names no test"), stacklevel=1)


def _skip_reason(report) -> str:
    """A skip's reason, to its first colon: "cuda is not usable here: CUDA is unavailable: ..."
    counts as "cuda is not usable here", whatever the machine says after it."""
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return reason.removeprefix("Skipped: ").split(": ", 1)[0]


def pytest_terminal_summary(terminalreporter):
    """One line at the end: how many tests skipped, for which reasons, the most common first."""
    counts = collections.Counter(_skip_reason(r) for r in terminalreporter.stats.get("skipped", []))
    if counts:
        terminalreporter.write_line("skipped: " + ", ".join(f"{n} {why}" for why, n in counts.most_common()))


def open_compute(backend: g.Backend):
    """A Compute on device 0 of `backend`, or a pytest skip saying why there is none."""
    try:
        return getattr(g.runtime, backend.value).Compute.init()
    except g.BackendUnavailable as e:
        pytest.skip(f"{backend} is not usable here: {e}")


@pytest.fixture(params=[g.Backend.host, *GPU_BACKENDS], ids=str)
def compute(request):
    """One Compute per backend: host always, cuda and hip where this machine has them."""
    c = open_compute(request.param)
    yield c
    c.deinit()


@pytest.fixture
def host():
    """A host-backend Compute (for tests about the host backend itself)."""
    with g.runtime.host.Compute.init() as c:
        yield c


@pytest.fixture(scope="session")
def cxx() -> str:
    """The host C++ compiler ($CXX, else c++/g++/clang++); skips when there is none."""
    candidates = [os.environ.get("CXX"), "c++", "g++", "clang++"]
    for name in filter(None, candidates):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no host C++ compiler found ($CXX, c++, g++, clang++)")


@pytest.fixture(scope="session")
def build_host(cxx, tmp_path_factory):
    """build_host(source, shared=True) -> path: compiles C++ against gompute's headers, once per source."""
    out_dir = tmp_path_factory.mktemp("host-build")
    built: dict[tuple[str, bool], Path] = {}

    def build(source: str, shared: bool = True) -> Path:
        key = (source, shared)
        if key not in built:
            stem = hashlib.sha256(source.encode()).hexdigest()[:16]
            src = out_dir / f"{stem}.cpp"
            out = out_dir / (f"{stem}.so" if shared else f"{stem}.exe")
            src.write_text(source)
            flags = ["-O2", "-shared", "-fPIC", "-fvisibility=hidden"] if shared else ["-O1"]
            cmd = [cxx, "-std=c++17", *flags, f"-I{INCLUDE}", str(src), "-o", str(out)]
            result = subprocess.run(cmd, capture_output=True, text=True)
            if result.returncode != 0:
                pytest.fail(f"host compile failed: {' '.join(cmd)}\n{result.stderr}")
            built[key] = out
        return built[key]

    return build
