"""The reduction planner (csrc/planner.h's plan_reduce): its plans, and g.reduce held to NumPy on
random layouts, axes, broadcast inputs and output layouts."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gompute as g
from gompute import _core
from gompute.interop import asbuffer

from . import kernels as K

RULES = dict(
    gpu=False,
    block=256,
    row_chunk=4096,
    column_rows=128,
    column_width=4096,
    block_elements=1 << 16,
    finish_partials=1 << 14,
    gpu_items=8,
    gpu_partials=1 << 12,
    gpu_max_blocks=1 << 20,
    gpu_thread_rows=16,
    gpu_group_rows=256,
    gpu_group=32,
    gpu_pack=1,
)


def _plan(x, axes, keepdims=False, out=None, inputs=(), **rules):
    """The plan of reducing x (and `inputs` broadcast with it) over `axes`."""
    arrays = [x, *inputs]
    full = np.broadcast_shapes(*(a.shape for a in arrays))
    kept = [n for d, n in enumerate(full) if d not in axes]
    shape = [1 if d in axes else n for d, n in enumerate(full)] if keepdims else kept
    out = np.empty(shape, np.float32) if out is None else out
    return _core.plan_reduce(
        [asbuffer(a) for a in arrays], asbuffer(out), list(axes), keepdims, _core.ReduceRules(**{**RULES, **rules})
    )


def _layout(layout: bytes, arrays: int) -> dict:
    """gompute_reduce_layout<arrays> read back."""
    v = np.frombuffer(layout, np.int64)
    tables = v[18 : 18 + 2 * 8 * arrays].reshape(2, arrays, 8)
    return dict(
        kept_ndim=v[0],
        red_ndim=v[1],
        kept_shape=v[2:10],
        red_shape=v[10:18],
        kept=tables[0],
        red=tables[1],
        work=v[18 + 16 * arrays :],
    )


def test_rows_run_along_a_contiguous_reduced_dimension():
    kind, first, finish, partials, layout = _plan(np.zeros((6, 1000), np.float32), [1])
    lay = _layout(layout, 2)
    assert kind == "rows" and first == 1
    assert (partials, finish) == (0, 0), "an item a result: the first launch stores the results"
    assert (lay["kept_ndim"], lay["red_ndim"]) == (1, 1)
    assert lay["kept_shape"][0] == 6 and lay["red_shape"][0] == 1000
    assert list(lay["kept"][:, 0]) == [1000, 1] and list(lay["red"][:, 0]) == [1, 0]
    assert list(lay["work"][:2]) == [6, 1000]


def test_results_of_several_items_go_through_partials_and_the_finish():
    kind, first, finish, partials, layout = _plan(np.zeros((6, 10_000), np.float32), [1])
    chunks = _layout(layout, 2)["work"][3]
    assert kind == "rows" and chunks == 3 and first == 18 and partials == 18 and finish == 1
    kind, first, finish, partials, layout = _plan(np.zeros((1000, 600), np.float32), [0])
    chunks = _layout(layout, 2)["work"][3]
    assert kind == "columns" and chunks == 8 and partials == 4800 and finish == 1


def test_columns_run_across_results_contiguous_in_the_input():
    kind, *_, layout = _plan(np.zeros((1000, 6), np.float32), [0])
    lay = _layout(layout, 2)
    assert kind == "columns" and lay["kept"][0, 0] == 1 and lay["red"][0, 0] == 6


def test_extent_one_dimensions_drop_and_neighbours_merge():
    x = np.zeros((4, 1, 5, 3, 7), np.float32)
    kind, *_, layout = _plan(x, [2, 3, 4])
    lay = _layout(layout, 2)
    assert kind == "rows" and (lay["kept_ndim"], lay["red_ndim"]) == (1, 1) and lay["red_shape"][0] == 105


def test_reduced_dimensions_go_in_the_inputs_memory_order():
    x = np.zeros((5, 7, 9), np.float32).transpose(2, 0, 1)[:, ::2]  # shape (9, 3, 7), strides not C order
    *_, layout = _plan(x, [0, 1, 2])
    lay = _layout(layout, 2)
    strides = list(lay["red"][0, : lay["red_ndim"]])
    assert strides == sorted(strides, key=abs, reverse=True)


def test_nothing_to_reduce_is_one_step_in_place():
    kind, first, finish, partials, layout = _plan(np.zeros((3, 4), np.float32), [])
    lay = _layout(layout, 2)
    assert (partials, finish) == (0, 0) and lay["red_ndim"] == 1 and lay["red_shape"][0] == 1


def test_an_empty_reduction_has_no_first_launch():
    kind, first, finish, partials, _ = _plan(np.zeros((3, 0), np.float32), [1])
    assert (first, partials) == (0, 0) and finish == 1


def test_gpu_rows_use_blocks_of_threads():
    kind, first, finish, partials, layout = _plan(np.zeros((2, 1 << 20), np.float32), [1], gpu=True)
    work = _layout(layout, 2)["work"]
    assert kind == "rows" and first == partials == 2 * work[3] and work[3] == (1 << 20) // (256 * 8)


def test_gpu_short_rows_take_a_thread_or_a_group_each():
    """Rows of up to gpu_thread_rows elements a thread, of up to gpu_group_rows a group of gpu_group
    threads, longer ones a block (per_block results a block of 256 threads)."""
    for width, blocks, per_block in [(16, 4, 256), (17, 125, 8), (256, 125, 8), (257, 1000, 1)]:
        kind, first, finish, partials, layout = _plan(np.zeros((1000, width), np.float32), [1], gpu=True)
        _, _, chunk, chunks, _, got, _ = _layout(layout, 2)["work"]
        assert kind == "rows" and (first, finish, partials) == (blocks, 0, 0), width
        assert (chunk, chunks, got) == (width, 1, per_block), width


def test_gpu_rows_contiguous_in_every_input_read_packs():
    """On a GPU whose unit has packs (gpu_pack > 1), rows longer than a group's, with one reduced
    dimension of stride 1 in every input (after merging), take `packed` where every item starts at
    the same element of a pack in every input; the rest take `rows`."""
    packs = dict(gpu=True, gpu_pack=4)
    x = np.zeros((64, 1001), np.float32)  # rows a pack and 1 apart: each row's head differs
    for a, axes in ((x, [1]), (x[:, 1:], [1]), (x[::-3, 5:], [1]), (x[:63].reshape(9, 7, 1001), [1, 2])):
        assert _plan(a, axes, **packs)[0] == "packed_rows", (a.shape, a.strides, axes)
    assert _plan(x, [1], gpu=True)[0] == "rows"  # no packs
    assert _plan(x, [1], gpu=False, gpu_pack=4)[0] == "rows"  # the host's rows read vectors already
    assert _plan(x[:, ::2], [1], **packs)[0] == "rows"  # strided
    assert _plan(x[:, ::-1], [1], **packs)[0] == "rows"
    assert _plan(x[:, :256], [1], **packs)[0] == "rows"  # short rows: a group of threads each
    assert _plan(x[:, :257], [1], **packs)[0] == "packed_rows"
    assert _plan(x, [0], **packs)[0] == "columns"
    assert _plan(x[:, :999].reshape(64, 27, 37), [0, 2], **packs)[0] == "rows"  # two reduced dimensions
    odd = np.frombuffer(bytearray(4 * 1001 + 1), np.float32, 1001, offset=1)  # elements not 4-byte aligned
    assert _plan(odd, [0], **packs)[0] == "rows"
    y = np.zeros(1001, np.float32)
    assert _plan(x[0, 1:], [0], inputs=[y[1:]], **packs)[0] == "packed_rows"
    assert _plan(x[0, 1:], [0], inputs=[y[:-1]], **packs)[0] == "rows"  # first elements in different places
    assert _plan(x, [1], inputs=[y], **packs)[0] == "rows"  # x's rows move 1 past a pack, y's stays put
    assert _plan(x[:, :1000], [1], inputs=[y[:1000]], **packs)[0] == "rows"
    assert _plan(np.zeros((64, 1000), np.float32), [1], inputs=[y[:1000]], **packs)[0] == "packed_rows"


def test_gpu_columns_on_pack_boundaries_read_packs():
    """On a GPU whose unit has packs, columns take `packed_columns` where every input's first
    element and every stride but the innermost kept one are whole packs; a tile is then `block`
    packs of results (V times the columns entry's), and a narrow one reads as many more rows a step."""
    packs = dict(gpu=True, gpu_pack=4)
    x = np.zeros((1000, 1024), np.float32)
    kind, first, finish, partials, layout = _plan(x, [0], **packs)
    _, _, chunk, chunks, width, _, _ = _layout(layout, 2)["work"]
    assert kind == "packed_columns" and width == 1024 and first == chunks  # one tile
    assert _plan(x[:, :1001], [0], **packs)[0] == "packed_columns"  # the last pack partly past the tile
    assert _plan(x[:, 4:], [0], **packs)[0] == "packed_columns"
    assert _plan(x.reshape(10, 100, 1024), [1], **packs)[0] == "packed_columns"  # kept strides of whole packs
    assert _plan(x[::-1], [0], **packs)[0] == "packed_columns"
    y = np.zeros((20_000, 12), np.float32)  # 3 threads across (packs) take 85 rows a step, 12 (columns) 21
    runs = [_layout(_plan(y, [0], **rules)[4], 2)["work"][3] for rules in (packs, dict(gpu=True))]
    assert runs == [2, 8]  # runs of 128 x 85 rows, of 128 x 21
    assert _plan(x, [0], gpu=True)[0] == "columns"  # no packs
    assert _plan(x, [0], gpu=False, gpu_pack=4)[0] == "columns"
    assert _plan(x[:, 1:], [0], **packs)[0] == "columns"  # first element 1 past a pack
    assert _plan(x[:, :1022].reshape(1000, 2, 511), [0, 1], **packs)[0] == "columns"  # rows 511 apart
    assert _plan(np.zeros((1000, 1021), np.float32), [0], **packs)[0] == "columns"  # rows 1021 apart
    assert _plan(x.reshape(10, 100, 1024)[:, :, :], [0, 1], **packs)[0] == "packed_columns"  # merged to one


def test_gpu_finish_takes_a_block_a_result_where_few_have_many_partials():
    *_, layout = _plan(np.zeros(1 << 24, np.float32), [0], gpu=True)  # 4096 partials, one result
    assert _layout(layout, 2)["work"][3:].tolist() == [4096, 1, 1, 1]  # chunks, width, per_block, finish
    *_, layout = _plan(np.zeros((300, 1 << 20), np.float32), [1], gpu=True)  # 13 partials each
    assert _layout(layout, 2)["work"][6] == 256


def test_gpu_columns_make_about_gpu_partials_items():
    """(1e6, 1000) over axis 0: 4 tiles of 256 results, 1024 runs of 977 rows each (not 7813 of 128),
    so the finish combines 1024 partials a result."""
    x = np.broadcast_to(np.zeros(1000, np.float32), (1_000_000, 1000))
    kind, first, finish, partials, layout = _plan(x, [0], gpu=True)
    _, _, chunk, chunks, width, _, _ = _layout(layout, 2)["work"]
    assert kind == "columns" and (first, partials, chunk, chunks, width) == (4096, 1_024_000, 977, 1024, 256)
    kind, first, *_ = _plan(np.zeros((10_000, 1000), np.float32), [0], gpu=True)
    assert kind == "columns" and first == 4 * 79  # few rows: runs of 128 rows, as before


def test_too_many_dimensions_are_refused():
    x = np.zeros((3,) * 9, np.float32)[(slice(None, None, 2),) * 9]  # nine dimensions no neighbour merges with
    with pytest.raises(g.ArgumentError, match="0 kept and 9 reduced dimensions even merged"):
        _plan(x, list(range(9)))
    with pytest.raises(g.ArgumentError, match="0 kept and 9 reduced dimensions even merged"):
        g.reduce(K.total)(x)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_any_layout_inputs_and_output_match_numpy(data):
    """Random shapes and views (sliced, reversed, transposed, broadcast), a second input broadcast
    against the first, any axes, keepdims, a new result or a transposed out=."""
    ndim = data.draw(st.integers(1, 4))
    shape = data.draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim))
    shape[data.draw(st.integers(0, ndim - 1))] = data.draw(st.sampled_from([1, 40, 700]))
    base = np.arange(math.prod(s * 2 for s in shape), dtype=np.float32).reshape([s * 2 for s in shape]) % 7
    x = base[tuple(slice(None, None, data.draw(st.sampled_from([1, 2, -1]))) for _ in shape)]
    x = np.transpose(x[tuple(slice(0, s) for s in shape)], data.draw(st.permutations(range(ndim))))
    if data.draw(st.booleans()):
        x = np.broadcast_to(x, (3, *x.shape))
    inner = x.shape[data.draw(st.integers(0, x.ndim)) :]
    y = (np.arange(math.prod(inner), dtype=np.float32) % 5).reshape(inner)
    axes = data.draw(st.lists(st.integers(-x.ndim, x.ndim - 1), unique_by=lambda a: a % x.ndim, max_size=x.ndim))
    axis = None if data.draw(st.booleans()) else tuple(axes)
    keepdims = data.draw(st.booleans())
    want = np.sum(x.astype(np.float64) * y, axis=axis, keepdims=keepdims).astype(np.float32)
    if data.draw(st.booleans()) and want.ndim:
        out = np.empty(want.shape[::-1], np.float32).T
        assert g.reduce(K.dot)(x, y, axis=axis, keepdims=keepdims, out=out) is out
        got = out
    else:
        got = g.reduce(K.dot)(x, y, axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(got, want, rtol=1e-6)
