"""Kernels with loops of their own, over arrays: the host compiler vectorizes across a loop it does
not unroll only on the rows loop's promise that no element depends on another (host.h's
GOMPUTE_INDEPENDENT), so these run in place and into new outputs, at lengths around the vector
widths and past the inline limit, and must match NumPy's arithmetic bit for bit.

No `from __future__ import annotations`: the kernels' annotations name each factory's T."""

import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

import gompute as g
from gompute.compile.host import INCLUDE_DIR, find_compiler


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


def _spans(T):
    @g.map_kernel
    def spans(x: T, p: Span) -> T:
        acc = x
        for i in range(p.start, p.stop):  # a trip count known at run time: a guarded do-while
            if i == 5:
                continue
            if i == 40:
                break
            acc = acc * 0.5 + T(i)
        for j in range(p.stop, p.start, -2):
            acc = acc - T(j) * 0.25
        return acc

    return spans


SPANS = {"f32": _spans(g.f32), "f64": _spans(g.f64)}  # f64: counted in 64 bits (lang/codegen.py)


def _np_spans(x, start, stop):
    t = x.dtype.type
    acc = x.copy()
    for i in range(start, stop):
        if i == 5:
            continue
        if i == 40:
            break
        acc = acc * t(0.5) + t(i)
    for j in range(stop, start, -2):
        acc = acc - t(j) * t(0.25)
    return acc


@pytest.mark.parametrize("dtype", SPANS)
@pytest.mark.parametrize(
    "start, stop",
    [(0, 0), (0, 1), (3, 2), (-4, 9), (0, 64), (7, 7), (10, -10), (2**31 - 1, 0), (-(2**31), -(2**31) + 3)],
)
def test_a_loop_over_a_run_time_range_runs_its_python_count(dtype, start, stop):
    x = np.random.default_rng(abs(start - stop)).standard_normal(1001).astype(TYPES[dtype][1])
    k = g.map(SPANS[dtype])
    want = _np_spans(x, start, stop)
    assert np.array_equal(k(x, start=start, stop=stop), want)
    y = x.copy()
    k(y, out=y, start=start, stop=stop)
    assert np.array_equal(y, want)


def _steps(N):
    """Trips of range(p.start, p.stop, 2), and for a signed N of range(p.stop, p.start, -3), over
    an f32 body: for 8- and 16-bit N counted in 32 bits, for 64-bit N in 64 bits, guarded in 32."""

    class Span(g.Params):
        start: N
        stop: N

    if N.kind == "u":  # a negative step does not fit an unsigned range

        @g.map_kernel
        def steps(x: g.f32, p: Span) -> g.f32:
            y = x
            for i in range(p.start, p.stop, 2):
                y = y + g.f32(i) * 0.5
            return y

    else:

        @g.map_kernel
        def steps(x: g.f32, p: Span) -> g.f32:
            y = x
            for i in range(p.start, p.stop, 2):
                y = y + g.f32(i) * 0.5
            for j in range(p.stop, p.start, -3):
                y = y - g.f32(j)
            return y

    return steps


def _np_steps(x, N, start, stop):
    want = x.copy()
    for i in range(start, stop, 2):
        want = want + np.float32(i) * np.float32(0.5)
    for j in range(stop, start, -3) if N.kind == "i" else ():
        want = want - np.float32(j)
    return want


@pytest.mark.parametrize(
    "itype, start, stop",
    [
        (g.i8, -1, 1),
        (g.i8, -128, 127),
        (g.i8, 100, -100),
        (g.i16, -1, 1),
        (g.i16, -32768, 32767),
        (g.u8, 0, 255),
        (g.u16, 3, 60000),
    ],
    ids=str,
)
def test_a_narrow_run_time_range_runs_its_python_count(itype, start, stop):
    """8- and 16-bit ranges are counted in 32 bits: C++ promotes a u8 or u16 difference to a
    signed int, which made range(-1, 1, 2) over i8 run 129 times."""
    x = np.linspace(-1, 1, 37, dtype=np.float32)
    np.testing.assert_array_equal(g.map(_steps(itype))(x, start=start, stop=stop), _np_steps(x, itype, start, stop))


