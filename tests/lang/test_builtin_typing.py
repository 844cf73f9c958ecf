"""The builtins' result types against NumPy's ufuncs, and the builtins table of docs/kernels.md.

Every NumPy ufunc is a builtin of the same name or is on builtins.UNSUPPORTED with a reason. For
each, on every input dtype NumPy has among bool, the integers and the floats (one argument and two;
both the same, and mixed pairs; with Python numbers), a kernel calling it gives NumPy's result
dtype, or refuses with a CompileError where NumPy raises. Only the frontend runs: nothing compiles.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import gompute as g
import gompute.lang as gl
from gompute import types as T
from gompute.errors import CompileError
from gompute.lang import builtins as B
from gompute.lang import complex_math as C
from gompute.lang import reference

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
DTYPES += [np.float16, np.float32, np.float64]
MIXED = [
    (np.int8, np.uint8),
    (np.int64, np.uint64),
    (np.uint8, np.int64),
    (np.int16, np.float16),
    (np.int32, np.float32),
    (np.float32, np.int64),
    (np.bool_, np.float16),
    (np.bool_, np.int8),
    (np.uint16, np.float16),
    (np.float16, np.float64),
    (np.uint32, np.int32),
]
PYTHON_NUMBERS = [3, 2.5, True]
UFUNCS = sorted(n for n in dir(np) if isinstance(getattr(np, n), np.ufunc))
SUPPORTED = [n for n in UFUNCS if n not in B.UNSUPPORTED]
DOCS = Path(__file__).resolve().parents[2] / "docs" / "kernels.md"


def test_every_numpy_ufunc_is_a_builtin_or_unsupported_with_a_reason():
    for name in UFUNCS:
        assert (name in B.BUILTINS) != (name in B.UNSUPPORTED), name
        assert hasattr(gl, name) == (name not in B.UNSUPPORTED), f"g.{name}"
    assert set(B.UNSUPPORTED) <= set(UFUNCS), "UNSUPPORTED names no NumPy ufunc"
    assert all(len(reason) > 20 for reason in B.UNSUPPORTED.values())
    row_of = {b.name: row for row in B.ROWS for b in row}
    for name in SUPPORTED:  # inside a kernel, np.NAME is the builtin of its name (or an alias's)
        assert B.PYTHON_ALIASES[getattr(np, name)] in row_of[name], name


def test_every_builtin_is_g_name_and_gompute_lang_name_one_object():
    assert set(B.__all__) == set(B.BUILTINS)
    for name, b in B.BUILTINS.items():
        assert getattr(g, name) is b and getattr(gl, name) is b, name
    for name in C.COMPLEX:  # the complex builtins are the table's, which take complex arguments too
        assert getattr(g, name) is B.BUILTINS[name], name


def _unary(fn):
    @gl.map_kernel
    def unary(a):
        return fn(a)

    return unary


def _binary(fn):
    @gl.map_kernel
    def binary(a, b):
        return fn(a, b)

    return binary


def _beside_a_number(fn, number):
    @gl.map_kernel
    def beside_a_number(a):
        return fn(a, number)

    return beside_a_number


def _of_numbers(fn, number, arity):
    @gl.map_kernel
    def of_one_number(a):
        return fn(number)

    @gl.map_kernel
    def of_two_numbers(a):
        return fn(number, number)

    return of_one_number if arity == 1 else of_two_numbers


def _numpy_dtype(ufunc, *args):
    """The dtype of NumPy's result, or None where NumPy refuses the types."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return np.asarray(ufunc(*args)).dtype
        except (TypeError, ValueError, OverflowError):
            return None


def _gompute_dtype(kernel, *types):
    try:
        return kernel.specialize(*types).out_type.dtype
    except CompileError:
        return None


def _check(name, kernel, types, *np_args):
    want = _numpy_dtype(getattr(np, name), *np_args)
    got = _gompute_dtype(kernel, *types)
    assert got == want, f"np.{name}{tuple(str(t) for t in types)}: NumPy gives {want}, gompute {got}"


@pytest.mark.parametrize("name", SUPPORTED)
def test_result_dtype_is_numpys_on_every_dtype(name):
    ufunc = getattr(np, name)
    for spelled in (ufunc, getattr(gl, name)):  # np.NAME and g.NAME inside the kernel
        if ufunc.nin == 1:
            kernel = _unary(spelled)
            for d in DTYPES:
                _check(name, kernel, [T.from_dtype(d)], np.zeros(3, d))
            continue
        kernel = _binary(spelled)
        for a, b in [(d, d) for d in DTYPES] + MIXED + [(b, a) for a, b in MIXED]:
            _check(name, kernel, [T.from_dtype(a), T.from_dtype(b)], np.zeros(3, a), np.zeros(3, b))


