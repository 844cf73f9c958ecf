"""Complex numbers in kernels: g.c64 and g.c128 typed as NumPy 2 types them, computing NumPy's
values (within the bounds docs/kernels.md states), refused where NumPy has no meaning for them,
and the same text compiling for CUDA and HIP and running through the CUDA-on-CPU shim."""

from __future__ import annotations

import cmath
import importlib.util
import itertools

import numpy as np
import pytest

import gompute as g
from gompute import types as T
from gompute.compile import nvrtc
from gompute.errors import CompileError
from gompute.lang import angle, conj, imag, real
from gompute.lang.kernel import compile_module
from gompute.lang.module import module_source
from gompute.lang.typing_rules import WEAK_BOOL, WEAK_COMPLEX, WEAK_FLOAT, WEAK_INT, concrete, promote
from gompute.types import c64, c128
from tests import amdgcn
from tests.conftest import open_compute
from tests.fakes import images

NUMPY_TYPES = [t for t in T.ALL_TYPES if t.dtype is not None]
COMPLEX = [c64, c128]


# -- typing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("a, b", [(a, b) for a, b in itertools.product(NUMPY_TYPES, COMPLEX)], ids=str)
def test_promotion_with_complex_is_numpys(a, b):
    assert promote(a, b).dtype == np.result_type(a.dtype, b.dtype)
    assert promote(b, a).dtype == np.result_type(b.dtype, a.dtype)


@pytest.mark.parametrize("t", NUMPY_TYPES, ids=str)
def test_python_numbers_with_complex_are_weak_as_in_numpy_2(t):
    x = np.zeros(1, t.dtype)
    assert concrete(promote(t, WEAK_COMPLEX)).dtype == (x + 1j).dtype
    for weak, value in ((WEAK_INT, 1), (WEAK_FLOAT, 1.5), (WEAK_BOOL, True)):
        if t.is_complex:
            assert concrete(promote(t, weak)).dtype == (x + value).dtype


def test_bf16_goes_into_complex_as_f32_does():
    assert promote(T.bf16, c64) is c64 and promote(T.bf16, c128) is c128
    assert promote(T.bf16, WEAK_COMPLEX) is c64


@g.map_kernel
def add(x, y):
    return x + y


@g.map_kernel
def times_i(x):
    return x * 1j


@pytest.mark.parametrize(
    "a, b", [(np.float32, np.complex64), (np.float64, np.complex64), (np.int32, np.complex64), (np.int8, np.complex128)]
)
def test_mixed_kernels_give_numpys_result_type(a, b):
    x, y = np.arange(1, 5).astype(a), (np.arange(4) + 0.5j).astype(b)
    got = g.map(add)(x, y)
    assert got.dtype == (x + y).dtype
    np.testing.assert_allclose(got, x + y, rtol=1e-6)
    for t in (np.float16, np.float32, np.float64, np.int16):
        assert g.map(times_i)(np.ones(3, t)).dtype == (np.ones(3, t) * 1j).dtype


# -- arithmetic -----------------------------------------------------------------------------------

SPECIAL = [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 1e-310, 3e300]


def special_grid(dtype) -> np.ndarray:
    """Every complex number whose parts are both in SPECIAL."""
    re, im = np.meshgrid(SPECIAL, SPECIAL)
    with np.errstate(over="ignore"):
        return (re + 1j * im).ravel().astype(dtype)


def random_values(dtype, n=4000, seed=5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    scales = np.repeat([1e-3, 1.0, 10.0, 100.0], n // 4)
    z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)) * scales
    return z.astype(dtype)


@g.map_kernel
def arithmetic(z, w):
    return z * w - z / w + (z - w) * 2 + c128(-z == w, z != w)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_arithmetic_is_numpys(dtype):
    z, w = random_values(dtype), random_values(dtype, seed=6)
    want = z * w - z / w + (z - w) * 2 + ((-z == w) + 1j * (z != w))
    got = g.map(arithmetic)(z, w)
    assert got.dtype == np.complex128
    # Each operation within an ulp or two of NumPy's: the sum within a few ulps of its terms' size.
    scale = np.abs(z * w) + np.abs(z / w) + 2 * np.abs(z - w) + 1
    assert (np.abs(got - want) <= 8 * np.finfo(dtype).eps * scale).all()


