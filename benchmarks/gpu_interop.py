"""gpu_check.py's interop scenarios: g.map on CuPy arrays and PyTorch CUDA tensors, on their
own non-default streams, with no user synchronization; round trips without copies; dispatch
overhead against a bare launch of the same kernel and beside CuPy's ElementwiseKernel and the
PyTorch expressions doing the same work; bandwidth against each framework's device copy.

gpu_check.py calls `interop_scenarios(gpu, check)`; scenarios needing CuPy or PyTorch are
skipped (listed as such) when the framework is missing.
"""

from __future__ import annotations

import numpy as np
from gpu_kernels import scale_relu
from gpu_targets import OVERHEAD
from gpu_timing import cupy_ms, host_us, torch_ms

import gompute as g


@g.map_kernel(block_size=256)
def fused(a: g.f32, x: g.f32, y: g.f32) -> g.f32:
    return g.clamp(a * x + y, g.f32(-1), g.f32(1))


def _try_import(name: str, label: str) -> tuple[object | None, str]:
    """The module, or None and the words a skipped row gives: not installed, or why it failed."""
    try:
        return __import__(name), ""
    except ModuleNotFoundError as e:
        if e.name != name:  # installed, but something it needs is not
            return None, f"{label} failed to import: {e}"
        return None, f"{label} is not installed"
    except Exception as e:  # noqa: BLE001 - a broken install counts as missing, with its error
        return None, f"{label} failed to import: {type(e).__name__}: {e}"


