"""Python expressions → typed IR expressions (the expression half of the frontend)."""

from __future__ import annotations

import ast
import builtins as _py
import operator
from types import GeneratorType

import numpy as np

from .. import types as T
from ..types import Scalar, ScalarType, _bf16_bits
from . import complex_math, ir
from .builtins import BUILTINS, PYTHON_ALIASES, WHERE, Builtin
from .typing_rules import (
    WEAK_BOOL,
    WEAK_COMPLEX,
    WEAK_FLOAT,
    WEAK_INT,
    Type,
    Weak,
    concrete,
    describe,
    fits,
    is_bool,
    is_complex,
    promote,
    weak_of,
)

BINOPS = {  # also augmented assignment's (frontend.py)
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "truediv",
    ast.FloorDiv: "floordiv",
    ast.Mod: "mod",
    ast.Pow: "pow",
    ast.BitAnd: "and",
    ast.BitOr: "or",
    ast.BitXor: "xor",
    ast.LShift: "lshift",
    ast.RShift: "rshift",
}
_PYBINOPS = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "pow": operator.pow,
    "and": operator.and_,
    "or": operator.or_,
    "xor": operator.xor,
    "lshift": operator.lshift,
    "rshift": operator.rshift,
}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_PYCMPOPS = {op: getattr(operator, op) for op in ("lt", "le", "gt", "ge", "eq", "ne")}
_ARITH = {"add", "sub", "mul", "floordiv", "mod", "pow"}
_BITWISE = {"and", "or", "xor", "lshift", "rshift"}
# int(x), float(x), bool(x) make Python numbers, which stay weak as Python scalars do in NumPy 2.
_CASTS = {_py.int: WEAK_INT, _py.float: WEAK_FLOAT, _py.bool: WEAK_BOOL, _py.complex: WEAK_COMPLEX}
_ORDERING = {"lt", "le", "gt", "ge"}

# What to call a construct the language refuses.
REFUSED = {
    ast.Subscript: "subscripting (x[i])",
    ast.List: "a list",
    ast.Tuple: "a tuple",
    ast.Dict: "a dict",
    ast.Set: "a set",
    ast.ListComp: "a list comprehension",
    ast.SetComp: "a set comprehension",
    ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression",
    ast.Lambda: "a lambda",
    ast.JoinedStr: "an f-string",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield from",
    ast.NamedExpr: "the walrus operator (:=)",
    ast.Starred: "a starred expression",
    ast.Slice: "a slice",
    ast.MatMult: "the @ operator",
    ast.Is: "'is'",
    ast.IsNot: "'is not'",
    ast.In: "'in'",
    ast.NotIn: "'not in'",
}


class Unresolved(Exception):
    """A local variable was read before any assignment gave it a type (the frontend retries)."""

    def __init__(self, name: str, node: ast.AST):
        super().__init__(name)
        self.name, self.node = name, node


# What to say after "... is not supported in the kernel language" where the way out is not obvious.
_INSTEAD = {ast.Lambda: "; define a module-level @g.func and call it"}


def refused(node: ast.AST) -> str:
    return REFUSED.get(type(node), type(node).__name__)


