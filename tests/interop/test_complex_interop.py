"""Complex arrays in and out: NumPy, DLPack, the array interfaces and PyTorch, for g.c64 and g.c128."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g
from gompute.types import c64, c128

CASES = [(c64, np.complex64, "<c8", "Zf"), (c128, np.complex128, "<c16", "Zd")]


def values(dtype) -> np.ndarray:
    return (np.arange(12) - 5.5 + 1j * (np.arange(12) * 0.25 - 1)).astype(dtype).reshape(3, 4)


@pytest.mark.parametrize("t, dtype, typestr, fmt", CASES, ids=["c64", "c128"])
def test_numpy_complex_arrays_are_read_in_place(t, dtype, typestr, fmt):
    a = values(dtype)
    b = g.asbuffer(a)
    assert b.dtype is t and tuple(b.shape) == a.shape and b.data_addr() == a.ctypes.data
    transposed = g.asbuffer(a.T)
    assert tuple(transposed.strides) == a.T.strides


@pytest.mark.parametrize("t, dtype, typestr, fmt", CASES, ids=["c64", "c128"])
def test_complex_buffers_export_numpys_typestr_format_and_dlpack(host, t, dtype, typestr, fmt):
    a = values(dtype)
    b = host.empty(a.shape, t)
    b.upload(a)
    assert b.__array_interface__["typestr"] == typestr
    assert memoryview(b).format == fmt
    np.testing.assert_array_equal(np.asarray(b), a)
    np.testing.assert_array_equal(np.from_dlpack(b), a)


@pytest.mark.parametrize("t, dtype, typestr, fmt", CASES, ids=["c64", "c128"])
def test_torch_complex_tensors_round_trip_through_dlpack(host, t, dtype, typestr, fmt):
    torch = pytest.importorskip("torch")
    tensor = torch.from_numpy(values(dtype))
    b = g.asbuffer(tensor)
    assert b.dtype is t and b.data_addr() == tensor.data_ptr()
    back = torch.from_dlpack(b)
    assert back.dtype == tensor.dtype and back.data_ptr() == tensor.data_ptr()


class Interface:
    """A host array that speaks only __array_interface__, with the typestr given."""

    def __init__(self, a: np.ndarray):
        self.a = a
        self.__array_interface__ = {**a.__array_interface__}


@pytest.mark.parametrize("t, dtype, typestr, fmt", CASES, ids=["c64", "c128"])
def test_the_array_interface_typestr_names_complex_types(t, dtype, typestr, fmt):
    a = values(dtype)
    wrapped = Interface(a)
    assert wrapped.__array_interface__["typestr"] == typestr
    b = g.asbuffer(wrapped)
    assert b.dtype is t and b.data_addr() == a.ctypes.data


@g.map_kernel
def rotate(z):
    return z * 1j


def test_a_kernel_on_torch_complex_gives_a_torch_tensor():
    torch = pytest.importorskip("torch")
    tensor = torch.from_numpy(values(np.complex128))
    got = g.map(rotate)(tensor)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.complex128
    np.testing.assert_array_equal(got.numpy(), values(np.complex128) * 1j)
