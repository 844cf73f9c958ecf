"""Type rules of the kernel language: NumPy 2 promotion (NEP 50) over gompute's scalar types.

A value in a kernel has either a concrete `ScalarType` or a *weak* type: the type of a Python
literal or of a module-level Python number. A weak value takes the type of whatever concrete
value it meets (`x * 2` with `x: f32` is f32), as NumPy 2 does for Python scalars; on its own it
becomes the default type of its kind (int64, float64, bool).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import types as T
from ..types import ScalarType


@dataclass(frozen=True)
class Weak:
    """The type of a Python number: kind "b" (bool), "i" (int), "f" (float) or "c" (complex)."""

    kind: str

    @property
    def name(self) -> str:
        return {"b": "bool", "i": "int", "f": "float", "c": "complex"}[self.kind]

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_integer(self) -> bool:
        return self.kind == "i"

    @property
    def is_complex(self) -> bool:
        return self.kind == "c"

    def __repr__(self) -> str:
        return f"python {self.name}"


WEAK_BOOL, WEAK_INT, WEAK_FLOAT, WEAK_COMPLEX = Weak("b"), Weak("i"), Weak("f"), Weak("c")
Type = ScalarType | Weak

_KIND_ORDER = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}
_DEFAULT = {"b": T.bool_, "i": T.i64, "f": T.f64, "c": T.c128}


def concrete(t: Type) -> ScalarType:
    """The type a value of type `t` is stored as: a weak type's default, else `t` itself."""
    return _DEFAULT[t.kind] if isinstance(t, Weak) else t


def is_bool(t: Type) -> bool:
    return t.kind == "b"


def is_complex(t: Type) -> bool:
    return t.kind == "c"


def is_half(t: Type) -> bool:
    """f16 and bf16: stored in 16 bits, computed in f32 registers rounded after each operation."""
    return t is T.f16 or t is T.bf16


def promote(a: Type, b: Type) -> Type:
    """The result type of a binary operation on values of types `a` and `b` (NEP 50)."""
    if isinstance(a, Weak) and isinstance(b, Weak):
        return a if _KIND_ORDER[a.kind] >= _KIND_ORDER[b.kind] else b
    if isinstance(b, Weak):
        a, b = b, a
    if isinstance(a, Weak):
        # A weak value keeps the concrete type unless it is of a higher kind.
        if _KIND_ORDER[a.kind] <= _KIND_ORDER[b.kind]:
            return b
        if a.kind == "c" and b.kind == "f":  # f32 * 1j is c64: the complex type of the float's precision
            return T.c128 if b is T.f64 else T.c64
        return _DEFAULT[a.kind]
    return _promote_concrete(a, b)


def promote_all(types) -> Type:
    """The types promoted together as np.result_type does: the arrays' first, then Python numbers
    (u8, 2.5, f32 is f32; u8 with 2.5 first would be f64)."""
    types = sorted(types, key=lambda t: isinstance(t, Weak))  # stable
    result = types[0]
    for t in types[1:]:
        result = promote(result, t)
    return result


def _promote_concrete(a: ScalarType, b: ScalarType) -> ScalarType:
    if a is b:
        return a
    if T.bf16 in (a, b):
        other = b if a is T.bf16 else a
        return _promote_bf16(other)
    return T.from_dtype(np.result_type(a.dtype, b.dtype))


def _promote_bf16(other: ScalarType) -> ScalarType:
    # bf16 has 8 significand bits: it holds bool and 8-bit integers exactly, as f16 does.
    if other.kind == "b" or (other.is_integer and other.bits <= 8):
        return T.bf16
    if other is T.f16 or (other.is_integer and other.bits <= 16):
        return T.f32
    return promote(T.f32, other)  # as f32 would: c64 holds bf16 exactly


def float_of(t: Type) -> ScalarType:
    """The float type NumPy's math functions give for an argument of type `t` (np.sqrt(int8) is f16)."""
    if isinstance(t, Weak):
        return T.c128 if t.kind == "c" else T.f64
    if t.is_float or t.kind == "c":
        return t
    if t.kind == "b" or t.bits <= 8:
        return T.f16
    if t.bits <= 16:
        return T.f32
    return T.f64


def fits(value, t: Type) -> bool:
    """Whether the Python number `value` converts to type `t` without overflow (NEP 50's check)."""
    if isinstance(t, Weak) or t.range() is None or isinstance(value, (float, complex)):
        return True
    lo, hi = t.range()
    return lo <= value <= hi


def weak_of(value) -> Weak | None:
    """The weak type of a Python number, or None if `value` is not one."""
    if isinstance(value, bool):
        return WEAK_BOOL
    if isinstance(value, int):
        return WEAK_INT
    if isinstance(value, float):
        return WEAK_FLOAT
    if isinstance(value, complex):
        return WEAK_COMPLEX
    return None


def describe(t: Type) -> str:
    return repr(t) if isinstance(t, Weak) else f"g.{t.name}"


def converts_exactly(src: ScalarType, dst: ScalarType) -> bool:
    """Whether `src` values convert to `dst` exactly, by NumPy's "safe" casting rule (which also
    counts int64/uint64 -> float64 as safe); bf16, which NumPy lacks, holds bool and 8-bit
    integers, and f32/f64 and both complex types hold it."""
    if src is dst:
        return True
    if T.bf16 in (src, dst):
        if src is T.bf16:
            return dst in (T.f32, T.f64, T.c64, T.c128)
        return src.kind == "b" or (src.is_integer and src.bits <= 8)
    return bool(np.can_cast(src.dtype, dst.dtype, "safe"))


def unsigned_c(t: ScalarType) -> str:
    """The unsigned C type integer arithmetic on `t` wraps in (never narrower than 32 bits)."""
    return "uint64_t" if t.bits > 32 else "uint32_t"
