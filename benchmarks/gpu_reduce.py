"""gpu_check.py's reduction scenarios: g.reduce's read bandwidth over 1e8 f32 on Buffers beside the
device-to-device copy of the same bytes in the same run, the same for a sum of the values as f16
(16-byte packed loads matter most for narrow types), its rows and columns of a square and rows of
four (a thread a row), and its sum beside cupy.sum and torch.sum where those are installed; every
result checked against NumPy's f64 sum.

gpu_check.py calls `reduce_scenarios(gpu, check)`; tests/map/test_gpu_check.py calls it with a
small `n` on the fake driver. A sum reads its n elements once where the copy reads n and writes n,
so the sum's read bandwidth over the copy's is copy_ms / (2 * sum_ms) (gpu_targets.py).
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np
from gpu_interop import frameworks
from gpu_timing import cupy_ms, event_ms, torch_ms
from reductions import sumsq, total  # the host benchmark's kernels, so both time the same code

import gompute as g

N = 100_000_000  # 1e8 f32: a square (1e4, 1e4) array for the row and column reductions
SHORT = 4  # the elements of a short row: (N / SHORT, SHORT) reduced along its rows


def tolerance(count: int) -> float:
    """The error a sum of `count` f32 values may have against its f64 value, relative to the sum
    of their magnitudes: a pairwise (tree) sum's bound, one f32 epsilon for each of its log2(count)
    levels (Higham, Accuracy and Stability of Numerical Algorithms, section 4.2). A blocked GPU
    sum's rounding errors are far below it, while a plain f32 running sum of 1e8 values, whose
    bound grows with the count itself, misses it by orders of magnitude."""
    return max(1, math.ceil(math.log2(count))) * float(np.finfo(np.float32).eps)


class _Reference:
    """The f64 sums of one f32 array (flat, and as a square's rows and columns) and the sums of
    their magnitudes, which bound the f32 sums' rounding errors."""

    def __init__(self, host: np.ndarray):
        x = host.astype(np.float64)
        side = math.isqrt(host.size)
        square, magnitude = x.reshape(side, side), np.abs(x)
        self.counts = {"sum": host.size, "sumsq": host.size, "rows": side, "columns": side, "short": SHORT}
        self.sums = {
            "sum": (x.sum(), magnitude.sum()),
            "sumsq": (np.dot(x, x), np.dot(x, x)),
            "rows": (square.sum(axis=1), magnitude.reshape(side, side).sum(axis=1)),
            "columns": (square.sum(axis=0), magnitude.reshape(side, side).sum(axis=0)),
            "short": (x.reshape(-1, SHORT).sum(axis=1), magnitude.reshape(-1, SHORT).sum(axis=1)),
        }

    def check(self, what: str, got) -> float:
        """The largest error of `got` over its bound (<= 1), or an AssertionError naming it."""
        want, scale = self.sums[what]
        count = self.counts[what]
        error = np.abs(np.asarray(got, np.float64) - want) / (tolerance(count) * np.maximum(scale, 1e-300))
        worst = float(np.max(error))
        assert worst <= 1, f"{what}: off NumPy's f64 sum by {worst:.1f}x the tolerance {tolerance(count):.1e}"
        return worst


@g.reduce_kernel(identity=0)
def any_sum(x):  # NumPy's accumulator rules: an f16 sum in f32, rounded to f16 at the end
    return x


def sum_bound(values: np.ndarray, axis=None) -> tuple[np.ndarray, np.ndarray]:
    """(the f64 sums of `values` over `axis`, the error an f32-accumulated sum of them may have):
    the f32 sum's bound (tolerance), and for f16 values the final rounding to f16 too, half an f16
    epsilon of the sum."""
    x = values.astype(np.float64)
    want, scale = x.sum(axis=axis), np.abs(x).sum(axis=axis)
    bound = tolerance(values.size // np.size(want)) * scale
    if values.dtype == np.float16:
        bound = bound + np.abs(want) * float(np.finfo(np.float16).eps) / 2
    return want, bound


def _check_half(half: np.ndarray, got) -> float:
    """The error of an f16 sum against the f64 sum of the same f16 values, over its bound."""
    want, bound = sum_bound(half)
    worst = abs(float(got) - want) / bound
    assert worst <= 1, f"f16 sum: off NumPy's f64 sum by {worst:.1f}x its bound {bound:.3g}"
    return worst


def _host_timed(fn):
    """`fn` wrapped to record the host's time in each call: where that passes the GPU's time a call,
    the event timing measured the host's submission, not the GPU's reading."""
    times: list[float] = []

    def call():
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)

    return call, times


def _download(buf, dtype=np.float32) -> np.ndarray:
    out = np.empty(tuple(buf.shape), dtype)
    buf.download(out)
    return out


def reduce_scenarios(gpu, check, n: int = N, calls: int = 20, repeats: int = 7) -> None:
    """The rows below, over `n` f32 values (a square number), standard normal so the sums cancel;
    each time the median of `repeats` runs of `calls` calls (gpu_timing.per_call_ms)."""
    (cupy, no_cupy), (torch, no_torch) = frameworks()
    figures, side = check.figures, math.isqrt(n)
    assert side * side == n, f"n={n} is not a square"
    sum_k, sumsq_k, half_k = g.reduce(total), g.reduce(sumsq), g.reduce(any_sum)
    timing = {"calls": calls, "repeats": repeats}

    @functools.cache
    def data() -> tuple[np.ndarray, _Reference]:
        """The array and its reference, made once the first scenario has compiled its kernels."""
        host = np.random.default_rng(2).standard_normal(n, dtype=np.float32)
        return host, _Reference(host)

    def buffers():
        first = gpu.empty((2, 64), g.f32)
        first.upload(np.ones((2, 64), np.float32))
        for k in (sum_k, sumsq_k, half_k):  # compiled and loaded before the big buffers exist
            k(first)
        half_k(gpu.empty((2, 64), g.f16))
        stream, (host, reference) = gpu.create_stream(), data()
        with gpu.empty((n,), g.f32) as x, gpu.empty((n,), g.f32) as copy:
            x.upload(host)
            square, short = x.view(g.f32, (side, side)), x.view(g.f32, (n // SHORT, SHORT))
            scalar, rows, columns = gpu.empty((), g.f32), gpu.empty((side,), g.f32), gpu.empty((side,), g.f32)
            sums = gpu.empty((n // SHORT,), g.f32)
            for b in (x, copy, square, short, scalar, rows, columns, sums):
                b.stream = stream  # so g.reduce launches on it
            sum_call, host_s = _host_timed(lambda: sum_k(x, out=scalar))
            ms = {
                "copy": event_ms(gpu, stream, lambda: copy.copy_from(x, stream=stream), **timing),
                "sum": event_ms(gpu, stream, sum_call, **timing),
            }
            stream.synchronize()
            worst = {"sum": reference.check("sum", _download(scalar))}
            ms["sumsq"] = event_ms(gpu, stream, lambda: sumsq_k(x, out=scalar), **timing)
            stream.synchronize()
            worst["sumsq"] = reference.check("sumsq", _download(scalar))
            halves = host.astype(np.float16)
            with gpu.empty((n,), g.f16) as half, gpu.empty((), g.f16) as half_sum:
                half.upload(halves)
                half.stream = half_sum.stream = stream
                ms["f16"] = event_ms(gpu, stream, lambda: half_k(half, out=half_sum), **timing)
                stream.synchronize()
                worst["f16"] = _check_half(halves, _download(half_sum, np.float16))
            for what, array, axis, out in (
                ("rows", square, 1, rows),
                ("columns", square, 0, columns),
                ("short", short, 1, sums),
            ):
                reduce_square = lambda a=array, axis=axis, out=out: sum_k(a, axis=axis, out=out)  # noqa: E731
                ms[what] = event_ms(gpu, stream, reduce_square, **timing)
                stream.synchronize()
                worst[what] = reference.check(what, _download(out))
        figures.update({f"reduce.{what}_ms": t for what, t in ms.items()})
        read = lambda t: n * 4 / (t / 1e3) / 1e9  # noqa: E731 - GB/s of one pass over the array
        return (
            f"{n:.0e} f32 Buffers: copy {2 * read(ms['copy']):.0f} GB/s (read + write); g.reduce sum reads "
            f"{read(ms['sum']):.0f} GB/s ({ms['copy'] / (2 * ms['sum']):.2f}x copy), sum of squares "
            f"{read(ms['sumsq']):.0f} GB/s, f16 sum {read(ms['f16']) / 2:.0f} GB/s ({ms['copy'] / (4 * ms['f16']):.2f}x "
            f"copy); ({side}, {side}) rows {ms['rows'] / ms['sum']:.2f}x, columns "
            f"{ms['columns'] / ms['sum']:.2f}x the full sum's time; rows of {SHORT} {ms['short'] / ms['sum']:.2f}x "
            f"(they write a {SHORT}th of what they read); host {np.median(host_s) * 1e6:.0f} us a sum "
            f"call vs {ms['sum'] * 1e3:.0f} us of GPU; matches NumPy's f64 sums (worst "
            f"{max(worst.values()):.2g} of the tolerance, {tolerance(n):.1e} of the magnitudes' sum)"
        )

    def against(library, module, why: str, timer, asarray, theirs):
        """g.reduce's sum of a `library` array beside `theirs(x, out)`, the library's own."""

        def run():
            if module is None:
                return f"skipped: {why}"
            x = asarray(np.ones(1, np.float32))
            ours_out, their_out = sum_k(x), sum_k(x)  # 0-d arrays of the library; compiled
            host, reference = data()
            x = asarray(host)
            ours = timer(module, lambda: sum_k(x, out=ours_out), **timing)
            others = timer(module, lambda: theirs(x, their_out), **timing)
            worst = reference.check("sum", float(ours_out))
            figures.update({f"reduce_{library}.sum_ms": ours, f"reduce_{library}.theirs_ms": others})
            return (
                f"{n:.0e} f32: g.reduce sum {ours:.3f} ms vs {library}.sum {others:.3f} ms ({others / ours:.2f}x); "
                f"g.reduce's result within {worst:.2g} of the tolerance, {library}.sum's off the f64 sum by "
                f"{abs(float(their_out) - reference.sums['sum'][0]):.3g}"
            )

        return run

    for name, fn in [
        ("g.reduce bandwidth at 1e8", buffers),
        (
            "g.reduce vs cupy.sum at 1e8",
            against("cupy", cupy, no_cupy, cupy_ms, lambda h: cupy.asarray(h), lambda x, o: x.sum(out=o)),
        ),
        (
            "g.reduce vs torch.sum at 1e8",
            against(
                "torch",
                torch,
                no_torch,
                torch_ms,
                lambda h: torch.from_numpy(h).cuda(),
                lambda x, o: torch.sum(x, 0, out=o),
            ),
        ),
    ]:
        check.run(name, fn)
