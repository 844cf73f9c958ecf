"""The mistakes a first-time user makes get an error that says what to write instead."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g

from .kernels import add, axpy, scale_relu

x = np.linspace(-1, 1, 10, dtype=np.float32)


def test_params_given_positionally_are_said_to_be_keywords():
    with pytest.raises(
        g.ArgumentError,
        match=r"takes 1 array \(x\), got 2; its params are keywords: "
        r"g\.map\(scale_relu\)\(x, scale=\.\.\.\)",
    ):
        g.map(scale_relu)(x, 2)


def test_too_few_arrays_name_the_kernels_arrays():
    with pytest.raises(g.ArgumentError, match=r"axpy takes 3 arrays \(a, x, y\), got 1$"):
        g.map(axpy)(x)


@g.map_kernel
def constant() -> g.f32:
    return 1.0


def test_a_kernel_of_no_arrays_is_told_what_g_map_needs():
    for call in (lambda: g.map(constant)(), lambda: g.map(constant)(out=np.zeros(3, np.float32))):
        with pytest.raises(g.ArgumentError, match=r"constant reads no arrays, .* give the kernel an array argument"):
            call()


def test_a_missing_param_names_the_kernel_and_shows_the_keyword():
    with pytest.raises(
        g.ArgumentError,
        match=r"scale_relu needs a value for scale \(Params\); pass it as keywords: "
        r"g\.map\(scale_relu\)\(x, scale=\.\.\.\)",
    ):
        g.map(scale_relu)(x)


@pytest.mark.parametrize("value", [[0.5, -1.0], (0.5, -1.0), 2.0], ids=["list", "tuple", "float"])
def test_a_python_value_is_told_to_become_an_array_of_the_kernels_type(value):
    with pytest.raises(
        g.ArgumentError,
        match=r"scale_relu: x is a Python \w+, and g\.map takes arrays; pass "
        r"np\.asarray\(x, dtype=np\.float32\) \(np\.asarray alone makes float64",
    ):
        g.map(scale_relu)(value, scale=2)


def test_numpy_scalars_are_0d_arrays_float64_too():
    """np.float64 and np.complex128 subclass Python's float and complex; they map as 0-d arrays,
    as every other NumPy scalar does."""
    for value in (np.float64(0.25), np.complex128(1 - 2j), np.float32(0.25), np.int16(-3)):
        got = g.map(add)(value, value)
        assert got.shape == () and got.dtype == np.asarray(value).dtype and got == value + value, value


def test_a_generic_kernels_list_gets_no_dtype_advice():
    message = r"add: y is a Python list, and g\.map takes arrays; pass np\.asarray\(y\)$"
    with pytest.raises(g.ArgumentError, match=message):
        g.map(add)(x, [1.0] * 10)


def test_a_python_list_as_out_is_named():
    with pytest.raises(g.ArgumentError, match=r"out is a Python list"):
        g.map(scale_relu)(x, out=[0.0] * 10, scale=2)


def test_the_advice_works():
    y = g.map(scale_relu)(np.asarray([0.5, -1.0], dtype=np.float32), scale=2)
    np.testing.assert_array_equal(y, [1.0, 0.0])


def test_a_map_kernel_called_directly_is_shown_the_g_map_call():
    with pytest.raises(
        g.ArgumentError,
        match=r"scale_relu is a map kernel, which runs on arrays through g\.map: "
        r"g\.map\(scale_relu\)\(x, scale=\.\.\.\)",
    ):
        scale_relu(x, scale=2)


class _Three(g.Params):
    zeta: g.i8
    alpha: g.f32
    mid: g.i32


@g.map_kernel
def _shifted(x: g.f32, p: _Three) -> g.f32:
    return x + p.zeta + p.alpha + p.mid


def test_a_structured_arrays_field_is_named_with_what_to_do():
    from tests.reduce.kernels import total

    field = np.zeros(5, [("t", "<i4"), ("z", "<f8")])["z"]  # strides of 12 bytes
    x = np.ones(5)
    for call in (lambda: g.map(axpy)(x, field, x), lambda: g.reduce(total)(field)):
        with pytest.raises(g.ArgumentError, match=r"\(5,\), float64\) has strides \(12,\) bytes, .* pass a copy$"):
            call()
    with pytest.raises(g.ArgumentError, match=r"^axpy: .* strides \(12,\) .* write into an array of its own"):
        g.map(axpy)(x, x, x, out=field)


def test_params_messages_list_fields_in_order_and_show_huge_values_short():
    x = np.ones(3, np.float32)
    with pytest.raises(g.ArgumentError, match=r"_Three has no field bogus \(fields: zeta, alpha, mid\)"):
        g.map(_shifted)(x, zeta=1, alpha=2, mid=3, bogus=4)
    for value, shown in ((1e300, r"1e\+300"), (10**5000, "an integer of 16610 bits"), (300, "300")):
        with pytest.raises(g.ArgumentError, match=rf"_Three.zeta: {shown} is out of range for g.i8 \(-128 to 127\)$"):
            g.map(_shifted)(x, zeta=value, alpha=2, mid=3)
