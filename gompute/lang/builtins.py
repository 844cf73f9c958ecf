"""The kernel language's builtins: one table entry each, NumPy's ufuncs under NumPy's names.

An entry says how many arguments it takes, the types NumPy's ufunc of the same name has loops for
(the result type follows from them, as NumPy's own search picks a loop) and how it is lowered:
spelled as a C++ expression, the same text on every backend (where a backend differs, the spelling
names a helper each prelude defines), or, for the ufuncs behind Python's operators (`add`, `less`,
`invert`, ...), built by the frontend's code for the operator, so that `g.add(a, b)` is `a + b`.

`g.sqrt` and friends are the `Builtin` objects below. Inside a kernel a NumPy ufunc (`np.sqrt`), and
`np.where`, `np.clip` and `np.round`, are the builtin of the same meaning; Python's `abs`, `min`,
`max`, `round`, `pow` and the `math` module's functions are too, typed as Python types them.
Complex arguments take the entry complex_math keeps for the row (`g.exp(z)`, `g.add(z, w)`).

Typing: a `g.`/`np.` builtin follows NumPy, so on Python numbers alone it gives what NumPy's ufunc
gives, a NumPy scalar (`g.cos(3)` is a strong f64, as `np.cos(3)` is np.float64). A Python function
follows Python: `math.cos(3)` is computed when the kernel is compiled and is a Python float (weak).
On kernel values both are the builtin: `math.sqrt(x)` is `g.sqrt(x)`.
"""

from __future__ import annotations

import builtins as _py
import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace

import numpy as np

from .. import types as T
from ..types import ScalarType
from . import ir
from .typing_rules import (
    WEAK_BOOL,
    WEAK_FLOAT,
    WEAK_INT,
    Type,
    Weak,
    concrete,
    converts_exactly,
    describe,
    is_bool,
    promote_all,
    unsigned_c,
    weak_of,
)

# How argument types resolve to (compute type, result type): each computes in the loop NumPy's
# search picks among the entry's `loops` (see Builtin.loop).
FLOAT = "float"  # over the float loops: np.sqrt(int8) is f16
SAME = "same"  # returns the loop's type (abs, min, floor on ints)
PREDICATE = "predicate"  # returns bool
WHERE = "where"  # where(cond, a, b): cond is a truth value, a and b promote

# Loop types in the order NumPy's search tries them; bf16, which NumPy lacks, beside f16.
BOOL = (T.bool_,)
INTS = (T.i8, T.u8, T.i16, T.u16, T.i32, T.u32, T.i64, T.u64)
FLOATS = (T.f16, T.bf16, T.f32, T.f64)
NUMBERS = INTS + FLOATS  # no bool loop: bools compute in int8 (np.square(True) is int8)
ANY = BOOL + NUMBERS
INTEGERS = BOOL + INTS
OPERATOR_TYPED = ()  # `loops` of an operator ufunc that the operator types (divide, less, ...)


