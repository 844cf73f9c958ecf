"""The strided entry's fast paths through the public `g.map` API, checked against NumPy: runs
gathered or scattered with the constant strides that have loops of their own (-1, 2, 3, 4), the
general stride beside them, runs longer than one chunk, chunks mixing contiguous arrays (used in
place) with gathered ones, and an output that is exactly its input.
"""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g

pytest.importorskip("gompute._core", reason="strided launches go through the host runtime")


@g.map_kernel
def affine(x: g.f32) -> g.f32:
    return x * 2 + 1


@g.map_kernel
def affine_any(x):
    return x * 2 + 1


@g.map_kernel
def mix(a: g.f64, b: g.f64) -> g.f64:
    return a * 2 - b


def _f32(n, seed=0):
    return np.random.default_rng(seed).uniform(-10, 10, n).astype(np.float32)


STEPS = [-4, -3, -2, -1, 2, 3, 4, 5, 17]
# Lengths around the chunk (128 elements): one element, a partial chunk, exactly one, and several
# chunks with a remainder.
LENGTHS = [1, 7, 128, 1000]


# f16 too: halves are copied as 16-bit lanes (host_strided.h's gompute_lane), not as structs.
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("step", STEPS)
def test_gathered_runs(step, n, dtype):
    x = _f32(abs(step) * n + 3).astype(dtype)[::step][:n]
    assert x.shape == (n,)
    np.testing.assert_array_equal(g.map(affine_any)(x), x * 2 + 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("step", STEPS)
def test_scattered_runs(step, n, dtype):
    x = _f32(n).astype(dtype)
    base = np.zeros(abs(step) * n + 3, dtype)
    out = base[::step][:n]
    g.map(affine_any)(x, out=out)
    np.testing.assert_array_equal(out, x * 2 + 1)
    untouched = np.ones(base.shape, bool)
    untouched[::step][:n] = False
    assert (base[untouched] == 0).all()


@pytest.mark.parametrize("step", [-1, 2, 3, 7])
def test_contiguous_input_beside_a_gathered_one(step):
    a = np.random.default_rng(1).uniform(-5, 5, 1000)
    b = np.random.default_rng(2).uniform(-5, 5, 1000 * abs(step))[::step]
    np.testing.assert_array_equal(g.map(mix)(a, b), a * 2 - b)
    np.testing.assert_array_equal(g.map(mix)(b, a), b * 2 - a)


@pytest.mark.parametrize("step", [-1, 2, 3, -5])
def test_contiguous_output_from_a_gathered_input(step):
    x = _f32(1000 * abs(step))[::step]
    out = np.full(x.shape, np.nan, np.float32)
    g.map(affine)(x, out=out)
    np.testing.assert_array_equal(out, x * np.float32(2) + 1)


@pytest.mark.parametrize("step", [-1, 2, -3, 4])
def test_output_that_is_its_input(step):
    base = _f32(1000 * abs(step))
    x = base[::step]
    want = x * np.float32(2) + 1
    g.map(affine)(x, out=x)
    np.testing.assert_array_equal(x, want)


@pytest.mark.parametrize("shape", [(37, 23), (128, 128), (130, 257), (1, 300), (300, 1)])
def test_transposes(shape):
    x = _f32(shape[0] * shape[1]).reshape(shape).T
    out = np.full(x.shape, np.nan, np.float32)
    g.map(affine)(x, out=out)
    np.testing.assert_array_equal(out, x * np.float32(2) + 1)
    back = np.full(shape, np.nan, np.float32).T
    g.map(affine)(np.ascontiguousarray(x), out=back)
    np.testing.assert_array_equal(back, x * np.float32(2) + 1)


@g.map_kernel(block_size=32)
def affine_small_blocks(x: g.f32) -> g.f32:
    return x * 2 + 1


@g.map_kernel
def mix3(a: g.f32, b: g.f32, c: g.f32) -> g.f32:
    return a * 2 - b + c * 3


# The 2-D tile path (host_strided.h): below 16 MB, tiles of 16 rows by 256 columns (1024 of 1-byte
# elements, 512 of 2-byte ones), the columns of 1- and 2-byte elements in 16 x 16 register
# transposes, of 4-byte ones in 8 x 8, of 8-byte ones in 4 x 4,
# rows and columns past the last whole block element by element; shapes that are not multiples of
# either, a single tile, one row or column of tiles, a last tile of fewer rows than a block or not
# a multiple of one, and block ranges (32 or 256 elements, times the pool's grain) that start and
# end mid-row, their first and last rows clipped.
TILE_SHAPES = [
    (2, 2), (3, 1000), (1000, 3), (17, 129), (8, 256), (16, 256), (15, 264), (64, 64), (65, 136), (33, 300),
    (9, 513), (257, 131), (1, 500), (500, 1), (133, 70), (262, 40), (517, 20), (1030, 9), (17, 1030),
    (33, 2100),
]  # fmt: skip


@g.map_kernel(block_size=32)
def affine_any_small_blocks(x):
    return x * 2 + 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.uint8])
