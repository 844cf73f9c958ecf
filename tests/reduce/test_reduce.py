"""g.reduce against NumPy: every combine, axis form, keepdims, dtypes, empty, strided,
transposed and broadcast inputs, out=, on NumPy arrays, torch CPU tensors and Buffers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gompute as g

from . import kernels as K
from .threads import outputs_by_thread_count

RNG = np.random.default_rng(7)
AXES = [None, 0, 1, 2, -1, -3, (0, 2), (2, 0), (), (0, 1, 2), (-1, 1)]


def _data(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return RNG.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(max(info.min, -100), min(info.max, 100), shape, dtype=dtype, endpoint=True)
    return (RNG.standard_normal(shape)).astype(dtype)


def _close(got, want, dtype=None):
    got = np.asarray(got)
    assert got.shape == np.shape(want)
    if dtype is not None:
        assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    if got.dtype.kind == "f":
        tol = 1e-2 if got.dtype.itemsize == 2 else 1e-5 if got.dtype.itemsize == 4 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_of_squares_every_axis_form(axis, keepdims):
    x = _data((5, 6, 7), np.float32)
    _close(g.reduce(K.sumsq)(x, axis=axis, keepdims=keepdims), np.sum(x * x, axis=axis, keepdims=keepdims))


def test_full_reduction_is_a_0d_array_of_numpy():
    x = _data((10,), np.float32)
    got = g.reduce(K.sumsq)(x)
    assert isinstance(got, np.ndarray) and got.shape == () and got.dtype == np.float32


@pytest.mark.parametrize(
    ("kernel", "reference", "dtypes"),
    [
        (K.total, np.sum, ["bool", "i1", "u2", "i4", "u8", "f2", "f4", "f8"]),
        (K.product, np.prod, ["u1", "i8", "f4"]),
        (K.largest, np.max, ["bool", "i1", "u8", "f2", "f8"]),
        (K.smallest, np.min, ["i2", "f4"]),
        (K.all_bits, np.bitwise_and.reduce, ["bool", "u1", "i4"]),  # identity -1: all ones, True
        (K.any_bits, np.bitwise_or.reduce, ["bool", "i8"]),
        (K.parity, np.bitwise_xor.reduce, ["bool", "u4", "i2"]),
    ],
)
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
def test_every_combine_and_dtype_follows_numpy(kernel, reference, dtypes, axis):
    for dtype in dtypes:
        x = _data((4, 9, 3), dtype)
        if kernel is K.product and np.dtype(dtype).kind == "f":
            x = (1 + x / 50).astype(dtype)
        want = reference(x, axis=axis)
        _close(g.reduce(kernel)(x, axis=axis), want, np.asarray(want).dtype)


def test_absmax_dot_custom_combine_and_params():
    x, y = _data((8, 33), np.float32), _data((8, 33), np.float32)
    _close(g.reduce(K.absmax)(x, axis=1), np.max(np.abs(x), axis=1))
    _close(g.reduce(K.dot)(x, y), np.dot(x.ravel().astype(np.float64), y.ravel()))
    _close(g.reduce(K.dot)(x, y[0]), np.sum(x * y[0], axis=None))  # broadcast as in g.map
    z = _data((40, 3), np.float64)
    picks = g.reduce(K.extreme)(z, axis=0)
    _close(picks, z[np.argmax(np.abs(z), axis=0), np.arange(3)])
    _close(g.reduce(K.shifted_sum)(z, axis=1, by=2.5), np.sum(z + 2.5, axis=1))
    _close(g.reduce(K.count_positive)(x.T, axis=0), np.sum(x.T > 0, axis=0), np.int64)


def test_nan_propagates_through_max_and_sum():
    x = _data((3, 50), np.float32)
    x[1, 17] = np.nan
    got = g.reduce(K.largest)(x, axis=1)
    assert np.isnan(got[1]) and not np.isnan(got[0]) and not np.isnan(got[2])
    assert np.isnan(g.reduce(K.total)(x))


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a.T,
        lambda a: a[::2, ::-1],
        lambda a: a[:, 3:40:3],
        lambda a: np.broadcast_to(a[:1], a.shape),
        lambda a: a[::-1],
        lambda a: np.swapaxes(a.reshape(10, 5, 48), 0, 2),
    ],
)
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_strided_transposed_and_broadcast_inputs(view, axis):
    x = view(_data((50, 48), np.float64))
    if axis == 1 and x.ndim < 2:
        return
    _close(g.reduce(K.total)(x, axis=axis), np.sum(x, axis=axis))
    _close(g.reduce(K.largest)(x, axis=axis), np.max(x, axis=axis))


@pytest.mark.parametrize(
    ("shape", "axis"),
    [
        ((3000, 70), 0),
        ((3000, 70), 1),
        ((70, 3000), 0),
        ((70, 3000), 1),
        ((2, 300000), None),
        ((40, 9, 700), (0, 2)),
        ((3, 2, 300000), -1),
    ],
)
def test_large_rows_and_columns_span_many_items(shape, axis):
    x = _data(shape, np.float64)
    _close(g.reduce(K.total)(x, axis=axis), np.sum(x, axis=axis))
    i = _data(shape, np.int32)
    _close(g.reduce(K.total)(i, axis=axis), np.sum(i, axis=axis), np.int64)
    _close(g.reduce(K.largest)(i, axis=axis), np.max(i, axis=axis))


def test_empty_inputs():
    e = np.zeros((0, 4), np.float32)
    _close(g.reduce(K.total)(e, axis=0), np.zeros(4, np.float32))
    _close(g.reduce(K.total)(e, axis=1), np.zeros(0, np.float32))
    _close(g.reduce(K.total)(e), np.float32(0))
    _close(g.reduce(K.product)(e, axis=0), np.ones(4, np.float32))
    _close(g.reduce(K.largest)(e, axis=1), np.zeros(0, np.float32))  # no element is reduced from nothing
    with pytest.raises(ValueError, match="zero elements"):
        g.reduce(K.largest)(e, axis=0)
    with pytest.raises(g.ArgumentError, match="no identity"):
        g.reduce(K.largest)(e)
    for axis in (0, 1, (0, 1)):  # no result to give, but a reduction over nothing: NumPy refuses it too
        for _ in range(2):  # the general path, then the C++ one
            with pytest.raises(g.ArgumentError, match="zero elements"):
                g.reduce(K.largest)(np.zeros((0, 0), np.float32), axis=axis)


@g.reduce_kernel(identity=1e39, combine=min)
def _least_below_a_huge_identity(x: g.f32) -> g.f32:
    return x


def test_a_float_identity_rounds_to_the_accumulators_type():
    """1e39 is inf in f32, as np.minimum.reduce(x, initial=1e39) takes it; its C++ was `inf.0f`."""
    k = g.reduce(_least_below_a_huge_identity)
    assert k(np.zeros(0, np.float32)) == np.inf
    x = _data((5, 3), np.float32)
    _close(k(x, axis=0), np.min(x, axis=0))


def test_out_is_written_and_returned():
    x = _data((6, 5), np.float32)
    out = np.full(5, 7, np.float32)
    assert g.reduce(K.sumsq)(x, axis=0, out=out) is out
    _close(out, np.sum(x * x, axis=0))
    wide = np.zeros((1, 5), np.float64)
    g.reduce(K.sumsq)(x, axis=0, keepdims=True, out=wide)
    np.testing.assert_allclose(wide, np.sum(x * x, axis=0, keepdims=True), rtol=1e-6)
    assert (wide == wide.astype(np.float32)).all()  # the f32 result, widened
    target = np.zeros(12, np.float32)
    g.reduce(K.sumsq)(x.T, axis=1, out=target[::2][:5])
    _close(target[::2][:5], np.sum(x * x, axis=0))
    assert not target[1::2].any()


def test_out_and_axis_errors():
    x = _data((6, 5), np.float32)
    with pytest.raises(g.ArgumentError, match="shape"):
        g.reduce(K.sumsq)(x, axis=0, out=np.zeros(6, np.float32))
    with pytest.raises(g.ArgumentError, match="cannot hold"):
        g.reduce(K.sumsq)(x, axis=0, out=np.zeros(5, np.float16))
    with pytest.raises(g.ArgumentError, match="shares memory"):
        g.reduce(K.total)(x, axis=1, out=x[:, 0])
    with pytest.raises(np.exceptions.AxisError):
        g.reduce(K.sumsq)(x, axis=2)
    with pytest.raises(ValueError, match="repeated|duplicate"):
        g.reduce(K.sumsq)(x, axis=(0, -2))
    for axis in (1.5, True, (0, np.bool_(True)), [0, "1"]):  # NumPy refuses bools too
        with pytest.raises(g.ArgumentError, match="axis must be"):
            g.reduce(K.sumsq)(x, axis=axis)
    assert g.reduce(K.sumsq)(x, axis=(np.int64(0), np.int32(-1))).shape == ()  # NumPy's integers are ints
    assert g.reduce(K.sumsq)(x, axis=[1]).shape == (6,)  # a list, as torch's dim takes
    for keepdims in ("no", None, 2):
        with pytest.raises(g.ArgumentError, match="keepdims must be True or False"):
            g.reduce(K.sumsq)(x, axis=0, keepdims=keepdims)
    assert g.reduce(K.sumsq)(x, axis=0, keepdims=np.True_).shape == g.reduce(K.sumsq)(x, axis=0, keepdims=1).shape
    with pytest.raises(g.ArgumentError, match="g.reduce"):
        K.sumsq(x)


def test_argument_errors_name_g_reduce_not_g_map():
    x = _data((6, 5), np.float32)
    with pytest.raises(g.ArgumentError, match=r"y is a Python float, and g\.reduce takes arrays"):
        g.reduce(K.dot)(x, 2.0)
    with pytest.raises(g.ArgumentError, match=r"takes 2 arrays \(x, y\), got 3"):
        g.reduce(K.dot)(x, x, x)


@g.reduce_kernel(identity=0)
def constant() -> g.f32:
    return 1.0


def test_a_kernel_of_no_arrays_is_told_what_g_reduce_needs():
    with pytest.raises(g.ArgumentError, match=r"constant reads no arrays, and g\.reduce takes the shape"):
        g.reduce(constant)()


def test_numpy_scalars_are_0d_arrays_float64_too():
    """np.float64 and np.complex128 are Python floats and complexes as well; like every NumPy
    scalar they reduce as 0-d arrays. Python's own numbers are refused (above)."""
    for value in (np.float64(2.5), np.float32(2.5), np.int64(3), np.bool_(True)):
        got = g.reduce(K.total)(value)
        assert got == np.add.reduce(np.asarray(value), axis=None) and got.dtype == np.sum(value).dtype, value