@pytest.mark.parametrize("name", SUPPORTED)
def test_result_dtype_is_numpys_with_python_numbers(name):
    """A Python number beside an array is weak (NEP 50); on Python numbers alone NumPy's ufunc
    gives a NumPy scalar, of a strong type, and so does the builtin."""
    ufunc = getattr(np, name)
    for number in PYTHON_NUMBERS:
        _check(name, _of_numbers(ufunc, number, ufunc.nin), [T.f32], *[number] * ufunc.nin)
        if ufunc.nin == 2:
            for d in DTYPES:
                _check(name, _beside_a_number(ufunc, number), [T.from_dtype(d)], np.zeros(3, d), number)


@g.map_kernel
def _numpy_cos_of_a_python_int(x: g.f32, y: g.f32):
    return 2 * x + (np.cos(3) + 5) * y


@g.map_kernel
def _g_cos_of_a_python_int(x: g.f32, y: g.f32):
    return 2 * x + (gl.cos(3) + 5) * y


@g.map_kernel
def _math_cos_of_a_python_int(x: g.f32, y: g.f32):
    return 2 * x + (math.cos(3) + 5) * y


def test_a_builtin_on_python_numbers_is_a_numpy_scalar_and_a_math_function_a_python_float():
    x = np.ones(3, np.float32)
    assert (2 * x + (np.cos(3) + 5) * x).dtype == np.float64
    assert _numpy_cos_of_a_python_int.specialize().out_type is T.f64
    assert _g_cos_of_a_python_int.specialize().out_type is T.f64
    assert (2 * x + (math.cos(3) + 5) * x).dtype == np.float32
    assert _math_cos_of_a_python_int.specialize().out_type is T.f32


def _python_value(fn, *numbers):
    """a + fn(numbers) for a: i8, which stays i8 beside a Python int and is f64 beside a float."""
    first, second = (*numbers, None)[:2]

    @gl.map_kernel
    def of_one(a):
        return a + fn(first)

    @gl.map_kernel
    def of_two(a):
        return a + fn(first, second)

    return of_one if len(numbers) == 1 else of_two


@pytest.mark.parametrize(
    "fn, numbers, out",
    [
        (math.floor, (2.5,), T.i8),  # Python's math.floor gives an int
        (math.sqrt, (4,), T.f64),
        (abs, (-3,), T.i8),
        (round, (2.5,), T.i8),
        (min, (1, 2.5), T.i8),  # Python's min(1, 2.5) is the int 1
        (math.gcd, (12, 18), T.i8),
        (math.isnan, (1.0,), T.i8),
    ],
)
def test_python_functions_on_python_numbers_are_python_values(fn, numbers, out):
    assert _python_value(fn, *numbers).specialize(T.i8).out_type is out


def test_a_python_function_that_fails_on_its_numbers_fails_the_compile():
    with pytest.raises(CompileError, match=r"sqrt\(-1\) fails at compile time: math domain error"):
        _python_value(math.sqrt, -1).specialize(T.i8)


def test_math_remainder_is_not_numpys_remainder():
    assert math.remainder not in B.PYTHON_ALIASES  # IEEE's: round to even, not floor modulo


@pytest.mark.parametrize(
    "fn, types, out",
    [
        (gl.sqrt, [T.bf16], T.bf16),
        (gl.arctan2, [T.bf16, T.i8], T.bf16),
        (gl.add, [T.bf16, T.i16], T.f32),
        (gl.nextafter, [T.bf16, T.bf16], T.bf16),
        (gl.gcd, [T.bf16, T.bf16], None),
        (gl.bitwise_count, [T.bf16], None),
        (gl.signbit, [T.bf16], T.bool_),
        (gl.floor_divide, [T.bf16, T.u8], T.bf16),
    ],
)
def test_bf16_which_numpy_lacks_computes_where_f16_would(fn, types, out):
    kernel = _unary(fn) if len(types) == 1 else _binary(fn)
    try:
        got = kernel.specialize(*types).out_type
    except CompileError:
        got = None
    assert got is out


def test_a_builtin_without_a_loop_for_the_types_says_what_it_takes():
    with pytest.raises(CompileError, match=r"g\.gcd takes integers, not \(g\.f32, g\.f32\)"):
        _binary(gl.gcd).specialize(T.f32, T.f32)
    with pytest.raises(CompileError, match=r"g\.negative is not defined on bools"):
        _unary(gl.negative).specialize(T.bool_)
    with pytest.raises(CompileError, match=r"exponent must be an integer"):
        _binary(gl.ldexp).specialize(T.f32, T.f32)


def test_the_docs_builtins_table_is_the_one_the_compiler_uses():
    text = DOCS.read_text()
    match = re.search(r"<!-- builtins table: generated.*?-->\n(.*?)<!-- end of the builtins table -->", text, re.S)
    assert match, "docs/kernels.md has no generated builtins table"
    assert match.group(1) == reference.markdown(), "regenerate it with gompute.lang.reference.markdown()"


