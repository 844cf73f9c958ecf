"""The runtime tests' hand-written host module and the fake libcuda, each built once per session."""

from __future__ import annotations

import ctypes.util
import subprocess
from pathlib import Path

import pytest

import gompute as g

KERNEL_SOURCE = Path(__file__).with_name("host_kernels.cpp")
REPO = Path(__file__).resolve().parents[2]
FAKE_SOURCE = REPO / "tests" / "fakes" / "fake_libcuda.cpp"


@pytest.fixture(scope="session")
def kernel_names() -> set[str]:
    """The kernels host_kernels.cpp defines."""
    return {"scale_relu", "add", "checked_sqrt", "gate", "grid_ids", "fill_u32"}


@pytest.fixture(scope="session")
def host_module_path(build_host) -> Path:
    """The path of the shared object holding every kernel in host_kernels.cpp."""
    return build_host(KERNEL_SOURCE.read_text())


@pytest.fixture(scope="session")
def host_image(host_module_path) -> bytes:
    """The bytes of that shared object: what load_module takes."""
    return host_module_path.read_bytes()


@pytest.fixture
def kernels(compute, host_image):
    """The hand-written module loaded on `compute`; host only (GPU backends need PTX)."""
    if compute.backend is not g.Backend.host:
        pytest.skip(
            f"the hand-written kernels are a host shared object; {compute.backend} needs PTX/HSACO "
            "(benchmarks/gpu_check.py runs these scenarios with PTX)"
        )
    return compute.load_module(host_image)


@pytest.fixture(scope="session")
def fake_libcuda(cxx, tmp_path_factory) -> dict[str, Path]:
    """The fake built complete ("fake") and without cuLaunchKernel ("old"), and a path that isn't there."""
    out = tmp_path_factory.mktemp("fake-libcuda")
    paths = {
        "fake": out / "libcuda-fake.so",
        "old": out / "libcuda-old.so",
        "missing": out / "no-such-libcuda.so",
        "not_cuda": Path(ctypes.util.find_library("m") or "libm.so.6"),  # a library, but no driver
    }
    builds = []
    for name, defines in (("fake", []), ("old", ["-DFAKE_CUDA_OLD"])):
        cmd = [
            cxx,
            "-std=c++17",
            "-O1",
            "-shared",
            "-fPIC",
            "-fvisibility=hidden",
            f"-I{REPO / 'gompute' / 'include'}",
            *defines,
            str(FAKE_SOURCE),
            "-o",
            str(paths[name]),
            "-ldl",
        ]
        builds.append((cmd, subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)))
    for cmd, build in builds:  # the two build at once
        _, err = build.communicate()
        if build.returncode != 0:
            pytest.fail(f"building the fake libcuda failed: {' '.join(cmd)}\n{err}")
    return paths
