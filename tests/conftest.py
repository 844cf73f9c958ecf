"""What every test directory shares: a kernel cache of the run's own, a Compute per present
backend, and the host C++ compiler."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import gompute as g
from gompute.compile.cache import ENV_VAR as CACHE_ENV_VAR

REPO = Path(__file__).resolve().parent.parent
INCLUDE = REPO / "gompute" / "include"
GPU_BACKENDS = (g.Backend.cuda, g.Backend.hip)


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