class ExprLowering:
    """Mixin of the frontend's translator: `self.src`, `self.args`, `self.var_types`, ... are its."""

    def expr(self, node: ast.AST) -> ir.Expr:
        """`node` as typed IR. Lowered with an explicit stack, not by recursion: Python's parser
        nests an expression far deeper than its recursion limit (`x + x + ... + x`, 900 terms, is
        900 levels of BinOp). A `_expr_*` method that needs its operands is a generator: it
        yields each operand's AST node and is sent back the operand's IR."""
        pending: list[GeneratorType] = []
        value = self._lower(node)
        while True:
            if isinstance(value, GeneratorType):
                pending.append(value)
                value = None
            elif not pending:
                return value
            try:
                value = self._lower(pending[-1].send(value))
            except StopIteration as done:
                pending.pop()
                value = done.value

    def _lower(self, node: ast.AST):
        """The IR of a leaf, or the generator lowering an inner node (see `expr`)."""
        method = getattr(self, f"_expr_{type(node).__name__}", None)
        if method is None:
            raise self.src.error(
                node, f"{refused(node)} is not supported in the kernel language{_INSTEAD.get(type(node), '')}"
            )
        return method(node)

    # -- leaves -------------------------------------------------------------------------------

    def _expr_Constant(self, node: ast.Constant) -> ir.Expr:
        weak = weak_of(node.value)
        if weak is None:
            raise self.src.error(node, f"the constant {node.value!r} is not a number")
        return ir.Const(node.value, weak)

    def _expr_Name(self, node: ast.Name) -> ir.Expr:
        name = node.id
        if name in self.args:
            if self.args[name] is None:
                raise self.src.error(node, f"the params struct {name!r} can only be used as {name}.field")
            return ir.Var(name, self.args[name])
        if name in self.declared:
            return ir.Var(name, self.declared[name])
        if name in self.assigned:
            if name not in self.var_types:
                raise Unresolved(name, node)
            return ir.Var(name, self.var_types[name])
        return self.constant(self.resolve(node), node)

    def _expr_Attribute(self, node: ast.Attribute) -> ir.Expr:
        if isinstance(node.value, ast.Name) and node.value.id in self.args and self.args[node.value.id] is None:
            return self.field(node.value.id, node.attr, node)
        base = node.value
        while isinstance(base, ast.Attribute):
            base = base.value
        of_the_kernel = not isinstance(base, ast.Name) or (
            base.id in self.args or base.id in self.declared or base.id in self.assigned
        )
        if of_the_kernel and node.attr in ("real", "imag"):
            return self._part(node)
        if of_the_kernel:
            raise self.src.error(
                node,
                f"{ast.unparse(node)}: {ast.unparse(node.value)} is a scalar of the kernel, whose only "
                "attributes are .real and .imag",
            )
        return self.constant(self.resolve(node), node)

    def _part(self, node: ast.Attribute):
        """`z.real`, `z.imag`: as np.real(z) and np.imag(z), for real values too (x.imag is 0)."""
        value = yield node.value
        return self.builtin(BUILTINS[node.attr], [value], node)

    def field(self, param: str, name: str, node: ast.AST) -> ir.Expr:
        for f in self.params_class.__fields__:
            if f.name == name:
                return ir.Field(param, name, f.type)
        known = ", ".join(f.name for f in self.params_class.__fields__) or "none"
        raise self.src.error(node, f"{self.params_class.__name__} has no field {name!r} (fields: {known})")

    def constant(self, value, node: ast.AST) -> ir.Expr:
        """A module-level value used in a kernel: numbers are captured as constants."""
        if isinstance(value, Scalar):
            return ir.Const(value.value, value.type)
        if isinstance(value, np.generic) and not isinstance(value, (np.str_, np.bytes_)):
            return ir.Const(value.item(), T.from_dtype(value.dtype))
        weak = weak_of(value)
        if weak is None:
            raise self.src.error(node, f"{ast.unparse(node)} is {value!r}, not a number the kernel can use")
        return ir.Const(value, weak)

    def resolve(self, node: ast.AST):
        """The Python object a global name or dotted name refers to, looked up at compile time."""
        if isinstance(node, ast.Name):
            if node.id in self.namespace:
                return self.namespace[node.id]
            if hasattr(_py, node.id):
                return getattr(_py, node.id)
            raise self.src.error(node, f"name {node.id!r} is not defined")
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if not hasattr(base, node.attr):
                raise self.src.error(node, f"{ast.unparse(node.value)} has no attribute {node.attr!r}")
            return getattr(base, node.attr)
        raise self.src.error(
            node, f"{refused(node)} cannot be called in the kernel language{_INSTEAD.get(type(node), '')}"
        )

    # -- conversions --------------------------------------------------------------------------

    def convert(self, e: ir.Expr, t: Type, node: ast.AST) -> ir.Expr:
        """`e` as type `t` where the language converts implicitly: a Python int must fit (NEP 50)."""
        if e.type == t:
            return e
        if isinstance(e, ir.Const) and isinstance(e.type, Weak):
            if not fits(e.value, t):
                raise self.src.error(node, f"Python integer {e.value} is out of bounds for {describe(t)}")
            return ir.Const(coerce(e.value, t), t)
        return ir.Cast(e, t)

    def cast(self, e: ir.Expr, t: Type, node: ast.AST) -> ir.Expr:
        """An explicit cast, `g.i8(x)`: C's conversion (integers wrap, floats truncate toward zero)."""
        if e.type == t:
            return e
        if is_complex(e.type) and not is_complex(t):
            raise self.src.error(
                node,
                f"converting a {describe(e.type)} to {describe(t)} would drop its imaginary part; "
                "take its .real (or abs(z)) first",
            )
        if isinstance(e, ir.Const):
            if concrete(t).is_integer and isinstance(e.value, float) and not np.isfinite(e.value):
                raise self.src.error(node, f"{e.value} cannot be converted to {describe(t)}")
            return ir.Const(coerce(e.value, t, wrap=True), t)
        return ir.Cast(e, t)

    def truth(self, e: ir.Expr) -> ir.Expr:
        if is_bool(e.type):
            return e
        if isinstance(e, ir.Const) and isinstance(e.type, Weak):  # Python's truth, of any size
            return ir.Const(bool(e.value), T.bool_)
        return ir.Compare("ne", e, ir.Const(coerce(0, e.type), e.type), T.bool_)

    # -- operators ----------------------------------------------------------------------------

    def _expr_BinOp(self, node: ast.BinOp):
        op = BINOPS.get(type(node.op))
        if op is None:
            raise self.src.error(node, f"{refused(node.op)} is not supported in the kernel language")
        left = yield node.left
        right = yield node.right
        return self.binary(op, left, right, node)

    def binary(self, op: str, left: ir.Expr, right: ir.Expr, node: ast.AST) -> ir.Expr:
        folded = self._fold(op, left, right, node)
        if folded is not None:
            return folded
        t = promote(left.type, right.type)
        if op in _ARITH and is_bool(t):
            raise self.src.error(node, "arithmetic on two bools is not supported; cast one with g.i32(...) first")
        if op in _BITWISE and (concrete(t).is_float or is_complex(t)):
            raise self.src.error(node, f"bitwise operators need integers or bools, not {describe(t)}")
        if op in ("floordiv", "mod") and is_complex(t):
            symbol = "//" if op == "floordiv" else "%"
            raise self.src.error(node, f"{symbol} is not defined for complex numbers ({describe(t)}), as in NumPy")
        if op in ("lshift", "rshift") and is_bool(t):
            raise self.src.error(node, "shifts need integers, not bools")
        if op == "truediv" and not (concrete(t).is_float or is_complex(t)):
            t = WEAK_FLOAT if isinstance(t, Weak) else T.f64
        return ir.Binary(op, self.convert(left, t, node), self.convert(right, t, node), t)

    def _fold(self, op: str, left: ir.Expr, right: ir.Expr, node: ast.AST) -> ir.Expr | None:
        """Operations on Python numbers alone are done now, with Python's arithmetic."""
        if not (isinstance(left, ir.Const) and isinstance(right, ir.Const)):
            return None
        if not (isinstance(left.type, Weak) and isinstance(right.type, Weak)):
            return None
        try:
            value = _PYBINOPS[op](left.value, right.value)
        except (ZeroDivisionError, OverflowError, ValueError, TypeError) as e:
            raise self.src.error(node, f"{ast.unparse(node)} fails at compile time: {e}") from None
        weak = weak_of(value)
        if weak is None:
            raise self.src.error(node, f"{ast.unparse(node)} is {value!r}, not a real number")
        return ir.Const(value, weak)

    def _expr_UnaryOp(self, node: ast.UnaryOp):
        e = yield node.operand
        if isinstance(node.op, ast.Not):
            return ir.Unary("not", self.truth(e), T.bool_)
        if isinstance(node.op, ast.UAdd):
            return e
        if isinstance(node.op, ast.USub):
            if isinstance(e, ir.Const) and isinstance(e.type, Weak):
                return ir.Const(-e.value, weak_of(-e.value))
            if is_bool(e.type):
                raise self.src.error(node, "negating a bool is not supported; use `not`")
            return ir.Unary("neg", e, e.type)
        if concrete(e.type).is_float or is_complex(e.type):
            raise self.src.error(node, f"~ needs an integer or a bool, not {describe(e.type)}")
        if isinstance(e, ir.Const) and isinstance(e.type, Weak) and not is_bool(e.type):
            return ir.Const(~e.value, e.type)  # Python's ~256, -257: compared by value, as any literal
        return ir.Unary("not" if is_bool(e.type) else "invert", e, e.type)

    def _expr_Compare(self, node: ast.Compare):
        result = None
        left = yield node.left
        for op_node, right_node in zip(node.ops, node.comparators):
            op = _CMPOPS.get(type(op_node))
            if op is None:
                raise self.src.error(node, f"{refused(op_node)} is not supported in the kernel language")
            right = yield right_node
            this = self.compare(op, left, right, node)
            result = this if result is None else ir.Logical("and", result, this, T.bool_)
            left = right
        return result

    def compare(self, op: str, left: ir.Expr, right: ir.Expr, node: ast.AST) -> ir.Expr:
        if all(isinstance(s, ir.Const) and isinstance(s.type, Weak) for s in (left, right)):
            try:  # two Python numbers: Python's answer, of any size
                return ir.Const(bool(_PYCMPOPS[op](left.value, right.value)), T.bool_)
            except TypeError as e:  # complex ordered
                raise self.src.error(node, f"{ast.unparse(node)} fails at compile time: {e}") from None
        # A Python int known only at run time (a range() variable, arithmetic on one) may lie outside an
        # integer array's type: compared as an i64, by value, as NumPy compares Python ints.
        left, right = (
            self.convert(s, T.i64, node) if _runtime_weak_int(s) and _is_array_int(o.type) else s
            for s, o in ((left, right), (right, left))
        )
        if {left.type, right.type} == {T.i64, T.u64}:
            return ir.Compare(op, left, right, T.bool_)  # compared exactly, not through f64 (codegen.py)
        outside = _outside_the_range(op, left, right)
        if outside is not None:
            return ir.Const(outside, T.bool_)
        t = promote(left.type, right.type)
        if op in _ORDERING and is_complex(t):
            raise self.src.error(node, f"{_CMP_SYMBOL[op]} on {describe(t)}: {complex_math.NO_ORDER}")
        for side in (left, right):
            # NumPy compares a Python int that does not fit the other side's type by value.
            if isinstance(side, ir.Const) and isinstance(side.type, Weak) and not fits(side.value, t):
                t = promote(concrete(side.type), t)
        return ir.Compare(op, self.convert(left, t, node), self.convert(right, t, node), T.bool_)

    def _expr_BoolOp(self, node: ast.BoolOp):
        op = "and" if isinstance(node.op, ast.And) else "or"
        result = yield node.values[0]
        for value in node.values[1:]:
            result = self.logical(op, result, (yield value), node)
        return result

    def logical(self, op: str, left: ir.Expr, right: ir.Expr, node: ast.AST) -> ir.Expr:
        if is_bool(left.type) and is_bool(right.type):
            return ir.Logical(op, left, right, promote(left.type, right.type))
        # Python's `a or b` is a value: a if a is true, else b (and `and` the other way round).
        t = promote(left.type, right.type)
        a, b = self.convert(left, t, node), self.convert(right, t, node)
        return ir.Select(self.truth(left), a, b, t) if op == "or" else ir.Select(self.truth(left), b, a, t)

    def _expr_IfExp(self, node: ast.IfExp):
        cond = yield node.test
        then = yield node.body
        orelse = yield node.orelse
        return self.select(cond, then, orelse, node)

    def select(self, cond: ir.Expr, a: ir.Expr, b: ir.Expr, node: ast.AST) -> ir.Expr:
        t = promote(a.type, b.type)
        return ir.Select(self.truth(cond), self.convert(a, t, node), self.convert(b, t, node), t)

    # -- calls --------------------------------------------------------------------------------

    def _expr_Call(self, node: ast.Call):
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.src.error(
                    a, f"unpacking arguments (*{ast.unparse(a.value)}) is not supported in kernel calls"
                )
        for k in node.keywords:
            if k.arg is None:
                raise self.src.error(node, f"unpacking keyword arguments (**{ast.unparse(k.value)}) is not supported")
        if node.keywords:
            raise self.src.error(node, "keyword arguments are not supported in kernel calls")
        if isinstance(node.func, ast.Name) and (node.func.id in self.args or node.func.id in self.assigned):
            raise self.src.error(node, f"{node.func.id!r} is a variable, not a function")
        if self._calls_itself(node.func):
            raise self.src.error(node, f"{self.src.name!r} calls itself; kernels and @g.func functions cannot recurse")
        fn = self.resolve(node.func)
        cmath_name = _cmath_name(fn)
        fn = _alias(fn)
        args = []
        for a in node.args:
            args.append((yield a))
        if cmath_name is not None:  # cmath.sqrt(x) is complex for a real x too
            args = [self.convert(a, promote(a.type, WEAK_COMPLEX), node) for a in args]
            return self.builtin(complex_math.COMPLEX[cmath_name], args, node)
        if isinstance(fn, ScalarType) or (isinstance(fn, type) and fn in _CASTS):
            return self._cast_call(_CASTS.get(fn, fn), args, node)
        if isinstance(fn, type) and issubclass(fn, np.generic) and np.dtype(fn).kind in "biufc":
            return self._cast_call(T.from_dtype(fn), args, node)  # np.float32(x) is g.f32(x)
        if isinstance(fn, Builtin):
            return self.builtin(fn, args, node)
        if hasattr(fn, "__gompute_func__"):
            return self.call_func(fn, args, node)
        if _is_map_kernel(fn):
            raise self.src.error(
                node,
                f"{ast.unparse(node.func)} is a map kernel, which only g.map runs; "
                "make the code both share a @g.func and call that",
            )
        raise self.src.error(
            node,
            f"calling {ast.unparse(node.func)} is not supported in the kernel language "
            "(only builtins, casts and @g.func functions)",
        )

    def _calls_itself(self, func: ast.AST) -> bool:
        """Whether `func` names the function being translated: its own name, unbound while a
        decorator translates it, or bound to it or to the kernel or @g.func made of it."""
        if not isinstance(func, ast.Name) or func.id != self.src.name:
            return False
        if func.id not in self.namespace:
            return True
        target = self.namespace[func.id]
        return target is self.src.function or getattr(target, "fn", None) is self.src.function

    def _cast_call(self, t: Type, args: list[ir.Expr], node: ast.AST) -> ir.Expr:
        self._check_arity(node, ast.unparse(node.func), args, 1, 2 if is_complex(t) else 1)
        if len(args) == 2:
            return self._make_complex(t, args, node)
        if is_bool(t):
            truth = self.truth(args[0])
            return truth if t is T.bool_ else ir.Cast(truth, t)
        return self.cast(args[0], t, node)

    def _make_complex(self, t: Type, args: list[ir.Expr], node: ast.AST) -> ir.Expr:
        """`g.c64(re, im)`: two real values, each converted to the part type as a cast converts."""
        if any(is_complex(a.type) for a in args):
            raise self.src.error(node, f"{ast.unparse(node.func)}(re, im) takes two real numbers, not a complex one")
        part = T.f64 if isinstance(t, Weak) else t.part
        re, im = (self.cast(a, part, node) for a in args)
        if isinstance(re, ir.Const) and isinstance(im, ir.Const):
            return ir.Const(coerce(complex(re.value, im.value), t), t)
        return ir.Call(complex_math.make, [re, im], t)

    def _check_arity(self, node, name, args, lo, hi):
        if len(args) < lo or (hi is not None and len(args) > hi):
            want = f"{lo}" if lo == hi else f"at least {lo}" if hi is None else f"{lo} to {hi}"
            raise self.src.error(node, f"{name} takes {want} arguments, got {len(args)}")

    def builtin(self, b: Builtin, args: list[ir.Expr], node: ast.AST) -> ir.Expr:
        self._check_arity(node, f"g.{b.name}", args, b.min_args, b.max_args)
        if b.rule != WHERE:  # where(c, a, b) picks between complex values as between real ones
            b = self._complex_builtin(b, args, node)
        return b.lower(self, args, node)

    def _complex_builtin(self, b: Builtin, args: list[ir.Expr], node: ast.AST) -> Builtin:
        """`b`, or the entry that computes it on complex arguments (complex_math.for_args)."""
        chosen = complex_math.for_args(b, [a.type for a in args])
        if chosen is None:
            raise self.src.error(node, complex_math.refusal(b))
        return chosen