@dataclass(frozen=True, eq=False)
class Builtin:
    """A function usable inside kernels, `g.sqrt(x)`; see the module docstring."""

    name: str
    min_args: int
    max_args: int | None  # None: any number (min, max)
    rule: str
    spell: Callable[[Type, list[str]], str] | None  # (compute type, argument code) -> C++ expression
    exact: bool = False  # on f16/bf16 the result needs no rounding (abs, floor, min, ...)
    doc: str = ""
    loops: tuple[ScalarType, ...] | None = None  # None: FLOATS for FLOAT, else ANY
    operator: Callable | None = None  # (frontend, args converted to the loop, node) -> ir.Expr
    no_bools: bool = False  # NumPy refuses it on bools alone (np.negative(True), np.gcd)
    returns: ScalarType | None = None  # a result type of its own (np.bitwise_count: uint8)
    shows: str = ""  # the docs' result column where the rule does not say it (an operator's)
    signature: str = ""  # the arguments' names, for the docs ("x, lo, hi")

    def loop(self, arg_types: list[Type]) -> ScalarType | None:
        """The type NumPy's ufunc computes in: the first loop type every argument converts to
        exactly (NumPy's "safe" cast), Python numbers as the type of all the arguments promoted
        together (NEP 50: np.clip(u8, -2.5, f32) is f32, not the f64 of u8 with -2.5); Python
        numbers alone as their promoted default type. Not the promoted type:
        int8 with uint8 promotes to int16, whose float is f32, where np.arctan2 computes in f16,
        which holds both."""
        return _search(self.loops if self.loops is not None else FLOATS if self.rule == FLOAT else ANY, arg_types)

    def resolve(self, arg_types: list[Type]) -> tuple[Type, Type]:
        """(the type the arguments are converted to, the result type); the loop is None where
        the builtin has none for these types."""
        if self.rule == WHERE:
            value = promote_all(arg_types[1:])
            return value, value
        loop = self.loop(arg_types)
        return loop, T.bool_ if self.rule == PREDICATE else self.returns or loop

    def lower(self, fe, args: list[ir.Expr], node) -> ir.Expr:
        """The IR of a call on `args`, built with `fe`, the frontend translating it (lang/exprs.py)."""
        types = [a.type for a in args]
        if self.no_bools and all(is_bool(t) for t in types):
            raise fe.src.error(node, f"g.{self.name} is not defined on bools (nor is np.{self.name})")
        if self.rule == WHERE:
            return _strong(fe, fe.select(args[0], args[1], args[2], node), node)
        if self.loops == OPERATOR_TYPED:
            return _strong(fe, self.operator(fe, args, node), node)
        if len(args) == 1 and _past_i64(args[0]):  # np.isnan(2**63): a lone Python int is np.asarray's
            types = [T.u64]
        loop, result = self.resolve(types)
        if loop is None:
            got = ", ".join(describe(t) for t in types)
            raise fe.src.error(node, f"g.{self.name} takes {_takes(self)}, not ({got})")
        converted = [fe.convert(a, loop, node) for a in args]
        if self.operator is not None:
            return self.operator(fe, converted, node)
        value = ir.Call(self, converted[:2] if self.max_args is None else converted, result)
        for arg in converted[2:] if self.max_args is None else ():  # min(a, b, c): pairs, as the C++ nests
            value = ir.Call(self, [value, arg], result)
        return value

    def __call__(self, *args):
        from ..errors import CompileError

        raise CompileError(f"g.{self.name} is a kernel builtin; call it inside a @g.map_kernel or @g.func")

    def __repr__(self) -> str:
        return f"g.{self.name}"


def _past_i64(e: ir.Expr) -> bool:
    """A Python int constant past int64 that uint64 holds (NumPy converts it, alone, to uint64)."""
    return isinstance(e, ir.Const) and isinstance(e.type, Weak) and type(e.value) is int and 2**63 <= e.value < 2**64


@dataclass(frozen=True, eq=False)
class PythonFunction(Builtin):
    """A Python function in a kernel (`math.cos`, `abs`): on Python numbers it is Python's own,
    computed when the kernel is compiled (`math.floor(2.5)` is the Python int 2); on other Python
    values (a loop variable) the builtin, its result a Python number; on kernel values the builtin."""

    python: Callable | None = None

    def lower(self, fe, args: list[ir.Expr], node) -> ir.Expr:
        if not all(isinstance(a.type, Weak) for a in args):
            return super().lower(fe, args, node)
        if all(isinstance(a, ir.Const) for a in args):
            call = f"{getattr(self.python, '__qualname__', self.name)}({', '.join(repr(a.value) for a in args)})"
            try:
                value = self.python(*(a.value for a in args))
            except (ValueError, OverflowError, ZeroDivisionError, TypeError) as e:
                raise fe.src.error(node, f"{call} fails at compile time: {e}") from None
            if weak_of(value) is None:
                raise fe.src.error(node, f"{call} is {value!r}, not a real number")
            return ir.Const(value, weak_of(value))
        value = super().lower(fe, args, node)
        return replace(value, type={"b": WEAK_BOOL, "f": WEAK_FLOAT}.get(concrete(value.type).kind, WEAK_INT))


def _search(loops: tuple[ScalarType, ...], arg_types: list[Type]) -> ScalarType | None:
    types = [t for t in arg_types if not isinstance(t, Weak)]
    if len(types) < len(arg_types):  # Python numbers as every argument promoted together (NEP 50)
        types.append(concrete(promote_all(arg_types)))
    return next((t for t in loops if all(converts_exactly(s, t) for s in types)), None)


