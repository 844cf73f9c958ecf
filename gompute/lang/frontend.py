"""Python function → typed IR (the statement half of the frontend; expressions are in exprs.py).

A local variable takes the promoted type of every value assigned to it anywhere in the
function, so the translation runs to a fixed point: each pass may widen some variable's type,
and the pass that widens nothing is the one kept.
"""

from __future__ import annotations

import ast
import builtins as _py
import inspect

from .. import types as T
from ..abi import Params
from ..types import ScalarType
from . import ir
from .depth import bound_depth
from .exprs import BINOPS, ExprLowering, Unresolved, refused
from .source import Source
from .typing_rules import WEAK_INT, Type, Weak, concrete, describe, promote

_MAX_PASSES = 16
_NOT_SUPPORTED = "is not supported in the kernel language"
# What the language says of each statement it refuses.
_REFUSED_STMTS = {
    ast.Try: f"try/except {_NOT_SUPPORTED}: nothing in a kernel raises an exception",
    ast.With: f"with {_NOT_SUPPORTED}: a kernel has no context managers",
    ast.Raise: f"raise {_NOT_SUPPORTED}: a kernel cannot raise exceptions",
    ast.Assert: f"assert {_NOT_SUPPORTED}: a kernel cannot raise exceptions",
    ast.Import: f"import {_NOT_SUPPORTED}; import at module level, where the kernel sees the module's names",
    ast.ImportFrom: f"import {_NOT_SUPPORTED}; import at module level, where the kernel sees the module's names",
    ast.Global: f"a global declaration {_NOT_SUPPORTED}: a kernel cannot assign module variables "
    "(it reads module-level numbers as constants)",
    ast.Nonlocal: f"a nonlocal declaration {_NOT_SUPPORTED}: a kernel cannot assign a closure's variables",
    ast.Delete: f"del {_NOT_SUPPORTED}",
    ast.FunctionDef: f"a nested def {_NOT_SUPPORTED}; define the function at module level with @g.func",
    ast.ClassDef: f"a class definition {_NOT_SUPPORTED}",
    ast.AsyncFunctionDef: f"a nested async def {_NOT_SUPPORTED}; kernels are not coroutines",
    ast.AsyncFor: f"async for {_NOT_SUPPORTED}; kernels are not coroutines",
    ast.AsyncWith: f"async with {_NOT_SUPPORTED}; kernels are not coroutines",
    ast.Match: f"match {_NOT_SUPPORTED}; use if/elif",
}
if hasattr(ast, "TryStar"):  # Python 3.11+
    _REFUSED_STMTS[ast.TryStar] = f"try/except* {_NOT_SUPPORTED}: nothing in a kernel raises an exception"


def namespace_of(function) -> dict:
    """The globals and closure variables a function's body can see, as they are now."""
    names = dict(function.__globals__)
    if function.__closure__:
        for name, cell in zip(function.__code__.co_freevars, function.__closure__):
            try:
                names[name] = cell.cell_contents
            except ValueError:  # an unbound closure cell
                pass
    return names


def signature_of(src: Source) -> list[tuple[str, object, ast.arg]]:
    """(name, annotation object or None, node) per parameter; refuses *args, defaults and the like."""
    args = src.tree.args
    for what, present in (
        ("*args", args.vararg),
        ("**kwargs", args.kwarg),
        ("keyword-only parameters", args.kwonlyargs),
        ("positional-only parameters", args.posonlyargs),
        ("default values", args.defaults),
    ):
        if present:
            raise src.error(src.tree, f"{what} are not supported in kernel signatures")
    hints = getattr(src.function, "__annotations__", {})
    namespace = namespace_of(src.function)
    result = []
    for a in args.args:
        annotation = hints.get(a.arg)
        if isinstance(annotation, str):
            annotation = _eval_annotation(src, a, annotation, namespace)
        result.append((a.arg, annotation, a))
    return result


def return_annotation(src: Source) -> ScalarType | None:
    hint = getattr(src.function, "__annotations__", {}).get("return")
    if isinstance(hint, str):
        hint = _eval_annotation(src, src.tree, hint, namespace_of(src.function))
    if hint is not None and not isinstance(hint, ScalarType):
        raise src.error(src.tree.returns or src.tree, f"the return annotation must be a gompute type, not {hint!r}")
    return hint


