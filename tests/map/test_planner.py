"""The call planner (csrc/planner.h), which both of g.map's paths ask, against NumPy itself:
its broadcasting, the layout it gives a ufunc's result, and the elements a walk of the packed
strides visits, on random shapes, strides, offsets and broadcasts.
"""

from __future__ import annotations

import itertools
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gompute as g
from gompute import _core

rng = np.random.default_rng(11)


def views(data, shape, label, dtype=np.float32):
    """A view of `shape` into a fresh, larger array: each dim sliced from a random start with a
    random step (negative too), then the dims permuted and put back by a transpose."""
    order = data.draw(st.permutations(range(len(shape))), label=f"{label} order")
    stored_shape = [shape[d] for d in order]
    steps = [data.draw(st.sampled_from([1, 2, 3, -1, -2]), label=f"{label} step {d}") for d in order]
    starts = [data.draw(st.integers(0, 2), label=f"{label} start {d}") for d in order]
    full = np.zeros([s + e * abs(k) + 1 for s, e, k in zip(starts, stored_shape, steps)], dtype)
    index = tuple(
        slice(s, s + e * k, k) if k > 0 else slice(s + e * -k, s if s else None, k)
        for s, e, k in zip(starts, stored_shape, steps)
    )
    stored = full[(*index, ...)]
    stored = stored[(*(slice(0, e) for e in stored_shape), ...)]
    assert stored.shape == tuple(stored_shape)
    return stored.transpose(tuple(int(i) for i in np.argsort(order)))


def broadcast_views(data, shape, count):
    """`count` views that broadcast to `shape`: some dims of each set to 1 (a real extent 1, or
    a stride-0 broadcast_to), some leading dims dropped."""
    out = []
    for i in range(count):
        dims = [1 if data.draw(st.booleans(), label=f"in{i} broadcast {d}") else e for d, e in enumerate(shape)]
        dims = dims[data.draw(st.integers(0, len(dims)), label=f"in{i} drop") :]
        view = views(data, dims, f"in{i}")
        if data.draw(st.booleans(), label=f"in{i} broadcast_to"):
            view = np.broadcast_to(view, shape[len(shape) - len(dims) :])
        out.append(view)
    return out


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=5)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(1, 3), max_size=4), min_size=1, max_size=4))
def test_broadcast_shape_is_numpys(shape_list):
    buffers = [g.asbuffer(np.zeros(s, np.float32)) for s in shape_list]
    try:
        want = np.broadcast_shapes(*map(tuple, shape_list))
    except ValueError:
        want = None
    assert _core.broadcast_shape(buffers) == want


def test_broadcast_shape_takes_more_dimensions_than_numpy_does():
    a = np.zeros((1,) * 40 + (3,), np.float32)
    b = np.zeros((2,) + (1,) * 40, np.float32)
    assert _core.broadcast_shape([g.asbuffer(a), g.asbuffer(b)]) == (2,) + (1,) * 39 + (3,)


@settings(max_examples=150, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=4), count=st.integers(1, 3), data=st.data())
def test_a_new_result_is_laid_out_as_numpy_lays_out_a_ufuncs(shape, count, data):
    inputs = broadcast_views(data, shape, count)
    shape = np.broadcast_shapes(*(a.shape for a in inputs))  # leading dims may all be dropped
    numpy_result = np.nditer(
        [*inputs, None],
        order="K",
        flags=["zerosize_ok"],
        op_flags=[["readonly"]] * count + [["writeonly", "allocate"]],
    ).operands[-1]
    order = _core.result_order([g.asbuffer(a) for a in inputs], len(shape))
    ours = np.empty(shape, np.float32) if order is None else np.empty([shape[d] for d in order], np.float32)
    if order is not None:
        ours = ours.transpose(tuple(int(i) for i in np.argsort(order)))
    if numpy_result.size:  # extent-1 dims' strides say nothing about a layout
        assert _layout(ours) == _layout(numpy_result)