def test_complex_values_are_refused_naming_the_way_out():
    z = np.array([1 + 2j, 3 - 1j], np.complex64)
    with pytest.raises(g.ArgumentError, match=r"does not reduce complex values yet \(the accumulator would be c64\)"):
        g.reduce(K.total)(z)


def test_kernel_errors_at_decoration():
    with pytest.raises(g.ArgumentError, match="identity"):

        @g.reduce_kernel
        def no_identity(x):
            return x

    with pytest.raises(g.ArgumentError, match="identity=nan is not an identity"):

        @g.reduce_kernel(identity=float("nan"))
        def nan_identity(x):
            return x

    with pytest.raises(g.ArgumentError, match="combine"):

        @g.reduce_kernel(identity=0, combine="-")
        def minus(x):
            return x

    with pytest.raises(g.ArgumentError, match="integers"):

        @g.reduce_kernel(identity=0, combine="&")
        def float_and(x: g.f32) -> g.f32:
            return x

        float_and.variant((g.f32,))


def test_torch_tensors_and_buffers():
    torch = pytest.importorskip("torch")
    x = _data((7, 40), np.float32)
    t = torch.from_numpy(x)
    got = g.reduce(K.sumsq)(t, axis=1)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    _close(got.numpy(), np.sum(x * x, axis=1))
    full = g.reduce(K.sumsq)(t.T)
    assert isinstance(full, torch.Tensor) and full.shape == ()
    out = torch.zeros(40)
    g.reduce(K.sumsq)(t, axis=0, out=out)
    _close(out.numpy(), np.sum(x * x, axis=0))
    b = g.asbuffer(x)
    r = g.reduce(K.sumsq)(b, axis=0, keepdims=True)
    assert isinstance(r, g.Buffer) and tuple(r.shape) == (1, 40)
    _close(np.asarray(r), np.sum(x * x, axis=0, keepdims=True))