def _eval_annotation(src: Source, node: ast.AST, text: str, namespace: dict):
    try:
        return eval(text, namespace)  # noqa: S307 - the user's own annotation, as typing.get_type_hints does
    except Exception as e:
        raise src.error(node, f"cannot evaluate the annotation {text!r}: {e}") from None


def is_params_class(annotation) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, Params)


class Translator(ExprLowering):
    """Translates one function, given its argument types, into an `ir.Function`."""

    def __init__(
        self,
        src: Source,
        arg_types: dict[str, Type | None],
        params_class,
        returns: ScalarType | None,
        c_name: str,
        specialize_call,
    ):
        self.src = src
        self.args = arg_types  # None marks the params struct
        self.params_class = params_class
        self.declared_return = returns
        self.c_name = c_name
        self.specialize_call = specialize_call  # (gfunc, arg types, error at) -> ir.Function
        self.namespace = namespace_of(src.function)
        self.assigned = _assigned_names(src.tree) - set(arg_types)
        self.var_types: dict[str, Type] = {}
        self.declared: dict[str, ScalarType] = {}
        self.return_type: Type | None = returns
        self.return_line = 0
        self.callees: list[ir.Function] = []
        self.loop_depth = 0
        self.counters = 0

    def translate(self) -> ir.Function:
        for _ in range(_MAX_PASSES):
            self.changed, self.unresolved, self.counters, self.callees = False, None, 0, []
            body = self.block(self.src.tree.body)
            if not self.changed and self.unresolved is None:
                break
            if not self.changed:
                u = self.unresolved
                raise self.src.error(u.node, f"{u.name!r} is used before any assignment gives it a value")
        if _falls_through(self.src.tree.body):
            raise self.src.error(self.src.tree, "the function can reach its end without returning a value")
        params = [ir.Param(n, t, self.params_class if t is None else None) for n, t in self.args.items()]
        local_types = {**{n: concrete(t) for n, t in self.var_types.items()}, **self.declared}
        body = bound_depth(body, local_types)
        return ir.Function(
            self.src.name,
            self.c_name,
            params,
            self.return_type,
            local_types,
            body,
            self.src.filename,
            self.src.line_of(self.src.tree),
            self.callees,
        )

    # -- statements ---------------------------------------------------------------------------

    def block(self, nodes: list[ast.stmt]) -> list[ir.Stmt]:
        out = []
        for node in nodes:
            try:
                out.extend(self.stmt(node))
            except Unresolved as u:
                self.unresolved = self.unresolved or u
        return out

    def stmt(self, node: ast.stmt) -> list[ir.Stmt]:
        method = getattr(self, f"_stmt_{type(node).__name__}", None)
        if method is None:
            raise self.src.error(node, _REFUSED_STMTS.get(type(node), f"{type(node).__name__} {_NOT_SUPPORTED}"))
        return method(node)

    def _stmt_Pass(self, node):
        return []

    def _stmt_Expr(self, node: ast.Expr):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return []  # a docstring
        if not isinstance(node.value, ast.Constant):
            self.expr(node.value)  # a construct the language refuses (a lambda, print(x)) says so first
        raise self.src.error(node, "an expression statement has no effect in a kernel (assign or return it)")

    def _stmt_Assign(self, node: ast.Assign):
        value = self.expr(node.value)
        return [self.assign(self._target(t), value, node) for t in node.targets]

    def _stmt_AnnAssign(self, node: ast.AnnAssign):
        name = self._target(node.target)
        t = self.resolve(node.annotation)
        if not isinstance(t, ScalarType):
            raise self.src.error(node.annotation, f"a local's annotation must be a gompute type, not {t!r}")
        if self.declared.get(name, t) is not t or name in self.args:
            raise self.src.error(node, f"{name!r} is already declared with another type")
        self.declared[name] = t
        return [] if node.value is None else [self.assign(name, self.expr(node.value), node)]

    def _stmt_AugAssign(self, node: ast.AugAssign):
        name = self._target(node.target)
        op = BINOPS.get(type(node.op))  # x op= y means x = x op y
        if op is None:
            raise self.src.error(node, f"{refused(node.op)} is not supported in the kernel language")
        current = self.expr(ast.copy_location(ast.Name(name, ast.Load()), node.target))
        return [self.assign(name, self.binary(op, current, self.expr(node.value), node), node)]

    def _target(self, target: ast.AST) -> str:
        if isinstance(target, ast.Name):
            return target.id
        if isinstance(target, ast.Attribute):
            raise self.src.error(target, f"assigning to {ast.unparse(target)} is not supported (params are read-only)")
        if isinstance(target, ast.Subscript):
            raise self.src.error(
                target,
                "assigning to an element (x[i] = ...) is not supported; a map kernel returns its output value",
            )
        raise self.src.error(target, f"assigning to {refused(target)} is not supported")

    def assign(self, name: str, value: ir.Expr, node: ast.AST) -> ir.Stmt:
        if name in self.args:
            t = self.args[name]
            if t is None or promote(t, value.type) != t:
                raise self.src.error(
                    node,
                    f"assigning a {describe(value.type)} to the argument {name!r} "
                    f"({describe(t) if t else 'params'}) would change its type; "
                    "use a new variable",
                )
        elif name in self.declared:
            t = self.declared[name]
        else:
            old = self.var_types.get(name)
            t = value.type if old is None else promote(old, value.type)
            if t != old:
                self.var_types[name], self.changed = t, True
        return ir.Assign(name, self.convert(value, t, node), self.src.line_of(node))

    def _stmt_If(self, node: ast.If):
        cond = self.truth(self.expr(node.test))
        return [ir.If(cond, self.block(node.body), self.block(node.orelse), self.src.line_of(node))]

    def _stmt_While(self, node: ast.While):
        if node.orelse:
            raise self.src.error(node, "while ... else is not supported in the kernel language")
        cond = self.truth(self.expr(node.test))
        return [ir.While(cond, self._loop_body(node.body), self.src.line_of(node))]

    def _stmt_For(self, node: ast.For):
        if node.orelse:
            raise self.src.error(node, "for ... else is not supported in the kernel language")
        it = node.iter
        if not (
            isinstance(it, ast.Call)
            and isinstance(it.func, (ast.Name, ast.Attribute))
            and self.resolve(it.func) is _py.range
        ):
            raise self.src.error(it, "a for loop must iterate over range(...)")
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.src.error(it, "range takes 1 to 3 positional arguments")
        bounds = [self.expr(a) for a in it.args]
        if len(bounds) == 1:
            bounds.insert(0, ir.Const(0, WEAK_INT))
        if len(bounds) == 2:
            bounds.append(ir.Const(1, WEAK_INT))
        t = promote(promote(bounds[0].type, bounds[1].type), bounds[2].type)
        if not concrete(t).is_integer:
            raise self.src.error(it, f"range needs integers, not {describe(t)}")
        start, stop, step = (self.convert(b, t, it) for b in bounds)
        if isinstance(step, ir.Const) and step.value == 0:
            raise self.src.error(it, "range's step must not be zero")
        target = self._target(node.target)
        self.counters += 1
        counter = f"%it{self.counters}"  # "%": a name no Python variable can have
        # range() yields Python ints, whatever its arguments' types: the loop variable is weak,
        # but for a u64 range a u64, whose values past 2**63 a weak int (held in 64 signed bits)
        # would wrap negative.
        held = T.u64 if concrete(t) is T.u64 else WEAK_INT
        bind = self.assign(target, ir.Cast(ir.Var(counter, t), held), node)
        return [
            ir.For(
                target,
                counter,
                start,
                stop,
                step,
                [bind, *self._loop_body(node.body)],
                self.src.line_of(node),
            )
        ]

    def _loop_body(self, body):
        self.loop_depth += 1
        try:
            return self.block(body)
        finally:
            self.loop_depth -= 1

    def _stmt_Break(self, node):
        return [ir.Break(self.src.line_of(node))]

    def _stmt_Continue(self, node):
        return [ir.Continue(self.src.line_of(node))]

    def _stmt_Return(self, node: ast.Return):
        if node.value is None:
            raise self.src.error(node, "a kernel must return a value")
        value = self.expr(node.value)
        line = self.src.line_of(node)
        if self.declared_return is not None:
            return [ir.Return(self.cast(value, self.declared_return, node), line)]
        old = self.return_type
        if old is not None and not isinstance(old, Weak) and not isinstance(value.type, Weak) and old is not value.type:
            raise self.src.error(
                node,
                f"this return gives {describe(value.type)} but the one at line "
                f"{self.return_line} gives {describe(old)}; annotate the return type "
                "or cast so they agree",
            )
        t = value.type if old is None else promote(old, value.type)
        if t != old:
            self.return_type, self.changed = t, True
        if not isinstance(value.type, Weak) or self.return_line == 0:
            self.return_line = line
        return [ir.Return(self.convert(value, t, node), line)]

    # -- calls to @g.func ---------------------------------------------------------------------

    def call_func(self, gfunc, args: list[ir.Expr], node: ast.AST) -> ir.Expr:
        function = self.specialize_call(gfunc, [a.type for a in args], lambda msg: self.src.error(node, msg))
        if not any(function is f for f in self.callees):  # `in` would compare whole IR trees
            self.callees.append(function)
        converted = [self.convert(a, p.type, node) for a, p in zip(args, function.params)]
        return ir.FuncCall(function, converted, function.return_type)


