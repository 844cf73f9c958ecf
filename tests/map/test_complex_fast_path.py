"""Complex arrays and complex params fields on g.map's C++ path: a repeated call on NumPy
complex arrays, torch complex tensors and gompute Buffers launches from C++, and a params field
of g.c64 or g.c128 packs as abi.pack packs it, from C++ and from the general path alike."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g
from gompute import abi
from gompute.errors import ArgumentError

from .calls import counting


class Rotation(g.Params):
    by: g.c64
    shift: g.c128
    scale: g.f32


@g.map_kernel
def rotate(z: g.c128, p: Rotation) -> g.c128:
    return z * p.scale + p.by + p.shift


@g.map_kernel
def twice(z):
    return z + z


def values(dtype, n: int = 37) -> np.ndarray:
    re = np.linspace(-3, 3, n)
    return (re + 1j * re[::-1]).astype(dtype)


def numpy_rotate(z: np.ndarray, by, shift, scale) -> np.ndarray:
    """What the kernel computes, in NumPy: the fields as their types hold them. No product of two
    complex numbers, whose rounding may differ by an ulp: this checks the fields' values."""
    return z * np.float32(scale) + np.complex64(by) + np.complex128(shift)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_repeated_calls_on_complex_numpy_arrays_take_the_cpp_path(dtype):
    k, general = counting(twice)
    x = values(dtype)
    for _ in range(3):
        got = k(x)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, x + x)
    out = np.empty_like(x)
    for _ in range(2):
        assert k(x, out=out) is out
        np.testing.assert_array_equal(out, x + x)
    assert general == ["ndarray"]  # the first call only: with out= it is the same launch


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_repeated_calls_on_torch_complex_tensors_take_the_cpp_path(dtype):
    torch = pytest.importorskip("torch")
    k, general = counting(twice)
    x = torch.from_numpy(values(getattr(np, dtype)))
    for _ in range(3):
        got = k(x)
        assert isinstance(got, torch.Tensor) and got.dtype == getattr(torch, dtype)
        np.testing.assert_array_equal(got.numpy(), (x + x).numpy())
    assert general == ["Tensor"]
    with pytest.raises(ArgumentError, match="conjugate bit"):  # its memory is not its values: the
        k(x.conj())  # general path refuses it, as torch's DLPack export does
    assert general == ["Tensor", "Tensor"]


@pytest.mark.parametrize("t", [g.c64, g.c128], ids=str)
def test_repeated_calls_on_complex_buffers_take_the_cpp_path(t):
    k, general = counting(twice)
    x = g.asbuffer(values(t.dtype))
    out = g.asbuffer(np.zeros(37, t.dtype))
    for _ in range(2):
        assert k(x, out=out) is out
        np.testing.assert_array_equal(np.asarray(out), values(t.dtype) * 2)
    assert general == ["Buffer"]


@pytest.mark.parametrize(
    "by, shift, scale",
    [
        (1j, 0.5 - 2j, 2.0),
        (0.25, 3, 1.5),  # a float and an int into complex fields
        (np.complex128(1.5 + 0.1j), np.complex128(-1e300 + 1e-300j), 0.5),  # NumPy's complex128 is a complex
        (3.4e38 + 0j, 1e308j, 1),  # the f32 part at its largest finite value
        (True, False, 1),  # bools, as complex(True) reads them
    ],
)
def test_complex_params_fields_give_numpys_values_from_both_paths(by, shift, scale):
    k, general = counting(rotate)
    z = values(np.complex128)
    want = numpy_rotate(z, by, shift, scale)
    for _ in range(2):  # the general path, then C++
        np.testing.assert_array_equal(k(z, by=by, shift=shift, scale=scale), want)
    assert len(general) == 1


def test_complex_fields_the_cpp_path_declines_go_the_general_way():
    k, general = counting(rotate)
    z = values(np.complex128)
    k(z, by=1j, shift=0, scale=1)
    by = np.complex64(0.5 - 1j)  # not a Python complex: abi.pack reads it
    np.testing.assert_array_equal(k(z, by=by, shift=0, scale=1), numpy_rotate(z, by, 0, 1))
    with pytest.raises(ArgumentError, match="overflows g.c64"):  # a part past f32's range
        k(z, by=1e39j, shift=0, scale=1)
    with pytest.raises(ArgumentError, match="not a number"):
        k(z, by="1j", shift=0, scale=1)
    assert len(general) == 4


def test_the_cpp_path_packs_complex_fields_as_abi_pack_does():
    """The fields' bytes: the real part first, then the imaginary, as cuComplex lays them out."""
    packed = abi.pack(Rotation, by=1 - 2j, shift=3 + 4j, scale=0.5)
    assert Rotation.__size__ == 48 and [f.offset for f in Rotation.__fields__] == [0, 16, 32]
    assert np.frombuffer(packed[:8], np.float32).tolist() == [1, -2]
    assert np.frombuffer(packed[16:32], np.float64).tolist() == [3, 4]
