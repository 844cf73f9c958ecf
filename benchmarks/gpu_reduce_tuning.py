"""gpu_check.py's reduction tuning: the constants g.reduce's GPU entries are generated with, swept
over sums of 1e8 values as f32, f16 and i8 on Buffers, whole and down the columns of a (1e4, 1e4)
square, each beside the device-to-device copy of the same f32 bytes in the same run, so the first
session with a GPU can set them from one run:

- the packed entries' 16-byte loads at once a thread (GPU_PACK_LOADS: 2, 4, 8);
- the launch bound's least blocks an SM (GPU_BLOCKS_AN_SM: 2, 4), which caps the registers;
- the rows and columns entries instead of the packed ones (one element a load, GPU_LOADS at
  once): the A/B of reading packs at all; and those with 16 elements at once, not 8, for the
  inputs that cannot be read in packs (strided, misaligned).

A variant is the same kernel function made a reduction kernel of its own and first called (so
generated, compiled and planned) with the constants patched; its later calls run what that made.
Each result is checked against NumPy's.

gpu_check.py calls `reduce_tuning(gpu, check)`; tests/map/test_gpu_check.py runs it on the fake
driver at a small size, which checks the script, not the speed.
"""

from __future__ import annotations

import contextlib
import importlib
import math
from unittest import mock

import numpy as np
from gpu_reduce import N, _download, sum_bound
from gpu_timing import event_ms

import gompute as g
from gompute.lang import reduce_gpu
from gompute.types import from_dtype

reduce_module = importlib.import_module("gompute.reduce")  # g.reduce, the function, shadows the name

VARIANTS = {
    "as built": {},
    "2 packs at once": {(reduce_gpu, "GPU_PACK_LOADS"): 2},
    "8 packs at once": {(reduce_gpu, "GPU_PACK_LOADS"): 8},
    "launch bound 4 blocks an SM": {(reduce_gpu, "GPU_BLOCKS_AN_SM"): 4},
    "no packs": {(reduce_module, "pack_elements"): lambda spec: 1},
    "no packs, 16 elements at once": {(reduce_module, "pack_elements"): lambda spec: 1, (reduce_gpu, "GPU_LOADS"): 16},
}
SHAPES = {"sum": None, "columns": 0}  # the axis reduced, of a flat array or of the square
TYPES = {"f32": np.float32, "f16": np.float16, "i8": np.int8}
SUMS = {"f32": np.float32, "f16": np.float16, "i8": np.int64}  # the sums' types


def _sum(x):  # NumPy's accumulator rules: f32 in f32, f16 in f32 rounded to f16, i8 in i64
    return x


def _patched(constants: dict):
    stack = contextlib.ExitStack()
    for (module, name), value in constants.items():
        stack.enter_context(mock.patch.object(module, name, value))
    return stack


def _check(name: str, values: np.ndarray, axis, got: np.ndarray) -> None:
    """`got` against NumPy's sums of `values` over `axis`: i8 exactly; f32 and f16 within the bound
    of an f32-accumulated sum (gpu_reduce.sum_bound)."""
    if name == "i8":
        want = values.sum(axis=axis, dtype=np.int64)
        assert np.array_equal(got, want), f"i8 sums differ from NumPy's at {np.flatnonzero(got != want)[:5]}"
        return
    want, bound = sum_bound(values, axis)
    error = float(np.max(np.abs(got.astype(np.float64) - want) / bound))
    assert error <= 1, f"{name} sums off NumPy's f64 sums by {error:.1f}x their bound"


def _built(gpu, name: str, constants: dict):
    """A fresh g.reduce of _sum, generated, compiled and planned with `constants`: first called on a
    small square of type `name`, whole and down its columns, before any big buffer exists, which
    loads every entry the sweep then runs (a later first load of an entry would generate the
    module's text again, without the constants)."""
    total = g.reduce(g.reduce_kernel(identity=0)(_sum))
    small = (np.arange(4096) % 7).astype(TYPES[name]).reshape(64, 64)
    with gpu.empty(small.shape, from_dtype(small.dtype)) as x, _patched(constants):
        x.upload(small)
        for axis in SHAPES.values():
            _check(name, small, axis, _download(total(x, axis=axis), SUMS[name]))
    return total