_CMP_SYMBOL = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _cmath_name(fn) -> str | None:
    """The complex builtin a `cmath` function is, or None."""
    try:
        return complex_math.CMATH_ALIASES.get(fn)
    except TypeError:  # unhashable
        return None


def _is_map_kernel(fn) -> bool:
    # kernel.py builds on this module, so MapKernel marks itself rather than being imported here.
    return getattr(type(fn), "is_map_kernel", False)


def _alias(fn):
    try:
        return PYTHON_ALIASES.get(fn, fn)
    except TypeError:  # unhashable
        return fn


def coerce(value, t: Type, wrap: bool = False):
    """The Python value `value` as type `t` holds it (rounded for floats, wrapped if `wrap`)."""
    if isinstance(t, Weak):
        return {"b": bool, "i": int, "f": float, "c": complex}[t.kind](value)
    if t.kind == "b":
        return bool(value)
    if t.is_complex:
        with np.errstate(over="ignore"):
            return complex(np.array(value, dtype=np.complex128).astype(t.dtype))
    if t is T.bf16:
        bits = _bf16_bits(float(value))
        return float(np.frombuffer((bits << 16).to_bytes(4, "little"), np.float32)[0])
    if t.is_float:
        with np.errstate(over="ignore"):
            return float(np.array(value, dtype=np.float64).astype(t.dtype))
    if wrap or isinstance(value, float):
        lo, hi = t.range()
        as_int = int(value)
        return (as_int - lo) % (hi - lo + 1) + lo
    return int(value)


_FLIPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def _runtime_weak_int(e: ir.Expr) -> bool:
    return not isinstance(e, ir.Const) and isinstance(e.type, Weak) and e.type.kind == "i"


def _is_array_int(t) -> bool:
    return not isinstance(t, Weak) and t.is_integer


def _outside_the_range(op: str, left: ir.Expr, right: ir.Expr) -> bool | None:
    """An integer compared with a Python int beyond its type's range, as NumPy 2 answers it: by
    value, the same for every element (through f64, u64 against 2**64 rounded both to 2**64)."""
    if isinstance(left, ir.Const) and not isinstance(right, ir.Const):
        left, right, op = right, left, _FLIPPED[op]
    if not (isinstance(right, ir.Const) and isinstance(right.type, Weak) and isinstance(right.value, int)):
        return None
    t = left.type
    if isinstance(t, Weak) or not t.is_integer or isinstance(right.value, bool) or fits(right.value, t):
        return None
    above = right.value > t.range()[1]  # else below the range
    return {"lt": above, "le": above, "gt": not above, "ge": not above, "eq": False, "ne": True}[op]
