"""The builtins on complex arguments: for each row of the builtins table that takes them, the entry
that computes it there.

`g.exp(z)` is the builtin `g.exp`; on a complex argument it computes as `COMPLEX["exp"]`,
`gompute_cexp(z)` (preludes/complex.h), and `for_args` makes that choice by the table's row, so that
an alias (`g.absolute`, `np.conjugate`) is its row's entry too. The ufuncs behind the operators
(`g.add`, `g.power`, `g.equal`, ...) compute as the operators do, over NumPy's complex loops.
Where NumPy has a complex loop that gompute does not compute, `REFUSED` says why; where NumPy has
none, neither does gompute. What each entry returns and how accurately is in docs/kernels.md
("Complex numbers").
"""

from __future__ import annotations

import cmath
from dataclasses import dataclass, replace

from .. import types as T
from .builtins import BUILTINS, PREDICATE, ROW_NAME, SAME, Builtin
from .typing_rules import Type, concrete, is_complex, promote_all

PART = "part"  # the complex argument's part type: abs, real, imag, angle (np.abs(c64) is f32)
COMPLEXES = (T.c64, T.c128)  # NumPy's complex loops, in its search's order


@dataclass(frozen=True, eq=False, repr=False)
class ComplexBuiltin(Builtin):
    """A builtin's computation on complex arguments, spelled by a helper of complex.h."""

    def resolve(self, arg_types: list[Type]) -> tuple[Type, Type]:
        compute = concrete(promote_all(arg_types))  # a Python complex alone computes in c128, as np.exp(1j)
        if self.rule == PREDICATE:
            return compute, T.bool_
        return compute, compute.part if self.rule == PART else compute


def _complex(name, rule, helper=None, exact=False):
    """The entry spelled `gompute_cNAME(z)` (complex.h)."""
    c_name = f"gompute_c{helper or name}"
    return ComplexBuiltin(name, 1, 1, rule, lambda t, a: f"{c_name}({', '.join(a)})", exact)


def _power(fe, args, node):
    return fe.binary("pow", args[0], args[1], node)


def _over_complex_loops(name: str) -> Builtin:
    """An operator's builtin with NumPy's complex loops beside its real ones (np.add(c64, f64) is
    c128); one the operator types (divide, equal) already computes on complex arguments."""
    b = BUILTINS[name]
    return replace(b, loops=b.loops + COMPLEXES) if b.loops else b


_HELPERS = [
    _complex("abs", PART),
    _complex("conj", SAME, exact=True),
    _complex("real", PART, exact=True),
    _complex("imag", PART, exact=True),
    _complex("angle", PART, "arg"),
    _complex("sign", SAME),
    _complex("rint", SAME, exact=True),
    _complex("reciprocal", SAME),
    *(_complex(name, SAME) for name in ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt")),
    *(_complex(name, SAME) for name in ("sin", "cos", "tan", "sinh", "cosh", "tanh")),
    *(_complex(name, PREDICATE, exact=True) for name in ("isnan", "isinf", "isfinite")),
]
_OPERATORS = ["add", "subtract", "multiply", "divide", "power", "negative", "positive", "square"]
_OPERATORS += ["equal", "not_equal", "logical_and", "logical_or", "logical_xor", "logical_not"]

# Row name -> the builtin that computes it on complex arguments.
COMPLEX: dict[str, Builtin] = {b.name: b for b in _HELPERS}
COMPLEX.update({name: _over_complex_loops(name) for name in _OPERATORS})
COMPLEX["float_power"] = replace(BUILTINS["float_power"], loops=(T.c128,), operator=_power)

# Ordering complex numbers: NumPy 2 orders them lexicographically; the language refuses instead.
NO_ORDER = (
    "complex numbers have no order; gompute refuses to compare them where NumPy orders them "
    "lexicographically (by real part, then imaginary): compare z.real, z.imag or abs(z) instead"
)
_INVERSE = "gompute has no complex inverse trigonometric or hyperbolic functions (NumPy has)"
# Rows NumPy computes on complex arguments (or, for min, max and clamp, would by its ordering) and
# gompute refuses, and why.
REFUSED: dict[str, str] = {
    **dict.fromkeys(["less", "less_equal", "greater", "greater_equal"], NO_ORDER),
    **dict.fromkeys(["maximum", "minimum", "fmax", "fmin", "min", "max", "clamp"], NO_ORDER),
    **dict.fromkeys(["asin", "acos", "atan", "asinh", "acosh", "atanh"], _INVERSE),
}


def _make(t: Type, a: list[str]) -> str:
    return f"{T.c128.c_name if concrete(t) is T.f64 else T.c64.c_name}({a[0]}, {a[1]})"


# g.c64(re, im): the two parts, already of the part type the frontend converted them to.
make = Builtin(name="complex", min_args=2, max_args=2, rule=SAME, spell=_make, exact=True, doc="g.c64(re, im)")

# The `cmath` functions, which make complex values of real ones (cmath.sqrt(-1.0) is 1j).
CMATH_ALIASES: dict[object, str] = {
    cmath.exp: "exp",
    cmath.log: "log",  # of one argument: cmath.log(z, base) is refused by its arity
    cmath.log10: "log10",
    cmath.sqrt: "sqrt",
    cmath.sin: "sin",
    cmath.cos: "cos",
    cmath.tan: "tan",
    cmath.sinh: "sinh",
    cmath.cosh: "cosh",
    cmath.tanh: "tanh",
    cmath.phase: "angle",
    cmath.isnan: "isnan",
    cmath.isinf: "isinf",
    cmath.isfinite: "isfinite",
}


def for_args(b: Builtin, arg_types: list[Type]) -> Builtin | None:
    """The builtin that computes `b` on arguments of `arg_types`: `b` itself unless one of them is
    complex, then its row's complex entry, or None where it has none (see `refusal`)."""
    if isinstance(b, ComplexBuiltin) or not any(is_complex(t) for t in arg_types):
        return b
    return COMPLEX.get(ROW_NAME.get(b.name, b.name))


def refusal(b: Builtin) -> str:
    """Why `b` does not take complex arguments."""
    reason = REFUSED.get(ROW_NAME.get(b.name, b.name))
    if reason is not None:
        return f"g.{b.name} of complex numbers is not supported: {reason}"
    return f"g.{b.name} does not take complex arguments (NumPy's function of the name does not either)"


__all__ = ["COMPLEX", "COMPLEXES", "NO_ORDER", "REFUSED", "ComplexBuiltin", "for_args", "make", "refusal"]