def _relax(T):
    @g.map_kernel
    def relax(x: T, p: Span) -> T:
        y = x
        for i in range(p.start, p.stop):
            y = 0.5 * (y + T(i))
        return y

    return relax


def _counted(T):
    @g.map_kernel
    def counted(x: T, p: Span) -> T:
        y = x
        k = 0  # a weak int, 64 bits, counting the trips: it does not widen the loop's guard
        for i in range(p.start, p.stop):
            y = 0.5 * (y + T(i))
            k += 1
        return y + T(k)

    return counted


def _np_counted(x, start, stop):
    t, y = x.dtype.type, x.copy()
    for i in range(start, stop):
        y = t(0.5) * (y + t(i))
    return y + t(len(range(start, stop)))


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("start, stop", [(0, 0), (0, 1), (3, 2), (-4, 9), (0, 64), (10, -10), (2**31 - 1, 0)])
def test_a_counter_in_a_run_time_range_counts_its_python_trips(dtype, start, stop):
    x = np.random.default_rng(abs(start - stop)).standard_normal(1001).astype(TYPES[dtype][1])
    got = g.map(_counted(TYPES[dtype][0]))(x, start=start, stop=stop)
    assert np.array_equal(got, _np_counted(x, start, stop))


@g.map_kernel
def _reads_its_count(x: g.f32, p: Span) -> g.f32:
    k = 0
    for _ in range(p.start, p.stop):
        x = x + g.f32(k)  # read in the body: a 64-bit value carried, not a trip counter
        k += 1
    return x


@g.map_kernel
def _counts_some_trips(x: g.f32, p: Span) -> g.f32:
    k = 0
    for _ in range(p.start, p.stop):
        if x > 0:  # stepped only on some trips: not computable from the trip count
            k += 1
        x = x * 0.5
    return x + g.f32(k)


@g.map_kernel
def _sums_in_f64(x: g.f32, p: Span) -> g.f32:
    k = g.f64(0)
    for _ in range(p.start, p.stop):
        x = x * 0.5
        k += 0.1  # an f64 running sum: rounded every trip, not computable from the trip count
    return x + g.f32(k)


def _np_reads_its_count(x, start, stop):
    for k, _ in enumerate(range(start, stop)):
        x = x + np.float32(k)
    return x


def _np_counts_some_trips(x, start, stop):
    k = np.zeros(x.shape, np.float32)
    for _ in range(start, stop):
        k += x > 0
        x = x * np.float32(0.5)
    return x + k


def _np_sums_in_f64(x, start, stop):
    k = 0.0
    for _ in range(start, stop):
        x = x * np.float32(0.5)
        k += 0.1
    return x + np.float32(k)


@pytest.mark.parametrize(
    "kernel, reference",
    [
        (_reads_its_count, _np_reads_its_count),
        (_counts_some_trips, _np_counts_some_trips),
        (_sums_in_f64, _np_sums_in_f64),
    ],
)
@pytest.mark.parametrize("start, stop", [(0, 0), (3, 2), (-4, 9), (0, 40)])
def test_a_parameter_assigned_in_a_run_time_range_matches_python(kernel, reference, start, stop):
    x = np.random.default_rng(stop).standard_normal(257).astype(np.float32)
    assert np.array_equal(g.map(kernel)(x, start=start, stop=stop), reference(x, start, stop))


@pytest.mark.parametrize(
    "kernel, width",
    [
        (_counted(g.f32), 32),
        (_counted(g.f64), 64),
        (_reads_its_count, 64),
        (_counts_some_trips, 64),
        (_sums_in_f64, 64),
    ],
    ids=["counter", "f64", "read", "conditional", "float"],
)
def test_a_trip_counter_alone_leaves_the_guard_in_the_ranges_width(kernel, width):
    """lang/codegen.py counts a run-time range's trips in 64 bits where the body carries a 64-bit
    value; `k += 1`, stepped once a trip and read only after the loop, is not such a value."""
    guards = [line for line in kernel.source("host").splitlines() if "_count = " in line]
    assert len(guards) == 1 and f"const uint{width}_t " in guards[0], guards


