"""The host backend's f16 conversions: halves in memory are widened and narrowed by the F16C
instructions where the CPU has them (lang/preludes/host_strided.h), and otherwise, and for the
rounding inside a kernel, by integer and float operations that vectorize, not _Float16 casts
(lang/preludes/host.h). Either way they must give the hardware's bits for every half and for every
kind of float, the round-to-even ties and the NaN payloads included, so each test runs both ways."""

from __future__ import annotations

import platform
import shlex
from types import SimpleNamespace

import numpy as np
import pytest

import gompute as g
from gompute.compile.host import find_compiler


def _kernels() -> SimpleNamespace:
    """Fresh kernels, so that each way compiles its own."""

    @g.map_kernel
    def widen(x: g.f16) -> g.f32:
        return g.f32(x)

    @g.map_kernel
    def narrow(x: g.f32) -> g.f16:  # rounded to a half in float bits, then stored as 16 bits
        return g.f16(x)

    @g.map_kernel
    def round_to_half(x: g.f32) -> g.f32:  # rounded in float bits, kept a float
        return g.f32(g.f16(x))

    return SimpleNamespace(widen=g.map(widen), narrow=g.map(narrow), round_to_half=g.map(round_to_half))


@pytest.fixture(params=["cpu", "lanes"])
def k(request, monkeypatch) -> SimpleNamespace:
    """The kernels as this machine's CPU builds them, and built with no F16C instructions."""
    if request.param == "lanes":
        if platform.machine().lower() not in ("x86_64", "amd64"):
            pytest.skip("F16C is an x86 extension: the default build already converts in lanes here")
        monkeypatch.setenv("CXX", shlex.join([*find_compiler().command, "-mno-f16c"]))
    return _kernels()


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint32 if x.dtype == np.float32 else np.uint16)


def _floats() -> np.ndarray:
    """Every half, the ties between neighbours and a float either side of each, the overflow and
    subnormal edges, NaNs with payloads, and a million random bit patterns."""
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = np.sort(halves[np.isfinite(halves)].astype(np.float32))
    ties = (finite[:-1] + (finite[1:] - finite[:-1]) / 2).astype(np.float32)
    near = np.concatenate([np.nextafter(ties, np.float32(-np.inf)), np.nextafter(ties, np.float32(np.inf))])
    edges = np.array(
        [65504, 65519.996, 65520, 65536, 1e9, np.inf, 2.0**-14, 2.0**-24, 2.0**-25, 3 * 2.0**-26, 1e-30, 1e-45, 0],
        np.float32,
    )
    nans = np.array([0x7FC00000, 0x7F800001, 0x7FA02000, 0x7FFFFFFF, 0x7F801FFF], np.uint32).view(np.float32)
    rng = np.random.default_rng(0)
    noise = rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
    xs = np.concatenate([finite, ties, near, edges, nans, noise])
    return np.concatenate([xs, -xs])


def _halves(x: np.ndarray) -> np.ndarray:
    """The bits of the half nearest each float, NumPy's, and for NaNs the F16C instruction's:
    quieted, the payload's top 10 bits kept."""
    with np.errstate(over="ignore"):
        h = _bits(x.astype(np.float16)).copy()
    b = _bits(x[np.isnan(x)])
    h[np.isnan(x)] = ((b >> 16) & 0x8000) | 0x7E00 | ((b >> 13) & 0x3FF)
    return h


def test_every_half_widens_to_its_float(k):
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    got = _bits(k.widen(h.view(np.float16)))
    nan = (h & 0x7C00 == 0x7C00) & (h & 0x3FF != 0)
    want = _bits(h.view(np.float16).astype(np.float32)).copy()
    # a NaN widens quieted, its payload kept (what the F16C instruction gives, whatever NumPy does)
    want[nan] = ((h[nan].astype(np.uint32) & 0x8000) << 16) | 0x7FC00000 | ((h[nan].astype(np.uint32) & 0x3FF) << 13)
    np.testing.assert_array_equal(got, want)


def test_floats_narrow_to_the_nearest_half(k):
    x = _floats()
    np.testing.assert_array_equal(_bits(k.narrow(x)), _halves(x))


def test_rounding_to_a_half_in_float_bits_agrees_with_the_round_trip(k):
    x = _floats()
    want = _bits(_halves(x).view(np.float16).astype(np.float32))
    np.testing.assert_array_equal(_bits(k.round_to_half(x)), want)
