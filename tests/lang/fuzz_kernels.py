"""Random kernels for the differential fuzzing in test_fuzz.py.

An expression is a tree of tuples: ("var", name), ("lit", value), ("un", op, a), ("bin", op, a, b),
("cmp", op, a, b), ("if", cond, a, b), ("bool", "and"|"or", a, b), ("call", builtin, *args),
("cast", type name, a). `source` spells it as kernel source; `evaluate` computes it with NumPy 2's
rules on whole arrays (a Python number stays a Python number, weak, as in the kernel language).
`evaluate` raises `Refused` where NumPy refuses the expression or the language documents another
answer; such an expression is left out of the kernel.
"""

from __future__ import annotations

import math
import operator

import numpy as np

TYPES = {
    "bool_": np.bool_,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "u8": np.uint8,
    "u16": np.uint16,
    "u32": np.uint32,
    "u64": np.uint64,
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
}
CAST_TYPES = dict(TYPES)
VARS = ("x", "y", "z")

INT_LITERALS = (0, 1, 2, 3, 7, -1, -3, 100, 127, 128, 255, 256, 300, -129, 2**31 - 1, 2**31, 2**53 + 1, 2**63 - 1)
FLOAT_LITERALS = (0.0, 0.5, 1.5, 2.5, -2.5, -0.0, 1e-3, 3.0, 1e10, 65504.0, 1e300, 0.1)

BINOPS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
    "<<": operator.lshift,
    ">>": operator.rshift,
}
CMPOPS = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
_ARITH = {"+", "-", "*", "//", "%", "**"}

# Builtins whose result NumPy gives exactly as C++ does (IEEE operations correctly rounded, or no
# rounding at all), by arity.
EXACT_BUILTINS = {
    "abs": 1,
    "sqrt": 1,
    "rsqrt": 1,
    "floor": 1,
    "ceil": 1,
    "trunc": 1,
    "round": 1,
    "isnan": 1,
    "isinf": 1,
    "isfinite": 1,
    "min": 2,
    "max": 2,
    "copysign": 2,
    "clamp": 3,
    "where": 3,
    "fabs": 1,
    "rint": 1,
    "sign": 1,
    "square": 1,
    "reciprocal": 1,
    "signbit": 1,
    "bitwise_count": 1,
    "logical_not": 1,
    "nextafter": 2,
    "spacing": 1,
    "minimum": 2,
    "maximum": 2,
    "fmin": 2,
    "fmax": 2,
    "fmod": 2,
    "heaviside": 2,
    "gcd": 2,
    "lcm": 2,
    "logical_and": 2,
    "logical_or": 2,
    "logical_xor": 2,
}
# Of two equal zeros, which one these return is not specified: NumPy's own loops do not agree
# (its short and long arrays differ). min, max, minimum and maximum are NumPy's exactly.
ZERO_TIES = ("fmin", "fmax")
# Builtins computed by a math library: NumPy's and the C++ one may differ in the last bits.
LIBM_BUILTINS = {
    **dict.fromkeys(
        "exp exp2 log log2 log10 log1p expm1 sin cos tan asin acos atan sinh cosh tanh".split(),
        1,
    ),
    "atan2": 2,
    "hypot": 2,
    "pow": 2,
}
_NUMPY_NAMES = {
    "asin": "arcsin",
    "acos": "arccos",
    "atan": "arctan",
    "atan2": "arctan2",
    "abs": "absolute",
    "pow": "power",
}


class Refused(Exception):
    """NumPy refuses the expression, or the kernel language documents another result for it."""


# -- source -----------------------------------------------------------------------------------


def source(e) -> str:
    kind = e[0]
    if kind == "var":
        return e[1]
    if kind == "lit":
        return f"({e[1]!r})" if isinstance(e[1], (int, float)) and math.copysign(1, e[1]) < 0 else repr(e[1])
    if kind == "un":
        return f"({'not ' if e[1] == 'not' else e[1]}{source(e[2])})"
    if kind in ("bin", "cmp", "bool"):
        return f"({source(e[2])} {e[1]} {source(e[3])})"
    if kind == "if":
        return f"({source(e[2])} if {source(e[1])} else {source(e[3])})"
    if kind == "call":
        return f"g.{e[1]}({', '.join(source(a) for a in e[2:])})"
    if kind == "cast":
        return f"g.{e[1]}({source(e[2])})"
    raise ValueError(kind)


def uses_libm(e) -> bool:
    """Whether the math library computes `e` (test_fuzz.py puts such a call only at the root)."""
    return e[0] == "call" and e[1] in LIBM_BUILTINS


# -- NumPy's value ----------------------------------------------------------------------------
# A value is a Python number (weak) or a NumPy array (strong), with a mask of the elements whose
# value C++ leaves undefined (a float converted to an integer type it does not fit), or None.


