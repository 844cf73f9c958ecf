"""gpu_check.py's generated-kernel scenarios: kernels compiled by NVRTC, loaded as CUBIN and as
PTX, launched by hand on Backend.cuda, and checked against NumPy.

gpu_check.py calls `kernel_scenarios(gpu, check)` with its Compute and its Check table.
"""

from __future__ import annotations

import numpy as np
from kernels import KERNELS

import gompute as g
import gompute.lang as gl
from gompute.backend import cuda_version

scale_relu = KERNELS["scale_relu"].kernel("f32")  # the benchmarks' own, as suite.py times it


@gl.map_kernel(block_size=128)
def int_floor_ops(a: g.i32, b: g.i32) -> g.i32:
    return a // b + a % b


@gl.map_kernel(block_size=256)
def half_math(x: g.f16, y: g.f16) -> g.f16:
    return gl.sqrt(abs(x)) * y + x


def _launch(
    gpu,
    image: bytes,
    symbol: str,
    block: int,
    arrays: list[np.ndarray],
    out: np.ndarray,
    params: bytes | None = None,
) -> np.ndarray:
    module = gpu.load_module(image)
    kernel = module.get_kernel(symbol)
    buffers = []
    for a in [*arrays, out]:
        buf = gpu.alloc(a.nbytes)
        buf.upload(a)
        buffers.append(buf)
    n = len(out)
    args = [b.arg_ptr() for b in buffers] + [g.interface.arg(g.u64(n))]
    if params is not None:
        args.append(g.interface.arg(params))
    kernel.launch(g.Dim3.linear(n, block), g.Dim3(block), 0, args)
    gpu.synchronize()
    result = np.empty_like(out)
    buffers[-1].download(result)
    for b in buffers:
        b.free()
    return result


def kernel_scenarios(gpu, check) -> None:
    arch = gpu.device_info().arch
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1 << 20).astype(np.float32)
    params = g.abi.pack(scale_relu.params_class, scale=2)

    def scale_relu_as(target: str):
        def run():
            from gompute.compile import nvrtc

            compiler, driver = nvrtc.load().version, cuda_version(gpu.device_info().driver_version)
            if target.startswith("compute_") and compiler > driver:
                return (
                    f"skipped: NVRTC {compiler[0]}.{compiler[1]} is newer than the driver's CUDA "
                    f"{driver[0]}.{driver[1]}, whose JIT refuses its PTX"
                )
            image = scale_relu.compile_for("cuda", target)
            got = _launch(gpu, image.data, "scale_relu__out", 256, [x], np.zeros_like(x), params)
            assert np.array_equal(got, np.maximum(x * 2, 0)), "scale_relu differs from NumPy"
            return f"{image.format}, {len(image.data)} bytes, matches NumPy"

        return run

    def int_floor():
        a = rng.integers(-1000, 1000, 1 << 16).astype(np.int32)
        b = rng.integers(-9, 9, 1 << 16).astype(np.int32)
        got = _launch(gpu, int_floor_ops.compile_for("cuda", arch).data, "int_floor_ops", 128, [a, b], np.zeros_like(a))
        with np.errstate(all="ignore"):
            expected = np.floor_divide(a, b) + np.remainder(a, b)
        assert np.array_equal(got, expected), "integer // and % differ from NumPy"
        return "negative // and %, and x // 0, match NumPy"

    def half():
        a = (rng.standard_normal(1 << 16) * 10).astype(np.float16)
        b = (rng.standard_normal(1 << 16) * 10).astype(np.float16)
        got = _launch(gpu, half_math.compile_for("cuda", arch).data, "half_math", 256, [a, b], np.zeros_like(a))
        assert np.array_equal(got, np.sqrt(np.abs(a)) * b + a), "f16 results differ from NumPy"
        return "f16 rounded per operation, bit-exact with NumPy"

    check.run(f"generated scale_relu as CUBIN ({arch})", scale_relu_as(arch))
    check.run("generated scale_relu as PTX (JIT by the driver)", scale_relu_as(f"compute_{arch[3:]}"))
    check.run("generated integer floor division", int_floor)
    check.run("generated f16 kernel", half)
