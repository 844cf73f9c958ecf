"""PyTorch CPU tensors on g.map's C++ path: read through the DLPack exchange table torch.Tensor
carries (the code that reads CUDA tensors too, test_torch_cuda_path.py), with each write
counted for autograd, and what torch would not export left to the general path.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import gompute as g
from tests.reduce.kernels import total

from .calls import counting
from .kernels import add, double, is_positive, scale_relu

torch = pytest.importorskip("torch", reason="PyTorch is not installed")

values = np.linspace(-2, 2, 3000, dtype=np.float32)


def relu(x, scale):
    return np.maximum(x * np.float32(scale), 0)


def test_tensors_are_read_through_torchs_exchange_table():
    """The C++ path reads the table's view (pointer, shape, strides, dtype, device), not a NumPy
    view: a tensor that refuses one still takes it."""
    if getattr(torch.Tensor, "__dlpack_c_exchange_api__", None) is None:
        pytest.skip(f"torch {torch.__version__} has no DLPack exchange table: CPU tensors go through NumPy")

    class NoNumpy(torch.Tensor):
        __torch_function__ = torch._C._disabled_torch_function_impl

        def numpy(self, *args, **kwargs):
            raise AssertionError("read through a NumPy view")

    k, calls = counting(scale_relu)
    t = torch.Tensor._make_subclass(NoNumpy, torch.from_numpy(values.copy()))
    for scale in (2, 3, 0.5):
        before = g.runtime.stats()["launches"]
        assert k(t, out=t, scale=scale) is t
        assert g.runtime.stats()["launches"] == before + 1
    np.testing.assert_allclose(t.as_subclass(torch.Tensor).numpy(), relu(values, 2 * 3 * 0.5), rtol=1e-6)
    assert calls == ["NoNumpy"]


@pytest.mark.parametrize(
    "view",
    [
        lambda t: t[7:],  # a storage offset: the table's pointer is past it
        lambda t: t[::3],  # strided in elements
        lambda t: t.view(60, 50).t(),  # transposed
        lambda t: t.view(60, 50)[1::2, ::3],  # strided in both dimensions
        lambda t: t[:0],  # no elements
    ],
    ids=["offset", "step", "transpose", "both", "empty"],
)
def test_views_read_the_right_elements(view):
    k, calls = counting(scale_relu)
    base = torch.from_numpy(values.copy())
    for scale in (2, 3):
        x = view(base)
        out = torch.empty_like(x)
        k(x, out=out, scale=scale)
        np.testing.assert_array_equal(out.numpy(), relu(x.numpy(), scale))
    assert len(calls) == (1 if x.numel() else 2)  # a call with nothing to launch teaches nothing


@pytest.mark.parametrize(
    "dtype",
    [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.float16, torch.float32, torch.float64],
)
def test_every_dtype_with_a_format_takes_the_cpp_path(dtype):
    k, calls = counting(double)
    t = torch.arange(-5, 95).to(dtype)
    want = t.numpy() * t.numpy().dtype.type(2)
    for _ in range(3):
        np.testing.assert_array_equal(k(t).numpy(), want)
    assert len(calls) == 1


def test_two_tensors_and_a_new_result():
    k, calls = counting(add)
    a, b = torch.arange(10.0), torch.ones(4, 1)
    for _ in range(3):
        np.testing.assert_array_equal(k(a, b).numpy(), a.numpy() + b.numpy())
    assert len(calls) == 1
    mask, calls = counting(is_positive)
    for _ in range(3):  # a bool result
        np.testing.assert_array_equal(mask(a - 5).numpy(), a.numpy() > 5)
    assert len(calls) == 1


def test_a_write_counts_for_autograd_on_the_cpp_path():
    """torch refuses a backward that needs the values g.map overwrote, as after its own in-place ops."""
    k, calls = counting(scale_relu)
    w = torch.ones(4, requires_grad=True)
    t = torch.full((4,), 2.0)
    k(t, out=t, scale=1)  # the general path
    y = (w * t).sum()  # saves t for the backward
    versions = [t._version]
    for _ in range(2):
        k(t, out=t, scale=1)  # the C++ path
        versions.append(t._version)
    assert len(calls) == 1 and versions[0] < versions[1] < versions[2]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_what_torch_would_not_export_is_left_to_the_general_path():
    k, calls = counting(scale_relu)
    t = torch.randn(6)
    k(t, out=t, scale=1)
    with pytest.raises(g.ArgumentError, match="require gradient"):
        k(torch.randn(6, requires_grad=True), scale=1)
    negated = torch.randn(6, dtype=torch.complex64).conj().imag  # a real tensor with its negative bit set
    assert negated.is_neg()
    with pytest.raises(g.ArgumentError, match="negative bit"):
        k(negated, scale=1)
    assert len(calls) == 3  # each refusal came from the general path, with its reason


def test_an_inference_tensor_is_an_output_only_in_inference_mode():
    """torch lets no one write an inference tensor outside torch.inference_mode(), its own in-place
    ops included: neither path does (the C++ one leaves it to the general one, which says why)."""
    k, calls = counting(scale_relu)
    r = g.reduce(total)
    t = torch.randn(6)
    k(t, out=torch.empty(6), scale=1)  # both learn the signature
    r(t, out=torch.empty(()))
    with torch.inference_mode():
        frozen, frozen_total = torch.zeros(6), torch.zeros(())
    for call, out in ((lambda o: k(t, out=o, scale=1), frozen), (lambda o: r(t, out=o), frozen_total)):
        with pytest.raises(g.ArgumentError, match="an inference tensor, which torch lets no one write outside"):
            call(out)
        assert not out.any()
        with torch.inference_mode():
            call(out)
    np.testing.assert_allclose(frozen.numpy(), relu(t.numpy(), 1), rtol=1e-6)
    np.testing.assert_allclose(frozen_total.item(), t.sum().item(), rtol=1e-6)
    assert len(calls) == 3  # learning, the refusal, and the write in inference mode
    for _ in range(2):  # read anywhere, on both paths
        np.testing.assert_allclose(k(frozen, scale=2).numpy(), relu(frozen.numpy(), 2), rtol=1e-6)
    assert len(calls) == 4


def test_a_tensor_type_without_the_table_is_read_through_numpy():
    """A torch older than the exchange table: CPU tensors through their NumPy view, still in C++."""

    class Plain(torch.Tensor):
        __dlpack_c_exchange_api__ = None
        __torch_function__ = torch._C._disabled_torch_function_impl

    k, calls = counting(scale_relu)
    t = torch.Tensor._make_subclass(Plain, torch.from_numpy(values.copy()))
    versions = []
    for scale in (2, 3):
        k(t, out=t, scale=scale)
        versions.append(t._version)
    np.testing.assert_allclose(t.numpy(), relu(values, 6), rtol=1e-6)
    assert calls == ["Plain"] and versions[0] < versions[1]


def _python_calls(f, *args, **kwargs):
    """f(*args, **kwargs), and the names of the Python functions it called."""
    called = []
    sys.setprofile(lambda frame, event, _: called.append(frame.f_code.co_name) if event == "call" else None)
    try:
        result = f(*args, **kwargs)
    finally:
        sys.setprofile(None)
    return result, called


@pytest.mark.parametrize(
    "make, shape, dtype, kwargs",
    [
        (lambda: counting(double)[0], (100,), torch.float16, {}),
        (lambda: counting(is_positive)[0], (100,), torch.float32, {}),  # a bool result
        (lambda: g.reduce(total), (4, 25), torch.int16, {"axis": 1}),  # an int64 result
        (lambda: g.reduce(total), (100,), torch.float64, {}),  # 0-d
    ],
    ids=["map-f16", "map-bool", "reduce-rows", "reduce-0d"],
)
def test_new_results_come_from_torchs_allocator_with_no_python(make, shape, dtype, kwargs):
    """torch.empty from Python took 2-3 us, most of a small call: the exchange table's allocator
    makes every new result in C++, the general path's first one too, so all behave alike."""
    if getattr(torch.Tensor, "__dlpack_c_exchange_api__", None) is None:
        pytest.skip(f"torch {torch.__version__} has no DLPack exchange table")
    k = make()
    t = torch.arange(-50, 50).to(dtype).reshape(shape)
    first = k(t, **kwargs)  # the general path; then the C++ path, with the general path's maker
    second, python = _python_calls(k, t, **kwargs)
    third = k(t, **kwargs)
    assert python == []
    want = (torch.Tensor, first.dtype, first.shape, t.device, False)
    for r in (second, third):
        assert (type(r), r.dtype, r.shape, r.device, r.requires_grad) == want
        np.testing.assert_array_equal(r.numpy(), first.numpy())
    assert len({first.data_ptr(), second.data_ptr(), third.data_ptr()}) == 3
    assert [r.untyped_storage().resizable() for r in (first, second, third)] == [False] * 3  # as DLPack's
    third.fill_(1)  # an ordinary tensor otherwise: writable, its own memory, shrinks
    third.resize_(1)
    assert third.tolist() == [1] and second.numpy().tolist() == first.numpy().tolist()


def test_a_result_torch_cannot_allocate_is_alloc_failed_on_both_paths():
    huge = torch.ones(1).expand(2**28, 2**28)  # 2**58 bytes of result: past any machine's address space
    k, calls = counting(double)
    k(torch.ones(2, 2))  # the C++ path makes f32 torch results now, and lets this one fall through
    for _ in range(2):
        with pytest.raises(g.AllocFailed) as raised:
            k(huge)
        message = str(raised.value)
        assert message.startswith(f"the call's result (float32, shape (268435456, 268435456), {2**58} bytes) cannot")
        assert "\n" not in message  # torch's own message, without its C++ trace
    assert len(calls) == 3