def _strong(fe, e: ir.Expr, node) -> ir.Expr:
    """`e` as NumPy holds a ufunc's result on Python numbers: a scalar of the default type."""
    return fe.convert(e, concrete(e.type), node) if isinstance(e.type, Weak) else e


def _takes(b: Builtin) -> str:
    loops = b.loops if b.loops is not None else FLOATS if b.rule == FLOAT else ANY
    for kinds, text in ((INTS, "integers"), (INTEGERS, "integers or bools"), (FLOATS, "floats")):
        if set(loops) <= set(kinds):
            return text
    return "numbers"


# -- spellings ------------------------------------------------------------------------------------


def _width(t: Type) -> str:
    return "f64" if concrete(t) is T.f64 else "f32"


def _libm(name: str) -> Callable[[Type, list[str]], str]:
    """A C99 math function: `sqrtf` for f32 (and f16/bf16, computed in f32), `sqrt` for f64."""
    return lambda t, a: f"{name}{'' if concrete(t) is T.f64 else 'f'}({', '.join(a)})"


def _helper(name: str, halves: bool = False) -> Callable[[Type, list[str]], str]:
    """A prelude helper per float width, `gompute_rsqrt_f32(x)`; with `halves`, one of their own
    for f16 and bf16 (stepping in their ulps, not in f32's)."""

    def spell(t: Type, a: list[str]) -> str:
        width = concrete(t).name if halves and concrete(t) in (T.f16, T.bf16) else _width(t)
        return f"gompute_{name}_{width}({', '.join(a)})"

    return spell


def _template(name: str, wraps: bool = False) -> Callable[[Type, list[str]], str]:
    """A prelude template on the value type (`gompute_sign<float>(x)`); with `wraps`, also on the
    unsigned type integer arithmetic wraps in."""

    def spell(t: Type, a: list[str]) -> str:
        c = concrete(t)
        held = "float" if c in (T.f16, T.bf16) else c.c_name
        return f"gompute_{name}<{held}{f', {unsigned_c(c)}' if wraps else ''}>({', '.join(a)})"

    return spell


def _int_or_float(on_int: Callable[[Type, list[str]], str], on_float) -> Callable[[Type, list[str]], str]:
    return lambda t, a: on_float(t, a) if concrete(t).is_float else on_int(t, a)


def _identity(t: Type, a: list[str]) -> str:
    return a[0]


def _abs(t: Type, a: list[str]) -> str:
    c = concrete(t)
    if c.is_float:
        return _libm("fabs")(t, a)
    if c.kind == "i":
        return f"gompute_iabs<{c.c_name}, {unsigned_c(c)}>({a[0]})"
    return a[0]


def _min_max(name: str) -> Callable[[Type, list[str]], str]:
    """gompute_min / gompute_max, which give the second of two equal values (+0.0 and -0.0) as
    NumPy's float loops do; but its f16 loops give the first, so f16 passes them swapped."""
    spell = _template(name)
    return lambda t, a: spell(t, a[::-1] if concrete(t) is T.f16 else a)


def _clamp(t: Type, a: list[str]) -> str:
    return _min_max("min")(t, [_min_max("max")(t, a[:2]), a[2]])


def _is_nan(t: Type, a: list[str]) -> str:
    return f"({a[0]} != {a[0]})" if concrete(t).is_float else "false"


def _is_inf(t: Type, a: list[str]) -> str:
    return f"({_libm('fabs')(t, a)} == gompute_inf_{_width(t)}())" if concrete(t).is_float else "false"


def _is_finite(t: Type, a: list[str]) -> str:
    return f"({_libm('fabs')(t, a)} < gompute_inf_{_width(t)}())" if concrete(t).is_float else "true"


def _reciprocal(t: Type, a: list[str]) -> str:
    if concrete(t).is_float:
        return f"({'1.0' if concrete(t) is T.f64 else '1.0f'} / {a[0]})"
    return _template("ireciprocal")(t, a)


def _ldexp(t: Type, a: list[str]) -> str:
    return f"gompute_ldexp_{_width(t)}({a[0]}, (int64_t)({a[1]}))"


# -- lowerings through the operators' own code (lang/exprs.py) --------------------------------------


