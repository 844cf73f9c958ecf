"""The kernel language's builtins: one table entry each.

An entry says how many arguments it takes, how its types resolve (NumPy's rule for the ufunc
of the same name) and how it is spelled in C++. The spelling is the same on every backend:
where a backend differs (`rsqrt`), the spelling names a helper that each prelude defines.

`g.sqrt` and friends are the `Builtin` objects below; Python's `abs`, `min`, `max`, `round`,
`pow` and the `math` module's functions of the same names map onto them.
"""

from __future__ import annotations

import builtins as _py
import math
from collections.abc import Callable
from dataclasses import dataclass

from .. import types as T
from .typing_rules import Type, Weak, concrete, converts_exactly, float_of, promote_all

# How argument types resolve to (compute type, result type).
FLOAT = "float"  # NumPy's float loop for the arguments (np.sqrt(int8) is f16; see _float_loop)
SAME = "same"  # promote, compute and return in that type (abs, min, floor on ints)
PREDICATE = "predicate"  # promote, return bool
WHERE = "where"  # where(cond, a, b): cond is a truth value, a and b promote


@dataclass(frozen=True, eq=False)
class Builtin:
    """A function usable inside kernels, `g.sqrt(x)`; see the module docstring."""

    name: str
    min_args: int
    max_args: int | None  # None: any number (min, max)
    rule: str
    spell: Callable[[Type, list[str]], str]  # (compute type, argument code) -> C++ expression
    exact: bool = False  # on f16/bf16 the result needs no rounding (abs, floor, min, ...)
    doc: str = ""

    def resolve(self, arg_types: list[Type]) -> tuple[Type, Type]:
        """(the type the arguments are converted to, the result type)."""
        if self.rule == WHERE:
            value = promote_all(arg_types[1:])
            return value, value
        if self.rule == FLOAT:
            loop = _float_loop(arg_types)
            return loop, loop
        common = promote_all(arg_types)
        if self.rule == PREDICATE:
            return common, T.bool_
        return common, common

    def __call__(self, *args):
        from ..errors import CompileError

        raise CompileError(f"g.{self.name} is a kernel builtin; call it inside a @g.map_kernel or @g.func")

    def __repr__(self) -> str:
        return f"g.{self.name}"


_FLOAT_LOOPS = (T.f16, T.bf16, T.f32, T.f64)


def _float_loop(arg_types: list[Type]) -> Type:
    """The float type a math function computes and returns in, as NumPy picks a ufunc's loop:
    the first float type every argument casts to safely, each taken with the weak values
    (Python numbers) beside it. Not the float of the promoted type: int8 with uint8 promotes
    to int16, whose float is f32, where np.arctan2 computes in f16, which holds both."""
    weak = [t for t in arg_types if isinstance(t, Weak)]
    strong = [concrete(promote_all([t, *weak])) for t in arg_types if not isinstance(t, Weak)]
    if not strong:  # Python numbers only
        return float_of(promote_all(arg_types))
    return next((f for f in _FLOAT_LOOPS if all(converts_exactly(t, f) for t in strong)), T.f64)


def _suffix(t: Type) -> str:
    return "" if concrete(t) is T.f64 else "f"


def _libm(name: str) -> Callable[[Type, list[str]], str]:
    """A C99 math function: `sqrtf` for f32 (and f16/bf16, computed in f32), `sqrt` for f64."""
    return lambda t, a: f"{name}{_suffix(t)}({', '.join(a)})"


def _helper(name: str) -> Callable[[Type, list[str]], str]:
    """A prelude helper specialized per float width: `gompute_rsqrt_f32(x)`."""
    return lambda t, a: f"gompute_{name}_{'f64' if concrete(t) is T.f64 else 'f32'}({', '.join(a)})"


def _int_or_float(on_int: Callable[[Type, list[str]], str], on_float) -> Callable[[Type, list[str]], str]:
    return lambda t, a: on_float(t, a) if concrete(t).is_float else on_int(t, a)


def _identity(t: Type, a: list[str]) -> str:
    return a[0]


def _abs(t: Type, a: list[str]) -> str:
    c = concrete(t)
    if c.is_float:
        return f"fabs{_suffix(t)}({a[0]})"
    if c.kind == "i":
        return f"gompute_iabs<{c.c_name}, {unsigned_c(c)}>({a[0]})"
    return a[0]


def _pair(helper: str) -> Callable[[Type, list[str]], str]:
    """min/max of two arguments, NaN-propagating like np.minimum; the frontend makes min(a, b, c)
    a chain of pairs, so that the IR is as deep as the C++ it spells."""
    return lambda t, a: f"{helper}({a[0]}, {a[1]})"


def _clamp(t: Type, a: list[str]) -> str:
    return f"gompute_min(gompute_max({a[0]}, {a[1]}), {a[2]})"


def _is_nan(t: Type, a: list[str]) -> str:
    return f"({a[0]} != {a[0]})" if concrete(t).is_float else "false"


def _is_inf(t: Type, a: list[str]) -> str:
    return f"(fabs{_suffix(t)}({a[0]}) == gompute_inf_{_width(t)}())" if concrete(t).is_float else "false"


def _is_finite(t: Type, a: list[str]) -> str:
    return f"(fabs{_suffix(t)}({a[0]}) < gompute_inf_{_width(t)}())" if concrete(t).is_float else "true"


def _width(t: Type) -> str:
    return "f64" if concrete(t) is T.f64 else "f32"


def unsigned_c(t: T.ScalarType) -> str:
    """The unsigned C type integer arithmetic on `t` wraps in (never narrower than 32 bits)."""
    return "uint64_t" if t.bits > 32 else "uint32_t"


