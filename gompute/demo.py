"""`make demo`: probe the backends, then run the seed's "A launch, by hand" on the best one.

The kernel is `scale_relu` written by hand for each backend: PTX for CUDA, C++ against
the host ABI for the host backend. On a machine without a GPU the demo runs on the host
backend and says so.
"""

from __future__ import annotations

import time

import numpy as np

import gompute as g

from .__main__ import info

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
#include <gompute/host_abi.h>
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


def main() -> int:
    print("gompute demo\n\nBackends on this machine:")
    info()
    gpu = g.runtime.dynamic.Compute.init()
    if gpu.backend is g.Backend.cpu:
        print("\nNo GPU backend is usable here, so the demo runs on the host backend (the CPU).")
        compute = g.runtime.host.Compute.init()
    elif gpu.backend is g.Backend.hip:
        print("\nHIP is usable, but the demo's hand-written kernels are PTX and host C++; running on the host backend.")
        compute = g.runtime.host.Compute.init()
    else:
        compute = gpu
    n, scale = 1 << 20, 2.0
    with compute:
        d = compute.device_info()
        result, seconds = launch_by_hand(compute, n, scale)
        expected = np.maximum(np.linspace(-1.0, 1.0, n, dtype=np.float32) * np.float32(scale), 0)
        error = float(np.max(np.abs(result - expected)))
        print(f"\nRan scale_relu on {compute.backend}:{compute.ordinal} ({d.name}):")
        print(
            f"  allocated {n * 4 // 1024} KiB, uploaded {n} f32, launched grid {g.Dim3.linear(n, 256).x} x block 256,"
        )
        print(f"  downloaded; kernel + synchronize took {seconds * 1e3:.2f} ms; max error vs NumPy: {error}")
        print(f"  runtime counters: {g.runtime.stats()}")
    return 0 if error == 0 else 1