def test_same_input_gives_the_same_bits_every_time():
    x = _data((3, 200001), np.float32)
    first = g.reduce(K.total)(x, axis=1)
    for _ in range(3):
        assert g.reduce(K.total)(x, axis=1).tobytes() == first.tobytes()


def test_f32_sum_of_ten_million_values_is_as_accurate_as_numpys():
    """Pairwise leaves as short as NumPy's, so the error against an f64 reference is no larger."""
    rng = np.random.default_rng(2026)
    for x in (rng.random(10_000_000, dtype=np.float32), rng.standard_normal(10_000_000).astype(np.float32) + 3):
        exact = np.sum(x, dtype=np.float64)
        ours, numpys = float(g.reduce(K.total)(x)), float(np.sum(x))
        assert abs(ours - exact) <= abs(numpys - exact), (ours, numpys, exact)
        assert abs(float(g.reduce(K.total)(x.reshape(1000, 10000), axis=0).sum(dtype=np.float64)) - exact) < 1


def test_results_do_not_depend_on_the_thread_count(tmp_path):
    """Fixed-size items combined in a fixed order: one thread and two give the same bits."""
    script = (
        "import numpy as np, gompute as g\n"
        "from tests.reduce import kernels as K\n"
        "x = np.random.default_rng(5).standard_normal((300, 7001)).astype(np.float32)\n"
        "r = [g.reduce(K.total)(x), g.reduce(K.total)(x, axis=0), g.reduce(K.total)(x, axis=1)]\n"
        "print(b''.join(np.asarray(a).tobytes() for a in r).hex())\n"
    )
    outs = outputs_by_thread_count(script)
    assert outs[0] == outs[1] == outs[2]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_layout_and_axes_match_numpy(data):
    """Random shapes, views (transposed, sliced, reversed, broadcast) and axis sets."""
    ndim = data.draw(st.integers(1, 4))
    shape = data.draw(st.lists(st.integers(0, 6), min_size=ndim, max_size=ndim))
    base = np.arange(1, math.prod(s * 2 for s in shape) + 1, dtype=np.float64).reshape([s * 2 for s in shape])
    x = base[tuple(slice(None, None, data.draw(st.sampled_from([1, 2, -1, -2]))) for _ in shape)]
    x = x[tuple(slice(0, s) for s in shape)]
    x = np.transpose(x, data.draw(st.permutations(range(ndim))))
    if data.draw(st.booleans()):
        x = np.broadcast_to(x, (3, *x.shape))
    axes = data.draw(st.lists(st.integers(-x.ndim, x.ndim - 1), unique_by=lambda a: a % x.ndim, max_size=x.ndim))
    axis = None if data.draw(st.booleans()) else tuple(axes)
    keepdims = data.draw(st.booleans())
    np.testing.assert_array_equal(
        g.reduce(K.total)(x, axis=axis, keepdims=keepdims), np.sum(x, axis=axis, keepdims=keepdims)
    )


