"""`gompute demo` (and `make demo`): the main job, then the runtime under it.

1. `g.map` on a NumPy array: a new result, then in place (out=), each timed beside NumPy's own
   expression for the same math.
2. `g.reduce` on the same array: a sum of squares, whole and per row, timed beside NumPy's.
3. Where PyTorch is installed, a round trip NumPy -> torch -> gompute -> NumPy that copies nothing.
4. The runtime by hand: `scale_relu` written by hand for the backend (PTX for CUDA, C++ against
   the host launch convention for the host backend), loaded, launched and checked. Without a GPU this part
   runs on the host backend and says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

import gompute as g

from .info import backends

# scale_relu(data, len, params): data[i] = max(data[i] * params.scale, 0), one thread per element.
SCALE_RELU_PTX = r"""
.version 7.0
.target sm_52
.address_size 64

.visible .entry scale_relu(
    .param .u64 data,
    .param .u64 len,
    .param .align 4 .b8 params[4]
)
{
    .reg .pred  %p<2>;
    .reg .f32   %f<4>;
    .reg .b32   %r<4>;
    .reg .b64   %rd<9>;

    ld.param.u64        %rd1, [data];
    ld.param.u64        %rd2, [len];
    ld.param.f32        %f1, [params];
    mov.u32             %r1, %ctaid.x;
    mov.u32             %r2, %ntid.x;
    mov.u32             %r3, %tid.x;
    cvt.u64.u32         %rd3, %r3;
    mad.wide.u32        %rd4, %r1, %r2, %rd3;
    setp.ge.u64         %p1, %rd4, %rd2;
    @%p1 bra            DONE;
    cvta.to.global.u64  %rd5, %rd1;
    shl.b64             %rd6, %rd4, 2;
    add.s64             %rd7, %rd5, %rd6;
    ld.global.f32       %f2, [%rd7];
    mul.rn.f32          %f3, %f2, %f1;
    max.f32             %f3, %f3, 0f00000000;
    st.global.f32       [%rd7], %f3;
DONE:
    ret;
}
"""

SCALE_RELU_HOST = r"""
#include <gompute/host_launch.h>
#include <string.h>

struct Params { float scale; };

GOMPUTE_HOST_ARITY(scale_relu, 3);
GOMPUTE_HOST_KERNEL(scale_relu) {
  float* data = *(float* const*)launch->args[0];
  const uint64_t len = *(const uint64_t*)launch->args[1];
  struct Params p;
  memcpy(&p, launch->args[2], sizeof p);
  const uint64_t block = launch->block_dim.x;
  uint64_t end = launch->block_end * block;
  if (end > len) end = len;
  for (uint64_t i = launch->block_begin * block; i < end; ++i) {
    const float y = data[i] * p.scale;
    data[i] = y > 0 ? y : 0.0f;
  }
}
"""


class Params(g.Params):
    scale: g.f32


@g.map_kernel(block_size=256)
def scale_relu(x: g.f32, p: Params) -> g.f32:
    """The map kernel of parts 1 and 2: the same math as the hand-written modules."""
    y = x * p.scale
    return y if y > 0 else g.f32(0)


@g.reduce_kernel(identity=0)
def sumsq(x: g.f32) -> g.f32:
    """The reduction of part 2: x * x for each element, added up (the combine is + unless given)."""
    return x * x


def scale_relu_image(compute) -> bytes:
    """The hand-written scale_relu module for `compute`'s backend."""
    if compute.backend is g.Backend.cuda:
        return SCALE_RELU_PTX.encode()
    if compute.backend is g.Backend.host:
        from .compile.host import compile_shared_object

        image, _path = compile_shared_object("scale_relu_demo", SCALE_RELU_HOST)
        return image
    raise g.BackendUnavailable(f"the demo has no hand-written kernel for {compute.backend}")


