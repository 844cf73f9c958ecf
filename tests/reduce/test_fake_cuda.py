"""g.reduce on CUDA Buffers through the fake libcuda (`make test`'s second pass sets
GOMPUTE_LIBCUDA), which runs the reductions' generated CUDA text on the CPU (tests/fakes), or on
a real GPU. Elsewhere they skip."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import gompute as g
from gompute.lang import kernel as lang
from gompute.lang.module import module_source
from gompute.lang.reduce_kernel import ReduceKernel
from gompute.types import from_dtype
from tests.conftest import open_compute
from tests.fakes import images

from . import kernels as K

reduce_module = importlib.import_module("gompute.reduce")  # g.reduce, the function, shadows the name


@pytest.fixture
def cuda(monkeypatch):
    compute = open_compute(g.Backend.cuda)
    if images.is_fake(compute):  # the fake runs host objects built from the CUDA text NVRTC would get
        host_image_of = ReduceKernel.image_of

        def image_of(self, spec, backend, arch=None):
            if lang.backend_name(backend) != "cuda":  # a host reduction in the test stays the host's
                return host_image_of(self, spec, backend, arch)
            entries = tuple(spec.entry_points())
            source = module_source([spec], "cuda")
            data = images.gpu_text_image(source, (e.symbol for e in entries), f"{spec.name}__{spec.group}_fake")
            return lang.Image(data, "cubin", "cuda", arch, entries, None)

        monkeypatch.setattr(ReduceKernel, "image_of", image_of)
        monkeypatch.setattr(reduce_module, "_target_arch", lambda compute: "sm_90")
    yield compute
    compute.synchronize()
    compute.deinit()


def _on(compute, host: np.ndarray):
    buf = compute.empty(host.shape, from_dtype(host.dtype))
    buf.upload(np.ascontiguousarray(host))
    return buf


def _down(compute, buf, dtype) -> np.ndarray:
    compute.synchronize()
    out = np.empty(tuple(buf.shape), dtype)
    buf.download(out)
    return out


def test_reductions_of_cuda_buffers(cuda):
    x = np.random.default_rng(4).standard_normal((300, 70)).astype(np.float32)
    buf = _on(cuda, x)
    for axis in (None, 0, 1):
        got = g.reduce(K.sumsq)(buf, axis=axis)
        assert isinstance(got, g.Buffer) and (got.backend, got.device) == (g.Backend.cuda, 0)
        np.testing.assert_allclose(_down(cuda, got, np.float32), np.sum(x * x, axis=axis), rtol=1e-5)
    out = cuda.empty((1, 70), g.f32)
    g.reduce(K.absmax)(buf, axis=0, keepdims=True, out=out)
    np.testing.assert_array_equal(_down(cuda, out, np.float32), np.max(np.abs(x), axis=0, keepdims=True))
    np.testing.assert_allclose(
        _down(cuda, g.reduce(K.dot)(buf, buf), np.float32), np.sum(x.astype(np.float64) ** 2), rtol=1e-5
    )


def test_reductions_of_torch_cuda_tensors_are_made_by_the_tables_allocator(cuda):
    """A torch CUDA tensor's result is a tensor its exchange table's allocator made on its device
    (tests/fakes/torch_cuda.py stands in for torch's), on the general path and the C++ fast one."""
    pytest.importorskip("torch", reason="PyTorch is not installed")
    if not images.is_fake(cuda):
        pytest.skip("FakeCudaTensor describes memory of the fake driver")
    from tests.fakes.torch_cuda import FakeCudaTensor

    x = np.random.default_rng(5).standard_normal((300, 70)).astype(np.float32)
    t = FakeCudaTensor.over(_on(cuda, x))
    r = g.reduce(K.sumsq)
    for warm in (True, False):  # the general path first (where the fast path has not met the axes)
        for axis in (None, 0, 1):
            made = FakeCudaTensor.allocations
            got = r(t, axis=axis)
            assert isinstance(got, FakeCudaTensor) and got.buffer.device == 0
            assert warm or FakeCudaTensor.allocations == made + 1
            np.testing.assert_allclose(_down(cuda, got.buffer, np.float32), np.sum(x * x, axis=axis), rtol=1e-5)
