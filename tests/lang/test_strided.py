"""Strided entry points and storage variants: what `g.map` launches for views, broadcasts and
arrays whose dtype differs from the kernel's annotations, checked against NumPy.

Every kernel here is compiled into one host module; each launch hands NumPy's own memory (views
included, through `g.asbuffer`) to the runtime, with `pack_strides` describing the layout.
"""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g
from gompute import abi
from gompute import types as T
from gompute.errors import ArgumentError, SyncFailed
from gompute.lang.kernel import compile_module
from gompute.lang.module import MAX_NDIM, pack_strides

pytest.importorskip("gompute._core", reason="strided launches go through the host runtime")


class Scale(g.Params):
    scale: g.f32


@g.map_kernel(block_size=256)
def affine(x: g.f32, p: Scale) -> g.f32:
    return x * p.scale + 1


@g.map_kernel(block_size=64)
def mix(a: g.f64, b: g.f64) -> g.f64:
    return a * 2 - b


@g.map_kernel(block_size=32)
def fill(p: Scale) -> g.f32:
    return p.scale


@g.map_kernel
def narrow(x: g.f64) -> g.f32:
    return x


@g.map_kernel
def generic_add(a, b):
    return a + b


SCALE = abi.pack(Scale, scale=2.0)
SPECS = {
    "affine": affine.specialize(),
    "affine_f16": affine.variant((T.f16,)),
    "affine_i16_to_f64": affine.variant((T.i16,), T.f64),
    "affine_to_f64": affine.variant((T.f32,), T.f64),
    "mix": mix.specialize(),
    "mix_i16_f32": mix.variant((T.i16, T.f32)),
    "fill": fill.specialize(),
    "narrow_from_f32": narrow.variant((T.f32,)),
}


@pytest.fixture(scope="module")
def module():
    image = compile_module(list(SPECS.values()), "host", None, "test_strided")
    compute = g.runtime.host.Compute.init()
    return compute, compute.load_module(image.data)


