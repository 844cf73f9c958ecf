"""Values at the edges of their types, checked against Python and NumPy 2: integers compared with
Python ints beyond their range, range() loops whose variable would step past its type's end, and
conversions to bfloat16 rounded once (from wide integers, from constants, beyond f32's range)."""

import struct

import numpy as np
import pytest

import gompute as g
from gompute.errors import CompileError
from gompute.lang import codegen
from gompute.types import _bf16_bits

pytest.importorskip("gompute._core", reason="the kernels run on the host runtime")


@g.map_kernel
def _u64_against_two_to_the_64(x: g.u64) -> g.i32:
    return (
        g.i32(x < 2**64)
        + 2 * g.i32(x == 2**64)
        + 4 * g.i32(2**64 > x)
        + 8 * g.i32(x != 2**64)
        + 16 * g.i32(x > -1)
        + 32 * g.i32(x >= 2**65)
    )


@g.map_kernel
def _i8_against_300(x: g.i8) -> g.i32:
    return g.i32(x < 300) + 2 * g.i32(x == -300) + 4 * g.i32(-300 < x)


@g.map_kernel
def _u16_against_inverted_256(x: g.u16) -> g.i32:
    return g.i32(x <= ~256) + 2 * g.i32(x > ~256) + 4 * g.i32(x == ~0)  # Python's -257 and -1


@g.map_kernel
def _u8_against_a_loop_variable(x: g.u8) -> g.i32:
    n = x - x
    for i in range(1):  # i, a Python int at run time: compared by value, not wrapped into u8
        n = g.i32(x < i - 1) + 2 * g.i32(x == i + 256) + 4 * g.i32(x > -i - 1)
    return n


@g.map_kernel
def _python_ints_past_64_bits(x: g.f64) -> g.f64:
    return (x if (2**63 - 1 + 1) * 2 else -x) + ((300 << 64) > 3)  # Python's truth and order: x + 1


def test_an_integer_compared_with_a_python_int_beyond_its_range_is_compared_by_value():
    """NumPy 2 compares by value; compared through f64, u64 2**64 - 1 would round to 2**64 and equal it."""
    x = np.array([2**64 - 1, 2**64 - 1024, 5, 0], np.uint64)
    want = (x < 2**64) + 2 * (x == 2**64) + 4 * (2**64 > x) + 8 * (x != 2**64) + 16 * (x > -1) + 32 * (x >= 2**65)
    np.testing.assert_array_equal(g.map(_u64_against_two_to_the_64)(x), want.astype(np.int32))
    y = np.array([-128, 0, 127], np.int8)
    np.testing.assert_array_equal(g.map(_i8_against_300)(y), np.full(3, 5, np.int32))
    z = np.array([0, 1, 65279, 65535], np.uint16)  # 65279 and 65535: -257 and -1 wrapped into u16
    np.testing.assert_array_equal(g.map(_u16_against_inverted_256)(z), np.full(4, 2, np.int32))
    u = np.array([0, 1, 255], np.uint8)
    np.testing.assert_array_equal(g.map(_u8_against_a_loop_variable)(u), np.full(3, 4, np.int32))
    f = np.array([1.0, -2.5])
    np.testing.assert_array_equal(g.map(_python_ints_past_64_bits)(f), f + 1)


@g.map_kernel
def _builtins_of_a_lone_python_int_past_i64(x: g.f64):
    return x + g.abs(2**63) + g.isnan(2**64 - 1)


def test_a_builtin_takes_a_lone_python_int_past_int64_as_uint64():
    """np.isnan(2**63) is False and np.abs(2**63) the uint64 2**63 (NumPy converts a lone Python int as
    np.asarray does); they did not compile."""
    x = np.array([0.5, -3.0])
    got = g.map(_builtins_of_a_lone_python_int_past_i64)(x)
    np.testing.assert_array_equal(got, x + np.abs(2**63) + np.isnan(2**64 - 1))


@pytest.mark.parametrize("t, value", [(g.u64, 2**64), (g.i64, 2**63), (g.i64, -(2**63) - 1), (g.u8, -1), (g.i8, 128)])
def test_a_constant_its_type_cannot_hold_is_never_spelled(t, value):
    """The frontend refuses or wraps such a constant; were one to reach the C++, GCC would truncate it."""
    assert codegen.literal(value - 1 if value > 0 else value + 1, t)
    with pytest.raises(CompileError, match="does not fit"):
        codegen.literal(value, t)


@g.map_kernel
def _clamp_of_two_arrays_and_a_python_float(z: g.u8, x: g.f32):
    return g.clamp(z, -2.5, x)


@g.map_kernel
def _clamp_of_two_arrays_and_a_python_int(b: g.bool_, y: g.i8):
    return g.clamp(b, 2, y)


@g.map_kernel
def _xor_with_a_python_bool(x: g.f32):
    return g.logical_xor(x, True) | g.logical_xor(False, x > 1)