def launch_by_hand(compute, n: int = 1 << 20, scale: float = 2.0) -> tuple[np.ndarray, float]:
    """The seed's "A launch, by hand": returns the result and the seconds the launch took."""
    host_data = np.linspace(-1.0, 1.0, n, dtype=np.float32)
    module = compute.load_module(scale_relu_image(compute))
    kernel = module.get_kernel("scale_relu")
    with compute.alloc(n * 4) as buffer:
        buffer.upload(host_data)
        args = [buffer.arg_ptr(), g.interface.arg(g.u64(n)), g.interface.arg(g.abi.pack(Params, scale=scale))]
        start = time.perf_counter()
        kernel.launch(g.Dim3.linear(n, 256), g.Dim3(256), 0, args)
        compute.synchronize()
        seconds = time.perf_counter() - start
        buffer.download(host_data)
    return host_data, seconds


def best_of(call: Callable[[], object], repeats: int = 20) -> float:
    """The fastest of `repeats` timed calls, in seconds: the least disturbed by other work."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def map_on_numpy(n: int, scale: float) -> bool:
    """Part 1; whether every result matched NumPy's."""
    x = np.linspace(-1.0, 1.0, n, dtype=np.float32)
    s = np.float32(scale)
    k = g.map(scale_relu)
    start = time.perf_counter()
    y = k(x, scale=scale)
    first = time.perf_counter() - start
    matches = isinstance(y, np.ndarray) and np.array_equal(y, np.maximum(x * s, 0))
    print(f"\n1. g.map on a NumPy array of {n:,} float32, on the host backend")
    print(f"   y = g.map(scale_relu)(x, scale={scale})  first call {first:.2f} s")
    print("   (the first call compiles the kernel, or loads it from the disk cache a former one filled)")
    print(f"   y is a NumPy array equal to np.maximum(x * {scale}, 0): {matches}")
    ours, numpys = best_of(lambda: k(x, scale=scale)), best_of(lambda: np.maximum(x * s, 0))
    print(f"   a new result, best of 20:  g.map {_ms(ours)}   NumPy np.maximum(x * {scale}, 0) {_ms(numpys)}")

    z = x.copy()
    returned = k(z, out=z, scale=scale)
    in_place = returned is z and np.array_equal(z, y)
    print(f"   g.map(scale_relu)(z, out=z, scale={scale}) wrote into z itself and returned it: {in_place}")

    def numpy_in_place():
        np.multiply(z, s, out=z)
        np.maximum(z, 0, out=z)

    ours, numpys = best_of(lambda: k(z, out=z, scale=1.0)), best_of(numpy_in_place)
    print(f"   in place, best of 20:      g.map {_ms(ours)}   NumPy multiply + maximum with out=z {_ms(numpys)}")
    return matches and in_place


def reduce_on_numpy(n: int, rows: int) -> bool:
    """Part 2; whether every result matched NumPy's (to f32's rounding: each adds in its own order)."""
    x = np.linspace(-1.0, 1.0, n, dtype=np.float32)
    m = x.reshape(rows, -1)
    r = g.reduce(sumsq)
    start = time.perf_counter()
    total = r(x)
    first = time.perf_counter() - start
    per_row = r(m, axis=1)
    exact = np.sum(np.square(x, dtype=np.float64))  # the f64 reference both are held to
    matches = (
        isinstance(total, np.ndarray)
        and total.dtype == np.float32
        and abs(float(total) - exact) <= 1e-6 * exact
        and np.allclose(per_row, np.sum(np.square(m, dtype=np.float64), axis=1), rtol=1e-6)
    )
    print(f"\n2. g.reduce on the same array: a sum of squares, whole and per row of a ({rows}, {n // rows}) view")
    print(f"   total = g.reduce(sumsq)(x)  first call {first:.2f} s; per_row = g.reduce(sumsq)(m, axis=1)")
    print(f"   both NumPy float32 arrays, within 1e-6 of the sums in f64: {matches}")
    ours, numpys, blas = best_of(lambda: r(x)), best_of(lambda: np.sum(x * x)), best_of(lambda: np.dot(x, x))
    print(f"   whole, best of 20:   g.reduce {_ms(ours)}   NumPy np.sum(x * x) {_ms(numpys)}, np.dot(x, x) {_ms(blas)}")
    ours, numpys = best_of(lambda: r(m, axis=1)), best_of(lambda: np.sum(m * m, axis=1))
    print(f"   per row, best of 20: g.reduce {_ms(ours)}   NumPy np.sum(m * m, axis=1) {_ms(numpys)}")
    return matches