@pytest.mark.parametrize("kernel", [affine_any, affine_any_small_blocks])
@pytest.mark.parametrize("shape", TILE_SHAPES)
def test_tiled_transpose_writes_only_its_view(kernel, shape, dtype):
    rows, cols = shape
    values = _f32(rows * cols, seed=3) * (5 if np.dtype(dtype).kind in "iu" else 1)  # within int8
    x = (np.abs(values) if np.dtype(dtype).kind == "u" else values).astype(dtype).reshape(cols, rows).T
    assert x.shape == shape
    fill = np.iinfo(dtype).max if np.dtype(dtype).kind in "iu" else np.nan
    base = np.full((rows + 2, cols + 5), fill, dtype)
    out = base[1 : rows + 1, 2 : cols + 2]
    g.map(kernel)(x, out=out)
    np.testing.assert_array_equal(out, x * 2 + 1)
    untouched = np.ones(base.shape, bool)
    untouched[1 : rows + 1, 2 : cols + 2] = False
    np.testing.assert_array_equal(base[untouched], fill)


@pytest.mark.parametrize("shape", [(37, 23), (129, 300), (300, 129), (40, 1)])
def test_tiled_transpose_beside_other_inputs(shape):
    rows, cols = shape
    t = _f32(rows * cols, seed=4).reshape(cols, rows).T
    c = _f32(rows * cols, seed=5).reshape(shape)
    s = _f32(rows * cols * 2, seed=6).reshape(rows, cols * 2)[:, ::2]
    row = _f32(cols, seed=7)
    col = _f32(rows, seed=8)[:, None]
    for a, b, z in [(t, c, s), (c, t, row), (s, row, t), (t, t, col)]:
        np.testing.assert_array_equal(g.map(mix3)(a, b, z), a * np.float32(2) - b + z * np.float32(3))


@pytest.mark.parametrize("shape", [(3000, 7), (7, 3000), (1100, 1100)])
def test_tiled_transpose_over_many_block_ranges(shape):
    x = _f32(shape[0] * shape[1], seed=9).reshape(shape[::-1]).T
    for kernel in (affine, affine_small_blocks):
        np.testing.assert_array_equal(g.map(kernel)(x), x * np.float32(2) + 1)


def test_tiled_transpose_of_a_view():
    base = _f32(300 * 400, seed=10).reshape(300, 400)
    x = base[5:250:1, 3:390].T
    out = np.empty(x.shape, np.float32)
    g.map(affine)(x, out=out)
    np.testing.assert_array_equal(out, x * np.float32(2) + 1)
    y = base[::-1, ::2].T  # outer stride -1: not the tile path, still right
    np.testing.assert_array_equal(g.map(affine)(y), y * np.float32(2) + 1)


@g.map_kernel
def double(x):
    return x + x


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.float64, np.float16, np.int16, np.int8])
@pytest.mark.parametrize("shape", [(64, 64), (130, 200), (200, 71)])
def test_tiled_transpose_of_every_element_size(dtype, shape):
    x = (np.arange(shape[0] * shape[1]) % 101 - 50).astype(dtype).reshape(shape[::-1]).T
    np.testing.assert_array_equal(g.map(double)(x), x + x)


@pytest.mark.parametrize("shape", [(130, 300), (257, 70), (40, 1100)])
def test_tiled_transposes_of_two_element_sizes(shape):
    """An i16 transpose beside an f32 one or an f64 input strided along its rows: the tile as high
    as the widest type's run, each input's buffer its own size."""
    rows, cols = shape
    a = (np.arange(rows * cols) % 101 - 50).astype(np.int16).reshape(cols, rows).T
    b = np.random.default_rng(11).random((cols, rows)).astype(np.float32).T
    c = np.random.default_rng(12).random((rows, 2 * cols))[:, ::2]
    np.testing.assert_array_equal(g.map(mix)(a, b), a * 2.0 - b)
    np.testing.assert_array_equal(g.map(mix)(a, c), a * 2.0 - c)
    np.testing.assert_array_equal(g.map(mix)(c, b), c * 2.0 - b)


# From 16 MB on, tiles of 256 KB of the widest input: 128 rows of f64, 256 of f32, f16 and i8 (in
# rows of 256, 256, 512 and 1024 columns), with a last tile (and the pool's block ranges) of other
# heights.
LARGE_TILES = [
    (np.float64, (1501, 1400)),
    (np.float32, (2100, 2000)),
    (np.float16, (2900, 2900)),
    (np.int8, (4100, 4100)),
]