def assert_like_numpy(got: np.ndarray, want: np.ndarray, ulps: float) -> None:
    """NumPy's pattern of infinities and NaNs in each part, and its finite values within `ulps`
    of the result's magnitude."""
    for part in ("real", "imag"):
        g_part, n_part = getattr(got, part), getattr(want, part)
        np.testing.assert_array_equal(np.isnan(g_part), np.isnan(n_part), err_msg=f"NaN {part} parts differ")
        np.testing.assert_array_equal(np.isinf(g_part), np.isinf(n_part), err_msg=f"infinite {part} parts differ")
    finite = np.isfinite(want)
    part = np.float32 if want.dtype == np.complex64 else np.float64
    assert ulp_error(got[finite], want[finite].astype(np.complex128), part).max(initial=0) <= ulps


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv"])
def test_operators_on_special_values_are_numpys(dtype, op):
    z = np.repeat(special_grid(dtype), len(SPECIAL) ** 2)
    w = np.tile(special_grid(dtype), len(SPECIAL) ** 2)
    with np.errstate(all="ignore"):
        want = {"add": z + w, "sub": z - w, "mul": z * w, "truediv": z / w}[op]
    got = g.map(OPERATORS[op])(z, w)
    if op in ("add", "sub"):  # one rounding per part, as NumPy's
        np.testing.assert_array_equal(got, want)
    else:  # the compilers (NumPy's and gompute's) may fuse a product into an add
        assert_like_numpy(got, want, 1)


@g.map_kernel
def plus(z, w):
    return z + w


@g.map_kernel
def minus(z, w):
    return z - w


@g.map_kernel
def times(z, w):
    return z * w


@g.map_kernel
def over(z, w):
    return z / w


OPERATORS = {"add": plus, "sub": minus, "mul": times, "truediv": over}


# -- functions ------------------------------------------------------------------------------------


@g.map_kernel
def c_exp(z):
    return g.exp(z)


@g.map_kernel
def c_log(z):
    return g.log(z)


@g.map_kernel
def c_sqrt(z):
    return g.sqrt(z)


@g.map_kernel
def c_sin(z):
    return g.sin(z)


@g.map_kernel
def c_cos(z):
    return g.cos(z)


@g.map_kernel
def c_tanh(z):
    return g.tanh(z)


@g.map_kernel
def c_pow(z):
    return z ** (0.3 - 0.7j)


FUNCTIONS = {
    "exp": (c_exp, np.exp),
    "log": (c_log, np.log),
    "sqrt": (c_sqrt, np.sqrt),
    "sin": (c_sin, np.sin),
    "cos": (c_cos, np.cos),
    "tanh": (c_tanh, np.tanh),
    "pow": (c_pow, lambda z: z ** (0.3 - 0.7j)),
}
C64_EXPONENT = complex(np.complex64(0.3 - 0.7j))  # the Python complex, as a c64 kernel holds it
# The bounds docs/kernels.md states, in ulps of the result's magnitude in its part type: c64
# computes in double (so against the exact value, NumPy's c128), c128 against NumPy's c128.
ULPS = {np.complex64: 2, np.complex128: 8}


def ulp_error(got: np.ndarray, want: np.ndarray, part) -> np.ndarray:
    """Each element's error in ulps of the exact value's magnitude in `part`; past the part type's
    range (where the result is rightly infinite) 0."""
    magnitude = np.abs(want)
    fits = magnitude <= np.finfo(part).max
    scale = np.spacing(np.where(fits, magnitude, 1).astype(part)).astype(np.float64)
    return np.where(fits, np.abs(got.astype(np.complex128) - want) / scale, 0)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_functions_are_within_their_bound_of_numpy(dtype, name):
    kernel, numpy_fn = FUNCTIONS[name]
    z = random_values(dtype)
    got = g.map(kernel)(z)
    assert got.dtype == dtype
    if name == "pow" and dtype == np.complex64:
        want = z.astype(np.complex128) ** C64_EXPONENT
    else:
        want = numpy_fn(z.astype(np.complex128))
    part = np.float32 if dtype == np.complex64 else np.float64
    assert ulp_error(got, want, part).max() <= ULPS[dtype]


@g.map_kernel
def square(z):
    return z**2


@g.map_kernel
def cube(z):
    return z**3


@g.map_kernel
def power_minus_7(z):
    return z**-7


@g.map_kernel
def power_19(z):
    return g.pow(z, 19)


@g.map_kernel
def power_0(z):
    return z**0