def _binary(op: str, on_bools: str | None = None) -> Callable:
    """The operator `op`; NumPy's bool loop of add and multiply is `or` and `and`."""

    def lower(fe, args, node):
        if on_bools and is_bool(args[0].type):
            return ir.Logical(on_bools, args[0], args[1], T.bool_)
        return fe.binary(op, args[0], args[1], node)

    return lower


def _compare(op: str) -> Callable:
    return lambda fe, args, node: fe.compare(op, args[0], args[1], node)


def _logical(op: str) -> Callable:
    def lower(fe, args, node):
        a, b = fe.truth(args[0]), fe.truth(args[1])
        if op == "xor":  # a Python bool converted too: a compare of two types is the i64/u64 one
            return ir.Compare("ne", fe.convert(a, T.bool_, node), fe.convert(b, T.bool_, node), T.bool_)
        return ir.Logical(op, a, b, T.bool_)

    return lower


def _negative(fe, args, node):
    return ir.Unary("neg", args[0], args[0].type)


def _invert(fe, args, node):
    return ir.Unary("not" if is_bool(args[0].type) else "invert", args[0], args[0].type)


def _logical_not(fe, args, node):
    return ir.Unary("not", fe.truth(args[0]), T.bool_)


def _square(fe, args, node):
    return fe.binary("mul", args[0], args[0], node)


def _itself(fe, args, node):
    return args[0]


def _zero(t: Type, a: list[str]) -> str:
    from .codegen import literal  # codegen spells the IR this module builds: imported when spelling

    return literal(0, t)


def _angle_lower(fe, args, node):
    """np.angle(x) of a real x is np.arctan2(0, x), the 0 a Python int (np.angle(bool) is f64)."""
    loop = _search(FLOATS, [WEAK_INT, args[0].type])
    zero = fe.convert(ir.Const(0, WEAK_INT), loop, node)
    return ir.Call(BUILTINS["atan2"], [zero, fe.convert(args[0], loop, node)], loop)


def _ldexp_lower(fe, args, node):
    """np.ldexp(x, n): x computes in its float loop, n is an integer exponent (not uint64)."""
    n = args[1].type
    if not (concrete(n).is_integer or is_bool(n)) or n is T.u64:
        raise fe.src.error(node, f"g.ldexp's exponent must be an integer of at most 63 bits, not {describe(n)}")
    loop = _search(FLOATS, [args[0].type])
    return ir.Call(BUILTINS["ldexp"], [fe.convert(args[0], loop, node), fe.convert(args[1], T.i64, node)], loop)


# -- the table --------------------------------------------------------------------------------------


def _entry(names, signature, rule, spell=None, exact=False, doc="", **extra) -> list[Builtin]:
    """One row of the table: a Builtin under each of `names` (NumPy's aliases: `asin`, `arcsin`),
    taking the arguments `signature` names ("x, lo, hi"; "a, b, ..." for any number)."""
    names = (names,) if isinstance(names, str) else names
    params = signature.split(", ")
    lo, hi = (len(params) - 1, None) if params[-1] == "..." else (len(params), len(params))
    return [Builtin(n, lo, hi, rule, spell, exact, doc, signature=signature, **extra) for n in names]


def _op(names, signature, op, loops=OPERATOR_TYPED, doc="", **extra) -> list[Builtin]:
    """An operator's ufunc: typed by NumPy's loops (or by the operator), built as the operator."""
    return _entry(names, signature, SAME, None, True, doc, loops=loops, operator=op, **extra)


def _math(names, signature, doc="", **fields) -> list[Builtin]:
    """A C99 math function over NumPy's float loops."""
    name = names if isinstance(names, str) else names[0]
    return _entry(names, signature, FLOAT, _libm(name), False, doc, **fields)