class RunTimeInt(int):
    """A Python int known only at run time (a loop variable, arithmetic on one): the language holds it
    in 64 signed bits, so a value past them is refused here (the kernel's would have wrapped)."""

    @classmethod
    def of(cls, value):
        if isinstance(value, bool) or not isinstance(value, int):
            return value
        if not -(2**63) <= value < 2**63:
            raise Refused("a run-time Python int past 64 bits (the language's wraps)")
        return cls(value)


def _weak(v) -> bool:
    return isinstance(v, (bool, int, float))


def _kind(v) -> str:
    if isinstance(v, bool):
        return "b"
    if isinstance(v, int):
        return "i"
    if isinstance(v, float):
        return "f"
    return "b" if v.dtype == np.bool_ else "f" if v.dtype.kind == "f" else "i"


def _union(*masks):
    out = None
    for m in masks:
        if m is not None:
            out = m if out is None else out | m
    return out


def _truth(v):
    return bool(v) if _weak(v) else np.asarray(v).astype(bool)


def _numpy(f, *args):
    try:
        with np.errstate(all="ignore"):
            return f(*args)
    except (OverflowError, TypeError, ValueError, ZeroDivisionError) as e:
        raise Refused(str(e)) from None


def evaluate(e, env: dict):
    """(value, undefined mask) of `e` with the variables of `env`."""
    kind = e[0]
    if kind == "var":
        return env[e[1]], None
    if kind == "lit":
        return e[1], None
    if kind == "un":
        a, m = evaluate(e[2], env)
        return _unary(e[1], a), m
    if kind == "bin":
        (a, ma), (b, mb) = evaluate(e[2], env), evaluate(e[3], env)
        return _binary(e[1], a, b), _union(ma, mb)
    if kind == "cmp":  # a comparison is a bool of the language, Python numbers compared too
        (a, ma), (b, mb) = evaluate(e[2], env), evaluate(e[3], env)
        return np.asarray(_numpy(CMPOPS[e[1]], a, b)), _union(ma, mb)
    if kind == "if":
        (c, mc), (a, ma), (b, mb) = (evaluate(x, env) for x in e[1:4])
        return _select(c, a, b), _union(mc, ma, mb)
    if kind == "bool":
        (a, ma), (b, mb) = evaluate(e[2], env), evaluate(e[3], env)
        return _logical(e[1], a, b), _union(ma, mb)
    if kind == "call":
        values = [evaluate(a, env) for a in e[2:]]
        args = [v for v, _ in values]
        return _call(e[1], args), _union(*(m for _, m in values), _zero_ties(e[1], args))
    if kind == "cast":
        a, m = evaluate(e[2], env)
        return _cast(e[1], a, m)
    raise ValueError(kind)


def _unary(op: str, a):
    if op == "not":  # a bool of the language, of a Python number too
        return np.asarray(not a) if _weak(a) else ~_truth(a)
    if op == "~" and _kind(a) == "b":
        return (not a) if _weak(a) else ~a
    if _kind(a) == "b" and op == "-":
        raise Refused("negating a bool")
    if _kind(a) == "f" and op == "~":
        raise Refused("~ of a float")
    if _weak(a):
        value = -a if op == "-" else ~a
        return RunTimeInt.of(value) if isinstance(a, RunTimeInt) else value
    return _numpy(operator.neg if op == "-" else operator.invert, a)


def _binary(op: str, a, b):
    ka, kb = _kind(a), _kind(b)
    if op in _ARITH and ka == kb == "b":
        raise Refused("arithmetic on two bools")
    if op in ("<<", ">>") and "b" in (ka, kb):
        raise Refused("shifting a bool")
    if op == "**" and "f" in (ka, kb) and not (_weak(a) and _weak(b)):
        raise Refused("a float power inside an expression")  # the math library's: g.pow at the root
    if op == "**" and "f" not in (ka, kb) and not (isinstance(b, int) and 0 <= b <= 6):
        raise Refused("an integer power other than a small literal")  # NumPy raises for negative ones
    if _weak(a) and _weak(b) and op in ("**", "<<") and (abs(b) > 64 or abs(a) > 2**16):
        raise Refused("a huge number folded at compile time")
    value = _numpy(BINOPS[op], a, b)
    if isinstance(value, complex):  # (-1) ** 0.5, folded: the fuzzer's kernels are real
        raise Refused("a complex Python number")
    return RunTimeInt.of(value) if isinstance(a, RunTimeInt) or isinstance(b, RunTimeInt) else value


def _select(c, a, b):
    if _weak(a) and _weak(b):
        raise Refused("a conditional between two Python numbers is a weak run-time value")
    t = _numpy(np.result_type, a, b)
    for v in (a, b):  # np.where wraps a Python int that does not fit; NEP 50 (and the language) refuse it
        if isinstance(v, int) and not isinstance(v, bool) and t.kind in "iu":
            if not np.iinfo(t).min <= v <= np.iinfo(t).max:
                raise Refused(f"Python integer {v} out of bounds for {t}")
    return _numpy(np.where, _truth(c), a, b)