INTEGER_POWERS = {2: square, 3: cube, -7: power_minus_7, 19: power_19, 0: power_0}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("n", INTEGER_POWERS)
def test_integer_powers_multiply_as_numpy_does(dtype, n):
    z = random_values(dtype)[1000:2000]  # |z| near 1: z**19 and z**-7 stay finite
    got = g.map(INTEGER_POWERS[n])(z)
    assert got.dtype == dtype
    assert_like_numpy(got, z**n, 2)


SPECIAL_FUNCTIONS = {"exp": (c_exp, np.exp), "log": (c_log, np.log), "sqrt": (c_sqrt, np.sqrt)}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", SPECIAL_FUNCTIONS)
def test_exp_log_and_sqrt_of_infinities_nans_and_zeros_are_numpys(dtype, name):
    kernel, numpy_fn = SPECIAL_FUNCTIONS[name]
    z = special_grid(dtype)
    with np.errstate(all="ignore"):
        want = numpy_fn(z)
    assert_like_numpy(g.map(kernel)(z), want, ULPS[dtype])


@g.map_kernel
def parts(z: c128) -> c128:
    return c128(z.real + abs(z), angle(z) - z.imag) + conj(z) * real(z) + imag(-z)


@g.map_kernel
def of_reals(x):
    return real(x) + imag(x) + conj(x) + angle(x) + x.imag + x.real


@g.map_kernel
def build(x: g.f32, y: g.f32) -> c64:
    return c64(x, y) + c64(1, 2) + complex(x, 0.5) + cmath.sqrt(x)


def test_parts_construction_and_the_functions_of_real_values():
    z = random_values(np.complex128)
    want = (z.real + abs(z) + 1j * (np.angle(z) - z.imag)) + np.conj(z) * np.real(z) + np.imag(-z)
    np.testing.assert_allclose(g.map(parts)(z), want, rtol=1e-14)
    for dtype in (np.float32, np.float64, np.int16):
        x = np.arange(-3, 4).astype(dtype)
        want = np.real(x) + np.imag(x) + np.conj(x) + np.angle(x) + x.imag + x.real
        got = g.map(of_reals)(x)
        np.testing.assert_allclose(got, want, rtol=1e-6)
    x, y = np.linspace(-2, 2, 9, dtype=np.float32), np.linspace(5, 1, 9, dtype=np.float32)
    got = g.map(build)(x, y)
    assert got.dtype == np.complex64  # complex(x, 0.5) and cmath.sqrt(x) are Python complex numbers: weak
    want = (x + 1j * y) + (1 + 2j) + (x + 0.5j) + np.sqrt(x.astype(np.complex128))
    np.testing.assert_allclose(got, want, rtol=1e-6)


@g.map_kernel
def predicates(z):
    return g.isnan(z) or g.isinf(z) and not g.isfinite(z)


def test_nan_inf_and_finite_test_either_part():
    z = special_grid(np.complex64)
    want = np.isnan(z) | (np.isinf(z) & ~np.isfinite(z))
    np.testing.assert_array_equal(g.map(predicates)(z), want)


# -- what the language refuses --------------------------------------------------------------------


