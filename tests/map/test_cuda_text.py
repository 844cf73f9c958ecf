"""The GPU text on the CPU: CUDA and HIP C++ as NVRTC and hiprtc get it, built by the host compiler
through tests/fakes/cuda_shim.h and launched on the host runtime, grid and block as given.

The fake CUDA driver runs every g.map module this way (tests/fakes/images.py); these tests hold the
shim itself to CUDA's semantics (a block's threads meet at `__syncthreads` and share `__shared__`
memory, a grid-stride loop sees the real grid) and run the HIP text, which no driver here loads,
through every entry point kind.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import gompute as g
from gompute import kernel as bound
from gompute.lang import kernel as lang
from gompute.lang.module import module_source
from tests.conftest import open_compute
from tests.fakes import images
from tests.interop import dlpack_abi

from .kernels import axpy, is_positive, relax, scale_half, scale_relu
from .test_gpu_devices import download, filled

BLOCKS = r"""
// The flat index of this thread in its block, and of its block in the grid (x fastest).
__device__ __forceinline__ unsigned int flat_thread() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
__device__ __forceinline__ unsigned int flat_block() {
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

// Each block's elements in reverse order, through shared memory: a thread writes back what
// another thread of its block read, so it must not run ahead of the barrier.
extern "C" __global__ void reverse_blocks(float* data) {
  __shared__ float tile[1024];
  const unsigned int n = blockDim.x * blockDim.y * blockDim.z, t = flat_thread();
  float* mine = data + (unsigned long long)flat_block() * n;
  tile[t] = mine[t];
  __syncthreads();
  mine[t] = tile[n - 1 - t];
}

// Each block's sum, by halving in shared memory: one barrier per step, in a loop.
extern "C" __global__ void block_sums(const float* in, float* sums) {
  __shared__ float part[256];
  const unsigned int t = threadIdx.x;
  part[t] = in[(unsigned long long)blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned int half = blockDim.x / 2; half > 0; half /= 2) {
    if (t < half) part[t] += part[t + half];
    __syncthreads();
  }
  if (t == 0) sums[blockIdx.x] = part[0];
}

// A barrier some threads of a block skip: undefined on a GPU, a trap here.
extern "C" __global__ void divergent_barrier(float* data) {
  if (threadIdx.x != 0) __syncthreads();
  data[threadIdx.x] = 1.0f;
}
"""
KERNELS = ("reverse_blocks", "block_sums", "divergent_barrier")


@pytest.fixture(scope="module")
def host():
    return open_compute(g.Backend.host)


@pytest.fixture(scope="module")
def blocks(host):
    return host.load_module(images.gpu_text_image(BLOCKS, KERNELS, "cuda_text_blocks"))


@pytest.mark.parametrize("grid, block", [(g.Dim3(3, 2, 1), g.Dim3(8, 4, 2)), (g.Dim3(5), g.Dim3(1024))], ids=str)
def test_threads_of_a_block_meet_at_syncthreads_and_share_memory(host, blocks, grid, block):
    values = np.arange(grid.count * block.count, dtype=np.float32)
    data = filled(host, values)
    blocks.get_kernel("reverse_blocks").launch(grid, block, 0, [data.arg_ptr()])
    expected = values.reshape(grid.count, block.count)[:, ::-1].ravel()
    np.testing.assert_array_equal(download(host, data), expected)


def test_a_barrier_in_a_loop_orders_every_step(host, blocks):
    rng = np.random.default_rng(7)
    values = rng.integers(-1000, 1000, 37 * 256).astype(np.float32)  # sums exact in f32
    data, sums = filled(host, values), host.empty((37,), g.f32)
    blocks.get_kernel("block_sums").launch(37, 256, 0, [data.arg_ptr(), sums.arg_ptr()])
    np.testing.assert_array_equal(download(host, sums), values.reshape(37, 256).sum(axis=1))


def test_a_barrier_thread_0_skips_traps(host, blocks):
    data = host.empty((64,), g.f32)
    blocks.get_kernel("divergent_barrier").launch(1, 64, 0, [data.arg_ptr()])
    with pytest.raises(g.SyncFailed, match="__syncthreads"):
        host.synchronize()


@pytest.mark.parametrize("text", ["cuda", "hip"])
@pytest.mark.parametrize("grid", [g.Dim3(2), g.Dim3(2, 3, 2)], ids=str)
def test_the_grid_stride_loop_covers_more_elements_than_threads(host, text, grid):
    spec = scale_relu.specialize()
    entry = spec.entry("map")
    image = images.gpu_text_image(module_source([spec], text), [e.symbol for e in spec.entry_points()], spec.name)
    n = 7 * grid.count * spec.block_size + 5
    values = np.linspace(-3, 3, n, dtype=np.float32)
    x, y = filled(host, values), host.empty((n,), g.f32)
    params = g.interface.arg(g.abi.pack(spec.params_class, scale=2))
    host.load_module(image).get_kernel(entry.symbol).launch(
        grid, spec.block_size, 0, [x.arg_ptr(), y.arg_ptr(), g.interface.arg(g.u64(n)), params]
    )
    np.testing.assert_array_equal(download(host, y), np.maximum(values * 2, 0))


@pytest.fixture(params=["cuda", "hip"])
def gpu_text(request, monkeypatch):
    """While a test runs, g.map's host modules are built from the GPU text `request.param`
    through the shim; yields the entry kinds launched."""
    launched = []

    def image_of(self, spec, backend, arch=None):
        assert lang.backend_name(backend) == "host"
        entries = tuple(spec.entry_points())
        data = images.gpu_text_image(module_source([spec], request.param), (e.symbol for e in entries), spec.name)
        return lang.Image(data, "so", "host", None, entries, None)

    launcher = bound.BoundKernel.launcher

    def recorded(self, in_storage, out_storage, kind):
        launched.append(kind)
        return launcher(self, in_storage, out_storage, kind)

    monkeypatch.setattr(lang.MapKernel, "image_of", image_of)
    monkeypatch.setattr(bound.BoundKernel, "launcher", recorded)
    return launched


def test_every_entry_point_kind_runs(gpu_text):
    values = np.linspace(-4, 4, 3001, dtype=np.float32)
    grid = values[:3000].reshape(60, 50)
    k = bound.AutoKernel(scale_relu)  # bindings of its own, whose launchers are built from the GPU text
    np.testing.assert_array_equal(k(values, scale=1.5), relu(values))
    np.testing.assert_array_equal(k(grid.T, scale=1.5), relu(grid.T))
    inplace = values.copy()
    assert k(inplace, out=inplace, scale=1.5) is inplace
    np.testing.assert_array_equal(inplace, relu(values))
    assert set(gpu_text) == {"inplace", "map", "strided"}


def relu(x):
    return np.maximum(x * np.float32(1.5), 0)


def test_halves_loops_and_broadcasting_run_as_numpy_computes_them(gpu_text):
    rng = np.random.default_rng(3)
    halves = rng.standard_normal(2000).astype(np.float16)
    a, x, y = np.full((1, 1), 0.75), rng.standard_normal((40, 30)), rng.standard_normal(30)
    relaxed = x
    for _ in range(5):
        relaxed = 0.5 * (relaxed + 1.0)
    np.testing.assert_array_equal(bound.AutoKernel(scale_half)(halves, scale=3), halves * np.float16(3))
    np.testing.assert_array_equal(bound.AutoKernel(relax)(x, steps=5), relaxed)
    np.testing.assert_array_equal(bound.AutoKernel(axpy)(a, x, y), a * x + y)
    np.testing.assert_array_equal(bound.AutoKernel(axpy)(a, x[:, ::2], y[::2]), a * x[:, ::2] + y[::2])
    assert {"map", "strided"} <= set(gpu_text)


# Vector access. A contiguous entry moves 16 bytes of its widest type at a time from the first
# element at which every array is 16-byte aligned, and element by element where the arrays'
# misalignments differ; the shim traps any vector access that is not aligned.
@g.map_kernel
def twice(x):
    return x + x


@g.map_kernel
def flip(x: g.bool_) -> g.bool_:
    return not x


SIZES = {1: np.int8, 2: np.float16, 4: np.float32, 8: np.float64}


def _twice(x):
    return (x + x).astype(x.dtype)


def _views(dtype, n: int, offset: int, out_offset: int | None):
    """x: n elements `offset` elements into an allocation; out: n elements `out_offset` into
    another (None: g.map makes it)."""
    x = (np.arange(n + offset + 1) % 101 - 50).astype(dtype)[offset : offset + n]
    out = None if out_offset is None else np.zeros(n + out_offset + 1, dtype)[out_offset : out_offset + n]
    return x, out


@pytest.mark.parametrize("itemsize", sorted(SIZES))
def test_every_misalignment_and_length_of_every_element_size(gpu_text, itemsize):
    dtype, width = SIZES[itemsize], 16 // itemsize
    k = bound.AutoKernel(twice)
    lengths = [1, 2, 3, width - 1, width, width + 1, 2 * width + 3, 3001]
    for n in sorted(set(lengths) - {0}):
        for offset in sorted({0, 1, width - 1}):
            for out_offset in (None, offset, (offset + 1) % width):
                x, out = _views(dtype, n, offset, out_offset)
                got = k(x) if out is None else k(x, out=out)
                np.testing.assert_array_equal(got, _twice(x), err_msg=f"n={n} offset={offset} out={out_offset}")
            inplace = x.copy() if offset == 0 else _views(dtype, n, offset, None)[0]
            expected = _twice(inplace)
            assert k(inplace, out=inplace) is inplace
            np.testing.assert_array_equal(inplace, expected, err_msg=f"in place, n={n} offset={offset}")
    assert {"inplace", "map"} <= set(gpu_text)


def test_bools_and_mixed_sizes_and_storage_variants(gpu_text):
    values = np.linspace(-3, 3, 1003, dtype=np.float32)
    flags = values > 0
    for offset in (0, 1, 5):
        np.testing.assert_array_equal(bound.AutoKernel(flip)(flags[offset:]), ~flags[offset:])
        out = np.zeros(1004, bool)[offset : offset + 1003 - offset]
        bound.AutoKernel(is_positive)(values[offset:], out=out)  # f32 in, bool out: 4 elements a vector
        np.testing.assert_array_equal(out, values[offset:] > 0)
        shorts = np.arange(-500, 503, dtype=np.int16)[offset:]  # stored as i16, read as f32
        np.testing.assert_array_equal(bound.AutoKernel(scale_relu)(shorts, scale=1.5), relu(shorts.astype(np.float32)))


class OffsetProducer:
    """A CPU DLPack producer of `array` whose tensors' data is `byte_offset` bytes before the
    array, and whose byte_offset reaches it; a new capsule each time one is asked for."""

    def __init__(self, array, byte_offset: int):
        self.array, self.byte_offset = array, byte_offset

    def __dlpack__(self, **_):
        return dlpack_abi.Handmade(self.array, byte_offset=self.byte_offset).capsule

    def __dlpack_device__(self):
        return (dlpack_abi.KDL_CPU, 0)


def test_a_dlpack_byte_offset_is_a_misalignment_like_any(gpu_text):
    base = np.arange(64, dtype=np.float64)
    for skip in (0, 1, 2, 3):
        x = base[skip:]
        for out in (np.zeros(64 - skip), np.zeros(65)[1 : 65 - skip]):  # 16-byte aligned, and 8 bytes past
            bound.AutoKernel(twice)(OffsetProducer(x, 8 * skip), out=out)
            np.testing.assert_array_equal(out, x + x, err_msg=f"byte_offset {8 * skip}")


def test_a_vector_access_off_its_alignment_traps_naming_the_array(host):
    """The check is in every vector access: with the head forced to 0, a misaligned input traps
    instead of being read."""
    spec = twice.specialize(g.f32)
    entry = spec.entry("map")
    text = module_source([spec], "cuda")
    forced = re.sub(r"const uint64_t head = [^;]*;", "const uint64_t head = 0;", text)
    assert forced != text
    image = images.gpu_text_image(forced, [e.symbol for e in spec.entry_points()], "cuda_text_forced_head")
    kernel = host.load_module(image).get_kernel(entry.symbol)
    values = np.arange(65, dtype=np.float32)
    x, y = filled(host, values), host.empty((65,), g.f32)

    def launch(at: int):
        address = g.interface.arg(g.u64(x.device_addr() + at))
        kernel.launch(1, spec.block_size, 0, [address, y.arg_ptr(), g.interface.arg(g.u64(64))])

    launch(0)
    host.synchronize()
    np.testing.assert_array_equal(download(host, y)[:64], values[:64] * 2)
    launch(4)
    with pytest.raises(
        g.SyncFailed, match=rf"{entry.symbol}: misaligned 16-byte vector access to in0 at 0x[0-9a-f]+4\b"
    ):
        host.synchronize()