def _layout(out: np.ndarray, inputs) -> tuple[list[np.ndarray], bytes]:
    arrays = [np.broadcast_to(a, out.shape) for a in inputs] + [out]
    strides = [[s // a.itemsize for s in a.strides] for a in arrays]
    return arrays, pack_strides(out.shape, strides)


def run_strided(module, name, out, *inputs, params=SCALE, grid=None, block=None):
    """Launch SPECS[name]'s strided entry writing `out` from `inputs` (broadcast to out's shape)."""
    compute, mod = module
    spec = SPECS[name]
    arrays, strides = _layout(out, inputs)
    args = [g.asbuffer(a).arg_ptr() for a in arrays]
    args += [g.interface.arg(g.u64(out.size)), g.interface.arg(strides)]
    if spec.params_class is not None:
        args.append(g.interface.arg(params))
    block = block or spec.block_size
    grid = grid or max(1, -(-out.size // block))
    mod.get_kernel(spec.entry("strided").symbol).launch(g.Dim3(grid), g.Dim3(block), 0, args)
    compute.synchronize()
    return out


def _f32(shape, seed=0):
    return np.random.default_rng(seed).uniform(-10, 10, shape).astype(np.float32)


VIEWS = {
    "transposed": lambda: _f32((37, 23)).T,
    "every_third": lambda: _f32(1000)[::3],
    "tail": lambda: _f32(1000)[5:],
    "reversed": lambda: _f32(700)[::-1],
    "columns_reversed_by_two": lambda: _f32((9, 31))[:, ::-2],
    "3d_mixed": lambda: _f32((5, 8, 9)).transpose(2, 0, 1)[1:, ::-3, ::2],
    "0d": lambda: np.array(1.5, dtype=np.float32),
    "one_element": lambda: _f32((1, 1, 1))[:, ::-1],
}


@pytest.mark.parametrize("view", VIEWS, ids=str)
def test_views_match_numpy(module, view):
    x = VIEWS[view]()
    out = np.full(x.shape, np.nan, dtype=np.float32)
    np.testing.assert_array_equal(run_strided(module, "affine", out, x), x * np.float32(2) + 1)


def test_strided_output_and_a_grid_smaller_than_the_data(module):
    x = _f32((40, 25)).T  # 1000 elements, not a multiple of 256
    base = np.zeros((50, 60), dtype=np.float32)
    out = base[1::2, 10:50][::-1, ::-1]
    assert out.shape == x.shape and not out.flags.c_contiguous
    run_strided(module, "affine", out, x, grid=2)  # two blocks of 256 loop over all 1000
    np.testing.assert_array_equal(out, x * np.float32(2) + 1)
    untouched = np.ones(base.shape, bool)
    untouched[1::2, 10:50] = False
    assert (base[untouched] == 0).all()  # nothing written outside the view


@pytest.mark.parametrize("ndim", range(1, MAX_NDIM + 1))
def test_every_rank_with_a_non_contiguous_layout(module, ndim):
    shape = (3, 2, 2, 3, 2, 1, 2, 3)[:ndim] if ndim < 8 else (3, 2, 2, 3, 2, 2, 2, 3)
    base = _f32(tuple(2 * n for n in shape), seed=ndim)
    x = base[tuple(slice(None, None, 2) for _ in shape)].transpose(*reversed(range(ndim)))[..., ::-1]
    out = np.empty(x.shape, np.float32)
    np.testing.assert_array_equal(run_strided(module, "affine", out, x), x * np.float32(2) + 1)


@pytest.mark.parametrize(
    "a, b",
    [
        (np.arange(3.0).reshape(3, 1), np.arange(4.0).reshape(1, 4)),
        (np.arange(7.0), np.broadcast_to(np.arange(5.0).reshape(5, 1), (5, 7))),
        (np.array(3.0), np.linspace(0, 1, 1001)),  # a 0-d array broadcast over several blocks
        (np.arange(12.0).reshape(3, 4).T, np.arange(3.0)),
    ],
    ids=["column_and_row", "broadcast_to", "scalar", "transposed_and_row"],
)
def test_broadcast_inputs(module, a, b):
    shape = np.broadcast_shapes(a.shape, b.shape)
    out = np.empty(shape)
    np.testing.assert_array_equal(run_strided(module, "mix", out, a, b), a * 2 - b)


def test_mixed_storage_types_into_an_f64_kernel(module):
    a = np.arange(-300, 300, dtype=np.int16).reshape(20, 30)[::-1, ::2]
    b = _f32((20, 15))[::2]
    out = np.empty((10, 15))
    np.testing.assert_array_equal(run_strided(module, "mix_i16_f32", out, a[::2], b), a[::2].astype(np.float64) * 2 - b)


def test_storage_variants_convert_inputs_and_results_exactly(module):
    x16 = np.arange(-500, 500, 3, dtype=np.int16)[::-1]
    out = np.empty(x16.shape)
    np.testing.assert_array_equal(
        run_strided(module, "affine_i16_to_f64", out, x16),
        (x16.astype(np.float32) * 2 + 1).astype(np.float64),
    )
    xf = _f32((30, 30)).T
    out = np.empty(xf.shape)
    np.testing.assert_array_equal(
        run_strided(module, "affine_to_f64", out, xf), (xf * np.float32(2) + 1).astype(np.float64)
    )
    xh = _f32(600).astype(np.float16)[::2]
    out = np.empty(xh.shape, np.float32)
    np.testing.assert_array_equal(run_strided(module, "affine_f16", out, xh), xh.astype(np.float32) * 2 + 1)
    xn = _f32(300)[::-1]
    out = np.empty(xn.shape, np.float32)
    np.testing.assert_array_equal(run_strided(module, "narrow_from_f32", out, xn), xn)


def test_contiguous_entry_of_a_variant(module):
    compute, mod = module
    spec = SPECS["affine_i16_to_f64"]
    x = np.arange(-400, 600, dtype=np.int16)
    out = np.empty(x.shape)
    args = [
        g.asbuffer(x).arg_ptr(),
        g.asbuffer(out).arg_ptr(),
        g.interface.arg(g.u64(x.size)),
        g.interface.arg(SCALE),
    ]
    mod.get_kernel(spec.entry("map").symbol).launch(g.Dim3(4), g.Dim3(256), 0, args)
    compute.synchronize()
    np.testing.assert_array_equal(out, x * 2.0 + 1)


def test_output_may_be_exactly_an_input(module):
    x = _f32((30, 40))
    view = x.T[::-1, ::2]
    expected = view * np.float32(2) + 1
    run_strided(module, "affine", view, view)
    np.testing.assert_array_equal(view, expected)
    a = np.arange(600.0).reshape(20, 30).T  # out is a, b broadcasts against it
    b = np.arange(20.0)
    expected = a * 2 - b
    run_strided(module, "mix", a, a, b)
    np.testing.assert_array_equal(a, expected)


def test_a_kernel_without_inputs_fills_a_strided_output(module):
    base = np.zeros((6, 10), dtype=np.float32)
    run_strided(module, "fill", base[::2, ::-3])
    assert (base[::2, ::-3] == 2).all() and base.sum() == 2 * 3 * 4


def test_strided_entry_traps_on_another_block_size(module):
    x = _f32(100)[::2]
    out = np.zeros_like(x)
    with pytest.raises(SyncFailed, match="affine__strided: launched with a block size other than its block_size, 256"):
        run_strided(module, "affine", out, x, block=128)
    assert (out == 0).all()


def test_pack_strides_layout():
    packed = pack_strides((3, 4), [[4, 1], [0, 1], [-1, 3]])
    assert len(packed) == 8 + 64 + 3 * 64
    words = np.frombuffer(packed[8:], dtype="<i8").reshape(4, 8)
    assert np.frombuffer(packed[:8], dtype="<i4").tolist() == [2, 0]
    assert words[0].tolist() == [3, 4, 1, 1, 1, 1, 1, 1]  # shape, padded with 1
    assert words[1:, :2].tolist() == [[4, 1], [0, 1], [-1, 3]] and not words[1:, 2:].any()
    assert pack_strides((), [[]]) == bytes(8) + np.array([1] * 8 + [0] * 8, "<i8").tobytes()
    with pytest.raises(ArgumentError, match="up to 8 dimensions, not 9"):
        pack_strides((1,) * 9, [[0] * 9])
    with pytest.raises(ArgumentError, match="array 1 has 1 strides for a shape of 2 dimensions"):
        pack_strides((2, 2), [[2, 1], [1]])


def test_variant_refuses_an_inexact_conversion_naming_everything():
    with pytest.raises(ArgumentError) as info:
        affine.variant((T.i64,))
    assert str(info.value) == (
        "affine: x is declared f32; an array of int64 does not convert to it exactly — "
        "convert it with .astype(np.float32)"
    )
    with pytest.raises(ArgumentError, match="affine returns f32; an output array of float16 cannot hold"):
        affine.variant((T.f32,), T.f16)
    with pytest.raises(ArgumentError, match="affine: x is declared f32; an array of uint32"):
        affine.variant((T.u32,))
    # NumPy's "safe" rule, which counts int64 -> float64 as safe (it rounds above 2**53).
    assert mix.variant((T.i64, T.u64)).in_storage == (T.i64, T.u64)
    with pytest.raises(ArgumentError, match="takes 2 inputs, got 1"):
        mix.variant((T.f32,))
    with pytest.raises(ArgumentError, match="affine returns f32; an output array of bf16"):
        affine.variant((T.f32,), T.bf16)
    assert affine.variant((T.bf16,)).in_storage == (T.bf16,)  # bf16 -> f32 is exact
    assert affine.variant((T.u8,)).in_storage == (T.u8,)


def test_variants_are_cached_and_named_by_their_storage():
    assert affine.variant((T.f32,)) is affine.specialize()
    assert affine.variant((T.f32,), T.f32) is affine.specialize()
    assert affine.variant((T.i16,), T.f64) is affine.variant((T.i16,), T.f64)
    assert affine.variant([T.i16], T.f64) is affine.variant((T.i16,), T.f64)
    assert [e.symbol for e in affine.variant((T.i16,), T.f64).entry_points()] == [
        "affine__from_i16__to_f64",
        "affine__from_i16__to_f64__strided",
    ]
    assert [e.kind for e in affine.variant((T.f32,), T.f64).entry_points()] == ["map", "strided"]
    # In place only when the one input is stored as the output is, whatever the declared types.
    assert [e.kind for e in narrow.variant((T.f32,)).entry_points()] == ["inplace", "map", "strided"]
    assert [e.kind for e in narrow.specialize().entry_points()] == ["map", "strided"]
    spec = mix.variant((T.i16, T.f32))
    assert [a.type for a in spec.entry("strided").args[:3]] == [T.i16, T.f32, T.f64]
    assert spec.in_types == [T.f64, T.f64] and spec.entry("strided").args[4].nbytes == 8 + 64 + 64 * 3


def test_a_generic_kernel_takes_the_storage_types():
    spec = generic_add.variant((T.i16, T.f32))
    assert spec is generic_add.specialize(T.i16, T.f32) and spec.out_type is T.f32
    wide = generic_add.variant((T.i16, T.f32), T.f64)
    assert wide.name == "generic_add__i16_f32__to_f64" and wide.in_storage == (T.i16, T.f32)


def test_image_of_compiles_a_variant_once():
    spec = affine.variant((T.u8,), T.f64)
    image = affine.image_of(spec, "host")
    assert affine.image_of(spec, "host") is image
    assert [e.symbol for e in image.entry_points] == [
        "affine__from_u8__to_f64",
        "affine__from_u8__to_f64__strided",
    ]
