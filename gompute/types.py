"""Scalar types: the element types of kernels, params fields and launch arguments.

Each type is tied to its NumPy dtype, its C spelling and its DLPack code. Calling a type
makes a typed scalar (`g.u64(n)`), range-checked, which `g.interface.arg` turns into a
launch argument; inside a kernel the same call is a cast.
"""

from __future__ import annotations

import math
import operator
import struct
from dataclasses import dataclass, field

import numpy as np

from .errors import ArgumentError

# DLPack type codes (dlpack.h, DLDataTypeCode).
DL_INT, DL_UINT, DL_FLOAT, DL_BFLOAT, DL_COMPLEX, DL_BOOL = 0, 1, 2, 4, 5, 6


@dataclass(frozen=True, eq=False)
class ScalarType:
    """One element type: `g.f32`, `g.u64`, ... Call it to make a typed scalar."""

    name: str
    kind: str  # "b" bool, "i" signed, "u" unsigned, "f" float, "c" complex (two floats: real, imaginary)
    bits: int  # of the whole value: 64 for c64, two f32
    c_name: str
    dlpack_code: int
    dtype: np.dtype | None = field(repr=False)  # None: NumPy has no such dtype (bf16)

    @property
    def itemsize(self) -> int:
        return self.bits // 8

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_integer(self) -> bool:
        return self.kind in "iu"

    @property
    def is_complex(self) -> bool:
        return self.kind == "c"

    @property
    def part(self) -> ScalarType:
        """The float type of a complex type's real and imaginary parts (f32 for c64)."""
        if self.kind != "c":
            raise ValueError(f"g.{self.name} is not a complex type")
        return f32 if self.bits == 64 else f64

    def range(self) -> tuple[int, int] | None:
        """The representable integer range, or None for bool, floats and complex types."""
        if self.kind == "i":
            return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        if self.kind == "u":
            return 0, (1 << self.bits) - 1
        return None

    def max_float(self) -> float:
        """The largest finite value of a float type."""
        return _BF16_MAX if self.dtype is None else float(np.finfo(self.dtype).max)

    def _rounds_to_infinity(self, value: float) -> bool:
        """Whether `value` (finite) is past the largest finite value by half a step or more:
        g.f16(65519) is 65504, as np.float16(65519) is, and g.f16(65520) overflows."""
        if self.dtype is None:
            return _bf16_bits(value) & 0x7FFF == 0x7F80
        with np.errstate(over="ignore"):
            return bool(np.isinf(self.dtype.type(value)))

    def __call__(self, value) -> Scalar:
        return Scalar(self, self.check(value))

    def check(self, value):
        """The Python value `value` as this type holds it; raises if it does not fit."""
        if self.kind == "b":
            if isinstance(value, (bool, np.bool_)) or value in (0, 1):
                return bool(value)
            raise ArgumentError(f"{value!r} is not a bool; pass True or False to g.{self.name}")
        if self.kind == "c":
            return self._check_complex(value)
        if self.kind == "f":
            try:
                if not hasattr(type(value), "__float__") and not hasattr(type(value), "__index__"):
                    raise TypeError  # a str, bytes or bytearray, which float() would parse
                as_float = float(value)
            except (TypeError, ValueError):
                raise ArgumentError(f"{value!r} is not a number; g.{self.name} needs a float") from None
            except OverflowError:  # a Python int past f64's range
                raise ArgumentError(
                    f"an integer of {int(value).bit_length()} bits overflows g.{self.name} "
                    f"(largest finite value {self.max_float():g})"
                ) from None
            if math.isfinite(as_float) and self._rounds_to_infinity(as_float):
                raise ArgumentError(f"{as_float!r} overflows g.{self.name} (largest finite value {self.max_float():g})")
            return as_float
        try:
            as_int = operator.index(value)
        except TypeError:
            if isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
                as_int = int(value)
            else:
                raise ArgumentError(
                    f"{value!r} is not an integer; g.{self.name} needs a whole number "
                    f"(convert it yourself, e.g. g.{self.name}(int(x)), if truncation is what you want)"
                ) from None
        lo, hi = self.range()
        if not lo <= as_int <= hi:
            shown = (
                f"{float(value):g}"
                if isinstance(value, (float, np.floating))
                else as_int
                if as_int.bit_length() <= 128
                else f"an integer of {as_int.bit_length()} bits"
            )
            raise ArgumentError(f"{shown} is out of range for g.{self.name} ({lo} to {hi})")
        return as_int

    def _check_complex(self, value) -> complex:
        if (
            isinstance(value, (str, bytes, bytearray))
            or not hasattr(type(value), "__complex__")
            and not (hasattr(type(value), "__float__") or hasattr(type(value), "__index__"))
        ):
            raise ArgumentError(f"{value!r} is not a number; g.{self.name} needs a complex number")
        try:
            as_complex = complex(value)
        except OverflowError:  # a Python int past f64's range
            raise ArgumentError(f"{value!r} overflows g.{self.name}") from None
        for part in (as_complex.real, as_complex.imag):
            if math.isfinite(part) and self.part._rounds_to_infinity(part):
                raise ArgumentError(
                    f"{as_complex!r} overflows g.{self.name} (largest finite part {self.part.max_float():g})"
                )
        return as_complex

    def pack(self, value) -> bytes:
        """The little-endian bytes of `value` stored as this type."""
        value = self.check(value)
        if self is bf16:
            return _bf16_bits(value).to_bytes(2, "little")
        return np.array(value, dtype=self.dtype).tobytes()

    def __repr__(self) -> str:
        return f"g.{self.name}"

    def __reduce__(self):
        return resolve, (self.name,)  # the one object of its name: types are compared with `is`


