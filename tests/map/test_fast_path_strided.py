"""Strided and broadcast calls on the C++ fast path: after one call of a layout's dtypes, every
later call is launched from C++ (the general path is never reached) and gives NumPy's result.

The fast path builds the strided entry's `strides` argument itself; these tests hold it to the
general path's `_collapsed` on every kind of layout: transposes, slices, negative strides,
broadcast rows and columns, extent-1 and zero-size dimensions, several inputs at once, and
outputs that are views themselves.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gompute as g

from .calls import counting
from .kernels import axpy, scale_relu

rng = np.random.default_rng(5)


def relu2(x):
    return np.maximum(x * np.float32(2), 0).astype(np.float32)


base = rng.standard_normal((24, 30)).astype(np.float32)
VIEWS = {
    "transpose": base.T,
    "every other row": base[::2],
    "every third column": base[:, ::3],
    "reversed rows": base[::-1],
    "reversed both": base[::-1, ::-1],
    "offset block": base[3:17, 5:26],
    "column": base[:, 7],
    "3-D transpose": base.reshape(4, 6, 30).transpose(2, 0, 1),
    "extent-1 dims": base[:, None, ::2][:, :, None],
    "zero rows": base[:0],
    "broadcast row": np.broadcast_to(base[0], (5, 30)),
}


@pytest.mark.parametrize("name", VIEWS)
def test_views_launch_from_the_fast_path(name):
    view = VIEWS[name]
    k, calls = counting(scale_relu)
    np.testing.assert_array_equal(k(view, scale=2), relu2(view))  # teaches the fast path
    out = np.empty(view.shape, np.float32)
    for _ in range(2):
        out[...] = -1
        assert k(view, out=out, scale=2) is out
        np.testing.assert_array_equal(out, relu2(view))
    # Only the first call took the general path (a zero-size one launches nothing to learn from).
    assert len(calls) == (3 if view.size == 0 else 1)


def test_outputs_that_are_views():
    k, calls = counting(scale_relu)
    x = rng.standard_normal((10, 12)).astype(np.float32)
    for _ in range(3):
        big = np.zeros((12, 20), np.float32)
        k(x, out=big[:, ::2].T, scale=2)  # a transposed, strided output
        np.testing.assert_array_equal(big[:, ::2].T, relu2(x))
        assert not big[:, 1::2].any()  # nothing written between its elements
    assert len(calls) == 1


@pytest.mark.parametrize("name", VIEWS)
def test_new_results_are_laid_out_as_numpy_lays_out_a_ufuncs(name):
    """A transpose in, a transpose out (NumPy's order="K"); a result made in C order before
    (which the fast path remembers how to make) changes nothing."""
    view = VIEWS[name]
    k, calls = counting(scale_relu)
    k(np.ascontiguousarray(view), scale=2)
    for _ in range(2):
        y = k(view, scale=2)
        np.testing.assert_array_equal(y, relu2(view))
        assert y.strides == np.multiply(view, 2).strides


def test_a_permuted_output_is_walked_in_its_own_memory_order():
    """x.T into y.T is one contiguous run, not a transpose: every element right, nothing
    written outside the view, from the fast path after the first call."""
    k, calls = counting(axpy)
    x, y = (rng.standard_normal((6, 40, 50)) for _ in range(2))
    base = np.full((6, 40, 51), np.nan)
    out = base[:, :, :50].transpose(2, 0, 1)
    a = np.float64(2)
    for _ in range(3):
        k(np.broadcast_to(a, out.shape), x.transpose(2, 0, 1), y.transpose(2, 0, 1), out=out)
        np.testing.assert_array_equal(out, (a * x + y).transpose(2, 0, 1))
        assert np.isnan(base[:, :, 50]).all()
    assert len(calls) == 1


def test_torch_results_follow_the_inputs_layout_too():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    k, calls = counting(scale_relu)
    t = torch.from_numpy(base.reshape(4, 6, 30).copy()).permute(2, 0, 1)
    for _ in range(2):
        y = k(t, scale=2)
        assert isinstance(y, torch.Tensor) and y.stride() == torch.mul(t, 2).stride()
        np.testing.assert_array_equal(y.numpy(), relu2(t.numpy()))


def test_in_place_on_a_strided_view():
    k, calls = counting(scale_relu)
    for _ in range(3):
        x = rng.standard_normal(40).astype(np.float32)
        want = x.copy()
        want[::3] = relu2(x[::3])
        v = x[::3]
        assert k(v, out=v, scale=2) is v
        np.testing.assert_array_equal(x, want)
    assert len(calls) == 1


def test_broadcasting_several_inputs():
    k, calls = counting(axpy)
    a = rng.standard_normal((6, 1, 5))
    x = rng.standard_normal((4, 1))
    y = rng.standard_normal(5)[::-1]
    for _ in range(3):
        got = k(a, x, y)
        assert got.shape == (6, 4, 5)
        np.testing.assert_array_equal(got, a * x + y)
    out = np.empty((6, 4, 5))
    for _ in range(2):
        k(a, x, y, out=out)
        np.testing.assert_array_equal(out, a * x + y)
    assert len(calls) == 1  # the first call; out= is the same strided signature


def test_what_the_fast_path_leaves_to_the_general_one_still_raises():
    k, calls = counting(scale_relu)
    x = rng.standard_normal((8, 8)).astype(np.float32)
    k(x.T, scale=1)
    k(x.T, out=np.empty((8, 8), np.float32), scale=1)
    with pytest.raises(g.ArgumentError, match="broadcast"):
        k(x, out=np.empty((8, 9), np.float32), scale=1)
    with pytest.raises(g.ArgumentError, match="shares memory with input"):
        k(x.T, out=x, scale=1)  # the output is the input read another way
    nine = np.ones((3,) * 9, np.float32)[(slice(None, None, 2),) * 9]  # nine dimensions that do not merge
    with pytest.raises(g.ArgumentError, match="dimensions"):
        k(nine, scale=1)
    packed = np.zeros(6, dtype=[("a", np.float32), ("b", np.uint8)])["a"]  # strides of 5 bytes
    with pytest.raises(g.ArgumentError, match="whole"):
        k(packed, scale=1)
    assert len(calls) == 5  # all but the second call, which the first taught


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(0, 5), min_size=1, max_size=4),
    data=st.data(),
)
def test_any_view_matches_numpy(shape, data):
    """A random view of a random array, its dims sliced with random steps (negative too) and
    permuted, against NumPy, on the fast path's second call."""
    full = rng.standard_normal([e * 2 + 1 for e in shape]).astype(np.float32)
    slices = tuple(
        slice(None, None, data.draw(st.sampled_from([1, 2, -1, -2]), label=f"step {d}")) for d in range(len(shape))
    )
    view = full[slices]
    view = view.transpose(data.draw(st.permutations(range(view.ndim)), label="order"))
    k, calls = counting(scale_relu)
    k(view, out=np.empty(view.shape, np.float32), scale=2)
    out = np.full(view.shape, np.nan, np.float32)
    k(view, out=out, scale=2)
    np.testing.assert_array_equal(out, relu2(view))
    assert len(calls) == (1 if view.size else 2)
    made = k(view, scale=2)
    np.testing.assert_array_equal(made, relu2(view))
    if view.size:  # laid out as NumPy lays out a ufunc's result (extent-1 dims' strides say nothing)
        assert _layout_of(made) == _layout_of(np.multiply(view, 2))


def _layout_of(a: np.ndarray) -> tuple[int, ...]:
    return tuple(s for s, e in zip(a.strides, a.shape) if e > 1)


def _random_view(data, shape, label):
    """A view with extents `shape` of a fresh array: each dim sliced by a random step (negative
    too) out of a larger one, or else a C-order copy of a random permutation of the dims put
    back by a transpose; either way strides that are anything but C order."""
    if data.draw(st.booleans(), label=f"{label} permuted"):
        order = data.draw(st.permutations(range(len(shape))), label=f"{label} order")
        stored = np.asarray(rng.standard_normal([shape[d] for d in order]))
        return stored.transpose(tuple(int(i) for i in np.argsort(order)))
    steps = [data.draw(st.sampled_from([1, 2, -1, -3]), label=f"{label} step {d}") for d in range(len(shape))]
    full = np.asarray(rng.standard_normal([e * abs(s) + 1 for e, s in zip(shape, steps)]))
    view = full[(*(slice(None, None, s) for s in steps), ...)]  # `...`: a 0-d view stays an array
    return view[(*(slice(0, e) for e in shape), ...)]


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=1, max_size=4),
    data=st.data(),
)
def test_any_broadcast_of_views_matches_numpy(shape, data):
    """Three inputs, each a random view of `shape` with some dims set to 1 and some leading
    dims dropped, broadcast together into a random view as the output, on the fast path's
    second call."""
    views = []
    for name in "axy":
        dims = [1 if data.draw(st.booleans(), label=f"{name} broadcast {d}") else e for d, e in enumerate(shape)]
        dims = dims[data.draw(st.integers(0, len(dims)), label=f"{name} drop") :]
        views.append(_random_view(data, dims, name))
    out = _random_view(data, np.broadcast_shapes(*(v.shape for v in views)), "out")
    k, calls = counting(axpy)
    want = views[0] * views[1] + views[2]
    k(*views, out=out)
    out[...] = np.nan
    k(*views, out=out)
    np.testing.assert_array_equal(out, want)
    assert len(calls) == (1 if out.size else 2)  # a zero-size call launches nothing to learn from
    made = k(*views)
    np.testing.assert_array_equal(made, want)
    if made.size:  # laid out as NumPy lays out a ufunc's result, weighing all three inputs
        assert _layout_of(made) == _layout_of(_numpy_result(*views))


def _numpy_result(*arrays) -> np.ndarray:
    """The array NumPy makes for a ufunc's result over `arrays`: its iterator's, in order 'K'."""
    ops = [["readonly"]] * len(arrays) + [["writeonly", "allocate"]]
    return np.nditer([*arrays, None], order="K", flags=["zerosize_ok"], op_flags=ops).operands[-1]


def test_a_new_result_is_laid_out_by_every_input():
    a = rng.standard_normal((40, 30))
    t = rng.standard_normal((30, 40)).T
    col = rng.standard_normal((40, 1))
    k, calls = counting(axpy)
    for _ in range(2):  # a C-order input outvotes a transposed one: C order, on the fast path
        made = k(a, t, t)
        assert made.flags.c_contiguous
        np.testing.assert_array_equal(made, a * t + t)
    assert len(calls) == 1
    for _ in range(2):  # a broadcast column says nothing of the rows: laid out like the transposes
        made = k(col, t, t)
        assert made.flags.f_contiguous and not made.flags.c_contiguous
        np.testing.assert_array_equal(made, col * t + t)
    assert len(calls) == 3  # an order other than C's is the general path's to make