# fmt: off
_T = (
    _entry(("abs", "absolute"), "x", SAME, _abs, True, "absolute value; of the most negative integer, wraps (NumPy)"),
    _entry("fabs", "x", FLOAT, _libm("fabs"), True, "absolute value, as a float"),
    _entry("min", "a, b, ...", SAME, _min_max("min"), True, "smallest argument; NaN if any is NaN (np.minimum)"),
    _entry("max", "a, b, ...", SAME, _min_max("max"), True, "largest argument; NaN if any is NaN (np.maximum)"),
    _entry("minimum", "a, b", SAME, _min_max("min"), True, "`min` of two"),
    _entry("maximum", "a, b", SAME, _min_max("max"), True, "`max` of two"),
    _entry("fmin", "a, b", SAME, _template("fmin"), True, "the smaller; a NaN loses to a number"),
    _entry("fmax", "a, b", SAME, _template("fmax"), True, "the larger; a NaN loses to a number"),
    _entry("clamp", "x, lo, hi", SAME, _clamp, True, "min(max(x, lo), hi) (np.clip)"),
    _entry("where", "c, a, b", WHERE, None, True, "a if c else b, both evaluated (np.where)"),
    _math("sqrt", "x", "square root"),
    _entry("rsqrt", "x", FLOAT, _helper("rsqrt"), doc="1 / sqrt(x)"),
    _math("cbrt", "x", "cube root"),
    _math("exp", "x", "e ** x"),
    _math("exp2", "x", "2 ** x"),
    _math("expm1", "x", "exp(x) - 1, accurate near 0"),
    _math("log", "x", "natural logarithm"),
    _math("log2", "x", "base-2 logarithm"),
    _math("log10", "x", "base-10 logarithm"),
    _math("log1p", "x", "log(1 + x), accurate near 0"),
    _entry("logaddexp", "a, b", FLOAT, _helper("logaddexp"), doc="log(exp(a) + exp(b)), without overflow"),
    _entry("logaddexp2", "a, b", FLOAT, _helper("logaddexp2"), doc="log2(2**a + 2**b), without overflow"),
    _math("sin", "x", "sine"),
    _math("cos", "x", "cosine"),
    _math("tan", "x", "tangent"),
    _math(("asin", "arcsin"), "x", "inverse sine"),
    _math(("acos", "arccos"), "x", "inverse cosine"),
    _math(("atan", "arctan"), "x", "inverse tangent"),
    _math(("atan2", "arctan2"), "y, x", "the angle of the point (x, y)"),
    _math("sinh", "x", "hyperbolic sine"),
    _math("cosh", "x", "hyperbolic cosine"),
    _math("tanh", "x", "hyperbolic tangent"),
    _math(("asinh", "arcsinh"), "x", "inverse hyperbolic sine"),
    _math(("acosh", "arccosh"), "x", "inverse hyperbolic cosine"),
    _math(("atanh", "arctanh"), "x", "inverse hyperbolic tangent"),
    _entry(("deg2rad", "radians"), "x", FLOAT, _helper("deg2rad"), doc="degrees to radians, x * (pi / 180)"),
    _entry(("rad2deg", "degrees"), "x", FLOAT, _helper("rad2deg"), doc="radians to degrees, x * (180 / pi)"),
    _math("erf", "x", "error function"),
    _math("erfc", "x", "1 - erf(x), accurate for large x"),
    _math("fma", "a, b, c", "a * b + c, rounded once"),
    _math("hypot", "x, y", "sqrt(x*x + y*y), without overflow"),
    _entry("float_power", "a, b", FLOAT, _libm("pow"), doc="a ** b, in f64", loops=(T.f64,)),
    _entry("copysign", "x, y", FLOAT, _libm("copysign"), True, "the magnitude of x with the sign of y"),
    _entry("nextafter", "x, y", FLOAT, _helper("nextafter", halves=True), True, "the next value after x toward y"),
    _entry("spacing", "x", FLOAT, _helper("spacing", halves=True), True, "the distance from x to the next value"),
    _entry("ldexp", "x, n", FLOAT, _ldexp, doc="x * 2**n, n an integer", operator=_ldexp_lower,
           loops=OPERATOR_TYPED, shows="float"),
    _entry("signbit", "x", PREDICATE, _helper("signbit"), doc="the sign bit of x is set (-0.0 too)", loops=FLOATS),
    _entry("heaviside", "x, h0", FLOAT, _template("heaviside"), True, "0 for x < 0, h0 for x == 0, 1 for x > 0"),
    _entry("sign", "x", SAME, _template("sign"), True, "-1, 0 or 1 (NaN for NaN)", loops=NUMBERS, no_bools=True),
    _entry("floor", "x", SAME, _int_or_float(_identity, _libm("floor")), True, "round down; integers unchanged"),
    _entry("ceil", "x", SAME, _int_or_float(_identity, _libm("ceil")), True, "round up; integers unchanged"),
    _entry("trunc", "x", SAME, _int_or_float(_identity, _libm("trunc")), True, "round toward zero"),
    _entry("rint", "x", FLOAT, _libm("rint"), True, "round half to even, as a float"),
    _entry("round", "x", SAME, _int_or_float(_identity, _libm("rint")), True, "round half to even (np.round)"),
    _entry("reciprocal", "x", SAME, _reciprocal, doc="1 / x; of an integer, truncated (1 // 0 is 0)", loops=NUMBERS),
    _entry("fmod", "a, b", SAME, _int_or_float(_template("ifmod"), _libm("fmod")), True,
           "remainder with the sign of a (C's); an integer fmod by 0 is 0", loops=NUMBERS),
    _entry("gcd", "a, b", SAME, _template("gcd", wraps=True), True, "greatest common divisor, >= 0",
           loops=INTS, no_bools=True),
    _entry("lcm", "a, b", SAME, _template("lcm", wraps=True), True, "least common multiple, >= 0 (wraps)",
           loops=INTS, no_bools=True),
    _entry("bitwise_count", "x", SAME, _template("bitwise_count"), True, "the number of 1 bits in abs(x)",
           loops=INTS, returns=T.u8),
    _entry("isnan", "x", PREDICATE, _is_nan, doc="x is NaN; False for integers"),
    _entry("isinf", "x", PREDICATE, _is_inf, doc="x is +inf or -inf"),
    _entry("isfinite", "x", PREDICATE, _is_finite, doc="x is neither NaN nor infinite"),
    _op("add", "a, b", _binary("add", "or"), ANY, "a + b; `or` of two bools"),
    _op("subtract", "a, b", _binary("sub"), NUMBERS, "a - b", no_bools=True),
    _op("multiply", "a, b", _binary("mul", "and"), ANY, "a * b; `and` of two bools"),
    _op(("divide", "true_divide"), "a, b", _binary("truediv"), doc="a / b", shows="float"),
    _op("floor_divide", "a, b", _binary("floordiv"), NUMBERS, "a // b"),
    _op(("remainder", "mod"), "a, b", _binary("mod"), NUMBERS, "a % b"),
    _op(("power", "pow"), "a, b", _binary("pow"), NUMBERS, "a ** b"),
    _op("negative", "x", _negative, NUMBERS, "-x", no_bools=True),
    _op("positive", "x", _itself, NUMBERS, "+x", no_bools=True),
    _op(("conj", "conjugate"), "x", _itself, NUMBERS, "complex conjugate; a real x itself"),
    _entry("real", "x", SAME, _identity, True, "real part (also z.real); a real x itself"),
    _entry("imag", "x", SAME, _zero, True, "imaginary part (also z.imag); 0 of x's type for a real x"),
    _entry("angle", "x", FLOAT, None, doc="the argument of z, atan2(z.imag, z.real), in radians",
           operator=_angle_lower, loops=OPERATOR_TYPED, shows="float"),
    _op("square", "x", _square, NUMBERS, "x * x"),
    _op(("invert", "bitwise_not", "bitwise_invert"), "x", _invert, INTEGERS, "~x"),
    _op("bitwise_and", "a, b", _binary("and"), INTEGERS, "a & b"),
    _op("bitwise_or", "a, b", _binary("or"), INTEGERS, "a \\| b"),
    _op("bitwise_xor", "a, b", _binary("xor"), INTEGERS, "a ^ b"),
    _op(("left_shift", "bitwise_left_shift"), "a, b", _binary("lshift"), INTS, "a << b"),
    _op(("right_shift", "bitwise_right_shift"), "a, b", _binary("rshift"), INTS, "a >> b"),
    _op("equal", "a, b", _compare("eq"), doc="a == b", shows="bool"),
    _op("not_equal", "a, b", _compare("ne"), doc="a != b", shows="bool"),
    _op("less", "a, b", _compare("lt"), doc="a < b", shows="bool"),
    _op("less_equal", "a, b", _compare("le"), doc="a <= b", shows="bool"),
    _op("greater", "a, b", _compare("gt"), doc="a > b", shows="bool"),
    _op("greater_equal", "a, b", _compare("ge"), doc="a >= b", shows="bool"),
    _op("logical_and", "a, b", _logical("and"), doc="bool(a) and bool(b)", shows="bool"),
    _op("logical_or", "a, b", _logical("or"), doc="bool(a) or bool(b)", shows="bool"),
    _op("logical_xor", "a, b", _logical("xor"), doc="bool(a) != bool(b)", shows="bool"),
    _op("logical_not", "x", _logical_not, doc="not x", shows="bool"),
)
# fmt: on
ROWS: tuple[tuple[Builtin, ...], ...] = tuple(tuple(row) for row in _T)  # each row's names, for the docs
BUILTINS: dict[str, Builtin] = {b.name: b for row in ROWS for b in row}
# Each name's row, by the row's first name: what other tables key by (g.absolute is the row "abs").
ROW_NAME: dict[str, str] = {b.name: row[0].name for row in ROWS for b in row}