def test_python_numbers_take_the_type_of_all_the_arguments_together():
    """NEP 50: np.clip(u8, -2.5, f32) is f32 (u8 with -2.5 alone would be f64); the loop was f64."""
    z, x = np.array([0, 3, 200], np.uint8), np.array([1.5, -7.0, 300.0], np.float32)
    got = g.map(_clamp_of_two_arrays_and_a_python_float)(z, x)
    want = np.clip(z, -2.5, x)
    assert (got.dtype, want.dtype) == (np.float32, np.float32)
    np.testing.assert_array_equal(got, want)
    b, y = np.array([True, False, True]), np.array([1, 5, -3], np.int8)
    got = g.map(_clamp_of_two_arrays_and_a_python_int)(b, y)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, np.clip(b, 2, y))


def test_logical_xor_takes_a_python_bool():
    """Its C++ compared a bool with a Python bool as the i64/u64 pair, and did not compile."""
    x = np.array([0.0, 1.5, -2.0, 3.0], np.float32)
    want = np.logical_xor(x, True) | np.logical_xor(False, x > 1)
    np.testing.assert_array_equal(g.map(_xor_with_a_python_bool)(x), want)


def _trips(N):
    class Span(g.Params):
        start: N
        stop: N
        step: N

    @g.map_kernel
    def trips(x: g.i64, p: Span) -> g.i64:
        n = x
        for _ in range(p.start, p.stop, p.step):  # a run-time step
            n += 1
        return n

    return trips


def _trips_to_the_top(N):
    class Start(g.Params):
        start: N

    hi = int(np.iinfo(N.dtype).max)

    @g.map_kernel
    def trips_to_the_top(x: g.i64, p: Start) -> g.i64:
        n = x
        for _ in range(p.start, hi, 3):  # a constant stop and step, a run-time start
            n += 1
        return n

    return trips_to_the_top


@pytest.mark.parametrize(
    "itype, start, stop, step",
    [
        (g.i8, 120, 127, 10),
        (g.i8, -120, -128, -10),
        (g.i8, -128, 127, 100),
        (g.u8, 250, 255, 3),
        (g.i16, 32000, 32767, 700),
        (g.i32, 2**31 - 5, 2**31 - 1, 2**30),
        (g.i64, 2**63 - 8, 2**63 - 1, 2**62),
        (g.i64, -(2**63) + 3, -(2**63), -(2**62)),
        (g.u64, 2**64 - 10, 2**64 - 1, 2**63),
        (g.i32, 0, 10, 3),
        (g.i32, 10, 0, -3),
        (g.i32, 0, 10, 0),  # Python raises; a kernel cannot, and runs no trip
    ],
    ids=str,
)
def test_a_run_time_range_never_steps_past_its_types_end(itype, start, stop, step):
    """`it += step` past the type's end wrapped: range(120, 127, 10) over i8 never ended."""
    want = len(range(start, stop, step)) if step else 0
    got = g.map(_trips(itype))(np.zeros(3, np.int64), start=start, stop=stop, step=step)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("itype", [g.i8, g.u8, g.i16, g.i32, g.i64, g.u64], ids=str)
def test_a_range_to_the_top_of_its_type_ends(itype):
    hi = int(np.iinfo(itype.dtype).max)
    for start in (hi - 7, hi - 3, hi - 1, hi):
        got = g.map(_trips_to_the_top(itype))(np.zeros(1, np.int64), start=start)
        assert got[0] == len(range(start, hi, 3)), start


def _f32(bits16: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits16 << 16))[0]


@g.map_kernel
def _i32_to_bf16(x: g.i32) -> g.f32:
    return g.f32(g.bf16(x))


def test_a_wide_integer_becomes_bf16_rounded_once():
    """Through f32 it rounded twice: 2**25 + 2**17 + 1 gave 2**25, not 2**25 + 2**18."""
    x = np.array([2**25 + 2**17 + 1, 2**30 + 2**22 + 1, -(2**25 + 2**17 + 1), 255, 257, 2**31 - 1], np.int32)
    want = [_f32(_bf16_bits(float(v))) for v in x.tolist()]  # each int is exact as a Python float
    np.testing.assert_array_equal(g.map(_i32_to_bf16)(x), np.array(want, np.float32))


@g.map_kernel
def _i64_to_bf16(x: g.i64) -> g.f32:
    return g.f32(g.bf16(x))


@g.map_kernel
def _u64_to_bf16(x: g.u64) -> g.f32:
    return g.f32(g.bf16(x))


def _bf16_of_int(v: int) -> float:
    """bf16 of the integer v rounded once to nearest even, by exact integer arithmetic."""
    if v == 0:
        return 0.0
    m, sign = abs(v), -1 if v < 0 else 1
    shift = max(m.bit_length() - 8, 0)
    q, r = divmod(m, 1 << shift)
    half = (1 << shift) >> 1
    if shift and (r > half or (r == half and q & 1)):
        q += 1
    return sign * float(q << shift)


