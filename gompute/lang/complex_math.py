"""The builtins on complex values: one table entry each, in the shape of `builtins.Builtin`.

A builtin applied to a complex argument is the entry of its name in `COMPLEX` (`g.exp(z)` is
`gompute_cexp(z)`); `for_args` makes that choice. `conj`, `real`, `imag` and `angle` are builtins of
their own that take real arguments too, as NumPy's functions of the names do (`np.real(x)` is x,
`np.imag(x)` a zero of x's type, `np.angle(x)` is arctan2(0, x)). The C++ helpers are in
preludes/complex.h; what each returns and how accurately is in docs/kernels.md ("Complex numbers").
"""

from __future__ import annotations

import cmath
from dataclasses import dataclass

from .. import types as T
from .builtins import FLOAT, PREDICATE, SAME, Builtin
from .typing_rules import Type, concrete, is_complex, promote_all

PART = "part"  # the complex argument's part type: abs, real, imag, angle (np.abs(c64) is f32)


@dataclass(frozen=True, eq=False, repr=False)
class ComplexBuiltin(Builtin):
    """A builtin on complex arguments; on real ones too where `real_rule` says how (else None)."""

    real_rule: str | None = None  # the builtins rule for real arguments (SAME, FLOAT); None: complex only

    def resolve(self, arg_types: list[Type]) -> tuple[Type, Type]:
        common = promote_all(arg_types)
        if not is_complex(common):  # conj, real, imag, angle of real values, typed as NumPy types them
            return Builtin(name=self.name, min_args=1, max_args=1, rule=self.real_rule, spell=None).resolve(arg_types)
        compute = concrete(common)  # a Python complex alone computes in c128, as np.exp(1j) does
        if self.rule == PREDICATE:
            return compute, T.bool_
        return compute, compute.part if self.rule == PART else compute


def _complex(name, rule, doc, real_rule=None, real_spell=None, helper=None):
    """An entry spelled `gompute_cNAME(z)` (complex.h) for complex arguments, `real_spell` for real ones."""
    c_name = f"gompute_c{helper or name}"

    def spell(t: Type, a: list[str]) -> str:
        return f"{c_name}({', '.join(a)})" if is_complex(t) else real_spell(t, a)

    return ComplexBuiltin(name=name, min_args=1, max_args=1, rule=rule, spell=spell, doc=doc, real_rule=real_rule)


def _zero(t: Type, a: list[str]) -> str:
    from .codegen import literal  # codegen spells the IR this module builds: imported when spelling

    return literal(0, t)


def _atan2_of_zero(t: Type, a: list[str]) -> str:
    suffix = "" if concrete(t) is T.f64 else "f"
    return f"atan2{suffix}({_zero(t, a)}, {a[0]})"


def _identity(t: Type, a: list[str]) -> str:
    return a[0]


# Builtins of their own, for real and complex arguments alike.
conj = _complex("conj", SAME, "complex conjugate; a real x unchanged", SAME, _identity)
real = _complex("real", PART, "real part (also z.real); a real x unchanged", SAME, _identity, "real")
imag = _complex("imag", PART, "imaginary part (also z.imag); 0 of x's type for a real x", SAME, _zero, "imag")
angle = _complex("angle", PART, "the argument of z, atan2(z.imag, z.real), in radians", FLOAT, _atan2_of_zero, "arg")
OWN: dict[str, ComplexBuiltin] = {b.name: b for b in (conj, real, imag, angle)}

# The entries the builtins of the same names take for complex arguments.
COMPLEX: dict[str, ComplexBuiltin] = {
    **OWN,
    "abs": _complex("abs", PART, "|z|, hypot(z.real, z.imag)"),
    "exp": _complex("exp", SAME, "e ** z"),
    "log": _complex("log", SAME, "principal logarithm: log|z| + i angle(z)"),
    "sqrt": _complex("sqrt", SAME, "principal square root (real part >= 0)"),
    "sin": _complex("sin", SAME, "sine"),
    "cos": _complex("cos", SAME, "cosine"),
    "tanh": _complex("tanh", SAME, "hyperbolic tangent"),
    "isnan": _complex("isnan", PREDICATE, "either part is NaN"),
    "isinf": _complex("isinf", PREDICATE, "either part is infinite"),
    "isfinite": _complex("isfinite", PREDICATE, "both parts are finite"),
}


def _make(t: Type, a: list[str]) -> str:
    return f"{T.c128.c_name if concrete(t) is T.f64 else T.c64.c_name}({a[0]}, {a[1]})"


# g.c64(re, im): the two parts, already of the part type the frontend converted them to.
make = Builtin(name="complex", min_args=2, max_args=2, rule=SAME, spell=_make, exact=True, doc="g.c64(re, im)")

# The `cmath` functions, which make complex values of real ones (cmath.sqrt(-1.0) is 1j).
CMATH_ALIASES: dict[object, str] = {
    cmath.exp: "exp",
    cmath.log: "log",
    cmath.sqrt: "sqrt",
    cmath.sin: "sin",
    cmath.cos: "cos",
    cmath.tanh: "tanh",
    cmath.phase: "angle",
    cmath.isnan: "isnan",
    cmath.isinf: "isinf",
    cmath.isfinite: "isfinite",
}


def for_args(b: Builtin, arg_types: list[Type]) -> Builtin | None:
    """The builtin that computes `b` on arguments of `arg_types`: `b` itself unless one of them is
    complex, then its complex entry, or None where it has none (g.floor(z), g.min(z, w))."""
    if isinstance(b, ComplexBuiltin) or not any(is_complex(t) for t in arg_types):
        return b
    return COMPLEX.get(b.name)


__all__ = ["COMPLEX", "OWN", "ComplexBuiltin", "angle", "conj", "for_args", "imag", "make", "real"]