# NumPy ufuncs that are not builtins, and why (tests/lang/test_ufunc_walk.py walks np's namespace).
UNSUPPORTED = {
    "divmod": "two results; a kernel expression has one (use // and %)",
    "frexp": "two results (mantissa and exponent); a kernel expression has one",
    "modf": "two results (fraction and integer part); use x - g.trunc(x) and g.trunc(x)",
    "matmul": "acts on whole arrays, not on scalars",
    "matvec": "acts on whole arrays, not on scalars",
    "vecmat": "acts on whole arrays, not on scalars",
    "vecdot": "acts on whole arrays, not on scalars",
    "isnat": "datetime64 and timedelta64 only, which kernels do not have",
}


# Python's functions and NumPy's, mapped to the builtins of the same meaning. math.remainder is
# IEEE's (the quotient rounded to even), not np.remainder's floor modulo, so it is not one.
PYTHON_ALIASES: dict[object, Builtin] = {np.where: BUILTINS["where"], np.clip: BUILTINS["clamp"]}
PYTHON_ALIASES[np.round] = BUILTINS["round"]
for _name in ("real", "imag", "angle"):  # NumPy's functions, not ufuncs
    PYTHON_ALIASES[getattr(np, _name)] = BUILTINS[_name]
# A ufunc NumPy names twice (np.abs is np.absolute) is the row's first name.
for _row in ROWS:
    for _b in _row:
        if isinstance(getattr(np, _b.name, None), np.ufunc):
            PYTHON_ALIASES.setdefault(getattr(np, _b.name), _row[0])