def _assigned_names(tree: ast.FunctionDef) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _falls_through(body: list[ast.stmt]) -> bool:
    """Whether control can reach the end of `body` (conservatively: True unless it surely cannot)."""
    if not body:
        return True
    last = body[-1]
    if isinstance(last, ast.Return):
        return False
    if isinstance(last, ast.If):
        return _falls_through(last.body) or _falls_through(last.orelse)
    if isinstance(last, ast.While) and isinstance(last.test, ast.Constant) and last.test.value:
        return any(isinstance(n, ast.Break) for n in _walk_loop(last.body))
    return True


def _walk_loop(body):
    """The statements of a loop body, not descending into nested loops (their breaks are theirs)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _walk_loop(stmt.body)
            yield from _walk_loop(stmt.orelse)


def check_signature(src: Source):
    """(array parameters with their annotation or None, the params parameter name and class)."""
    _refuse_generator(src)
    arrays, params_name, params_class = [], None, None
    for name, annotation, node in signature_of(src):
        if is_params_class(annotation):
            if params_class is not None:
                raise src.error(node, "a kernel takes at most one params struct")
            params_name, params_class = name, annotation
        elif params_class is not None:
            raise src.error(node, "the params struct must be the last parameter")
        elif annotation is None or isinstance(annotation, ScalarType):
            arrays.append((name, annotation))
        else:
            raise src.error(
                node,
                f"parameter {name!r}: annotate it with a gompute type (g.f32, ...) or a "
                f"g.Params subclass, not {annotation!r}",
            )
    return arrays, params_name, params_class


def _refuse_generator(src: Source) -> None:
    """A `yield` makes the function a generator, which is no function of one element to one."""
    if not getattr(src.function, "__code__", None) or not src.function.__code__.co_flags & inspect.CO_GENERATOR:
        return
    yields, pending = [], list(src.tree.body)
    while pending:  # the function's own yields, not those of a nested def or lambda
        node = pending.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            yields.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            pending.extend(ast.iter_child_nodes(node))
    first = min(yields, key=lambda n: (n.lineno, n.col_offset), default=src.tree)
    raise src.error(
        first, f"yield makes {src.name!r} a generator, and generators are not supported in the kernel language"
    )


def translate(src: Source, arg_types: list[Type], c_name: str, specialize_call) -> ir.Function:
    """Translate `src` for concrete or weak types of its array parameters, in order."""
    arrays, params_name, params_class = check_signature(src)
    types = {name: t for (name, _), t in zip(arrays, arg_types)}
    if params_name is not None:
        types[params_name] = None
    return Translator(src, types, params_class, return_annotation(src), c_name, specialize_call).translate()
