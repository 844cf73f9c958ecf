"""Generic kernels, one per operator and builtin, for tests/lang/test_ops.py.

Each is specialized per dtype and all are compiled into one module per backend.
"""

import math

import numpy as np

import gompute.lang as g
from gompute.lang import map_kernel


@map_kernel
def add(a, b):
    return a + b


@map_kernel
def sub(a, b):
    return a - b


@map_kernel
def mul(a, b):
    return a * b


@map_kernel
def truediv(a, b):
    return a / b


@map_kernel
def floordiv(a, b):
    return a // b


@map_kernel
def mod(a, b):
    return a % b


@map_kernel
def power(a, b):
    return a**b


@map_kernel
def bit_and(a, b):
    return a & b


@map_kernel
def bit_or(a, b):
    return a | b


@map_kernel
def bit_xor(a, b):
    return a ^ b


@map_kernel
def lshift(a, b):
    return a << b


@map_kernel
def rshift(a, b):
    return a >> b


@map_kernel
def lt(a, b):
    return a < b


@map_kernel
def le(a, b):
    return a <= b


@map_kernel
def gt(a, b):
    return a > b


@map_kernel
def ge(a, b):
    return a >= b


@map_kernel
def eq(a, b):
    return a == b


@map_kernel
def ne(a, b):
    return a != b


@map_kernel
def logical_and(a, b):
    return a and b


@map_kernel
def logical_or(a, b):
    return a or b


@map_kernel
def neg(a):
    return -a


@map_kernel
def invert(a):
    return ~a


@map_kernel
def logical_not(a):
    return not a


@map_kernel
def chained(a, b, c):
    return a < b <= c


@map_kernel
def ternary(c, a, b):
    return a if c else b


@map_kernel
def b_abs(a):
    return g.abs(a)


@map_kernel
def b_sqrt(a):
    return g.sqrt(a)


@map_kernel
def b_rsqrt(a):
    return g.rsqrt(a)


@map_kernel
def b_exp(a):
    return g.exp(a)


@map_kernel
def b_exp2(a):
    return g.exp2(a)


@map_kernel
def b_log(a):
    return g.log(a)


@map_kernel
def b_log2(a):
    return g.log2(a)


@map_kernel
def b_log10(a):
    return g.log10(a)


@map_kernel
def b_log1p(a):
    return g.log1p(a)


@map_kernel
def b_expm1(a):
    return g.expm1(a)


@map_kernel
def b_sin(a):
    return g.sin(a)


@map_kernel
def b_cos(a):
    return g.cos(a)


@map_kernel
def b_tan(a):
    return g.tan(a)


@map_kernel
def b_asin(a):
    return g.asin(a)


@map_kernel
def b_acos(a):
    return g.acos(a)


@map_kernel
def b_atan(a):
    return g.atan(a)


@map_kernel
def b_sinh(a):
    return g.sinh(a)


@map_kernel
def b_cosh(a):
    return g.cosh(a)


@map_kernel
def b_tanh(a):
    return g.tanh(a)


@map_kernel
def b_erf(a):
    return g.erf(a)


@map_kernel
def b_erfc(a):
    return g.erfc(a)


@map_kernel
def b_floor(a):
    return g.floor(a)


@map_kernel
def b_ceil(a):
    return g.ceil(a)


@map_kernel
def b_trunc(a):
    return g.trunc(a)


@map_kernel
def b_round(a):
    return g.round(a)


@map_kernel
def b_isnan(a):
    return g.isnan(a)


@map_kernel
def b_isinf(a):
    return g.isinf(a)


@map_kernel
def b_isfinite(a):
    return g.isfinite(a)


@map_kernel
def b_min(a, b):
    return g.min(a, b)


@map_kernel
def b_max(a, b):
    return g.max(a, b)


@map_kernel
def b_atan2(a, b):
    return g.atan2(a, b)


@map_kernel
def b_hypot(a, b):
    return g.hypot(a, b)


@map_kernel
def b_copysign(a, b):
    return g.copysign(a, b)


@map_kernel
def b_pow(a, b):
    return g.pow(a, b)


@map_kernel
def b_fma(a, b, c):
    return g.fma(a, b, c)


@map_kernel
def mul_add(a, b, c):
    return a * b + c


@map_kernel
def b_clamp(a, b, c):
    return g.clamp(a, b, c)


@map_kernel
def b_where(a, b, c):
    return g.where(a, b, c)


@map_kernel
def py_aliases(a, b):
    return abs(a) + min(a, b) + max(a, b, 0) + round(a) + math.sqrt(abs(a)) + pow(abs(a), 0.5) + math.floor(a)


@map_kernel
def literal_bounds(a):
    """min, max and clamp of an array and Python ints: each literal takes the array's type (the C++
    spells the template's type: an int64_t array against 3LL, a long long, would not deduce one)."""
    return g.min(0, a) + g.max(a, 7) + g.clamp(a, 1, 5) + g.clamp(3, 2, a)


@map_kernel
def zero_ties(a, b):
    """Which zero min, max and clamp keep of a +0.0 and a -0.0, a bit each."""
    ties = g.signbit(g.min(a, b)) * 1 + g.signbit(g.max(a, b)) * 2 + g.signbit(g.clamp(a, b, b)) * 4
    return ties + g.signbit(g.clamp(b, a, a)) * 8 + g.signbit(g.min(a, b, b)) * 16


# A float converted to an integer and back: the integer 0 is +0.0, whatever the float's sign (GCC, given
# -fno-trapping-math, would make each of these trunc(a), -0.0 for a in (-1, 0]).
@map_kernel
def round_trip_f32(a: g.f32) -> g.f32:
    return g.f32(g.i32(a))


@map_kernel
def round_trip_f64(a: g.f64) -> g.f64:
    return g.f64(g.i64(a))


@map_kernel
def round_trip_f16(a: g.f16) -> g.f16:
    return g.f16(g.i16(a))


@map_kernel
def round_trip_through_a_variable(a: g.f32) -> g.f32:
    i = g.i32(a) * 1
    return g.f32(i)


@g.func
def truncated(a):
    return g.i32(a)


@map_kernel
def round_trip_through_a_function(a: g.f32) -> g.f32:
    return g.f32(truncated(a) + 0)


ROUND_TRIPS = {
    round_trip_f32: np.float32,
    round_trip_f64: np.float64,
    round_trip_f16: np.float16,
    round_trip_through_a_variable: np.float32,
    round_trip_through_a_function: np.float32,
}
