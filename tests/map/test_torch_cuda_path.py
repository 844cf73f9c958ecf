"""PyTorch CUDA tensors on g.map's C++ path: read through the DLPack exchange table
torch.Tensor carries, on torch's current stream read each call, with each write counted for
autograd (test_torch_tensors.py checks the same reading code on CPU tensors).

They run on a GPU with a CUDA build of torch, and on the fake libcuda with
tests/fakes/torch_cuda.py's FakeCudaTensor: a torch.Tensor whose exchange table describes
device memory of the fake and names the current stream a test chooses.
"""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g
from tests.fakes import images

from . import test_gpu_paths
from .calls import counting
from .kernels import scale_relu

torch = pytest.importorskip("torch", reason="PyTorch is not installed")

values = np.linspace(-2, 2, 3000, dtype=np.float32)


def relu(x, scale):
    return np.maximum(x * np.float32(scale), 0)


cuda = test_gpu_paths.cuda  # the fixture: a CUDA Compute (g.map's modules built for the CPU on the fake)


@pytest.fixture
def fake_tensor(cuda):
    """`fake_tensor(buffer, stream)`: a FakeCudaTensor over `buffer`, torch's current stream on
    its device now `stream` (a handle; None: the default stream). No CUDA build of torch is
    needed, nor used."""
    from tests.fakes.torch_cuda import FakeCudaTensor

    devices = set()

    def make(buffer, stream=None):
        FakeCudaTensor.set_current_stream(buffer.device, stream)
        devices.add(buffer.device)
        return FakeCudaTensor.over(buffer)

    yield make
    for device in devices:
        FakeCudaTensor.set_current_stream(device, None)


def filled(compute, host: np.ndarray):
    buf = compute.empty(host.shape, g.f32)
    buf.upload(host)
    return buf


def downloaded(buffer) -> np.ndarray:
    out = np.empty(buffer.shape, np.float32)
    buffer.download(out)
    return out


def test_cuda_tensors_launch_from_the_cpp_path_on_torchs_current_stream(cuda, fake_tensor):
    from tests.fakes.torch_cuda import FakeCudaTensor

    stream = cuda.create_stream()
    x = fake_tensor(filled(cuda, values), stream.handle)
    y = fake_tensor(cuda.empty(values.shape, g.f32), stream.handle)
    k, calls = counting(scale_relu)
    asked = FakeCudaTensor.stream_queries(0)
    assert k(x, out=y, scale=2) is y  # the general path, which asks the same table for the stream
    assert FakeCudaTensor.stream_queries(0) > asked
    for scale in (3, 0.25):
        asked, version = FakeCudaTensor.stream_queries(0), y._version
        assert k(x, out=y, scale=scale) is y
        assert FakeCudaTensor.stream_queries(0) == asked + 2  # the stream is read each call, for each tensor
        assert y._version > version  # the write counts for autograd
        stream.synchronize()
        np.testing.assert_array_equal(downloaded(y.buffer), relu(values, scale))
    assert calls == ["FakeCudaTensor"]


def test_work_queued_on_torchs_stream_is_seen_without_a_synchronize(cuda, fake_tensor):
    """An upload on the current stream, the launch, a download on the stream: ordered by the
    stream alone (the fake runs each stream's work late, on a thread of its own)."""
    stream = cuda.create_stream()
    x = fake_tensor(cuda.empty(values.shape, g.f32), stream.handle)
    k, calls = counting(scale_relu)
    k(x, out=x, scale=1)
    host = cuda.alloc_pinned(values.nbytes)
    staged = np.frombuffer(host, np.float32)
    for scale in (2, 3, 4):
        staged[:] = values
        x.buffer.upload(host, stream=stream)
        k(x, out=x, scale=scale)
        x.buffer.download(host, stream=stream)
        stream.synchronize()
        np.testing.assert_array_equal(staged, relu(values, scale))
    assert len(calls) == 1


def test_the_launch_goes_on_the_stream_the_table_names(cuda, fake_tensor):
    """A handle the driver does not know reaches the driver: the C++ path asked the table."""
    if not images.is_fake(cuda):
        pytest.skip("a stale stream handle is undefined behaviour on a real driver")
    stream = cuda.create_stream()
    x = fake_tensor(filled(cuda, values), stream.handle)
    k, calls = counting(scale_relu)
    k(x, out=x, scale=1)
    stale = cuda.create_stream()
    handle = stale.handle
    stale.deinit()
    fake_tensor(x.buffer, handle)  # torch's current stream is now one the driver has destroyed
    with pytest.raises(g.GomputeError, match=f"stream {handle} .* is no stream of cuda:0"):
        k(x, out=x, scale=1)
    assert len(calls) == 1  # raised by the C++ path's launch