def _compile(tmp_path, source: str):
    """Imports the kernel `source` defines (from a file, where its source can be read) and compiles it."""
    path = tmp_path / "complex_kernel.py"
    path.write_text(f"import gompute as g\nfrom gompute.types import c64, c128\n\n@g.map_kernel\n{source}\n")
    spec = importlib.util.spec_from_file_location("complex_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.k.specialize()


@pytest.mark.parametrize(
    "source, message",
    [
        ("def k(z: c64) -> g.bool_:\n    return z < 1", "complex numbers have no order"),
        ("def k(z: c64) -> c64:\n    return max(z, 1)", "g.max of complex numbers is not supported: complex numbers"),
        ("def k(z: c64) -> c64:\n    return z // 2", "// is not defined for complex numbers"),
        ("def k(z: c64) -> c64:\n    return z % 2", "% is not defined for complex numbers"),
        ("def k(z: c64) -> c64:\n    return z & 2", "bitwise operators need integers or bools"),
        ("def k(z: c64) -> c64:\n    return g.floor(z)", "g.floor does not take complex arguments"),
        ("def k(z: c64) -> g.f32:\n    return g.f32(z)", "would drop its imaginary part"),
        ("def k(z: c64) -> g.f32:\n    return z", "would drop its imaginary part"),
        ("def k(z: c64) -> c64:\n    return c64(z, 1)", "takes two real numbers"),
        ("def k(z: c64) -> c64:\n    return z.conjugate", "only attributes are .real and .imag"),
    ],
)
def test_what_complex_numbers_refuse_says_why(tmp_path, source, message):
    with pytest.raises(CompileError, match=message):
        _compile(tmp_path, source)


# -- frameworks and GPU text ----------------------------------------------------------------------


def test_torch_complex_tensors_give_numpys_results():
    torch = pytest.importorskip("torch")
    z = torch.from_numpy(random_values(np.complex64))
    got = g.map(c_sqrt)(z)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.complex64
    want = np.sqrt(z.numpy().astype(np.complex128))
    assert ulp_error(got.numpy(), want, np.float32).max() <= ULPS[np.complex64]


GPU_SPECS = [c_exp, c_log, c_sqrt, c_sin, c_cos, c_tanh, c_pow, arithmetic, power_19, power_minus_7, predicates]


def _gpu_specs():
    specs = [k.specialize(c64) for k in GPU_SPECS if k is not arithmetic]
    specs += [k.specialize(c128) for k in (c_exp, c_pow)] + [arithmetic.specialize(c64, c128), parts.specialize()]
    return specs + [build.specialize(), build.variant((T.f16, T.i8), c128)]


@pytest.mark.skipif(not nvrtc.available(), reason="NVRTC not installed (pip install nvidia-cuda-nvrtc)")
def test_complex_kernels_compile_with_nvrtc():
    image = compile_module(_gpu_specs(), "cuda", "compute_75", "test_complex")
    ptx = image.data.decode()
    assert all(f".entry {e.symbol}(" in ptx for e in image.entry_points)


@pytest.mark.skipif(amdgcn.missing() is not None, reason=amdgcn.missing() or "")
def test_complex_kernels_compile_with_hiprtc():
    image = compile_module(_gpu_specs(), "hip", "gfx90a", "test_complex")
    assert image.format == "hsaco" and image.data


@pytest.mark.parametrize("text", ["cuda", "hip"])
def test_the_gpu_text_computes_numpys_values_on_the_cpu(text):
    host = open_compute(g.Backend.host)
    spec = arithmetic.specialize(c64, c128)
    entry = spec.entry("map")
    image = images.gpu_text_image(module_source([spec], text), [e.symbol for e in spec.entry_points()], spec.name)
    z, w = random_values(np.complex64), random_values(np.complex128, seed=6)
    bufs = [host.empty(z.shape, t) for t in (c64, c128, c128)]
    for buf, values in zip(bufs, (z, w)):
        buf.upload(values)
    count = g.interface.arg(g.u64(z.size))
    host.load_module(image).get_kernel(entry.symbol).launch(
        4, spec.block_size, 0, [b.arg_ptr() for b in bufs] + [count]
    )
    host.synchronize()
    got = np.empty(z.shape, np.complex128)
    bufs[2].download(got)
    np.testing.assert_allclose(got, g.map(arithmetic)(z, w), rtol=4 * np.finfo(np.float64).eps)


class Shift(g.Params):
    k: g.i8
    z: c128  # at offset 16, as gompute.abi packs it (the host's c128 type is aligned to 8)


@g.map_kernel
def shifted_double(z: c128, p: Shift) -> c128:
    return z * 2 + p.z * p.k


@g.reduce_kernel(identity=0)
def real_sum(z: c128) -> g.f64:
    return z.real


def _at_8_past_16(n: int) -> np.ndarray:
    """n complex128 values at an address 8 past a multiple of 16: aligned, as NumPy calls it."""
    x = np.arange(2 * n + 1, dtype=np.float64)[1:].view(np.complex128)
    assert x.flags.aligned and x.ctypes.data % 16 == 8
    return x


@pytest.mark.parametrize("n", [1, 3, 17, 1001])
def test_c128_arrays_at_an_8_byte_boundary_are_read_and_written(n):
    """GCC's aligned 16-byte moves for an alignas(16) c128 faulted on these on the host."""
    x, out = _at_8_past_16(n), _at_8_past_16(n)
    want = x * 2 + (1 - 2j) * 3
    np.testing.assert_array_equal(g.map(shifted_double)(x, k=3, z=1 - 2j), want)
    assert g.map(shifted_double)(x, out=out, k=3, z=1 - 2j) is out
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(g.map(shifted_double)(x[::2], k=3, z=1 - 2j), want[::2])
    assert g.reduce(real_sum)(x) == x.real.sum()