def test_jax_arrays_give_jax_arrays():
    jnp = pytest.importorskip("jax.numpy")
    x = _data((5, 12), np.float32)
    got = g.reduce(K.sumsq)(jnp.asarray(x), axis=0)
    assert type(got).__module__.startswith("jax") and got.shape == (12,)
    _close(np.asarray(got), np.sum(x * x, axis=0))


def test_a_kernel_compiles_each_group_of_entries_on_first_use_and_once(monkeypatch):
    """Rows with their finish and columns with theirs are two modules (reduce_kernel.GROUPS): a full
    sum compiles no columns loop, and a later call needing an entry already built loads nothing new."""
    from gompute.lang.reduce_kernel import ReduceKernel

    made, image_of = [], ReduceKernel.image_of

    def counted(self, spec, *args):
        made.append((spec.name, spec.group))
        return image_of(self, spec, *args)

    monkeypatch.setattr(ReduceKernel, "image_of", counted)

    @g.reduce_kernel(identity=0)
    def total(x):
        return x

    x = np.arange(300 * 4000, dtype=np.float32).reshape(300, 4000) % 7
    for i, axis in enumerate((None, 1, 0, None, 0)):  # rows with a finish, rows, columns with a finish, again
        np.testing.assert_allclose(g.reduce(total)(x, axis=axis), x.sum(axis=axis, dtype=np.float64), rtol=1e-6)
        if i == 1:
            assert made == [("total__f32__reduce", "rows")], made
    assert made == [("total__f32__reduce", "rows"), ("total__f32__reduce", "columns")], made
    rows, columns = (total.variant((g.f32,)).part(k) for k in ("rows", "columns"))
    assert [e.kind for e in rows.entry_points()] == ["rows", "packed_rows", "finish"]
    assert [e.kind for e in columns.entry_points()] == ["columns", "packed_columns", "finish"]
    source = total.source("host", g.f32)  # the whole, as a user reads it
    assert all(f"{e.symbol})" in source for e in total.variant((g.f32,)).entry_points())


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_a_sum_of_negative_zeros_is_positive_zero_as_numpys(dtype):
    """NumPy and torch start a sum from +0.0, so a sum of -0.0s is +0.0; gompute's paths that start
    from an element (a tile, a pair of lanes) add the identity when they store."""
    for shape, axis in K.EVERY_STORE:
        got = np.asarray(g.reduce(K.total)(np.full(shape, -0.0, dtype), axis=axis))
        assert not np.signbit(got).any(), (shape, axis)
        assert np.signbit(np.asarray(g.reduce(K.largest)(np.full(shape, -0.0, dtype), axis=axis))).all()