class Span64(g.Params):
    start: g.i64
    stop: g.i64


def _relax64(T):
    @g.map_kernel
    def relax64(x: T, p: Span64) -> T:
        y = x
        for _ in range(p.start, p.stop):
            y = 0.5 * (y + 1.0)
        return y

    return relax64


@pytest.mark.parametrize(
    "itype, start, stop",
    [
        (g.i64, 0, 0),
        (g.i64, 0, 1),
        (g.i64, 5, -5),
        (g.i64, -7, 30),
        (g.i64, 2**63 - 10, 2**63 - 1),
        (g.i64, -(2**63), -(2**63) + 8),
        (g.i64, 2**63 - 1, -(2**63)),
        (g.u64, 0, 40),
        (g.u64, 2**64 - 9, 2**64 - 1),  # the loop variable, a u64, past 2**63 (as a weak int it wrapped)
    ],
    ids=str,
)
def test_a_wide_run_time_range_over_narrow_values_runs_its_python_count(itype, start, stop):
    x = np.linspace(-1, 1, 37, dtype=np.float32)
    assert "_bound = " in _steps(itype).source("host")  # the 32-bit guard
    np.testing.assert_array_equal(g.map(_steps(itype))(x, start=start, stop=stop), _np_steps(x, itype, start, stop))


class Trips(g.Params):
    n: g.i64


@g.map_kernel
def _trips(x: g.f32, p: Trips) -> g.i64:
    k = 0
    for _ in range(p.n):
        k += 1
    return k


def test_a_wide_range_past_two_to_the_32_runs_every_trip():
    """The 32-bit guard's counter stops at 2**32 - 2 and its bound at 2**32 - 1: the trips past
    2**32 still run (one element, about 4 s)."""
    n = 2**32 + 3
    assert g.map(_trips)(np.zeros(1, np.float32), n=n)[0] == n


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("factory", [_relax, _counted, _relax64])
def test_gcc_vectorizes_across_a_run_time_range(factory, dtype):
    """The rows loop of a kernel whose own loop has a run-time trip count is vectorized, f32 and
    f64 alike (lang/codegen.py: the trip count computed without a branch, the guard's compare as
    wide as the values it selects, no narrowing of the loop variable, a trip counter left out of
    that width, a 64-bit range over f32 guarded in 32 bits; each kept the loop scalar). GCC reports
    it at the rows loop or at the kernel's loop, whichever it keeps."""
    compiler = find_compiler()
    if "clang" in compiler.version.lower():
        pytest.skip(f"the vectorization report read here is GCC's; the compiler is {compiler.version}")
    kernel = factory(TYPES[dtype][0])
    source = kernel.source("host")
    lines = source.splitlines()
    marker = next(i for i, line in enumerate(lines) if line.startswith("#line") and "gompute-generated-entries" in line)
    first = int(lines[marker].split()[1])
    rows = next(i for i in range(marker, len(lines)) if "for (int64_t j = 0; j < n; ++j)" in lines[i])
    places = (f"gompute-generated-entries:{first + rows - marker - 1}:", f"{Path(__file__).name}:")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kernel.cpp"
        src.write_text(source)
        flags = [f for f in compiler.flags if f != "-w"]
        report_flag = "-fopt-info-vec-optimized"
        argv = [*compiler.command, *flags, report_flag, f"-I{INCLUDE_DIR}", "-o", f"{tmp}/k.so", str(src)]
        report = subprocess.run(argv, capture_output=True, text=True, check=True).stderr.splitlines()
    assert any("loop vectorized" in line and any(p in line for p in places) for line in report), "\n".join(report)
