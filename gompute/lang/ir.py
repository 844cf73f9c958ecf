"""The typed IR between the Python frontend and the C++ emitter.

Every expression carries its type. The frontend inserts explicit `Cast`s, so an operation's
operands already have the type it computes in and the emitter never promotes anything.
Statements carry the user's source line, for `#line` directives.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .typing_rules import Type


class Expr:
    type: Type


@dataclass
class Const(Expr):
    value: bool | int | float
    type: Type


@dataclass
class Var(Expr):
    name: str
    type: Type


@dataclass
class Field(Expr):
    """`p.scale`: a field of the kernel's params struct."""

    param: str
    name: str
    type: Type


@dataclass
class Unary(Expr):
    op: str  # "neg", "invert", "not"
    operand: Expr
    type: Type


@dataclass
class Binary(Expr):
    op: str  # add sub mul truediv floordiv mod pow and or xor lshift rshift
    left: Expr
    right: Expr
    type: Type


@dataclass
class Compare(Expr):
    op: str  # "lt", "le", "gt", "ge", "eq", "ne"; operands share one type, except i64 with u64
    left: Expr
    right: Expr
    type: Type


@dataclass
class Logical(Expr):
    """`and`/`or` on bools (the frontend turns Python's value-returning forms into Select)."""

    op: str  # "and", "or"
    left: Expr
    right: Expr
    type: Type


@dataclass
class Select(Expr):
    cond: Expr
    then: Expr
    orelse: Expr
    type: Type


@dataclass
class Cast(Expr):
    value: Expr
    type: Type


@dataclass
class Call(Expr):
    """A builtin: `sqrt(x)`; the args already have the types the builtin computes in."""

    builtin: object  # builtins.Builtin
    args: list[Expr]
    type: Type


@dataclass
class FuncCall(Expr):
    """A call to a specialization of an `@g.func` function."""

    function: Function
    args: list[Expr]
    type: Type


class Stmt:
    line: int


@dataclass
class Assign(Stmt):
    target: str
    value: Expr
    line: int


@dataclass
class If(Stmt):
    cond: Expr
    body: list[Stmt]
    orelse: list[Stmt]
    line: int


@dataclass
class For(Stmt):
    """`for target in range(start, stop, step)`; `counter` is the hidden induction variable."""

    target: str
    counter: str
    start: Expr
    stop: Expr
    step: Expr
    body: list[Stmt]
    line: int


@dataclass
class While(Stmt):
    cond: Expr
    body: list[Stmt]
    line: int


@dataclass
class Break(Stmt):
    line: int


@dataclass
class Continue(Stmt):
    line: int


@dataclass
class Return(Stmt):
    value: Expr
    line: int


@dataclass
class Param:
    name: str
    type: Type | None  # None: the params struct
    params_class: type | None = None


KERNEL_PREFIX = "gompute_kernel_"  # a kernel's C++ name starts so; an @g.func's does not


@dataclass
class Function:
    """One typed function: a kernel's element function or a specialization of an `@g.func`."""

    name: str  # the Python name
    c_name: str  # the C++ name it prefers; a module makes names unique (module.function_names)
    params: list[Param]
    return_type: Type
    locals: dict[str, Type]
    body: list[Stmt]
    filename: str
    line: int
    callees: list[Function] = field(default_factory=list)

    @property
    def has_loop(self) -> bool:
        """Whether a `for` or `while` runs in this function or in one it calls."""

        def any_loop(body: list[Stmt]) -> bool:
            return any(
                isinstance(s, (For, While)) or (isinstance(s, If) and (any_loop(s.body) or any_loop(s.orelse)))
                for s in body
            )

        return any_loop(self.body) or any(c.has_loop for c in self.callees)

    @property
    def params_struct(self) -> type | None:
        return next((p.params_class for p in self.params if p.params_class is not None), None)

    @property
    def array_params(self) -> list[Param]:
        return [p for p in self.params if p.params_class is None]