def test_the_hosts_packed_entries_reduce_as_its_plain_ones(monkeypatch):
    """The planner takes packed_rows and packed_columns on GPUs only; on the host each is its plain
    entry under another name (reduce_entries._host_packed). Called in their place, the same bits."""
    from gompute.reduce import AutoReduce, BoundReduce

    x = np.random.default_rng(8).standard_normal((300, 1000)).astype(np.float32)
    b = (x * 10).astype(np.int8)
    cases = [(a, axis) for a in (x, b) for axis in (None, 0, 1)] + [(x[:, :7], 0)]
    want = [np.asarray(g.reduce(K.total)(a, axis=axis)) for a, axis in cases]
    plan, planned = BoundReduce.plan, []

    def packed(self, *args):
        kind, *rest = plan(self, *args)
        planned.append(kind)
        return (f"packed_{kind}", *rest)

    monkeypatch.setattr(BoundReduce, "plan", packed)
    monkeypatch.setattr(AutoReduce, "learn", lambda *args: None)  # every call planned here
    fresh = AutoReduce(K.total)  # g.reduce(K.total) has learned these calls: its C++ path plans them
    for (a, axis), w in zip(cases, want):
        np.testing.assert_array_equal(fresh(a, axis=axis), w)
    assert planned.count("rows") == 4 and planned.count("columns") == 3, planned


class _AxisParams(g.Params):
    axis: g.i32


class _KeepdimsParams(g.Params):
    keepdims: g.bool_


def test_a_params_field_named_like_a_reduce_keyword_is_refused_at_definition():
    """Such a kernel could never be called: axis= and keepdims= are g.reduce's own, as out= and stream=."""
    with pytest.raises(g.CompileError, match=r"_AxisParams.axis: .* g.reduce\(kernel\).* axis= is the call's own"):

        @g.reduce_kernel(identity=0)
        def takes_axis(x: g.f32, p: _AxisParams) -> g.f32:
            return x

    with pytest.raises(g.CompileError, match=r"_KeepdimsParams.keepdims: .* keepdims= is the call's own"):

        @g.reduce_kernel(identity=0)
        def takes_keepdims(x: g.f32, p: _KeepdimsParams) -> g.f32:
            return x