@dataclass(frozen=True)
class Scalar:
    """A value with a gompute type, made by calling a type: `g.f32(2.5)`."""

    type: ScalarType
    value: bool | int | float

    def __bytes__(self) -> bytes:
        return self.type.pack(self.value)

    def __repr__(self) -> str:
        return f"g.{self.type.name}({self.value!r})"


_BF16_MAX = 3.3895313892515355e38


def _bf16_bits(value: float) -> int:
    """bfloat16 bits of the number `value`, rounded once to nearest even: not through f32, which
    rounds a second time (1 + 2**-8 + 2**-30 became 1.0) and cannot hold 1e39 (which is inf).
    NaN is a quiet NaN."""
    try:
        value = float(value)
    except OverflowError:  # a Python int past f64's range
        value = math.inf if value > 0 else -math.inf
    if math.isnan(value):
        return 0x7FC0
    sign = 0x8000 if math.copysign(1.0, value) < 0 else 0
    magnitude = abs(value)
    if magnitude == 0 or magnitude == math.inf:
        return sign | (0x7F80 if magnitude else 0)
    # 8 significant bits down to 2**-126, then subnormal steps of 2**-133; scaling by a power of
    # two is exact, and round() of a float rounds half to even.
    step = max(math.frexp(magnitude)[1] - 8, -133)
    rounded = round(math.ldexp(magnitude, -step)) * 2.0**step
    if rounded > _BF16_MAX:
        return sign | 0x7F80
    (bits,) = struct.unpack("<I", struct.pack("<f", rounded))  # exact: every bf16 is an f32
    return sign | (bits >> 16)


def _make(name, kind, bits, c_name, code, dtype):
    return ScalarType(name, kind, bits, c_name, code, np.dtype(dtype) if dtype else None)


bool_ = _make("bool_", "b", 8, "bool", DL_BOOL, np.bool_)
i8 = _make("i8", "i", 8, "int8_t", DL_INT, np.int8)
i16 = _make("i16", "i", 16, "int16_t", DL_INT, np.int16)
i32 = _make("i32", "i", 32, "int32_t", DL_INT, np.int32)
i64 = _make("i64", "i", 64, "int64_t", DL_INT, np.int64)
u8 = _make("u8", "u", 8, "uint8_t", DL_UINT, np.uint8)
u16 = _make("u16", "u", 16, "uint16_t", DL_UINT, np.uint16)
u32 = _make("u32", "u", 32, "uint32_t", DL_UINT, np.uint32)
u64 = _make("u64", "u", 64, "uint64_t", DL_UINT, np.uint64)
f16 = _make("f16", "f", 16, "gompute_f16", DL_FLOAT, np.float16)
bf16 = _make("bf16", "f", 16, "gompute_bf16", DL_BFLOAT, None)
f32 = _make("f32", "f", 32, "float", DL_FLOAT, np.float32)
f64 = _make("f64", "f", 64, "double", DL_FLOAT, np.float64)
# Laid out as cuComplex / cuDoubleComplex and std::complex: {re, im}, aligned to their size
# (preludes/complex.h).
c64 = _make("c64", "c", 64, "gompute_c64", DL_COMPLEX, np.complex64)
c128 = _make("c128", "c", 128, "gompute_c128", DL_COMPLEX, np.complex128)

ALL_TYPES: tuple[ScalarType, ...] = (bool_, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64, c64, c128)
BY_NAME: dict[str, ScalarType] = {t.name: t for t in ALL_TYPES}
_BY_DTYPE: dict[np.dtype, ScalarType] = {t.dtype: t for t in ALL_TYPES if t.dtype is not None}
_BY_DLPACK: dict[tuple[int, int], ScalarType] = {(t.dlpack_code, t.bits): t for t in ALL_TYPES}


def from_dtype(dtype) -> ScalarType:
    """The gompute type of a NumPy dtype (or anything np.dtype accepts)."""
    dt = np.dtype(dtype)
    if not dt.isnative:
        raise ArgumentError(f"dtype {dt} is not in this machine's byte order; convert it with .astype({dt.str[1:]!r})")
    try:
        return _BY_DTYPE[dt]
    except KeyError:
        if dt.name == "bfloat16" and dt.itemsize == 2:  # ml_dtypes' (JAX's) NumPy bfloat16
            return bf16
        supported = ", ".join(t.name for t in ALL_TYPES)
        raise ArgumentError(f"dtype {dt} has no gompute type (supported: {supported})") from None


def resolve(dtype) -> ScalarType:
    """A gompute type from itself, its name ("f32"), or anything np.dtype accepts."""
    if isinstance(dtype, ScalarType):
        return dtype
    if isinstance(dtype, str) and dtype in BY_NAME:
        return BY_NAME[dtype]
    try:
        return from_dtype(dtype)
    except TypeError:
        raise ArgumentError(f"{dtype!r} is not a dtype; pass a gompute type such as g.f32 or a NumPy dtype") from None


def from_dlpack(code: int, bits: int) -> ScalarType:
    """The gompute type of a DLPack (type code, bits) pair."""
    try:
        return _BY_DLPACK[(code, bits)]
    except KeyError:
        raise ArgumentError(f"DLPack dtype (code {code}, {bits} bits) has no gompute type") from None
