"""Typed IR → C++: one function body, the same text on every backend.

Every expression is emitted fully parenthesized; the IR already holds every conversion, so
what is emitted is only the spelling of each operation (see preludes/common.h for the helpers).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import fields, is_dataclass

import numpy as np

from .. import types as T
from ..errors import CompileError
from . import ir
from .typing_rules import Type, concrete, is_half, unsigned_c

C_KEYWORDS = frozenset(
    "alignas alignof and and_eq asm auto bitand bitor bool break case catch char char16_t char32_t class "
    "compl const constexpr const_cast continue decltype default delete do double dynamic_cast else enum "
    "explicit export extern false float for friend goto if inline int long mutable namespace new noexcept "
    "not not_eq nullptr operator or or_eq private protected public register reinterpret_cast return short "
    "signed sizeof static static_assert static_cast struct switch template this thread_local throw true "
    "try typedef typeid typename union unsigned using virtual void volatile wchar_t while xor xor_eq "
    "main len params data out restrict strides".split()
)
_C_BINOP = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "and": "&", "or": "|", "xor": "^"}
_C_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def c_ident(name: str) -> str:
    """A Python identifier as a C++ one that cannot clash with keywords, gompute's own names or
    another identifier's: a name that could is prefixed `gompute_py_`, which no name left as it
    is begins with (`float` and `float_` had both become `float_`)."""
    if name.startswith("%"):  # a variable the frontend made ("%it1")
        return f"gompute_{name[1:]}"
    if name in C_KEYWORDS or name.startswith("gompute") or "__" in name or name.startswith("_"):
        return f"gompute_py_{name}"
    return name


def value_ctype(t: Type) -> str:
    """The C++ type a value of type `t` is held in (f16 and bf16 are held in float)."""
    c = concrete(t)
    return "float" if is_half(c) else c.c_name


def storage_ctype(t: Type) -> str:
    """The C++ type of `t` in memory (arrays, params fields)."""
    return concrete(t).c_name


def literal(value, t: Type) -> str:
    """A C++ literal of type `t` holding `value` exactly."""
    c = concrete(t)
    if c.kind == "b":
        return "true" if value else "false"
    if c.is_float:
        return _float_literal(float(value), c)
    if c.is_complex:
        value = complex(value)
        return f"{c.c_name}({_float_literal(value.real, c.part)}, {_float_literal(value.imag, c.part)})"
    value = int(value)
    lo, hi = c.range()
    if not lo <= value <= hi:  # the frontend refuses or wraps such a value first: GCC would truncate it
        raise CompileError(f"internal error: the constant {value} does not fit {c.name}; please report it")
    suffix = {64: "LL" if c.kind == "i" else "ULL"}.get(c.bits, "" if c.kind == "i" else "u")
    if c.kind == "i" and value == lo:
        return f"(({c.c_name})({value + 1}{suffix} - 1))"
    text = f"{value}{suffix}"
    return text if c.bits >= 32 and value >= 0 else f"(({c.c_name}){text})"


def _float_literal(value: float, c: T.ScalarType) -> str:
    width = "f64" if c is T.f64 else "f32"
    if c is not T.f64:
        with np.errstate(over="ignore"):
            value = float(np.float32(value))  # 1e39 rounds to inf in f32
    if np.isnan(value):
        return f"gompute_nan_{width}()"
    if np.isinf(value):
        return f"gompute_inf_{width}()" if value > 0 else f"(-gompute_inf_{width}())"
    text = repr(value) if c is T.f64 else str(np.float32(value))
    if not any(ch in text for ch in ".e"):
        text += ".0"
    text = text if c is T.f64 else text + "f"
    return f"({text})" if value < 0 or text.startswith("-") else text


def _wrap_int(c: T.ScalarType, op: str, a: str, b: str) -> str:
    u = unsigned_c(c)
    return f"(({c.c_name})(({u}){a} {op} ({u}){b}))"


def _round(t: Type, code: str) -> str:
    """Round a float-held f16/bf16 result back to its format."""
    c = concrete(t)
    return f"gompute_round_{c.name}({code})" if is_half(c) else code


class ExprEmitter:
    """IR expressions → C++ expressions."""

    def __init__(self, params_names: dict[str, str], function_names: dict[int, str], truncated=frozenset()):
        self.params_names = params_names
        self.function_names = function_names  # id(ir.Function) -> its C++ name in this module
        self.truncated = truncated  # variables that may hold a float converted to an integer

    def expr(self, e: ir.Expr) -> str:
        return getattr(self, f"_{type(e).__name__}")(e)

    def _Const(self, e: ir.Const) -> str:
        return literal(e.value, e.type)

    def _Var(self, e: ir.Var) -> str:
        return c_ident(e.name)

    def _Field(self, e: ir.Field) -> str:
        code = f"{self.params_names[e.param]}.{c_ident(e.name)}"
        return f"gompute_load_{e.type.name}({code})" if is_half(e.type) else code

    def _Unary(self, e: ir.Unary) -> str:
        a, c = self.expr(e.operand), concrete(e.type)
        if e.op == "not":
            return f"(!{a})"
        if e.op == "invert":
            return f"(({c.c_name})~{a})"
        if c.is_integer:
            return _wrap_int(c, "-", "0", a)
        return f"(-{a})"

    def _Binary(self, e: ir.Binary) -> str:
        a, b, c = self.expr(e.left), self.expr(e.right), concrete(e.type)
        if c.is_float:
            return _round(c, self._float_binary(e.op, c, a, b))
        if c.is_complex:  # + - * / are complex.h's operators, NumPy's loops
            return f"gompute_cpow({a}, {b})" if e.op == "pow" else f"({a} {_C_BINOP[e.op]} {b})"
        if e.op in ("add", "sub", "mul"):
            return _wrap_int(c, _C_BINOP[e.op], a, b)
        if e.op in ("and", "or", "xor"):
            return f"(({c.c_name})({a} {_C_BINOP[e.op]} {b}))"
        helper = {
            "floordiv": f"gompute_ifloordiv<{c.c_name}, {unsigned_c(c)}>",
            "mod": f"gompute_imod<{c.c_name}>",
            "pow": f"gompute_ipow<{c.c_name}, {unsigned_c(c)}>",
            "lshift": f"gompute_shl<{c.c_name}, {unsigned_c(c)}>",
            "rshift": f"gompute_shr<{c.c_name}>",
        }[e.op]
        return f"{helper}({a}, {b})"

    @staticmethod
    def _float_binary(op: str, c: T.ScalarType, a: str, b: str) -> str:
        width, suffix = ("f64", "") if c is T.f64 else ("f32", "f")
        if op in _C_BINOP:
            return f"({a} {_C_BINOP[op]} {b})"
        if op == "pow":
            return f"pow{suffix}({a}, {b})"
        return f"gompute_{op}_{width}({a}, {b})"

    def _Compare(self, e: ir.Compare) -> str:
        if e.left.type is not e.right.type:  # i64 with u64: by the sign of a - b, exactly
            return f"(gompute_cmp_iu({self.expr(e.left)}, {self.expr(e.right)}) {_C_CMP[e.op]} 0)"
        return f"({self.expr(e.left)} {_C_CMP[e.op]} {self.expr(e.right)})"

    def _Logical(self, e: ir.Logical) -> str:
        return f"({self.expr(e.left)} {'&&' if e.op == 'and' else '||'} {self.expr(e.right)})"

    def _Select(self, e: ir.Select) -> str:
        return f"({self.expr(e.cond)} ? {self.expr(e.then)} : {self.expr(e.orelse)})"

    def _Cast(self, e: ir.Cast) -> str:
        a, src, dst = self.expr(e.value), concrete(e.value.type), concrete(e.type)
        if dst.kind == "b":
            return f"((bool)({a}))"
        held = "float" if is_half(dst) else dst.c_name
        converted = f"({held})({a})"
        if dst.is_float and src.kind in "iu" and _may_be_a_float_truncated(e.value, self.truncated):
            converted = f"gompute_plus_zero<{held}>({converted})"
        if is_half(dst):
            if src is T.f64:
                return f"gompute_round_{dst.name}_f64({a})"
            if dst is T.bf16 and src in (T.i32, T.u32):  # exact in f64; through f32 rounded twice
                return f"gompute_round_bf16_f64((double)({a}))"
            if dst is T.bf16 and src in (T.i64, T.u64):  # to f64 rounded to odd, then once to bf16
                return f"gompute_round_bf16_f64(gompute_f64_round_odd_{src.name}({a}))"
            return f"gompute_round_{dst.name}({converted})"
        return f"({converted})"

    def _Call(self, e: ir.Call) -> str:
        compute = e.args[0].type
        code = e.builtin.spell(compute, [self.expr(a) for a in e.args])
        return code if e.builtin.exact else _round(e.type, code)

    def _FuncCall(self, e: ir.FuncCall) -> str:
        return f"{self.function_names[id(e.function)]}({', '.join(self.expr(a) for a in e.args)})"


def _may_be_a_float_truncated(e: ir.Expr, names: set[str]) -> bool:
    """Whether the integer `e` may reach the compiler as a float converted to an integer: made of one
    (the compiler drops `+ 0`, `* 1`, conversions), of the variables `names` (truncated_names) or of a
    function's result, once inlined. Then a conversion of it back to a float needs gompute_plus_zero
    (preludes/common.h)."""
    if isinstance(e, ir.Cast) and concrete(e.value.type).is_float:
        return True
    if isinstance(e, ir.Var):
        return e.name in names
    if isinstance(e, (ir.Compare, ir.Logical)):  # a bool, whatever its operands
        return False
    if isinstance(e, ir.Select):
        return _may_be_a_float_truncated(e.then, names) or _may_be_a_float_truncated(e.orelse, names)
    parts = {ir.Unary: ("operand",), ir.Binary: ("left", "right"), ir.Cast: ("value",)}.get(type(e), ())
    args = getattr(e, "args", []) + [getattr(e, p) for p in parts]
    return isinstance(e, ir.FuncCall) or any(_may_be_a_float_truncated(a, names) for a in args)


def truncated_names(fn: ir.Function) -> set[str]:
    """The variables of `fn` that may hold a float converted to an integer: an @g.func's parameters
    (its callers' values, once inlined; a kernel's are loaded from arrays) and what is assigned them."""
    names = set() if fn.c_name.startswith(ir.KERNEL_PREFIX) else {p.name for p in fn.params}
    assigns = [s for s in _walk(fn.body) if isinstance(s, ir.Assign)]
    while True:
        more = {s.target for s in assigns if _may_be_a_float_truncated(s.value, names)} - names
        if not more:
            return names
        names |= more


class FunctionEmitter(ExprEmitter):
    """One `ir.Function` → a `GOMPUTE_FN` C++ function, with `#line`s into the user's file."""

    def __init__(self, fn: ir.Function, params_struct_names: dict[type, str], function_names: dict[int, str]):
        params = {p.name: c_ident(p.name) for p in fn.params if p.params_class is not None}
        super().__init__(params, function_names, truncated_names(fn))
        self.fn = fn
        self.struct_names = params_struct_names
        self.lines: list[str] = []
        self.file = fn.filename.replace("\\", "\\\\").replace('"', '\\"')
        self.loop_targets = {s.target for s in _walk(fn.body) if isinstance(s, ir.For)}

    def emit(self) -> list[str]:
        fn = self.fn
        args = []
        for p in fn.params:
            if p.params_class is not None:
                args.append(f"const {self.struct_names[p.params_class]} {c_ident(p.name)}")
            else:
                args.append(f"{value_ctype(p.type)} {c_ident(p.name)}")
        self.lines.append(f'#line {fn.line} "{self.file}"')
        name = self.function_names[id(fn)]
        self.lines.append(f"GOMPUTE_FN {value_ctype(fn.return_type)} {name}({', '.join(args)}) {{")
        for name, t in fn.locals.items():
            self.lines.append(f"  {value_ctype(t)} {c_ident(name)} = {literal(0, t)};")
        self.block(fn.body, 1)
        self.lines.append("}")
        return self.lines

    def block(self, stmts: list[ir.Stmt], depth: int) -> None:
        for s in stmts:
            self.stmt(s, depth)

    def stmt(self, s: ir.Stmt, depth: int) -> None:
        pad = "  " * depth
        self.lines.append(f'#line {s.line} "{self.file}"')
        if isinstance(s, ir.Assign):
            self.lines.append(f"{pad}{c_ident(s.target)} = {self.expr(s.value)};")
        elif isinstance(s, ir.Return):
            self.lines.append(f"{pad}return {self.expr(s.value)};")
        elif isinstance(s, ir.Break):
            self.lines.append(f"{pad}break;")
        elif isinstance(s, ir.Continue):
            self.lines.append(f"{pad}continue;")
        elif isinstance(s, ir.If):
            self._if(s, depth)
        elif isinstance(s, ir.While):
            self.lines.append(f"{pad}while ({self.expr(s.cond)}) {{")
            self.block(s.body, depth + 1)
            self.lines.append(f"{pad}}}")
        else:
            self._for(s, depth)

    def _if(self, s: ir.If, depth: int) -> None:
        pad = "  " * depth
        self.lines.append(f"{pad}if ({self.expr(s.cond)}) {{")
        self.block(s.body, depth + 1)
        if s.orelse:
            self.lines.append(f"{pad}}} else {{")
            self.block(s.orelse, depth + 1)
        self.lines.append(f"{pad}}}")

    def _assigned_bytes(self, body: list[ir.Stmt]) -> int:
        """The widest value, in bytes as held, that a loop's `body` carries from one iteration to
        the next. The loops' own targets aside (a loop's variable is a weak Python int, held in 64
        bits, whatever the range's width), and its integer counters (`k += 1`): GCC computes those
        from the trip count, so their width is not the loop's."""
        held = {p.name: concrete(p.type) for p in self.fn.params if p.params_class is None}
        held |= {name: concrete(t) for name, t in self.fn.locals.items()}  # parameters are assigned too
        counters = {name for name in _counters(body) if held[name].is_integer}
        assigned = {s.target for s in _walk(body) if isinstance(s, ir.Assign)} - self.loop_targets - counters
        types = [held[name] for name in assigned]
        return max((4 if is_half(t) else t.itemsize for t in types), default=0)

    def _for(self, s: ir.For, depth: int) -> None:
        # range() evaluates its arguments once, before the first iteration.
        pad, t = "  " * depth, value_ctype(s.start.type)
        it = c_ident(s.counter)
        stop, step = f"{it}_stop", f"{it}_step"
        self.lines.append(f"{pad}{{")
        self.lines.append(f"{pad}  const {t} {stop} = {self.expr(s.stop)};")
        self.lines.append(f"{pad}  const {t} {step} = {self.expr(s.step)};")
        if isinstance(s.step, ir.Const):
            cond = f"{it} < {stop}" if s.step.value > 0 else f"{it} > {stop}"
        else:
            cond = f"({step} > 0 ? {it} < {stop} : {step} < 0 && {it} > {stop})"
        if _steps_within_its_type(s):  # constant bounds: the trip count is the compiler's to see
            self.lines.append(f"{pad}  for ({t} {it} = {self.expr(s.start)}; {cond}; {it} += {step}) {{")
            self.block(s.body, depth + 2)
            self.lines.append(f"{pad}  }}")
        elif not isinstance(s.step, ir.Const):
            following = f"gompute_range_next({it}, {stop}, {step})"
            self.lines.append(f"{pad}  for ({t} {it} = {self.expr(s.start)}; {cond}; {it} = {following}) {{")
            self.block(s.body, depth + 2)
            self.lines.append(f"{pad}  }}")
        else:
            # A trip count known only at run time (range(p.n)): a do-while that runs at least
            # once, its body guarded, since GCC vectorizes across such a loop (the elements in
            # lanes) but not across a `for`'s zero-trip test. The trip count is:
            # - unsigned, so that no range, however near its type's ends, overflows the counter;
            # - at least 32 bits, as C++ promotes a narrower difference to a signed int;
            # - 64 bits where the range or a value the body carries is 64-bit, as GCC turns the
            #   guard into selects of the carried values and vectorizes them only where the
            #   guard's compare is as wide as they are (_assigned_bytes);
            # - computed without a branch, as a conditional count stays control flow inside the
            #   rows loop, which GCC does not vectorize.
            c = s.step.value
            carried = self._assigned_bytes(s.body)
            u = "uint64_t" if t.endswith("64_t") or carried == 8 else "uint32_t"
            start = f"{it}_start"
            self.lines.append(f"{pad}  const {t} {start} = {self.expr(s.start)};")
            lo, hi = (start, stop) if c > 0 else (stop, start)
            span = f"({u}){hi} - ({u}){lo}"
            trips = span if abs(c) == 1 else f"({u})(({span} - 1) / {abs(c)}u + 1)"
            count, k = f"{it}_count", f"{it}_k"
            self.lines.append(f"{pad}  const {u} {count} = ({u})({lo} < {hi}) * ({u})({trips});")
            self.lines.append(f"{pad}  {u} {k} = 0;")
            guard, narrow_guard = f"{k} < {count}", u == "uint64_t" and carried < 8
            if narrow_guard:
                # A 64-bit range over a body of 32-bit values: a 64-bit count (a range may run
                # past 2**32 trips), guarded in 32 bits so the guard's compare is as wide as the
                # values. The guard's own counter stops at 2**32 - 2 and its bound at 2**32 - 1,
                # so `g < bound` is `k < count` for every trip the loop makes (it runs once when
                # count is 0).
                g, bound = f"{it}_g", f"{it}_bound"
                clamped = f"{count} < 0xFFFFFFFFu ? (uint32_t){count} : 0xFFFFFFFFu"
                self.lines.append(f"{pad}  const uint32_t {bound} = {clamped};")
                self.lines.append(f"{pad}  uint32_t {g} = 0;")
                guard = f"{g} < {bound}"
            self.lines.append(f"{pad}  do {{")
            self.lines.append(f"{pad}    if ({guard}) {{")
            # The body reads this counter only to assign the loop's own variable (a weak int, 64
            # bits), and each value lies in the range, so a 64-bit counter's sum needs no
            # narrowing to `t`; a narrowing between the two would stop GCC vectorizing the body.
            v = t if u != "uint64_t" else "uint64_t" if t.startswith("u") else "int64_t"
            self.lines.append(f"{pad}      const {v} {it} = ({v})(({u}){start} + {k} * ({u}){step});")
            self.block(s.body, depth + 3)
            self.lines.append(f"{pad}    }}")
            if narrow_guard:
                self.lines.append(f"{pad}    {g} += {g} < 0xFFFFFFFEu;")
            self.lines.append(f"{pad}  }} while (++{k} < {count});")
        self.lines.append(f"{pad}}}")


