"""g.map, g.run and g.BoundKernel on NumPy arrays, torch CPU tensors and gompute Buffers (host backend)."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g

from .kernels import add, axpy, double, is_positive, scale_relu, to_bf16

rng = np.random.default_rng(7)


def expected_scale_relu(x, scale):
    return np.maximum(x * np.float32(scale), 0).astype(np.float32)


# ---- NumPy -----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 7, 256, 1000, 100_003])
def test_map_on_numpy_returns_a_new_numpy_array(n):
    x = rng.standard_normal(n).astype(np.float32)
    y = g.map(scale_relu)(x, scale=2)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_array_equal(y, expected_scale_relu(x, 2))


def test_out_is_x_maps_in_place_and_returns_x():
    x = rng.standard_normal(4096).astype(np.float32)
    want = expected_scale_relu(x, 3)
    result = g.map(scale_relu)(x, out=x, scale=3)
    assert result is x
    np.testing.assert_array_equal(x, want)


def test_run_is_in_place():
    x = rng.standard_normal((64, 33)).astype(np.float32)
    want = expected_scale_relu(x, 0.5)
    assert g.run(scale_relu, x, scale=0.5) is x
    np.testing.assert_array_equal(x, want)


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a.T,
        lambda a: a[::3],
        lambda a: a[5:, 2:],
        lambda a: a[::-1],
        lambda a: a[:, ::-2],
        lambda a: a[1:-1:2, ::-3].T,
    ],
    ids=["transpose", "step", "offset", "reversed", "neg-step-cols", "mixed"],
)
def test_non_contiguous_inputs_read_the_right_elements(view):
    base = rng.standard_normal((40, 30)).astype(np.float32)
    x = view(base)
    y = g.map(scale_relu)(x, scale=1.5)
    np.testing.assert_array_equal(y, expected_scale_relu(x, 1.5))
    assert y.strides == np.multiply(x, 1.5).strides  # laid out as NumPy lays out a ufunc's result


def test_non_contiguous_output():
    x = rng.standard_normal((20, 30)).astype(np.float32)
    out = np.zeros((30, 20), np.float32).T
    g.map(scale_relu)(x, out=out, scale=2)
    np.testing.assert_array_equal(out, expected_scale_relu(x, 2))


def test_broadcasting_follows_numpy():
    a = rng.standard_normal((5, 1)).astype(np.float64)
    x = rng.standard_normal((1, 7)).astype(np.float64)
    y = np.float64(0.25)
    z = g.map(axpy)(a, x, np.asarray(y))
    np.testing.assert_allclose(z, a * x + y, rtol=0, atol=0)
    assert z.shape == (5, 7)
    b = np.broadcast_to(rng.standard_normal(7), (5, 7))  # stride 0
    np.testing.assert_array_equal(g.map(axpy)(a, b, b), a * b + b)


def test_shapes_that_do_not_broadcast_are_refused():
    with pytest.raises(g.ArgumentError, match=r"\(3,\).*\(4,\).*do not broadcast"):
        g.map(axpy)(np.ones(3), np.ones(4), np.ones(3))


def test_zero_size_and_zero_d():
    empty = np.zeros((0, 4), np.float32)
    y = g.map(scale_relu)(empty, scale=1)
    assert y.shape == (0, 4) and y.dtype == np.float32
    scalar = np.asarray(np.float32(-3))
    assert g.map(scale_relu)(scalar, scale=-1).shape == ()
    assert float(g.map(scale_relu)(scalar, scale=-1)) == 3.0


def test_generic_kernels_specialize_per_dtype():
    for dtype in (np.int8, np.int32, np.uint16, np.float32, np.float64):
        x = (rng.integers(-50, 50, 100) if np.dtype(dtype).kind != "u" else rng.integers(0, 50, 100)).astype(dtype)
        y = g.map(add)(x, x)
        assert y.dtype == dtype
        np.testing.assert_array_equal(y, x + x)
    i, f = np.arange(5, dtype=np.int32), np.arange(5, dtype=np.float32)
    assert g.map(add)(i, f).dtype == np.result_type(i, f)


def test_inputs_convert_only_when_exact():
    small = np.arange(-5, 5, dtype=np.int16)
    np.testing.assert_array_equal(g.map(scale_relu)(small, scale=2), expected_scale_relu(small.astype(np.float32), 2))
    with pytest.raises(g.ArgumentError, match=r"int64.*f32|f32.*int64"):
        g.map(scale_relu)(np.arange(5, dtype=np.int64), scale=2)
    with pytest.raises(g.ArgumentError, match=r"float64.*f32|f32.*float64"):
        g.map(scale_relu)(np.ones(5), scale=2)


def test_out_dtype_may_widen_exactly():
    x = rng.standard_normal(50).astype(np.float32)
    out = np.empty(50, np.float64)
    g.map(scale_relu)(x, out=out, scale=2)
    np.testing.assert_array_equal(out, expected_scale_relu(x, 2).astype(np.float64))
    with pytest.raises(g.ArgumentError):
        g.map(scale_relu)(x, out=np.empty(50, np.float16), scale=2)


def test_bool_results():
    x = rng.standard_normal(300).astype(np.float32)
    y = g.map(is_positive)(x)
    assert y.dtype == np.bool_
    np.testing.assert_array_equal(y, x > 0)


@pytest.mark.parametrize(
    "params, match",
    [({}, "scale"), ({"scale": 1, "bias": 2}, "bias"), ({"scale": 1e39}, "overflow")],
    ids=["missing", "unknown", "out-of-range"],
)
def test_params_are_checked_before_any_launch(params, match):
    x = np.ones(10, np.float32)
    before = g.runtime.stats()["launches"]
    with pytest.raises(g.ArgumentError, match=match):
        g.map(scale_relu)(x, **params)
    assert g.runtime.stats()["launches"] == before
    with pytest.raises(g.ArgumentError, match="takes no params"):
        g.map(double)(x, scale=2)


def test_wrong_number_of_arrays():
    with pytest.raises(g.ArgumentError, match="takes 3 array"):
        g.map(axpy)(np.ones(3), np.ones(3))


def test_out_aliasing_an_input_exactly_is_fine():
    x = rng.standard_normal((30, 20))
    y = rng.standard_normal((30, 20))
    want = x + y
    g.map(add)(x, y, out=y)
    np.testing.assert_array_equal(y, want)
    xt = x.T
    want = xt + xt
    g.map(add)(xt, xt, out=xt)
    np.testing.assert_array_equal(xt, want)


def test_out_partly_overlapping_an_input_is_refused():
    a = np.arange(20, dtype=np.float64)
    with pytest.raises(g.ArgumentError, match="shares memory with input 0"):
        g.map(add)(a[:10], a[:10], out=a[5:15])


def test_an_out_whose_bytes_only_interleave_with_an_input_is_fine():
    """x[::2] and x[1::2] span the same bytes but share none (as a column and its neighbour of
    a C-order matrix do): refused before as overlapping, where NumPy computes them."""
    for _ in range(2):  # the C++ path leaves such calls to the general one, which takes them
        x = np.arange(10, dtype=np.float32)
        g.map(add)(x[::2], x[::2], out=x[1::2])
        np.testing.assert_array_equal(x[1::2], np.arange(0, 10, 2) * 2)
        m = np.arange(12, dtype=np.float32).reshape(3, 4)
        g.map(add)(m[:, 0], m[:, 0], out=m[:, 1])
        np.testing.assert_array_equal(m[:, 1], [0, 8, 16])


def test_read_only_out_is_refused():
    x = np.ones(8, np.float32)
    frozen = np.zeros(8, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(g.ArgumentError, match="read-only"):
        g.map(scale_relu)(x, out=frozen, scale=1)


def test_out_of_the_wrong_shape_is_refused():
    with pytest.raises(g.ArgumentError, match="shape"):
        g.map(double)(np.ones(8), out=np.ones(9))


def test_a_second_call_compiles_nothing():
    x = np.ones(1000, np.float32)
    k = g.map(scale_relu)
    k(x, scale=1)
    loads = g.runtime.stats()["modules_loaded"]
    for _ in range(5):
        k(x, scale=1)
    assert g.runtime.stats()["modules_loaded"] == loads


def test_bound_kernel_on_host():
    k = g.BoundKernel(scale_relu, g.Backend.host, 0)
    x = rng.standard_normal(77).astype(np.float32)
    np.testing.assert_array_equal(k(x, scale=2), expected_scale_relu(x, 2))


def test_non_kernels_are_refused():
    with pytest.raises(g.ArgumentError, match="map_kernel"):
        g.map(lambda x: x)


# ---- gompute Buffers ---------------------------------------------------------------------


def test_map_on_buffers_returns_a_buffer():
    with g.runtime.host.Compute.init() as c:
        x = rng.standard_normal(500).astype(np.float32)
        buf = c.empty(500, g.f32)
        np.asarray(buf)[:] = x
        y = g.map(scale_relu)(buf, scale=2)
        assert isinstance(y, g.Buffer) and y.shape == (500,) and y.dtype is g.f32
        np.testing.assert_array_equal(np.asarray(y), expected_scale_relu(x, 2))
        g.run(scale_relu, buf, scale=2)
        np.testing.assert_array_equal(np.asarray(buf), expected_scale_relu(x, 2))


def test_untyped_buffers_map_as_bytes():
    with g.runtime.host.Compute.init() as c:
        raw = c.alloc(16)
        raw.upload(np.arange(16, dtype=np.uint8))
        y = g.map(double)(raw)
        np.testing.assert_array_equal(np.asarray(y), np.arange(16, dtype=np.uint8) * 2)


class _MyMasked(np.ma.MaskedArray):
    pass


@pytest.mark.parametrize("masked_type", [np.ma.MaskedArray, _MyMasked], ids=["MaskedArray", "subclass"])
def test_a_masked_array_is_refused_not_read_through_its_mask(masked_type):
    m = masked_type(np.array([-1, 2, 3], np.float32), mask=[0, 1, 0])
    k, a = g.map(scale_relu), g.map(add)
    k(np.ones(3, np.float32), scale=2)  # the fast path has f32 now; it must not take the masked one
    a(np.ones(3, np.float32), np.ones(3, np.float32))
    calls = (
        lambda: k(m, scale=2),
        lambda: k(np.ones(3, np.float32), scale=2, out=m),
        lambda: a(np.ones(3, np.float32), m),
    )
    for call in calls:
        with pytest.raises(g.ArgumentError, match=r"masked array.*filled"):
            call()


def _self_overlapping(kind: str):
    """A writable (2, 3) f32 output whose two rows are the same memory."""
    row = np.zeros(3, np.float32)
    if kind == "numpy":
        return np.lib.stride_tricks.as_strided(row, shape=(2, 3), strides=(0, 4))
    if kind == "buffer":
        return g.asbuffer(row).view(g.f32, (2, 3), strides=(0, 4))
    interleaved = np.zeros(4, np.float32)  # rows [0, 1, 2] and [1, 2, 3]
    return np.lib.stride_tricks.as_strided(interleaved, shape=(2, 3), strides=(4, 4))


@pytest.mark.parametrize("kind", ["numpy", "buffer", "interleaved"])
def test_an_output_whose_elements_share_memory_is_refused(kind):
    """Which result such an element keeps would depend on the order of the work (on the host's
    threads, on a GPU's blocks); PyTorch refuses the same."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    k = g.map(scale_relu)
    k(x, scale=2, out=np.empty((3, 2), np.float32).T)  # the fast path has a strided output cached
    k(x, scale=2, out=np.empty((3, 2), np.float32).T)
    for _ in range(2):
        out = _self_overlapping(kind)
        with pytest.raises(g.ArgumentError, match="share memory"):
            k(x, scale=2, out=out)
        with pytest.raises(g.ArgumentError, match="share memory"):
            k(out, scale=2, out=out)  # in place


@pytest.mark.parametrize("ndim", [33, 40, 64])
def test_shapes_of_more_dimensions_than_np_broadcast_shapes_takes_broadcast(ndim):
    """np.broadcast_shapes stops at 32 dimensions (a RuntimeError, which was refused as such);
    arrays, and np.add, go to 64."""
    x = np.arange(12, dtype=np.float32).reshape((3,) + (1,) * (ndim - 2) + (4,))
    y = np.arange(4, dtype=np.float32).reshape(1, 1, 4)
    for _ in range(2):
        np.testing.assert_array_equal(g.map(add)(x, y), x + y)
    with pytest.raises(g.ArgumentError, match="do not broadcast together"):
        g.map(add)(x, np.ones(3, np.float32))


# ---- PyTorch (CPU) -------------------------------------------------------------------------


torch = pytest.importorskip("torch", reason="PyTorch is not installed")


def test_a_result_numpy_has_no_dtype_for_is_a_buffer():
    # NumPy has no bfloat16: the result of a bf16 kernel on NumPy arrays is a host Buffer,
    # never a NumPy array of some other dtype.
    x = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    for _ in range(2):  # the second call is the fast path's to refuse (it names no bf16)
        y = g.map(to_bf16)(x)
        assert isinstance(y, g.Buffer) and y.dtype is g.bf16 and tuple(y.shape) == (4,)
        bits = np.asarray(y.view(g.u16, 4))
        np.testing.assert_array_equal(bits, (x.view(np.uint32) >> 16).astype(np.uint16))  # exact in bf16


def test_a_bf16_result_of_torch_is_a_bf16_tensor():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    t = torch.tensor([1.0, -2.0, 0.5, 3.0])
    y = g.map(to_bf16)(t)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.bfloat16
    assert torch.equal(y, t.to(torch.bfloat16))


def test_map_on_torch_returns_a_tensor():
    t = torch.randn(1000)
    y = g.map(scale_relu)(t, scale=2)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32
    np.testing.assert_array_equal(y.numpy(), expected_scale_relu(t.numpy(), 2))


def test_map_on_torch_views_and_in_place():
    t = torch.randn(30, 40)
    view = t.t()[::2]
    want = expected_scale_relu(view.numpy(), 3)
    g.map(scale_relu)(view, out=view, scale=3)
    np.testing.assert_array_equal(view.numpy(), want)


class _MyTensor(torch.Tensor):
    pass


@pytest.mark.parametrize("as_type", [torch.Tensor, _MyTensor], ids=["Tensor", "subclass"])
def test_map_refuses_a_lazily_negated_tensor_even_once_cached(as_type):
    def negated(t):
        return t._neg_view().as_subclass(as_type)

    k = g.map(scale_relu)
    k(torch.arange(4.0).as_subclass(as_type), scale=2)  # the fast path has f32 now
    for out in (None, torch.empty(4)):
        with pytest.raises(g.ArgumentError, match="negative bit"):
            k(negated(torch.arange(4.0)), scale=2, out=out)
    with pytest.raises(g.ArgumentError, match="negative bit"):
        k(torch.arange(4.0), scale=2, out=negated(torch.empty(4)))
    imag = torch.tensor([1 + 2j, 3 + 4j]).as_subclass(as_type).conj().imag  # a negated view too
    with pytest.raises(g.ArgumentError, match="negative bit"):
        k(imag, scale=2)
    np.testing.assert_array_equal(np.asarray(k(imag.resolve_neg(), scale=-1)), [2, 4])


@pytest.mark.parametrize("write", ["map out=", "map in place", "run"])
def test_a_write_into_a_tensor_counts_for_autograd_on_both_paths(write):
    """exp saves its result for the backward; a write into it through a detach()ed alias (as
    gompute's requires_grad error suggests) made backward compute wrong gradients (twice the
    true ones) where torch's own in-place ops make it refuse."""
    k = g.map(scale_relu)
    for call in range(3):  # the first call is the general path's, later ones the C++ path's
        x = torch.linspace(0.1, 1, 4, requires_grad=True)
        y = x.exp()
        alias = y.detach()
        before = alias._version
        if write == "map out=":
            k(alias.clone(), out=alias, scale=2)
        elif write == "map in place":
            k(alias, out=alias, scale=2)
        else:
            g.run(scale_relu, alias, scale=2)
        assert alias._version > before, f"call {call}"
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_a_new_result_does_not_count_a_write_into_the_inputs():
    x = torch.ones(4)
    g.map(scale_relu)(x, scale=2)
    g.map(scale_relu)(x, scale=2)
    assert x._version == 0


def test_an_expanded_tensor_is_refused_as_an_output():
    k = g.map(scale_relu)
    out = torch.zeros(3).expand(2, 3)
    for _ in range(2):
        with pytest.raises(g.ArgumentError, match="share memory"):
            k(torch.ones(2, 3), scale=2, out=out)


def test_pipeline_numpy_map_torch_map_numpy_shares_memory():
    x = rng.standard_normal(4096).astype(np.float32)
    y = g.map(scale_relu)(x, scale=2)  # numpy in, numpy out
    t = torch.from_dlpack(y)  # no copy
    assert t.data_ptr() == y.ctypes.data
    t.mul_(3)  # torch op
    g.map(scale_relu)(t, out=t, scale=0.5)  # g.map on the tensor, in place
    back = np.from_dlpack(t)
    assert back.ctypes.data == y.ctypes.data
    np.testing.assert_allclose(back, expected_scale_relu(x, 2) * 3 * 0.5, rtol=1e-6)


def test_buffers_with_pending_stream_work_are_read_after_it():
    with g.runtime.host.Compute.init() as c:
        stream = c.create_stream()
        x = np.arange(1 << 16, dtype=np.float32) - 30000
        buf = c.empty(x.shape, g.f32)
        buf.upload(x, stream=stream)  # asynchronous, on `stream`
        buf.stream = stream
        view = buf.view(g.f32, (x.size // 2,), strides=(8,))  # strided: the general path
        view.stream = stream
        y = g.map(scale_relu)(view, scale=2)
        np.testing.assert_array_equal(np.asarray(y), expected_scale_relu(x[::2], 2))


def test_a_host_map_on_a_given_stream_runs_after_that_streams_work():
    """stream= on the host: the map (which runs at once) waits for what the stream holds."""
    with g.runtime.host.Compute.init() as c:
        stream = c.create_stream()
        x = np.arange(1 << 20, dtype=np.float32) - 30000
        buf = c.empty(x.shape, g.f32)
        buf.upload(x, stream=stream)  # asynchronous; the buffer is not told which stream
        y = g.map(scale_relu)(buf, scale=2, stream=stream)
        np.testing.assert_array_equal(np.asarray(y), expected_scale_relu(x, 2))


@pytest.mark.parametrize("stream", [5, 12345])
def test_a_foreign_stream_handle_on_the_host_is_refused(stream):
    x = np.ones(4, np.float32)
    with pytest.raises(g.ArgumentError, match="host backend has none; pass a host Stream"):
        g.map(scale_relu)(x, scale=2, stream=stream)
    with pytest.raises(g.ArgumentError, match="host backend has none"):
        g.run(scale_relu, x, scale=2, stream=stream)
    np.testing.assert_array_equal(x, 1)  # nothing ran


def test_stream_minus_one_names_no_stream_to_launch_on():
    with pytest.raises(g.ArgumentError, match="stream=-1 .* names no stream to launch on"):
        g.map(scale_relu)(np.ones(4, np.float32), scale=2, stream=-1)


@pytest.mark.parametrize("stream", [-5, 2**64])
def test_an_int_that_is_no_handle_is_refused_as_a_stream(stream):
    with pytest.raises(g.ArgumentError, match=rf"stream={stream} is no stream handle; pass a Stream, or a handle"):
        g.map(scale_relu)(np.ones(4, np.float32), scale=2, stream=stream)


@pytest.mark.parametrize("stream", [0, 1])
def test_a_default_stream_handle_on_the_host_is_the_default_stream(stream):
    x = np.ones(4, np.float32)
    np.testing.assert_array_equal(g.map(scale_relu)(x, scale=2, stream=stream), 2)


def test_a_gpu_stream_for_host_arrays_is_refused(monkeypatch):
    class NotAHostStream:
        def __cuda_stream__(self):
            return (0, 12345)

    with pytest.raises(g.ArgumentError, match="host backend has none"):
        g.map(scale_relu)(np.ones(4, np.float32), scale=2, stream=NotAHostStream())


def test_cuda_targets_a_cubin_or_the_newest_ptx_nvrtc_knows(monkeypatch):
    from gompute import kernel as K
    from gompute.compile import nvrtc

    if not nvrtc.available():
        pytest.skip("no NVRTC on this machine (pip install nvidia-cuda-nvrtc)")
    supported = nvrtc.load().supported_archs

    class FakeCompute:
        backend = g.Backend.cuda

        def __init__(self, cc):
            self.cc = cc

        def device_info(self):
            return g.runtime.DeviceInfo(g.Backend.cuda, 0, "test GPU", f"sm_{self.cc}", divmod(self.cc, 10), 0, 1, 0)

    newest = max(supported)
    assert K._target_arch(FakeCompute(newest)) == f"sm_{newest}"
    assert K._target_arch(FakeCompute(newest + 1)) == f"compute_{newest}"  # a device newer than NVRTC
    with pytest.raises(g.CompileError, match="cannot compile"):
        K._target_arch(FakeCompute(min(supported) - 1))


def test_g_kernel_takes_a_backend_or_its_name_and_refuses_others():
    """None raised AttributeError and Backend.cpu KeyError."""
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(g.BoundKernel(scale_relu, "host")(x, scale=2.0), expected_scale_relu(x, 2.0))
    with pytest.raises(g.ArgumentError, match="unknown backend None"):
        g.BoundKernel(scale_relu, None)
    with pytest.raises(g.ArgumentError, match="use Backend.host for the CPU"):
        g.BoundKernel(scale_relu, g.Backend.cpu)


class _SelfParams(g.Params):
    self: g.f32


@g.map_kernel
def _scaled_by_self(x: g.f32, p: _SelfParams) -> g.f32:
    return x * p.self


def test_a_params_field_named_self_is_a_keyword_like_any_other():
    """g.map(k)(x, self=2) was a raw TypeError: 'got multiple values for argument self'."""
    x = np.arange(4, dtype=np.float32)
    for call in (g.map(_scaled_by_self), g.BoundKernel(_scaled_by_self, g.Backend.host)):
        for _ in range(2):
            np.testing.assert_array_equal(call(x, self=2.0), x * 2)


class _OutParams(g.Params):
    out: g.f32


class _StreamParams(g.Params):
    stream: g.i32


def test_a_params_field_named_like_a_call_keyword_is_refused_at_definition():
    """Such a kernel could never be called: out=/stream= are g.map's own."""
    with pytest.raises(g.CompileError, match="_OutParams.out: .* out= is the call's own; rename the field"):

        @g.map_kernel
        def takes_out(x: g.f32, p: _OutParams) -> g.f32:
            return x

    with pytest.raises(g.CompileError, match="_StreamParams.stream: .* stream= is the call's own"):

        @g.map_kernel
        def takes_stream(x: g.f32, p: _StreamParams) -> g.f32:
            return x
