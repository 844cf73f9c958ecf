"""Hand-written CUDA kernels through tests/fakes/cuda_shim.h: the warp collectives, the atomics,
dynamic shared memory and launch bounds, as a GPU runs them.

Each kernel runs on the host runtime, whose worker pool runs a grid's blocks on several threads
at once, and on the fake libcuda where it is the CUDA backend (`make test`'s second pass), which
runs the same image as a CUBIN and refuses the launches the real driver refuses.
"""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g
from tests.conftest import open_compute
from tests.fakes import images

TEXT = r"""
__device__ __forceinline__ unsigned int flat_thread() { return threadIdx.x; }
__device__ __forceinline__ unsigned long long flat_id() {
  return (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
}

// Every shuffle of a type, each thread's four results side by side.
#define SHUFFLES(T)                                                                     \
  extern "C" __global__ void shuffles_##T(const T* in, T* out, int width) {             \
    const unsigned long long i = flat_id();                                             \
    const T v = in[i];                                                                  \
    const unsigned int lane = threadIdx.x % 32;                                         \
    out[4 * i + 0] = __shfl_sync(0xffffffffu, v, int(lane * 7 + 3), width);             \
    out[4 * i + 1] = __shfl_up_sync(0xffffffffu, v, 3, width);                          \
    out[4 * i + 2] = __shfl_down_sync(0xffffffffu, v, 5, width);                        \
    out[4 * i + 3] = __shfl_xor_sync(0xffffffffu, v, 6, width);                         \
  }
typedef unsigned int uint;
typedef long long llong;
SHUFFLES(int)
SHUFFLES(uint)
SHUFFLES(float)
SHUFFLES(double)
SHUFFLES(llong)

// Each warp's sum by shuffles, as a reduction's last steps make it.
extern "C" __global__ void warp_sums(const float* in, float* sums) {
  float v = in[flat_id()];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) sums[flat_id() / 32] = v;
}

extern "C" __global__ void votes(const int* in, unsigned int* ballots, int* any, int* all, unsigned int* active) {
  const unsigned long long i = flat_id();
  const unsigned int mask = __activemask();
  ballots[i] = __ballot_sync(mask, in[i] > 0);
  any[i] = __any_sync(mask, in[i] > 0);
  all[i] = __all_sync(mask, in[i] > 0);
  __syncwarp(mask);
  active[i] = mask;
}

// A full mask in a warp the block has only some lanes of: undefined on a GPU.
extern "C" __global__ void past_the_block(float* data) {
  data[threadIdx.x] = __shfl_down_sync(0xffffffffu, data[threadIdx.x], 1);
}

// Lane 0 returns before the warp's shuffle: undefined on a GPU.
extern "C" __global__ void lane_returns(float* data) {
  if (threadIdx.x == 0) return;
  data[threadIdx.x] = __shfl_xor_sync(0xffffffffu, data[threadIdx.x], 1);
}

extern "C" __global__ void atomics(int* ints, unsigned int* uints, unsigned long long* ulls, float* floats,
                                   double* doubles, long long* llongs) {
  const unsigned long long i = flat_id();
  const int signed_i = int(i) - 700;
  atomicAdd(&ints[0], signed_i);
  atomicMax(&ints[1], signed_i);
  atomicMin(&ints[2], signed_i);
  atomicAdd(&uints[0], 3u);
  atomicMax(&uints[1], (unsigned int)i);
  atomicMin(&uints[2], (unsigned int)i + 5u);
  atomicAdd(&ulls[0], i << 33);
  unsigned long long old = ulls[1], assumed;
  do {
    assumed = old;
    old = atomicCAS(&ulls[1], assumed, assumed + i);
  } while (assumed != old);
  atomicAdd(&floats[0], 1.0f);
  atomicAdd(&doubles[0], 0.5 * i);
  atomicMax(&llongs[0], (long long)i << 40);
  atomicMin(&llongs[1], -((long long)i << 40));
  int seen = ints[3];
  while (atomicCAS(&ints[3], seen, seen + 1) != seen) seen = ints[3];
  ulls[2 + i] = atomicExch(&ulls[2 + 2048], i + 1);
  atomicExch(&floats[1 + i], float(i));
  atomicExch(&uints[3 + i], atomicExch(&uints[3 + i], 7u) + 1u);
}

// Each block's elements reversed through dynamic shared memory of blockDim.x floats.
extern "C" __global__ void reverse_dynamic(float* data) {
  extern __shared__ float tile[];
  const unsigned int n = blockDim.x, t = threadIdx.x;
  float* mine = data + (unsigned long long)blockIdx.x * n;
  tile[t] = mine[t];
  __syncthreads();
  mine[t] = tile[n - 1 - t];
}

extern "C" __global__ void __launch_bounds__(64) bounded(float* data) { data[threadIdx.x] = 1.0f; }

// Each thread's tickets from one counter before and after its warp meets: the order the shim ran
// the block's threads in (FAKE_CUDA_TURNS).
extern "C" __global__ void tickets(unsigned int* counter, unsigned int* before, unsigned int* after) {
  before[threadIdx.x] = atomicAdd(counter, 1u);
  __syncwarp();
  after[threadIdx.x] = atomicAdd(counter, 1u);
}
"""
TYPES = {"int": np.int32, "uint": np.uint32, "float": np.float32, "double": np.float64, "llong": np.int64}
KERNELS = [
    *(f"shuffles_{t}" for t in TYPES),
    "warp_sums",
    "votes",
    "past_the_block",
    "lane_returns",
    "atomics",
    "reverse_dynamic",
    "bounded",
    "tickets",
]
ATOMIC_THREADS = 2048