def map_through_torch(n: int, scale: float) -> bool:
    """Part 3, where PyTorch is installed; whether nothing was copied and the values are right."""
    try:
        import torch
    except ImportError:
        print("\n3. PyTorch is not installed: the zero-copy round trip through a torch tensor is left out")
        return True
    x = np.linspace(-1.0, 1.0, n, dtype=np.float32)
    expected = np.maximum(x * np.float32(scale), 0)
    t = torch.from_numpy(x)
    g.map(scale_relu)(t, out=t, scale=scale)
    back = t.numpy()
    same = x.ctypes.data == t.data_ptr() == back.ctypes.data
    right = np.array_equal(x, expected)
    r = g.map(scale_relu)(t, scale=scale)
    print(f"\n3. A round trip through a torch tensor (PyTorch {torch.__version__}), copying nothing")
    print(f"   t = torch.from_numpy(x); g.map(scale_relu)(t, out=t, scale={scale}); back = t.numpy()")
    print(f"   x, t and back are one block of memory at {x.ctypes.data:#x}: {same}; x holds the result: {right}")
    print(f"   g.map(scale_relu)(t, scale={scale}) returns a {type(r).__module__}.{type(r).__name__} ({r.dtype})")
    return same and right and isinstance(r, torch.Tensor)


def by_hand_compute():
    """The Compute part 4 runs on, and why it is that one."""
    gpu = g.runtime.dynamic.Compute.init()
    if gpu.backend is g.Backend.cuda:
        return gpu, ""
    gpu.deinit()
    if gpu.backend is g.Backend.hip:
        note = "HIP is usable, but the hand-written kernels are PTX and host C++: this part runs on the host backend."
    else:
        note = "No GPU backend is usable here, so this part runs on the host backend (the CPU)."
    return g.runtime.host.Compute.init(), note


def by_hand(compute, note: str, n: int, scale: float) -> bool:
    """Part 4; whether the result matched NumPy's."""
    print("\n4. The runtime by hand: load a module, allocate, upload, launch, download")
    if note:
        print(f"   {note}")
    with compute:
        d = compute.device_info()
        result, seconds = launch_by_hand(compute, n, scale)
        expected = np.maximum(np.linspace(-1.0, 1.0, n, dtype=np.float32) * np.float32(scale), 0)
        error = float(np.max(np.abs(result - expected)))
        print(f"   ran scale_relu on {compute.backend}:{compute.ordinal} ({d.name}):")
        grid = g.Dim3.linear(n, 256).x
        print(f"   allocated {n * 4 // 1024} KiB, uploaded {n} f32, launched grid {grid} x block 256,")
        print(f"   downloaded; kernel + synchronize took {_ms(seconds)}; max error vs NumPy: {error}")
        print(f"   runtime counters: {g.runtime.stats()}")
    return error == 0


def main() -> int:
    """Runs the four parts; 0 when every result matched NumPy's."""
    print(f"gompute {g.__version__} demo\n\nBackends on this machine:")
    backends()
    compute, note = by_hand_compute()  # first: a backend asked for by GOMPUTE_BACKEND and missing ends the demo here
    ok = map_on_numpy(1 << 22, 2.0)
    ok = reduce_on_numpy(1 << 22, 1 << 12) and ok
    ok = map_through_torch(1 << 22, 2.0) and ok
    ok = by_hand(compute, note, 1 << 20, 2.0) and ok
    return 0 if ok else 1
