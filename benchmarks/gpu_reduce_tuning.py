"""gpu_check.py's reduction tuning: the constants g.reduce's GPU entries are generated with, swept
over full sums of 1e8 values as f32, f16 and i8 on Buffers, each beside the device-to-device copy
of the same f32 bytes in the same run, so the first session with a GPU can set them from one run:

- the packed entry's 16-byte loads at once a thread (GPU_PACK_LOADS: 2, 4, 8);
- the launch bound's least blocks an SM (GPU_BLOCKS_AN_SM: 2, 4), which caps the registers;
- the rows entry instead of the packed one (one element a load, GPU_LOADS at once): the A/B of
  reading rows in packs at all.

A variant is the same kernel function made a reduction kernel of its own and first called (so
generated, compiled and planned) with the constants patched; its later calls run what that made.
Each sum is checked against NumPy's.

gpu_check.py calls `reduce_tuning(gpu, check)`; tests/map/test_gpu_check.py runs it on the fake
driver at a small size, which checks the script, not the speed.
"""

from __future__ import annotations

import contextlib
import importlib
from unittest import mock

import numpy as np
from gpu_reduce import N, _check_half, _download, tolerance
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
    "rows entry (no packs)": {(reduce_module, "pack_elements"): lambda spec: 1},
}
TYPES = {"f32": np.float32, "f16": np.float16, "i8": np.int8}
SUMS = {"f32": np.float32, "f16": np.float16, "i8": np.int64}  # the sums' types


def _sum(x):  # NumPy's accumulator rules: f32 in f32, f16 in f32 rounded to f16, i8 in i64
    return x


def _patched(constants: dict):
    stack = contextlib.ExitStack()
    for (module, name), value in constants.items():
        stack.enter_context(mock.patch.object(module, name, value))
    return stack


def _check(name: str, values: np.ndarray, got) -> None:
    if name == "i8":
        assert int(got) == int(values.sum(dtype=np.int64)), f"i8 sum {int(got)}, NumPy's {values.sum(dtype=np.int64)}"
    elif name == "f16":
        _check_half(values, got)
    else:
        x = values.astype(np.float64)
        error = abs(float(got) - x.sum()) / (tolerance(values.size) * np.abs(x).sum())
        assert error <= 1, f"f32 sum off NumPy's f64 sum by {error:.1f}x the tolerance"


def _built(gpu, name: str, constants: dict):
    """A fresh g.reduce of _sum, generated, compiled and planned with `constants` by a first call
    on a small array of type `name` (before any big buffer exists)."""
    total = g.reduce(g.reduce_kernel(identity=0)(_sum))
    small = (np.arange(4096) % 7).astype(TYPES[name])
    with gpu.empty(small.shape, from_dtype(small.dtype)) as x, _patched(constants):
        x.upload(small)
        _check(name, small, _download(total(x), SUMS[name]))
    return total


def sweep(gpu, n: int = N, calls: int = 20, repeats: int = 7) -> list[dict]:
    """Each variant's full sum of each type: milliseconds and the read bandwidth over the copy's.
    A variant that fails to build or gives a wrong sum is a row with its error."""
    rows, built = [], {}
    for variant, constants in VARIANTS.items():
        for name in TYPES:
            row = {"variant": variant, "type": name, "ms": float("nan"), "x copy": 0.0, "error": None}
            try:
                built[variant, name] = _built(gpu, name, constants)
            except Exception as e:  # noqa: BLE001 - one variant that fails is a row, not the end
                row["error"] = f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
            rows.append(row)
    if not built:
        return rows
    stream = gpu.create_stream()
    host = np.random.default_rng(5).standard_normal(n, dtype=np.float32)
    values = {"f32": host, "f16": host.astype(np.float16), "i8": np.clip(host * 40, -127, 127).astype(np.int8)}
    with contextlib.ExitStack() as buffers:
        arrays, sums = {}, {}
        for name, v in values.items():
            arrays[name] = buffers.enter_context(gpu.empty((n,), from_dtype(v.dtype)))
            sums[name] = buffers.enter_context(gpu.empty((), from_dtype(np.dtype(SUMS[name]))))
            arrays[name].upload(v)
            # On one stream, into a given output: the calls take the C++ path, which keeps ahead of the GPU.
            arrays[name].stream = sums[name].stream = stream
        copy = buffers.enter_context(gpu.empty((n,), g.f32))
        copy_ms = event_ms(gpu, stream, lambda: copy.copy_from(arrays["f32"], stream=stream), calls, repeats)
        for row in rows:
            name = row["type"]
            total, array, out = built.get((row["variant"], name)), arrays[name], sums[name]
            if total is None:
                continue
            try:
                total(array, out=out)
                stream.synchronize()
                _check(name, values[name], _download(out, SUMS[name]))
                row["ms"] = event_ms(gpu, stream, lambda t=total, a=array, o=out: t(a, out=o), calls, repeats)
                # The sum reads n elements of its type where the copy reads and writes n f32.
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
        best = {name: max((r for r in rows if r["type"] == name), key=lambda r: r["x copy"]) for name in TYPES}
        built = {r["type"]: r["x copy"] for r in rows if r["variant"] == "as built"}
        return "; ".join(
            f"{name}: as built {built[name]:.2f}x copy, best {best[name]['variant']} {best[name]['x copy']:.2f}x"
            for name in TYPES
        )

    check.run("g.reduce constants: packs, launch bound, rows entry", run)
    return rows


def tuning_table(rows: list[dict]) -> str:
    """The sweep as Markdown: a row per variant, a column per type."""
    lines = ["| variant | " + " | ".join(TYPES) + " |", "|---|" + "---|" * len(TYPES)]
    for variant in VARIANTS:
        cells = {r["type"]: r for r in rows if r["variant"] == variant}
        text = [
            "error" if cells[t]["error"] else f"{cells[t]['ms']:.3f} ms ({cells[t]['x copy']:.2f}x copy)"
            for t in TYPES
            if t in cells
        ]
        lines.append(f"| {variant} | " + " | ".join(text) + " |")
    return "\n".join(lines)
