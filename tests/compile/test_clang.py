"""The host backend built by Clang: the ziglang wheel's `zig c++`, the compiler gompute falls back to
where the system has none. The prelude has Clang spellings of its own (the F16C conversions, the
rows loop's independence) and the GCC-only options must stay out, so generated code is compiled
and run with it here, and must give the same bits as NumPy."""

from __future__ import annotations

import shlex
import sys

import numpy as np
import pytest

import gompute as g
from gompute.compile import host

pytest.importorskip("ziglang", reason="the ziglang wheel (a test extra) brings Clang as `python -m ziglang c++`")


class Span(g.Params):
    stop: g.i32


@pytest.fixture(scope="module")
def kernels():
    """The kernels compiled by zig c++, each its own kernel object, so nothing comes from a GCC build."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CXX", shlex.join([sys.executable, "-m", "ziglang", "c++"]))
        assert "clang" in host.find_compiler().version.lower()

        @g.map_kernel
        def halves(x: g.f16, y: g.f16) -> g.f16:  # F16C widening and narrowing around the loop
            return g.sqrt(abs(x)) * y + x

        @g.map_kernel
        def damp(x: g.f32, p: Span) -> g.f32:  # a run-time range, emitted as a guarded do-while
            y = x
            for i in range(p.stop):
                if i == 40:
                    break
                y = y * 0.5 + g.f32(i)
            return y

        built = {"halves": g.map(halves), "damp": g.map(damp)}
        rng = np.random.default_rng(0)
        built["x16"] = (rng.standard_normal(10_001) * 8).astype(np.float16)
        built["x32"] = rng.standard_normal(1001).astype(np.float32)
        built["halves"](built["x16"][:8], built["x16"][:8])  # compiled while CXX names zig
        built["damp"](built["x32"][:8], stop=1)
        yield built


def test_halves_match_numpy_contiguous_and_strided(kernels):
    x = kernels["x16"]
    y = x[::-1]
    want = np.sqrt(np.abs(x)) * y + x
    np.testing.assert_array_equal(kernels["halves"](x, np.ascontiguousarray(y)), want)
    np.testing.assert_array_equal(kernels["halves"](x, y), want)


@pytest.mark.parametrize("stop", [0, 1, 7, 64])
def test_a_run_time_range_runs_its_count(kernels, stop):
    x = kernels["x32"]
    want = x.copy()
    for i in range(min(stop, 40)):
        want = want * np.float32(0.5) + np.float32(i)
    np.testing.assert_array_equal(kernels["damp"](x, stop=stop), want)
