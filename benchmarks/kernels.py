"""The kernels the benchmark suite runs, each in f32, f64 and f16, beside the NumPy and numexpr
spellings of the same work.

`KERNELS[name]` is a `Bench`: its gompute kernel per dtype, how many arrays it reads, its
NumPy expression, its numexpr expression, whether it is memory- or compute-bound, and its
params. The arrays are positive so the Newton loop stays well defined.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import gompute as g

NEWTON_STEPS = 16
GELU_C = 0.7978845608028654  # sqrt(2 / pi)


def _family(T):
    """The four kernels for element type T. No `from __future__ import annotations` in this file:
    the annotations must be evaluated here, once per T."""

    class Scale(g.Params):
        scale: T

    class Fused(g.Params):
        a: T
        b: T
        lo: T
        hi: T

    @g.map_kernel(block_size=256)
    def scale_relu(x: T, p: Scale) -> T:
        y = x * p.scale
        return y if y > 0 else T(0)

    @g.map_kernel(block_size=256)
    def fused(x: T, y: T, z: T, p: Fused) -> T:
        return g.clamp(p.a * x + p.b * y + z, p.lo, p.hi)

    @g.map_kernel(block_size=256)
    def gelu(x: T) -> T:
        return 0.5 * x * (1 + g.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))

    @g.map_kernel(block_size=256)
    def newton_sqrt(x: T) -> T:
        y = 0.5 * (x + 1)
        for _ in range(16):
            y = 0.5 * (y + x / y)
        return y

    return {"scale_relu": scale_relu, "fused": fused, "gelu": gelu, "newton_sqrt": newton_sqrt}


FAMILIES = {"f32": _family(g.f32), "f64": _family(g.f64), "f16": _family(g.f16)}
DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16}


def _np_scale_relu(x, scale):
    return np.maximum(x * scale, 0)


def _np_fused(x, y, z, a, b, lo, hi):
    return np.clip(a * x + b * y + z, lo, hi)


def _np_gelu(x):
    return 0.5 * x * (1 + np.tanh(x.dtype.type(GELU_C) * (x + x.dtype.type(0.044715) * x * x * x)))


def _np_newton(x):
    half = x.dtype.type(0.5)
    y = half * (x + 1)
    for _ in range(NEWTON_STEPS):
        y = half * (y + x / y)
    return y


def _ne_newton(ne, x, out):
    """numexpr cannot loop: one evaluate per Newton step, in place."""
    ne.evaluate("0.5 * (x + 1)", local_dict={"x": x}, out=out, casting="same_kind")
    for _ in range(NEWTON_STEPS):
        ne.evaluate("0.5 * (y + x / y)", local_dict={"x": x, "y": out}, out=out, casting="same_kind")
    return out


@dataclass(frozen=True)
class Bench:
    name: str
    inputs: int  # arrays read; the output is one more
    bound: str  # "memory" or "compute"
    numpy: Callable  # numpy(*arrays, **params) -> new array
    numexpr: str | None  # expression over x, y, z and the params (None: see numexpr_call)
    numexpr_call: Callable | None = None  # numexpr_call(ne, *arrays, out) for what one expression can't say
    params: dict = field(default_factory=dict)

    def kernel(self, dtype: str):
        return FAMILIES[dtype][self.name]

    def typed_params(self, dtype: str) -> dict:
        t = DTYPES[dtype]
        return {k: t(v) for k, v in self.params.items()}


KERNELS = {
    b.name: b
    for b in (
        Bench("scale_relu", 1, "memory", _np_scale_relu, "where(x * scale > 0, x * scale, 0)", params={"scale": 2.0}),
        Bench(
            "fused",
            3,
            "memory",
            _np_fused,
            "where(a*x + b*y + z < lo, lo, where(a*x + b*y + z > hi, hi, a*x + b*y + z))",
            params={"a": 1.5, "b": -0.5, "lo": -1.0, "hi": 1.0},
        ),
        Bench("gelu", 1, "compute", _np_gelu, f"0.5 * x * (1 + tanh({GELU_C} * (x + 0.044715 * x * x * x)))"),
        Bench("newton_sqrt", 1, "compute", _np_newton, None, numexpr_call=_ne_newton),
    )
}


def make_inputs(bench: Bench, n: int, dtype: str, seed: int = 0) -> list[np.ndarray]:
    """`bench.inputs` arrays of `n` positive-and-negative (positive for Newton) values."""
    rng = np.random.default_rng(seed)
    arrays = []
    for _ in range(bench.inputs):
        a = rng.random(n, dtype=np.float32 if dtype != "f64" else np.float64)
        a = a * 4 + 0.25 if bench.name == "newton_sqrt" else a * 4 - 2
        arrays.append(a.astype(DTYPES[dtype]))
    return arrays