def _logical(op: str, a, b):
    if _kind(a) == "b" and _kind(b) == "b":
        if _weak(a) and _weak(b):
            return (a and b) if op == "and" else (a or b)
        return _numpy(np.logical_and if op == "and" else np.logical_or, a, b)
    if _weak(a) and _weak(b):
        raise Refused("and/or between two Python numbers is a weak run-time value")
    # Python's value: `a or b` is a if a is true, else b.
    return _select(a, a, b) if op == "or" else _select(a, b, a)


def _call(name: str, args: list):
    if all(_weak(a) for a in args) and name not in ("isnan", "isinf", "isfinite"):
        raise Refused("a builtin of Python numbers only")  # a weak run-time value in the language
    if name == "min":
        return _numpy(np.minimum, *args)
    if name == "max":
        return _numpy(np.maximum, *args)
    if name == "clamp":  # the three promoted together, then min(max(x, lo), hi)
        t = _numpy(np.result_type, *args)  # (max of two Python numbers alone would be NumPy's default type)
        x, lo, hi = (_numpy(np.asarray, a, t) if _weak(a) else np.asarray(a).astype(t) for a in args)
        return _numpy(np.minimum, _numpy(np.maximum, x, lo), hi)
    if name == "where":
        return _select(*args)
    if name == "rsqrt":
        root = _numpy(np.sqrt, args[0])
        if root.dtype == np.float16:  # one operation in the language: computed in f32, rounded once
            return (np.float32(1) / np.sqrt(np.asarray(args[0]).astype(np.float32))).astype(np.float16)
        return _numpy(np.divide, root.dtype.type(1), root)
    if name == "pow" and "f" not in (_kind(a) for a in args):
        return _binary("**", *args)
    if name == "reciprocal" and _kind(args[0]) != "f":  # NumPy leaves 1 // 0 unspecified, the language 0
        a = np.asarray(args[0]).astype(np.int8) if _kind(args[0]) == "b" else np.asarray(args[0])
        return np.where(a == 0, a.dtype.type(0), _numpy(np.reciprocal, np.where(a == 0, a.dtype.type(1), a)))
    if name in ("floor", "ceil", "trunc", "round") and _kind(args[0]) != "f":
        return args[0]
    if name in ("isnan", "isinf", "isfinite") and all(_weak(a) for a in args):
        return bool(_numpy(getattr(np, name), args[0]))  # np.isnan(2**64) raises
    return _numpy(getattr(np, _NUMPY_NAMES.get(name, name)), *args)


def _zero_ties(name: str, args):
    """The elements where `name` meets a zero of each sign, whose result's sign is not specified."""
    if name not in ZERO_TIES:
        return None
    a, b = (np.asarray(v) for v in args)
    if "f" not in (a.dtype.kind, b.dtype.kind):
        return None
    with np.errstate(all="ignore"):
        tie = (a == 0) & (b == 0) & (np.signbit(a.astype(np.float64)) != np.signbit(b.astype(np.float64)))
    return tie if np.any(tie) else None


def _cast(name: str, a, mask):
    t = np.dtype(CAST_TYPES[name])
    value = np.asarray(a)
    if t.kind in "iu" and value.dtype.kind == "f":
        wide = value.astype(np.float64)
        lo, hi = np.iinfo(t).min, np.iinfo(t).max
        with np.errstate(invalid="ignore"):
            outside = ~((np.trunc(wide) >= lo) & (np.trunc(wide) < float(hi) + 1))
        mask = _union(mask, outside if outside.ndim else (np.bool_(outside) if outside else None))
        with np.errstate(invalid="ignore"):
            return np.where(outside, 0, wide).astype(t), mask
    if isinstance(a, int) and t.kind in "iu":
        lo, hi = np.iinfo(t).min, np.iinfo(t).max
        return np.asarray((a - lo) % (hi - lo + 1) + lo).astype(t), mask  # C's conversion: wraps
    with np.errstate(all="ignore"):
        return value.astype(t), mask


# -- comparing results ------------------------------------------------------------------------


def ulps_apart(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many representable values lie between a and b (same float dtype; inf is one past max)."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ia = a.view(bits).astype(np.int64)
    ib = b.view(bits).astype(np.int64)
    top = np.int64(1) << (8 * a.dtype.itemsize - 1)
    ia = np.where(ia < 0, -(ia + top), ia)  # a monotonic integer line: -0.0 and 0.0 meet at 0
    ib = np.where(ib < 0, -(ib + top), ib)
    return np.abs(ia - ib)