@g.map_kernel
def _numpy_functions(x: g.f16, c: g.bool_):
    return np.where(c, np.clip(x, -1, 1), np.round(x))


def test_np_where_clip_and_round_are_the_builtins_of_their_meaning():
    pytest.importorskip("gompute._core", reason="the kernel runs on the host runtime")
    x = np.array([-2.5, -0.5, 0.5, 1.5, 3.25], np.float16)
    c = np.array([True, False, True, False, True])
    got = g.map(_numpy_functions)(x, c)
    np.testing.assert_array_equal(got, np.where(c, np.clip(x, -1, 1), np.round(x)))
    assert got.dtype == np.float16


def test_an_unsupported_ufunc_says_why():
    with pytest.raises(CompileError, match=r"np\.divmod is not supported in kernels: two results"):
        _binary(np.divmod).specialize(T.i32, T.i32)
    with pytest.raises(CompileError, match=r"np\.matmul is not supported in kernels: acts on whole arrays"):
        _binary(np.matmul).specialize(T.f32, T.f32)


COMPLEX_DTYPES = [np.complex64, np.complex128]
COMPLEX_MIXED = [(np.float32, np.complex64), (np.complex64, np.float64), (np.int64, np.complex64)]
COMPLEX_MIXED += [(np.complex64, np.complex128), (np.bool_, np.complex128), (np.float16, np.complex64)]
COMPLEX_MIXED += [(np.uint8, np.complex64), (np.complex64, np.int8)]


def _complex_check(name, kernel, types, *np_args):
    """NumPy's result dtype, or, for a row complex_math.REFUSED names, its refusal."""
    want = _numpy_dtype(getattr(np, name), *np_args)
    try:
        got = kernel.specialize(*types).out_type.dtype
    except CompileError as e:
        if want is not None and B.ROW_NAME[name] in C.REFUSED:
            said = {f"g.{n} of complex numbers is not supported: " for n in (name, B.ROW_NAME[name])}
            assert any(s in str(e) for s in said), str(e)  # the name called, or np.NAME's row
            return
        got = None
    assert got == want, f"np.{name}{tuple(str(t) for t in types)}: NumPy gives {want}, gompute {got}"


@pytest.mark.parametrize("name", SUPPORTED)
def test_complex_result_dtype_is_numpys_or_refused(name):
    ufunc = getattr(np, name)
    for spelled in (ufunc, getattr(gl, name)):
        if ufunc.nin == 1:
            for d in COMPLEX_DTYPES:
                _complex_check(name, _unary(spelled), [T.from_dtype(d)], np.zeros(3, d))
            _complex_check(name, _of_numbers(spelled, 1j, 1), [T.f32], 1j)
            continue
        for a, b in [(d, d) for d in COMPLEX_DTYPES] + COMPLEX_MIXED + [(b, a) for a, b in COMPLEX_MIXED]:
            _complex_check(name, _binary(spelled), [T.from_dtype(a), T.from_dtype(b)], np.zeros(3, a), np.zeros(3, b))
        for d in [np.float32, np.float64, np.int16, *COMPLEX_DTYPES]:  # a Python complex beside an array is weak
            _complex_check(name, _beside_a_number(spelled, 1j), [T.from_dtype(d)], np.zeros(3, d), 1j)
        _complex_check(name, _of_numbers(spelled, 1j, 2), [T.f32], 1j, 1j)


@pytest.mark.parametrize("fn", [np.real, np.imag, np.angle, np.conj])
def test_real_imag_angle_and_conj_are_numpys_on_every_dtype(fn):
    kernel = _unary(fn)
    for d in DTYPES + COMPLEX_DTYPES:
        want = np.asarray(fn(np.zeros(3, d))).dtype
        assert kernel.specialize(T.from_dtype(d)).out_type.dtype == want, (fn.__name__, d)


@g.map_kernel
def _powers(a, b):
    return g.pow(a, b) + pow(a, b) * a**b


def test_g_pow_is_np_power_and_pythons_pow_is_the_operator():
    assert g.pow is gl.pow and B.PYTHON_ALIASES[np.pow] is B.BUILTINS["power"]
    bools = _binary(gl.pow).specialize(T.bool_, T.bool_)
    assert bools.out_type is T.i8  # np.power(True, True) is int8; `**` refuses two bools
    with pytest.raises(CompileError, match="arithmetic on two bools"):
        _binary(pow).specialize(T.bool_, T.bool_)
    assert _of_numbers(gl.pow, 2, 2).specialize(T.i8).out_type is T.i64  # np.power(2, 2) is an int64
    assert _python_value(pow, 2, 3).specialize(T.i8).out_type is T.i8  # Python's pow(2, 3) is the int 8
    assert _powers.specialize(T.f32, T.i8).out_type is T.f32
