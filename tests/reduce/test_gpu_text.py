"""The reductions' GPU text (CUDA and HIP C++, as NVRTC and hiprtc get it) run on the CPU: built
through tests/fakes/cuda_shim.h, whose blocks run their threads cooperatively (warp shuffles,
`__shared__`, `__syncthreads`), and launched on the host runtime with the grid a GPU gets."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g
from gompute.lang.module import module_source
from gompute.reduce import AutoReduce, BoundReduce
from tests.fakes import images

from . import kernels as K


class TextBound(BoundReduce):
    """A host device running a reduction's GPU text, cut as for a GPU."""

    def __init__(self, kernel, text: str):
        super().__init__(kernel, g.Backend.host)
        self.gpu, self.text, self._modules = True, text, {}

    def launcher(self, spec, kind):
        module = self._modules.get(spec.name)
        if module is None:
            symbols = [e.symbol for e in spec.entry_points()]
            warp = 64 if self.text == "hip" else 32
            image = images.gpu_text_image(module_source([spec], self.text), symbols, spec.name + self.text, warp)
            module = self._modules[spec.name] = self.compute.load_module(image)
        return module.get_kernel(spec.entry(kind).symbol)


def on_gpu_text(kernel, text: str) -> AutoReduce:
    auto = AutoReduce(kernel)
    auto._bound[(g.Backend.host, 0)] = TextBound(kernel, text)
    return auto


RNG = np.random.default_rng(11)


@pytest.mark.parametrize("text", ["cuda", "hip"])
def test_rows_columns_and_strided_reductions(text):
    x = RNG.standard_normal((37, 300)).astype(np.float32)
    total = on_gpu_text(K.total, text)
    for axis in (None, 0, 1):
        np.testing.assert_allclose(total(x, axis=axis), np.sum(x, axis=axis), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(total(x.T[::2], axis=1), np.sum(x.T[::2], axis=1), rtol=1e-5, atol=1e-4)
    cube = RNG.standard_normal((6, 5, 70)).astype(np.float64)
    np.testing.assert_allclose(total(cube, axis=(0, 2)), np.sum(cube, axis=(0, 2)), rtol=1e-12)
    big = RNG.standard_normal(3 * 256 * 8 * 5 + 17).astype(np.float32)  # several blocks' items
    np.testing.assert_allclose(total(big), np.sum(big, dtype=np.float64), rtol=1e-6)


@pytest.mark.parametrize("text", ["cuda", "hip"])
def test_every_kind_of_combine(text):
    i = RNG.integers(-100, 100, (9, 130), dtype=np.int16)
    np.testing.assert_array_equal(on_gpu_text(K.largest, text)(i, axis=1), np.max(i, axis=1))
    np.testing.assert_array_equal(on_gpu_text(K.smallest, text)(i, axis=0), np.min(i, axis=0))
    np.testing.assert_array_equal(on_gpu_text(K.parity, text)(i), np.bitwise_xor.reduce(i, axis=None))
    np.testing.assert_array_equal(on_gpu_text(K.total, text)(i > 0, axis=1), np.sum(i > 0, axis=1))
    x, y = RNG.standard_normal((2, 500)).astype(np.float32)
    np.testing.assert_allclose(on_gpu_text(K.dot, text)(x, y), np.dot(x.astype(np.float64), y), rtol=1e-5)
    z = RNG.standard_normal((40, 3))
    np.testing.assert_array_equal(on_gpu_text(K.extreme, text)(z, axis=0), z[np.argmax(np.abs(z), axis=0), range(3)])
    np.testing.assert_allclose(on_gpu_text(K.shifted_sum, text)(z, by=1.5), np.sum(z + 1.5))
    h = RNG.standard_normal(1000).astype(np.float16)
    np.testing.assert_allclose(on_gpu_text(K.total, text)(h), np.sum(h), rtol=2e-3)


def test_empty_reductions_store_the_identity():
    e = np.zeros((0, 5), np.float32)
    np.testing.assert_array_equal(on_gpu_text(K.product, "cuda")(e, axis=0), np.ones(5, np.float32))


def test_the_cuda_entries_keep_everything_in_registers():
    from tests import sass

    if sass.missing():
        pytest.skip(sass.missing())
    specs = [K.sumsq.variant((g.f32,)), K.total.variant((g.i8,)), K.dot64.variant((g.f64, g.f64))]
    specs += [K.extreme.variant((g.f64,)), K.largest.variant((g.f16,))]
    functions = sass.of_kernels(specs, sass.newest_arch(), "reduce_sass")
    for spec in specs:
        for entry in spec.entry_points():
            f = functions[entry.symbol]
            assert not f.local_accesses(), (entry.symbol, [str(i) for i in f.local_accesses()])
            assert f.find("LDG"), entry.symbol