def sweep(gpu, n: int = N, calls: int = 20, repeats: int = 7) -> list[dict]:
    """Each variant's sums of each type, whole and down the columns: milliseconds and the read
    bandwidth over the copy's. A variant that fails to build or gives a wrong result is a row
    with its error."""
    side = math.isqrt(n)
    assert side * side == n, f"n={n} is not a square"
    rows, built = [], {}
    for variant, constants in VARIANTS.items():
        for name in TYPES:
            error = None
            try:
                built[variant, name] = _built(gpu, name, constants)
            except Exception as e:  # noqa: BLE001 - one variant that fails is a row, not the end
                error = f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
            for what in SHAPES:
                rows.append(
                    {"variant": variant, "type": name, "what": what, "ms": float("nan"), "x copy": 0.0, "error": error}
                )
    if not built:
        return rows
    stream = gpu.create_stream()
    host = np.random.default_rng(5).standard_normal(n, dtype=np.float32)
    values = {"f32": host, "f16": host.astype(np.float16), "i8": np.clip(host * 40, -127, 127).astype(np.int8)}
    with contextlib.ExitStack() as buffers:
        arrays, outs = {}, {}
        for name, v in values.items():
            flat = buffers.enter_context(gpu.empty((n,), from_dtype(v.dtype)))
            flat.upload(v)
            arrays[name, "sum"], arrays[name, "columns"] = flat, flat.view(from_dtype(v.dtype), (side, side))
            # On one stream, into given outputs: the calls take the C++ path, which keeps ahead of the GPU.
            outs[name, "sum"] = buffers.enter_context(gpu.empty((), from_dtype(np.dtype(SUMS[name]))))
            outs[name, "columns"] = buffers.enter_context(gpu.empty((side,), from_dtype(np.dtype(SUMS[name]))))
            for b in (flat, arrays[name, "columns"], outs[name, "sum"], outs[name, "columns"]):
                b.stream = stream
        copy = buffers.enter_context(gpu.empty((n,), g.f32))
        copy_ms = event_ms(gpu, stream, lambda: copy.copy_from(arrays["f32", "sum"], stream=stream), calls, repeats)
        for row in rows:
            name, what = row["type"], row["what"]
            total, array, out, axis = (
                built.get((row["variant"], name)),
                arrays[name, what],
                outs[name, what],
                SHAPES[what],
            )
            if total is None:
                continue
            try:
                total(array, axis=axis, out=out)
                stream.synchronize()
                _check(name, values[name].reshape(array.shape), axis, _download(out, SUMS[name]))
                call = lambda t=total, a=array, o=out, axis=axis: t(a, axis=axis, out=o)  # noqa: E731
                row["ms"] = event_ms(gpu, stream, call, calls, repeats)
                # It reads n elements of its type where the copy reads and writes n f32.
                row["x copy"] = copy_ms * values[name].itemsize / (2 * 4 * row["ms"])
            except Exception as e:  # noqa: BLE001 - as above
                row["error"] = f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
    return rows


def reduce_tuning(gpu, check, n: int = N, calls: int = 20, repeats: int = 7) -> list[dict]:
    """Runs the sweep into `check` as one row; returns its rows for gpu_check's saved table."""
    rows: list[dict] = []

    def run() -> str:
        rows.extend(sweep(gpu, n, calls, repeats))
        failed = [f"{r['variant']} {r['type']}: {r['error']}" for r in rows if r["error"]]
        if failed:
            raise AssertionError("; ".join(failed))
        cases = [(name, what) for what in SHAPES for name in TYPES]
        pick = lambda name, what: [r for r in rows if (r["type"], r["what"]) == (name, what)]  # noqa: E731
        best = {case: max(pick(*case), key=lambda r: r["x copy"]) for case in cases}
        built = {case: next(r for r in pick(*case) if r["variant"] == "as built")["x copy"] for case in cases}
        return "; ".join(
            f"{name} {what}: as built {built[name, what]:.2f}x copy, best {best[name, what]['variant']} "
            f"{best[name, what]['x copy']:.2f}x"
            for name, what in cases
        )

    check.run("g.reduce constants: packs, launch bound, no packs", run)
    return rows


def tuning_table(rows: list[dict]) -> str:
    """The sweep as Markdown: a row per variant, a column per type and shape."""
    cases = [(name, what) for what in SHAPES for name in TYPES]
    lines = [
        "| variant | " + " | ".join(f"{name} {what}" for name, what in cases) + " |",
        "|---|" + "---|" * len(cases),
    ]
    for variant in VARIANTS:
        cells = {(r["type"], r["what"]): r for r in rows if r["variant"] == variant}
        text = [
            "error" if cells[c]["error"] else f"{cells[c]['ms']:.3f} ms ({cells[c]['x copy']:.2f}x copy)"
            for c in cases
            if c in cells
        ]
        lines.append(f"| {variant} | " + " | ".join(text) + " |")
    return "\n".join(lines)