def _layout(a: np.ndarray) -> tuple[int, ...]:
    return tuple(s // a.itemsize for s, e in zip(a.strides, a.shape) if e > 1)


@settings(max_examples=150, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=0, max_size=5), count=st.integers(1, 3), data=st.data())
def test_the_packed_strides_visit_every_element_once_as_numpy_pairs_them(shape, count, data):
    inputs = broadcast_views(data, shape, count)
    out = views(data, np.broadcast_shapes(*(a.shape for a in inputs)), "out")
    kind, blocks, packed = _core.plan_launch([g.asbuffer(a) for a in inputs], g.asbuffer(out), 128)
    n = out.size
    assert blocks == -(-n // 128)
    if kind != "strided":
        assert packed is None
        assert kind == "map" and out.flags.c_contiguous
        assert all(a.shape == out.shape and a.flags.c_contiguous for a in inputs)
        return
    walked = _walk(packed, count + 1)
    assert len(walked) == n
    assert sorted(walked) == sorted(_numpy_pairs(inputs, out))


def _walk(packed: bytes, arrays: int) -> list[tuple[int, ...]]:
    """The element offsets of every array at each step of a walk of the strides argument."""
    dims = _core.MAX_STRIDED_DIMS
    ndim, _pad, *rest = struct.unpack(f"<ii{dims * (1 + arrays)}q", packed)
    extents = rest[:dims]
    steps = [rest[dims * (1 + a) : dims * (2 + a)] for a in range(arrays)]
    assert all(e == 1 for e in extents[ndim:]) and all(s == 0 for row in steps for s in row[ndim:])
    return [
        tuple(sum(i * row[d] for d, i in enumerate(index)) for row in steps)
        for index in itertools.product(*(range(e) for e in extents[:ndim]))
    ]


def _numpy_pairs(inputs, out) -> list[tuple[int, ...]]:
    """For each element of the broadcast, its offset from element 0 in each array, in elements."""
    arrays = [np.broadcast_to(a, out.shape) for a in inputs] + [out]
    strides = [[s // a.itemsize for s in a.strides] for a in arrays]
    return [tuple(sum(i * s for i, s in zip(index, row)) for row in strides) for index in np.ndindex(*out.shape)]


def test_the_entry_points():
    x = rng.standard_normal(100).astype(np.float32)
    b = g.asbuffer(x)
    assert _core.plan_launch([b], b, 256)[0] == "inplace"
    assert _core.plan_launch([b], g.asbuffer(np.empty(100, np.float32)), 256)[0] == "map"
    assert _core.plan_launch([b], g.asbuffer(x.view(np.int32)), 256)[0] == "map"  # another type: not in place
    assert _core.plan_launch([b, b], b, 256)[0] == "map"
    assert _core.plan_launch([g.asbuffer(x[::2])], g.asbuffer(np.empty(50, np.float32)), 256)[0] == "strided"
    row = g.asbuffer(np.zeros((1, 10), np.float32))
    assert _core.plan_launch([row], g.asbuffer(np.empty((4, 10), np.float32)), 256)[0] == "strided"


def test_the_grid_stops_at_cudas_limit():
    huge = g.asbuffer(np.zeros(1, np.float32)).view(g.f32, (2**40,), (0,))
    out = g.asbuffer(np.zeros(1, np.float32)).view(g.f32, (2**40,), (0,))
    assert _core.plan_launch([huge], out, 1)[1] == 2**31 - 1


def test_more_dimensions_than_the_strided_entry_takes_are_named():
    a = np.zeros((2,) * 10, np.float32).T  # no two dims merge against a C-order output
    with pytest.raises(g.ArgumentError, match="need 10 dimensions even merged; kernels take at most 8"):
        _core.plan_launch([g.asbuffer(a)], g.asbuffer(np.empty((2,) * 10, np.float32)), 256)


@settings(max_examples=150, deadline=None)
@given(start=st.integers(0, 6), step=st.sampled_from([1, 2, 3, -1, -2]), data=st.data())
def test_overlap_is_a_superset_of_numpys_and_excludes_the_same_view(start, step, data):
    base = np.zeros(40, np.float32)
    out = base[4:24]
    size = len(out)
    stop = start + step * size
    a = base[start:stop:step] if step > 0 else base[start - step * size : start or None : step]
    a = a[:size]
    if len(a) != size:
        return
    found = _core.overlapping_inputs([g.asbuffer(a)], g.asbuffer(out))
    same = a.__array_interface__ == out.__array_interface__
    if same:
        assert found == []
    elif np.shares_memory(a, out):
        assert found == [0]
