"""The host's cost of a cached `g.map` launch on a CUDA device, against a bare `kernel.launch`
of the same loaded kernel through gompute's runtime, in the same run (issue 33's CPU-side
measure; aim: at most 1.3x the bare launch): on a CUDA Buffer, a `__cuda_array_interface__`
array and a torch CUDA tensor (tests/fakes/torch_cuda.py's where torch has no CUDA). Not a
test: it prints a table.

    GOMPUTE_LIBCUDA=build/fake-cuda/libcuda.so FAKE_CUDA_DELAY_US=0 python benchmarks/launch_cost.py
    python benchmarks/launch_cost.py          # on a machine with a GPU

On the fake driver (tests/fakes/fake_libcuda.cpp) a launch queues the generated CUDA text to a
stream worker on the CPU. What is timed is the host's part: 100 launches of a 1-element array
being queued, then (untimed) a synchronize; the contestants take turns, in rotating order.
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import gompute as g  # noqa: E402
from gompute.interface import arg  # noqa: E402

BATCH = 100


class Params(g.Params):
    scale: g.f32


@g.map_kernel(block_size=256)
def scale(x: g.f32, p: Params) -> g.f32:
    return x * p.scale


class CudaInterface:
    """A CUDA array that only speaks __cuda_array_interface__ v3, ordered on the legacy stream."""

    def __init__(self, buffer):
        self.__cuda_array_interface__ = {
            "shape": tuple(buffer.shape),
            "typestr": "<f4",
            "data": (buffer.data_addr(), False),
            "version": 3,
            "stream": 1,
        }


def contestants(gpu) -> dict:
    """name -> a call that queues one launch, each of one kernel on one 1-element array."""
    buf = gpu.empty((1,), g.f32)
    buf.upload(np.ones(1, np.float32))
    k = g.map(scale)
    k(buf, out=buf, scale=1)  # compiles, and teaches the C++ path
    core = k.bound(g.Backend.cuda, gpu.ordinal).launcher((g.f32,), g.f32, "inplace")
    args = [buf.arg_ptr(), arg(g.u64(1)), arg(g.abi.pack(Params, scale=1))]
    grid, block = g.Dim3(1), g.Dim3(256)
    cai = CudaInterface(buf)
    k(cai, out=cai, scale=1)
    calls = {
        "bare kernel.launch": lambda: core.launch(grid, block, 0, args),
        "g.map on a Buffer": lambda: k(buf, out=buf, scale=1),
        "g.map on a CUDA-interface array": lambda: k(cai, out=cai, scale=1),
    }
    tensor = torch_tensor(gpu, buf)
    if tensor is not None:
        k(tensor, out=tensor, scale=1)
        calls["g.map on a torch CUDA tensor"] = lambda: k(tensor, out=tensor, scale=1)
    return calls


def torch_tensor(gpu, buf):
    """A torch CUDA tensor of one element on torch's default stream, the bare launch's: a real
    one where torch has CUDA, else tests/fakes/torch_cuda.py's stand-in over `buf`, read by the
    same C++ code through an exchange table of the same kind, in C++ as torch's is. None
    without torch."""
    try:
        import torch
    except ModuleNotFoundError:
        return None
    if torch.cuda.is_available():
        return torch.ones(1, device=f"cuda:{gpu.ordinal}")
    from tests.fakes.torch_cuda import FakeCudaTensor

    FakeCudaTensor.set_current_stream(gpu.ordinal, None)
    return FakeCudaTensor.over(buf)


def queued(gpu, call) -> float:
    """CPU seconds of the calling thread per launch, over BATCH launches queued back to back: the
    host's work, not the time it waits on the driver's queue (the synchronize after is untimed)."""
    start = time.thread_time()
    for _ in range(BATCH):
        call()
    took = time.thread_time() - start
    gpu.synchronize()
    return took / BATCH


def measure(gpu, calls: dict, repeats: int = 30) -> dict[str, list[float]]:
    names = list(calls)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        for n in names[r % len(names) :] + names[: r % len(names)]:
            samples[n].append(queued(gpu, calls[n]))
    return samples


def main() -> int:
    try:
        gpu = g.runtime.cuda.Compute.init()
    except g.BackendUnavailable as e:
        print(f"no CUDA device (set GOMPUTE_LIBCUDA to the fake driver to measure on the CPU): {e}")
        return 1
    name = gpu.device_info().name
    with _loadable_on(gpu):
        samples = measure(gpu, contestants(gpu))
    bare = samples["bare kernel.launch"]
    print(f"{name}: the host's cost of queuing one launch (median of 30 batches of {BATCH})\n")
    print("| launch | us per call | / bare launch |\n|---|---:|---:|")
    for n, s in samples.items():
        ratio = statistics.median(c / b for c, b in zip(s, bare))
        print(f"| {n} | {statistics.median(s) * 1e6:.2f} | {ratio:.2f}x |")
    return 0


def _loadable_on(gpu):
    """On the fake driver, modules built from the CUDA text for the CPU (it runs no CUBIN)."""
    from tests.fakes import images

    return images.host_images() if images.is_fake(gpu) else contextlib.nullcontext()


if __name__ == "__main__":
    sys.exit(main())