def _steps_within_its_type(s: ir.For) -> bool:
    """Whether range(start, stop, step) is all constants and its variable, stepped once past the
    last trip as a `for` steps it, stays in its type's range."""
    if not all(isinstance(e, ir.Const) for e in (s.start, s.stop, s.step)):
        return False
    start, stop, step = s.start.value, s.stop.value, s.step.value
    lo, hi = concrete(s.start.type).range()
    return lo <= start + len(range(start, stop, step)) * step <= hi


def _counters(body: list[ir.Stmt]) -> set[str]:
    """The variables `body` steps by a constant once an iteration (`k += 1` at its top level) and
    reads nowhere else: each iteration's value is the loop's trip so far times the step."""
    assigned = Counter(s.target for s in _walk(body) if isinstance(s, ir.Assign))
    reads = Counter(name for s in _walk(body) for e in _stmt_exprs(s) for name in _var_names(e))
    return {
        s.target
        for s in body
        if isinstance(s, ir.Assign) and _steps_by_a_constant(s) and assigned[s.target] == reads[s.target] == 1
    }


def _steps_by_a_constant(s: ir.Assign) -> bool:
    """`s` is `v = v + c`, `v = c + v` or `v = v - c`, c a constant."""
    e = s.value
    if not isinstance(e, ir.Binary) or e.op not in ("add", "sub"):
        return False
    pairs = [(e.left, e.right)] + ([(e.right, e.left)] if e.op == "add" else [])
    return any(isinstance(v, ir.Var) and v.name == s.target and isinstance(c, ir.Const) for v, c in pairs)


def _stmt_exprs(s: ir.Stmt) -> list[ir.Expr]:
    """The expressions `s` evaluates itself (not those of the statements nested in it)."""
    if isinstance(s, ir.Assign | ir.Return):
        return [s.value]
    if isinstance(s, ir.If | ir.While):
        return [s.cond]
    if isinstance(s, ir.For):
        return [s.start, s.stop, s.step]
    return []


def _var_names(e: ir.Expr):
    """The name of every variable `e` reads, once per read."""
    if isinstance(e, ir.Var):
        yield e.name
    for f in fields(e) if is_dataclass(e) else ():
        value = getattr(e, f.name)
        for item in value if isinstance(value, list) else (value,):
            if isinstance(item, ir.Expr):
                yield from _var_names(item)


def _walk(stmts: list[ir.Stmt]):
    """Every statement in `stmts`, nested ones included."""
    for s in stmts:
        yield s
        for body in (getattr(s, "body", None), getattr(s, "orelse", None)):
            if body:
                yield from _walk(body)
