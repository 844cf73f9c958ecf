"""Kernels with loops of their own, over arrays: the host compiler vectorizes across a loop it does
not unroll only on the rows loop's promise that no element depends on another (host.h's
GOMPUTE_INDEPENDENT), so these run in place and into new outputs, at lengths around the vector
widths and past the inline limit, and must match NumPy's arithmetic bit for bit.

No `from __future__ import annotations`: the kernels' annotations name each factory's T."""

import numpy as np
import pytest

import gompute as g


def _newton(T):
    @g.map_kernel
    def newton(x: T) -> T:
        y = 0.5 * (x + 1)
        for _ in range(16):  # too long to unroll in f16, where every operation rounds
            y = 0.5 * (y + x / y)
        return y

    return newton


def _damp(T):
    @g.map_kernel
    def damp(x: T) -> T:
        y = x
        for _ in range(64):  # too long to unroll at all
            y = y * 0.999 + 0.001
        return y

    return damp


def _np_newton(x):
    half = x.dtype.type(0.5)
    y = half * (x + 1)
    for _ in range(16):
        y = half * (y + x / y)
    return y


def _np_damp(x):
    y = x
    for _ in range(64):
        y = y * x.dtype.type(0.999) + x.dtype.type(0.001)
    return y


KERNELS = {"newton": (_newton, _np_newton), "damp": (_damp, _np_damp)}
TYPES = {"f16": (g.f16, np.float16), "f32": (g.f32, np.float32), "f64": (g.f64, np.float64)}


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("n", [1, 15, 33, 1000, 70_001])
def test_a_loop_kernel_matches_numpy_in_place_and_out(name, dtype, n):
    make, expected = KERNELS[name]
    T, np_type = TYPES[dtype]
    k = g.map(make(T))
    x = (np.random.default_rng(n).random(n) * 4 + 0.25).astype(np_type)
    want = expected(x)
    assert np.array_equal(k(x), want)
    y = x.copy()
    k(y, out=y)
    assert np.array_equal(y, want)
    strided = np.repeat(x, 2)[::2]  # the chunked path: gathered, then run as rows
    assert np.array_equal(k(strided), want)


class Span(g.Params):
    start: g.i32
    stop: g.i32


@g.map_kernel
def spans(x: g.f32, p: Span) -> g.f32:
    acc = x
    for i in range(p.start, p.stop):  # a trip count known at run time: emitted as a guarded do-while
        if i == 5:
            continue
        if i == 40:
            break
        acc = acc * 0.5 + g.f32(i)
    for j in range(p.stop, p.start, -2):
        acc = acc - g.f32(j) * 0.25
    return acc


def _np_spans(x, start, stop):
    acc = x.copy()
    for i in range(start, stop):
        if i == 5:
            continue
        if i == 40:
            break
        acc = acc * np.float32(0.5) + np.float32(i)
    for j in range(stop, start, -2):
        acc = acc - np.float32(j) * np.float32(0.25)
    return acc


@pytest.mark.parametrize(
    "start, stop",
    [(0, 0), (0, 1), (3, 2), (-4, 9), (0, 64), (7, 7), (10, -10), (2**31 - 1, 0), (-(2**31), -(2**31) + 3)],
)
def test_a_loop_over_a_run_time_range_runs_its_python_count(start, stop):
    x = np.random.default_rng(abs(start - stop)).standard_normal(1001).astype(np.float32)
    k = g.map(spans)
    want = _np_spans(x, start, stop)
    assert np.array_equal(k(x, start=start, stop=stop), want)
    y = x.copy()
    k(y, out=y, start=start, stop=stop)
    assert np.array_equal(y, want)