def _entry(name, lo, hi, rule, spell, exact=False, doc=""):
    return Builtin(name, lo, hi, rule, spell, exact, doc)


_TABLE = [
    _entry("abs", 1, 1, SAME, _abs, True, "absolute value; abs of the most negative integer wraps, as in NumPy"),
    _entry("min", 2, None, SAME, _pair("gompute_min"), True, "smallest argument; NaN if any is NaN (np.minimum)"),
    _entry("max", 2, None, SAME, _pair("gompute_max"), True, "largest argument; NaN if any is NaN (np.maximum)"),
    _entry("clamp", 3, 3, SAME, _clamp, True, "clamp(x, lo, hi) = min(max(x, lo), hi) (np.clip)"),
    _entry("where", 3, 3, WHERE, None, True, "where(cond, a, b): a if cond else b, both evaluated"),
    _entry("sqrt", 1, 1, FLOAT, _libm("sqrt"), doc="square root"),
    _entry("rsqrt", 1, 1, FLOAT, _helper("rsqrt"), doc="1 / sqrt(x)"),
    _entry("exp", 1, 1, FLOAT, _libm("exp"), doc="e ** x"),
    _entry("exp2", 1, 1, FLOAT, _libm("exp2"), doc="2 ** x"),
    _entry("log", 1, 1, FLOAT, _libm("log"), doc="natural logarithm"),
    _entry("log2", 1, 1, FLOAT, _libm("log2"), doc="base-2 logarithm"),
    _entry("log10", 1, 1, FLOAT, _libm("log10"), doc="base-10 logarithm"),
    _entry("log1p", 1, 1, FLOAT, _libm("log1p"), doc="log(1 + x), accurate near 0"),
    _entry("expm1", 1, 1, FLOAT, _libm("expm1"), doc="exp(x) - 1, accurate near 0"),
    _entry("sin", 1, 1, FLOAT, _libm("sin")),
    _entry("cos", 1, 1, FLOAT, _libm("cos")),
    _entry("tan", 1, 1, FLOAT, _libm("tan")),
    _entry("asin", 1, 1, FLOAT, _libm("asin")),
    _entry("acos", 1, 1, FLOAT, _libm("acos")),
    _entry("atan", 1, 1, FLOAT, _libm("atan")),
    _entry("atan2", 2, 2, FLOAT, _libm("atan2"), doc="atan2(y, x): the angle of (x, y)"),
    _entry("sinh", 1, 1, FLOAT, _libm("sinh")),
    _entry("cosh", 1, 1, FLOAT, _libm("cosh")),
    _entry("tanh", 1, 1, FLOAT, _libm("tanh")),
    _entry("erf", 1, 1, FLOAT, _libm("erf"), doc="error function"),
    _entry("erfc", 1, 1, FLOAT, _libm("erfc"), doc="1 - erf(x), accurate for large x"),
    _entry("fma", 3, 3, FLOAT, _libm("fma"), doc="fma(a, b, c) = a * b + c with one rounding"),
    _entry("hypot", 2, 2, FLOAT, _libm("hypot"), doc="sqrt(x*x + y*y) without overflow"),
    _entry("copysign", 2, 2, FLOAT, _libm("copysign"), True, "the magnitude of x with the sign of y"),
    _entry("floor", 1, 1, SAME, _int_or_float(_identity, _libm("floor")), True, "round down; integers unchanged"),
    _entry("ceil", 1, 1, SAME, _int_or_float(_identity, _libm("ceil")), True, "round up; integers unchanged"),
    _entry("trunc", 1, 1, SAME, _int_or_float(_identity, _libm("trunc")), True, "round toward zero"),
    _entry(
        "round",
        1,
        1,
        SAME,
        _int_or_float(_identity, _libm("rint")),
        True,
        "round half to even, like np.round and Python's round; returns the argument's type",
    ),
    _entry("isnan", 1, 1, PREDICATE, _is_nan, doc="x is NaN; False for integers"),
    _entry("isinf", 1, 1, PREDICATE, _is_inf, doc="x is +inf or -inf"),
    _entry("isfinite", 1, 1, PREDICATE, _is_finite, doc="x is neither NaN nor infinite"),
]

BUILTINS: dict[str, Builtin] = {b.name: b for b in _TABLE}
POW = "pow"  # g.pow(a, b) and Python's pow() are the ** operator, see frontend

# Python's own functions and the math module's, mapped to the builtins of the same meaning.
PYTHON_ALIASES: dict[object, Builtin] = {
    _py.abs: BUILTINS["abs"],
    _py.min: BUILTINS["min"],
    _py.max: BUILTINS["max"],
    _py.round: BUILTINS["round"],
    math.fabs: BUILTINS["abs"],
}
for _name in BUILTINS:
    if hasattr(math, _name) and callable(getattr(math, _name)):
        PYTHON_ALIASES[getattr(math, _name)] = BUILTINS[_name]


class PowBuiltin:
    """`g.pow(a, b)`: the same as `a ** b`."""

    name = POW

    def __call__(self, *args):
        from ..errors import CompileError

        raise CompileError("g.pow is a kernel builtin; call it inside a @g.map_kernel or @g.func")

    def __repr__(self) -> str:
        return "g.pow"


pow = PowBuiltin()  # noqa: A001 - g.pow is the name the language gives it
PYTHON_ALIASES[_py.pow] = pow
PYTHON_ALIASES[math.pow] = pow

globals().update(BUILTINS)
__all__ = sorted([*BUILTINS, "pow", "Builtin", "BUILTINS"])
