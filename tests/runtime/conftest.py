"""The runtime tests' hand-written host module, built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

import gompute as g

KERNEL_SOURCE = Path(__file__).with_name("host_kernels.cpp")


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