@pytest.fixture(scope="module", params=["host", "cuda"])
def device(request):
    """A Compute of the host runtime, or of the fake libcuda where it is the CUDA backend."""
    compute = open_compute(g.Backend(request.param))
    if compute.backend is g.Backend.cuda and not images.is_fake(compute):
        pytest.skip("the shim's images are host shared objects: a real driver needs a CUBIN")
    yield compute
    compute.synchronize()


@pytest.fixture(scope="module")
def module(device):
    return device.load_module(images.gpu_text_image(TEXT, KERNELS, "fake_shim"))


def upload(compute, values: np.ndarray):
    buf = compute.alloc(values.nbytes)
    buf.upload(values)
    return buf


def download(compute, buf, dtype, count: int) -> np.ndarray:
    compute.synchronize()
    out = np.empty(count, dtype)
    buf.download(out)
    return out


def run(compute, module, kernel, grid, block, arrays, scalars=(), shared_bytes=0):
    """Launches `kernel` over the buffers of `arrays`, then `scalars`; returns the arrays as the
    kernel left them."""
    bufs = [upload(compute, a) for a in arrays]
    args = [b.arg_ptr() for b in bufs] + [g.interface.arg(s) for s in scalars]
    module.get_kernel(kernel).launch(grid, block, shared_bytes, args)
    return [download(compute, b, a.dtype, a.size) for b, a in zip(bufs, arrays)]


def lane_sources(width: int) -> np.ndarray:
    """Per lane, the lane each of the four shuffles reads: within the lane's segment of `width`
    lanes, a lane whose source lies outside it reads itself (xor may reach an earlier segment)."""
    lanes = np.arange(32)
    segment, at = lanes // width * width, lanes % width
    idx = segment + (lanes * 7 + 3) % width
    up = np.where(at >= 3, lanes - 3, lanes)
    down = np.where(at + 5 < width, lanes + 5, lanes)
    xor = lanes ^ 6
    xor = np.where(xor < segment + width, xor, lanes)
    return np.stack([idx, up, down, xor], axis=1)


@pytest.mark.parametrize("width", [32, 16, 8, 4])
@pytest.mark.parametrize("name", TYPES)
def test_shuffles_read_the_lanes_the_cuda_guide_names(device, module, name, width):
    dtype = TYPES[name]
    values = (np.arange(128) * 3 - 100).astype(dtype)
    if dtype is np.int64:
        values = values * (1 << 40)  # bits in both halves
    _, out = run(device, module, f"shuffles_{name}", 2, 64, [values, np.zeros(4 * 128, dtype)], [g.i32(width)])
    warps = values.reshape(4, 32)
    expected = np.stack([warps[w][lane_sources(width)] for w in range(4)])
    np.testing.assert_array_equal(out.reshape(4, 32, 4), expected)


def test_a_warp_sum_by_shuffles(device, module):
    values = np.random.default_rng(5).integers(-50, 50, 256).astype(np.float32)
    _, sums = run(device, module, "warp_sums", 2, 128, [values, np.zeros(8, np.float32)])
    np.testing.assert_array_equal(sums, values.reshape(8, 32).sum(axis=1))


def test_votes_over_the_live_lanes_of_a_partial_warp(device, module):
    """A block of 48 threads: its second warp has 16 lanes, which __activemask names."""
    values = np.where(np.arange(48) % 5 == 0, 1, -1).astype(np.int32)
    values[32:] = 1
    zeros = [np.zeros(48, t) for t in (np.uint32, np.int32, np.int32, np.uint32)]
    _, ballots, any_, all_, active = run(device, module, "votes", 1, 48, [values, *zeros])
    first = sum(1 << lane for lane in range(32) if values[lane] > 0)
    np.testing.assert_array_equal(active, [0xFFFFFFFF] * 32 + [0xFFFF] * 16)
    np.testing.assert_array_equal(ballots, [first] * 32 + [0xFFFF] * 16)
    np.testing.assert_array_equal(any_, [1] * 48)
    np.testing.assert_array_equal(all_, [0] * 32 + [1] * 16)


@pytest.mark.parametrize(
    "kernel, block, message",
    [
        ("past_the_block", 48, "names lanes past the block's last thread"),
        ("lane_returns", 32, "waits for lane 0 of its warp, which returned"),
    ],
)
def test_a_shuffle_a_gpu_leaves_undefined_traps(device, module, kernel, block, message):
    if device.backend is not g.Backend.host:
        pytest.skip("a trap on the fake poisons its context for the rest of the process, as on a GPU")
    data = upload(device, np.zeros(block, np.float32))
    module.get_kernel(kernel).launch(1, block, 0, [data.arg_ptr()])
    with pytest.raises(g.SyncFailed, match=message):
        device.synchronize()