@pytest.mark.parametrize(("dtype", "shape"), LARGE_TILES, ids=[f"{np.dtype(d)}-{s}" for d, s in LARGE_TILES])
def test_tiled_transpose_in_tall_tiles(dtype, shape):
    rows, cols = shape
    x = (np.arange(rows * cols) % 101 - 50).astype(dtype).reshape(cols, rows).T
    assert x.nbytes >= 16 << 20
    np.testing.assert_array_equal(g.map(double)(x), x + x)


def test_tall_tiles_of_two_element_sizes():
    """The height set by the widest input (f64: 128 rows) for an i16 transpose beside it."""
    rows, cols = 1500, 1400  # 16.8 MB of f64
    a = (np.arange(rows * cols) % 101 - 50).astype(np.int16).reshape(cols, rows).T
    c = np.random.default_rng(13).random((rows, 2 * cols))[:, ::2]
    b = np.random.default_rng(14).random((cols, rows)).T
    np.testing.assert_array_equal(g.map(mix)(a, c), a * 2.0 - c)
    np.testing.assert_array_equal(g.map(mix)(b, a), b * 2.0 - a)


# Far layouts stream their output rows (64-byte streaming stores where the CPU has AVX-512, the
# bytes before a row's first line boundary and after its last one copied as they are) and
# prefetch the next tile, along the rows or at the next rows' start (narrow tiles do neither):
# rows at every alignment, a view with untouched memory on each side, block ranges that start and
# end mid-row, outputs of 1 to 8 bytes, and an output that is one of the (untransposed) inputs.
STREAMED = [
    (np.float32, (2049, 2051)),
    (np.float64, (1031, 2077)),
    (np.int8, (4099, 4111)),
    (np.float32, (262_147, 20)),  # tiles of 80 bytes: prefetched, not streamed
    (np.float32, (1_400_003, 3)),  # of 12 bytes: neither
]


@pytest.mark.parametrize("kernel", [affine_any, affine_any_small_blocks])
@pytest.mark.parametrize(("dtype", "shape"), STREAMED)
def test_streamed_transpose_writes_only_its_view(kernel, dtype, shape):
    rows, cols = shape
    x = (np.arange(rows * cols) % 101 - 50).astype(dtype).reshape(cols, rows).T
    assert x.nbytes >= 16 << 20
    fill = np.iinfo(dtype).max if np.dtype(dtype).kind == "i" else np.nan
    base = np.full((rows + 2, cols + 5), fill, dtype)
    out = base[1 : rows + 1, 3 : cols + 3]
    g.map(kernel)(x, out=out)
    np.testing.assert_array_equal(out, x * 2 + 1)
    untouched = np.ones(base.shape, bool)
    untouched[1 : rows + 1, 3 : cols + 3] = False
    np.testing.assert_array_equal(base[untouched], fill)


def test_streamed_transpose_into_one_of_its_inputs():
    rows, cols = 2003, 2101  # 16.8 MB of f32
    t = _f32(rows * cols, seed=15).reshape(cols, rows).T
    c = _f32(rows * cols, seed=16).reshape(rows, cols)
    want = t * np.float32(2) - c + c * np.float32(3)
    g.map(mix3)(t, c, c, out=c)
    np.testing.assert_array_equal(c, want)


def test_streamed_transpose_of_halves_to_floats():
    """An f16 transpose (512-row tiles) written as f32 rows."""
    rows, cols = 2901, 2903

    @g.map_kernel
    def widen(x: g.f16) -> g.f32:
        return g.f32(x) * 2 + 1

    x = _f32(rows * cols, seed=17).astype(np.float16).reshape(cols, rows).T
    np.testing.assert_array_equal(g.map(widen)(x), x.astype(np.float32) * 2 + 1)


def _scaled_by(params_name: str):
    """A kernel whose params struct is named `params_name` (the C++ struct takes the class's name)."""
    Scale = type(params_name, (g.Params,), {"__annotations__": {"s": g.f32}})

    def scaled(x: g.f32, p: Scale) -> g.f32:
        return x * p.s

    scaled.__annotations__["p"] = Scale  # the factory's own class: not in the module's namespace
    return g.map_kernel(scaled)


# Names the generated entries use for their own locals and template parameters.
GENERATED_NAMES = ["SO", "S0", "d", "far", "next", "stream", "streamed", "n0", "t0", "tiles"]


@pytest.mark.parametrize("name", GENERATED_NAMES)
def test_a_params_class_may_share_a_name_with_the_generated_code(name):
    x = _f32(2100 * 2100, seed=18).reshape(2100, 2100)
    k = g.map(_scaled_by(name))
    for view in (x, x.T):  # contiguous, and a far transpose
        np.testing.assert_array_equal(k(view, s=2.0), view * np.float32(2))