@dataclass(frozen=True, eq=False)
class _Unsupported(Builtin):
    """A NumPy ufunc that is not a builtin: calling it in a kernel says why (UNSUPPORTED)."""

    def lower(self, fe, args: list[ir.Expr], node) -> ir.Expr:
        raise fe.src.error(node, f"np.{self.name} is not supported in kernels: {UNSUPPORTED[self.name]}")


for _name in UNSUPPORTED:
    PYTHON_ALIASES[getattr(np, _name)] = _Unsupported(_name, 0, None, SAME, None)


def _python(fn, b: Builtin) -> PythonFunction:
    return PythonFunction(**{f.name: getattr(b, f.name) for f in fields(Builtin)}, python=fn)


for _fn, _name in ((_py.abs, "abs"), (_py.min, "min"), (_py.max, "max"), (_py.round, "round")):
    PYTHON_ALIASES[_fn] = _python(_fn, BUILTINS[_name])
for _name in BUILTINS:
    if callable(getattr(math, _name, None)) and _name != "remainder":
        PYTHON_ALIASES[getattr(math, _name)] = _python(getattr(math, _name), BUILTINS[_name])


# Python's pow is `**` (as `pow(x, y)` is `x ** y` on NumPy arrays), which refuses two bools where
# np.power computes them in int8.
PYTHON_ALIASES[_py.pow] = _python(
    _py.pow, Builtin("pow", 2, 2, SAME, None, True, loops=OPERATOR_TYPED, operator=_binary("pow"))
)

globals().update(BUILTINS)
__all__ = sorted(BUILTINS)  # g.NAME, gompute.lang.NAME: the builtins and nothing else