def test_a_tensor_on_the_second_device_runs_there_on_that_devices_stream(cuda, fake_tensor):
    from tests.fakes.torch_cuda import FakeCudaTensor

    count = g._core.probe(g.Backend.cuda.kind)[3]
    if count < 2:
        pytest.skip(f"one CUDA device here ({count}); the fake has two with FAKE_CUDA_DEVICES=2")
    second = g.runtime.cuda.Compute.init_device(1)
    stream = second.create_stream()
    x = fake_tensor(filled(second, values), stream.handle)
    k, calls = counting(scale_relu)
    asked = [FakeCudaTensor.stream_queries(d) for d in (0, 1)]
    for scale in (2, 3):
        k(x, out=x, scale=scale)
    stream.synchronize()
    np.testing.assert_array_equal(downloaded(x.buffer), relu(values, 6))
    assert len(calls) == 1
    assert FakeCudaTensor.stream_queries(0) == asked[0] and FakeCudaTensor.stream_queries(1) > asked[1]


def test_new_results_come_from_the_tables_allocator_on_the_tensors_device(cuda, fake_tensor):
    """Without out=, the result is made by the exchange table's allocator (torch's caching allocator
    on a GPU) on the input's device, by the general path and by the C++ path alike, and the launch
    goes on torch's current stream there."""
    from tests.fakes.torch_cuda import FakeCudaTensor

    count = g._core.probe(g.Backend.cuda.kind)[3]
    computes = [cuda] + ([g.runtime.cuda.Compute.init_device(1)] if count > 1 else [])
    for device, compute in enumerate(computes):
        stream = compute.create_stream()
        x = fake_tensor(filled(compute, values), stream.handle)
        k, calls = counting(scale_relu)
        for scale in (2, 3):
            made, asked = FakeCudaTensor.allocations, FakeCudaTensor.stream_queries(device)
            y = k(x, scale=scale)
            assert isinstance(y, FakeCudaTensor) and y.buffer.device == device and y.shape == x.shape
            assert FakeCudaTensor.allocations == made + 1
            assert FakeCudaTensor.stream_queries(device) > asked
            stream.synchronize()
            np.testing.assert_array_equal(downloaded(y.buffer), relu(values, scale))
        assert calls == ["FakeCudaTensor"]  # the second call: the C++ path's allocation


def test_an_allocator_that_fails_raises_alloc_failed_with_its_first_line(cuda, fake_tensor):
    from tests.fakes.torch_cuda import FakeCudaTensor

    x = fake_tensor(filled(cuda, values))
    k, calls = counting(scale_relu)
    k(x, scale=1)
    FakeCudaTensor.refuse_allocations = True
    try:
        for _ in range(2):  # the C++ path gives up and the general path says why
            with pytest.raises(g.AllocFailed, match=r"shape \(3000,\), 12000 bytes.*CUDA out of memory") as raised:
                k(x, scale=1)
            assert "fake trace line" not in str(raised.value)
    finally:
        FakeCudaTensor.refuse_allocations = False
    assert len(calls) == 3


def test_real_cuda_tensors_take_the_cpp_path_on_torchs_stream():
    """On a GPU with a CUDA build of torch (gpu_check.py runs the CUDA-marked tests there)."""
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device here (the fake driver's tests stand in for it)")
    k, calls = counting(scale_relu)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        t = torch.from_numpy(values).cuda()
        versions = []
        for scale in (2, 3, 0.5):
            k(t, out=t, scale=scale)
            versions.append(t._version)
        got = t.cpu().numpy()
        made = [k(t, scale=2) for _ in range(2)]  # new results: torch's allocator, on the general and C++ paths
        after = [(y + 1).cpu().numpy() for y in made]  # torch ops on the same stream see them done
    np.testing.assert_allclose(got, relu(values, 3), rtol=1e-6)
    assert len(calls) == 2 and versions == sorted(set(versions))
    for y, values_after in zip(made, after):
        assert type(y) is torch.Tensor and y.device == t.device and y.dtype == torch.float32
        np.testing.assert_allclose(values_after, relu(relu(values, 3), 2) + 1, rtol=1e-6)