def test_a_64_bit_integer_becomes_bf16_rounded_once():
    """Past 2**53 the conversion to f64 rounded too: 2**62 + 2**54 + 1 (just above a bf16 tie) went
    to 2**62 through f64, where once-rounded it is 2**62 + 2**55."""
    tie = 2**62 + 2**54  # halfway between bf16 2**62 and 2**62 + 2**55
    ints = [tie + 1, tie, tie + 2**55, -(tie + 1), 2**53 + 1, 2**63 - 1, -(2**63), 7]
    rng = np.random.default_rng(5)
    ints += [int(v) for v in rng.integers(-(2**63), 2**63 - 1, 200, dtype=np.int64)]
    x = np.array(ints, np.int64)
    np.testing.assert_array_equal(g.map(_i64_to_bf16)(x), np.array([_bf16_of_int(v) for v in ints], np.float32))
    big = [2**64 - 1, 2**63 + 2**55 + 1, 2**63 + 2**55, 3]
    u = np.array(big, np.uint64)
    np.testing.assert_array_equal(g.map(_u64_to_bf16)(u), np.array([_bf16_of_int(v) for v in big], np.float32))


NEAR_A_TIE = 1.0 + 2.0**-8 + 2.0**-30  # just above the tie between bf16 1.0 and 1.0078125


@g.map_kernel
def _bf16_constants(x: g.bf16) -> g.f32:
    return g.f32(g.bf16(NEAR_A_TIE)) + g.f32(x + 1e39)


def test_a_bf16_constant_is_rounded_once_and_may_be_past_f32s_range():
    """Rounded once to bf16, not through f32 (which would make NEAR_A_TIE 1.0), and 1e39, past
    f32's range, is bf16 infinity rather than an error when the kernel is made."""
    assert _f32(_bf16_bits(NEAR_A_TIE)) == 1.0078125 and _bf16_bits(1e39) == 0x7F80 and _bf16_bits(-1e39) == 0xFF80
    x = g.asbuffer(np.zeros(2, np.uint16)).view(g.bf16, (2,))
    out = np.asarray(g.map(_bf16_constants)(x))
    assert np.isinf(out).all() and (out > 0).all()


def test_bf16_bits_round_once_to_nearest_even():
    """Against round-to-odd to f32, then to nearest even at 8 bits (which is rounding once)."""
    rng = np.random.default_rng(3)
    values = np.concatenate(
        [rng.standard_normal(2000), rng.uniform(-1, 1, 500) * 2.0**-130, [2.0**-133 * 1.5, 2.0**-134, 3.39e38]]
    )
    for v in values.tolist():
        f = np.float32(v)
        if float(f) != v and not int(np.array(f).view(np.uint32)) & 1:  # to odd
            f = np.nextafter(f, np.float32(np.inf if abs(float(f)) < abs(v) else 0) * np.sign(v), dtype=np.float32)
        b = int(np.array(f).view(np.uint32))
        assert _bf16_bits(v) == ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF, v


class _Base(g.Params):
    scale: g.f32


def test_a_params_subclass_cannot_redefine_a_field():
    """Refused when the class is made: the struct would have two fields of the name, and the
    compiler's failure would read as a gompute bug."""
    with pytest.raises(g.ArgumentError, match="scale: a field its Params base defines already"):

        class Child(_Base):
            scale: g.f64


class _CNames(g.Params):
    float: g.f32  # a C++ keyword: renamed in the generated struct
    float_: g.f32  # and the name a rename by suffix would give `float`
    gompute_x: g.i32


@g.map_kernel
def _reads_c_named_fields(x: g.f32, p: _CNames) -> g.f32:
    return x * p.float + p.float_ + g.f32(p.gompute_x)


def test_fields_named_like_c_keep_apart_in_the_generated_struct():
    x = np.arange(4, dtype=np.float32)
    got = g.map(_reads_c_named_fields)(x, float=2.0, float_=10.0, gompute_x=100)
    np.testing.assert_array_equal(got, x * 2 + 110)


@pytest.mark.parametrize("t", [g.f16, g.bf16, g.f32, g.f64], ids=str)
def test_an_integer_past_f64s_range_overflows_a_float_type_by_name(t):
    """float() raised a bare OverflowError."""
    with pytest.raises(g.ArgumentError, match=f"integer of 1329 bits overflows g.{t.name}"):
        t(10**400)


@pytest.mark.parametrize(
    ("t", "largest", "half_step"),
    [
        (g.f16, 65504.0, 16.0),
        (g.bf16, 3.3895313892515355e38, 2.0**119),
        (g.f32, float(np.finfo(np.float32).max), 2.0**103),
    ],
    ids=str,
)
def test_a_value_overflows_a_float_type_only_where_it_would_round_to_infinity(t, largest, half_step):
    """Past the largest finite value by less than half a step rounds down to it, as in NumPy
    (np.float16(65519) is 65504), rather than overflowing."""
    below = largest + half_step * 0.99
    assert bytes(t(below)) == bytes(t(largest))
    assert bytes(t(-below)) == bytes(t(-largest))
    for past in (largest + half_step, -(largest + half_step)):
        with pytest.raises(g.ArgumentError, match=f"overflows g.{t.name}"):
            t(past)