def rotated_host_us(calls: dict) -> dict[str, float]:
    """name -> median host_us of `fn` over three turns in a rotating order, for each
    name -> (fn, sync) of `calls`."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for turn in range(3):
        for name in list(calls)[turn:] + list(calls)[:turn]:
            times[name].append(host_us(*calls[name]))
    return {name: float(np.median(t)) for name, t in times.items()}


def expected(x: np.ndarray, scale: float) -> np.ndarray:
    return np.maximum(x * np.float32(scale), 0).astype(np.float32)


def frameworks() -> tuple[tuple[object | None, str], tuple[object | None, str]]:
    """(cupy, why not) and (torch, why not): each module, or None and the words a skipped row
    gives; torch only where it sees a CUDA device."""
    (cupy, no_cupy), (torch, no_torch) = _try_import("cupy", "CuPy"), _try_import("torch", "PyTorch")
    if torch is not None and not torch.cuda.is_available():
        torch, no_torch = (
            None,
            f"PyTorch {torch.__version__} sees no CUDA device (torch.version.cuda {torch.version.cuda})",
        )
    return (cupy, no_cupy), (torch, no_torch)


def interop_scenarios(gpu, check) -> None:
    (cupy, no_cupy), (torch, no_torch) = frameworks()
    figures = check.figures
    rng = np.random.default_rng(1)
    host = rng.standard_normal(1 << 20).astype(np.float32)

    def round_trips():
        buf = gpu.empty(host.shape, g.f32)
        buf.upload(host)
        notes = []
        if cupy is not None:
            c = cupy.asarray(buf)  # __cuda_array_interface__
            assert c.data.ptr == buf.data_addr()
            back = g.asbuffer(c)
            assert back.data_addr() == buf.data_addr()
            c2 = cupy.from_dlpack(buf)
            assert c2.data.ptr == buf.data_addr()
            notes.append("cupy")
        if torch is not None:
            t = torch.from_dlpack(buf)
            assert t.data_ptr() == buf.data_addr()
            assert g.asbuffer(t).data_addr() == t.data_ptr()
            notes.append("torch")
            if cupy is not None:
                c3 = cupy.from_dlpack(t)
                assert g.asbuffer(c3).data_addr() == t.data_ptr()
        if not notes:
            return f"skipped: {no_cupy}; {no_torch}"
        return f"Buffer <-> {' <-> '.join(notes)}: same pointers, no copies"

    def cupy_streams():
        if cupy is None:
            return f"skipped: {no_cupy}"
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            x = cupy.asarray(host)
            y = g.map(scale_relu)(x, scale=2)  # on CuPy's current stream
            z = y * 3  # CuPy's next op sees y
            g.map(scale_relu)(z, out=z, scale=0.5)  # in place
            t = x.T if x.ndim > 1 else x[::2]
            w = g.map(scale_relu)(t, scale=1)  # strided view
            result, strided = cupy.asnumpy(z, stream=stream), cupy.asnumpy(w, stream=stream)
        stream.synchronize()
        assert isinstance(y, cupy.ndarray)
        np.testing.assert_allclose(result, expected(host, 2) * 3 * 0.5, rtol=1e-6)
        np.testing.assert_array_equal(strided, expected(host[::2], 1))
        return "g.map on a non-default CuPy stream, results right with no user sync; strided view right"

    def torch_streams():
        if torch is None:
            return f"skipped: {no_torch}"
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            x = torch.from_numpy(host).cuda(non_blocking=True)
            y = g.map(scale_relu)(x, scale=2)
            z = y * 3
            g.map(scale_relu)(z, out=z, scale=0.5)
            view = x.view(1024, 1024).t()
            w = g.map(scale_relu)(view, scale=1)
            result, strided = z.cpu(), w.cpu()
        assert isinstance(y, torch.Tensor) and y.is_cuda
        np.testing.assert_allclose(result.numpy(), expected(host, 2) * 3 * 0.5, rtol=1e-6)
        np.testing.assert_array_equal(strided.numpy(), expected(host.reshape(1024, 1024).T, 1))
        return "g.map on a non-default torch stream, results right with no user sync; transposed view right"

    def mixed_pipeline():
        if torch is None or cupy is None:
            return f"skipped: {'; '.join(why for why in (no_cupy, no_torch) if why)}"
        t = torch.from_numpy(host).cuda()
        a = g.map(scale_relu)(t, scale=2)  # torch -> torch
        c = cupy.from_dlpack(a)  # -> cupy, no copy
        b = g.map(scale_relu)(c, scale=0.5)  # cupy -> cupy
        out = torch.from_dlpack(b)  # -> torch
        assert c.data.ptr == a.data_ptr()
        np.testing.assert_allclose(out.cpu().numpy(), expected(host, 1), rtol=1e-6)
        return "torch -> g.map -> cupy -> g.map -> torch, no copies, no device sync"

    def dispatch_overhead():
        if cupy is None:
            return f"skipped: {no_cupy}"
        x = cupy.ones(1, dtype=cupy.float32)
        k = g.map(scale_relu)
        ew = cupy.ElementwiseKernel("float32 s", "float32 x", "float y = x * s; x = y > 0 ? y : 0", "scale_relu_ew")
        buf = gpu.empty(1, g.f32)
        buf.upload(np.ones(1, np.float32))
        # The baseline of the target: the same loaded kernel launched through the runtime's
        # own launch with its arguments built once, on the stream g.map uses (CuPy's).
        k(x, out=x, scale=1)
        core = k.bound(g.Backend.cuda, gpu.ordinal).launcher((g.f32,), g.f32, "inplace")
        stream = gpu._live().wrap_stream(cupy.cuda.get_current_stream().ptr or 1)
        args = [
            g.asbuffer(x).arg_ptr(),
            g.interface.arg(g.u64(1)),
            g.interface.arg(g.abi.pack(scale_relu.params_class, scale=1)),
        ]
        cupy_sync = cupy.cuda.get_current_stream().synchronize
        us = rotated_host_us({
            "gmap": (lambda: k(x, out=x, scale=1), cupy_sync),
            "ew": (lambda: ew(np.float32(1), x), cupy_sync),
            "buffer": (lambda: k(buf, out=buf, scale=1), gpu.synchronize),
            "bare": (lambda: core.launch(g.Dim3(1), g.Dim3(256), 0, args, stream), cupy_sync),
        })  # fmt: skip
        figures.update({f"dispatch.{name}_us": us[name] for name in ("gmap", "ew", "bare")})
        return (
            f"cached g.map on CuPy {us['gmap']:.1f} us/call ({us['gmap'] / us['bare']:.2f}x a bare launch of the "
            f"same kernel, {us['bare']:.1f} us), on a gompute Buffer {us['buffer']:.1f} us/call; CuPy "
            f"ElementwiseKernel {us['ew']:.1f} us/call (host time per call, batches of 500 from an idle GPU)"
        )

    def torch_dispatch_overhead():
        if torch is None:
            return f"skipped: {no_torch}"
        x = torch.ones(1, device=f"cuda:{gpu.ordinal}")
        k = g.map(scale_relu)
        k(x, out=x, scale=1)
        # The baseline, as for CuPy: the same loaded kernel through the runtime's own launch,
        # its arguments built once, on the stream g.map uses (torch's current one).
        core = k.bound(g.Backend.cuda, gpu.ordinal).launcher((g.f32,), g.f32, "inplace")
        current = torch.cuda.current_stream(x.device)
        stream = gpu._live().wrap_stream(current.cuda_stream or 1)
        args = [
            g.asbuffer(x).arg_ptr(),
            g.interface.arg(g.u64(1)),
            g.interface.arg(g.abi.pack(scale_relu.params_class, scale=1)),
        ]
        us = rotated_host_us({
            "gmap": (lambda: k(x, out=x, scale=1), current.synchronize),
            "expr": (lambda: x.mul_(1).relu_(), current.synchronize),
            "bare": (lambda: core.launch(g.Dim3(1), g.Dim3(256), 0, args, stream), current.synchronize),
        })  # fmt: skip
        figures.update({f"torch_dispatch.{name}_us": us[name] for name in us})
        ratio = us["gmap"] / us["bare"]
        return (
            f"cached g.map on a torch CUDA tensor {us['gmap']:.1f} us/call, {ratio:.2f}x a bare launch of the same "
            f"kernel ({us['bare']:.1f} us; aim <= {OVERHEAD}x: {'met' if ratio <= OVERHEAD else 'NOT met'}); torch "
            f"x.mul_(1).relu_() {us['expr']:.1f} us/call (aim: g.map below it: "
            f"{'met' if us['gmap'] < us['expr'] else 'NOT met'}) (host time per call, batches of 500 from an idle GPU)"
        )

    def bandwidth():
        if cupy is None:
            return f"skipped: {no_cupy}"
        n = 100_000_000
        a, x, y = (cupy.random.standard_normal(n, dtype=cupy.float32) for _ in range(3))
        out = cupy.empty_like(x)
        k1, k3 = g.map(scale_relu), g.map(fused)

        def ms(fn):
            return cupy_ms(cupy, fn)

        ew1 = cupy.ElementwiseKernel("float32 x, float32 s", "float32 o", "float y = x * s; o = y > 0 ? y : 0", "sr_ew")
        ew3 = cupy.ElementwiseKernel(
            "float32 a, float32 x, float32 y", "float32 o", "o = min(max(a * x + y, -1.0f), 1.0f)", "fused_ew"
        )
        copy = ms(lambda: out.__setitem__(slice(None), x))
        one = ms(lambda: k1(x, out=out, scale=2))
        cupy_one = ms(lambda: ew1(x, np.float32(2), out))
        three = ms(lambda: k3(a, x, y, out=out))
        cupy_three = ms(lambda: ew3(a, x, y, out))
        figures.update({
            "cupy.copy_ms": copy, "cupy.scale_relu_ms": one, "cupy.fused_ms": three,
            "cupy.ew.scale_relu_ms": cupy_one, "cupy.ew.fused_ms": cupy_three,
        })  # fmt: skip
        gb = lambda arrays, t: arrays * n * 4 / (t / 1e3) / 1e9  # noqa: E731
        return (
            f"1e8 f32: copy {gb(2, copy):.0f} GB/s; scale_relu {gb(2, one):.0f} GB/s ({copy / one:.2f}x copy) vs "
            f"CuPy ElementwiseKernel {gb(2, cupy_one):.0f} GB/s; fused 3-input {gb(4, three):.0f} GB/s vs "
            f"ElementwiseKernel {gb(4, cupy_three):.0f} GB/s; {allocations(k1, x, out, n)}"
        )

    def allocations(k1, x, out, n: int) -> str:
        """What a map over 1e8 elements allocates: its result from CuPy's pool, nothing of gompute's."""
        pool = cupy.get_default_memory_pool()
        pool_before, ours_before = pool.used_bytes(), g.runtime.stats()["bytes_live"]
        made = k1(x, scale=2)
        cupy.cuda.Device().synchronize()
        new_result = pool.used_bytes() - pool_before
        ours = g.runtime.stats()["bytes_live"] - ours_before
        k1(x, out=out, scale=2)
        cupy.cuda.Device().synchronize()
        with_out = pool.used_bytes() - pool_before - new_result
        del made
        figures.update({
            "memory.output_bytes": n * 4, "memory.new_result_bytes": new_result,
            "memory.out_bytes": with_out, "memory.gompute_bytes": ours,
        })  # fmt: skip
        return (
            f"memory: a new result took {new_result} bytes of CuPy's pool ({new_result / (n * 4):.2f}x its "
            f"{n * 4} bytes), out= {with_out} more, gompute's own allocations {ours} bytes"
        )

    def torch_bandwidth():
        if torch is None:
            return f"skipped: {no_torch}"
        n = 100_000_000
        a, x, y = (torch.randn(n, device="cuda") for _ in range(3))
        out = torch.empty_like(x)
        k1, k3 = g.map(scale_relu), g.map(fused)

        def ms(fn):
            return torch_ms(torch, fn)

        copy = ms(lambda: out.copy_(x))
        torch_one = ms(lambda: torch.mul(x, 2, out=out).relu_())
        one = ms(lambda: k1(x, out=out, scale=2))
        torch_three = ms(lambda: torch.addcmul(y, a, x, out=out).clamp_(-1, 1))
        three = ms(lambda: k3(a, x, y, out=out))
        figures.update({
            "torch.copy_ms": copy, "torch.scale_relu_ms": one, "torch.expr.scale_relu_ms": torch_one,
            "torch.fused_ms": three, "torch.expr.fused_ms": torch_three,
        })  # fmt: skip
        return (
            f"1e8 f32 on torch tensors: scale_relu g.map {one:.2f} ms ({copy / one:.2f}x the speed of torch's "
            f"device copy, {copy:.2f} ms) vs torch mul+relu {torch_one:.2f} ms ({torch_one / one:.2f}x); fused "
            f"3-input g.map {three:.2f} ms vs torch addcmul+clamp {torch_three:.2f} ms ({torch_three / three:.2f}x)"
        )

    for name, fn in [
        ("CuPy / torch / Buffer round trips", round_trips),
        ("g.map on a CuPy stream", cupy_streams),
        ("g.map on a torch stream", torch_streams),
        ("torch -> cupy pipeline", mixed_pipeline),
        ("dispatch overhead vs CuPy", dispatch_overhead),
        ("dispatch overhead vs torch", torch_dispatch_overhead),
        ("g.map bandwidth at 1e8", bandwidth),
        ("g.map vs the PyTorch expressions at 1e8", torch_bandwidth),
    ]:
        check.run(name, fn)