def test_atomics_from_blocks_on_several_threads(device, module):
    n = ATOMIC_THREADS
    ints = np.array([0, -(2**31), 2**31 - 1, 0], np.int32)
    uints = np.concatenate([[0, 0, 2**32 - 1], np.arange(n)]).astype(np.uint32)
    ulls = np.zeros(2 + n + 1, np.uint64)
    floats, doubles = np.zeros(1 + n, np.float32), np.zeros(1, np.float64)
    llongs = np.array([-(2**62), 2**62], np.int64)
    ints, uints, ulls, floats, doubles, llongs = run(
        device, module, "atomics", n // 64, 64, [ints, uints, ulls, floats, doubles, llongs]
    )
    i = np.arange(n)
    assert ints.tolist() == [int((i - 700).sum()), n - 1 - 700, -700, n]
    assert uints[:3].tolist() == [3 * n, n - 1, 5]
    np.testing.assert_array_equal(uints[3:], i + 1)  # each exchange returned what was there
    assert int(ulls[0]) == int((i.astype(object) << 33).sum())
    assert int(ulls[1]) == int(i.sum())
    # Each exchange returned the value another left, the first the initial 0: all were seen once.
    assert sorted([*ulls[2 : 2 + n].tolist(), int(ulls[2 + n])]) == list(range(n + 1))
    assert floats[0] == n and doubles[0] == 0.5 * i.sum()
    np.testing.assert_array_equal(floats[1:], i.astype(np.float32))
    assert llongs.tolist() == [(n - 1) << 40, -((n - 1) << 40)]


@pytest.mark.parametrize("block", [1, 96, 1024])
def test_dynamic_shared_memory_is_the_launchs_shared_bytes(device, module, block):
    values = np.arange(3 * block, dtype=np.float32)
    (out,) = run(device, module, "reverse_dynamic", 3, block, [values], shared_bytes=4 * block)
    np.testing.assert_array_equal(out, values.reshape(3, block)[:, ::-1].ravel())


def test_a_launch_within_the_launch_bounds_runs(device, module):
    (out,) = run(device, module, "bounded", 1, 64, [np.zeros(64, np.float32)])
    np.testing.assert_array_equal(out, np.ones(64, np.float32))


def test_a_launch_past_the_launch_bounds_fails(device, module):
    """The real driver refuses it at cuLaunchKernel (CUDA_ERROR_INVALID_VALUE, "invalid argument"); the host
    runtime reads no bounds, so the kernel's launcher traps."""
    data = upload(device, np.zeros(128, np.float32))
    kernel = module.get_kernel("bounded")
    if device.backend is g.Backend.cuda:
        with pytest.raises(g.LaunchFailed, match="cuLaunchKernel: invalid argument"):
            kernel.launch(1, 128, 0, [data.arg_ptr()])
    else:
        kernel.launch(1, 128, 0, [data.arg_ptr()])
        with pytest.raises(g.SyncFailed, match="__launch_bounds__"):
            device.synchronize()


def test_more_shared_memory_than_a_block_may_have_is_refused(device, module):
    if device.backend is not g.Backend.cuda:
        pytest.skip("the host runtime has no shared memory limit")
    data = upload(device, np.zeros(64, np.float32))
    kernel = module.get_kernel("reverse_dynamic")
    with pytest.raises(g.LaunchFailed, match="cuLaunchKernel: invalid argument"):
        kernel.launch(1, 64, 48 * 1024 + 1, [data.arg_ptr()])
    kernel.launch(1, 64, 48 * 1024, [data.arg_ptr()])  # the limit itself is allowed
    device.synchronize()


@pytest.mark.parametrize("turns", ["forward", "reverse", "scattered", "warps", "warps-reverse"])
def test_the_threads_take_turns_in_the_order_asked(device, module, monkeypatch, turns):
    """FAKE_CUDA_TURNS (cuda_shim.h): each thread a turn, rising, falling or scattered, the two warps
    here taking turns; or a warp at a time, the first in the order running to its end before the
    second starts."""
    monkeypatch.setenv("FAKE_CUDA_TURNS", turns)
    zeros = np.zeros(64, np.uint32)
    _, before, after = run(device, module, "tickets", 1, 64, [np.zeros(1, np.uint32), zeros, zeros])
    tickets = np.stack([before, after])
    assert sorted(tickets.ravel()) == list(range(128))
    first, second = tickets[:, :32], tickets[:, 32:]
    if turns == "warps-reverse":
        first, second = second, first
    assert (first.max() < second.min()) == turns.startswith("warps"), tickets
    rising, order = list(range(64)), list(np.argsort(before))  # the threads in the order of their first turn
    if turns == "scattered":
        assert order not in (rising, rising[::-1]), order
    elif not turns.startswith("warps"):
        assert order == (rising if turns == "forward" else rising[::-1]), order
