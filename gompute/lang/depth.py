"""Bound how deep each expression of a function's IR nests, and how often a part of it repeats.

Python nests an expression as deep as its parser lets it (`x + x + ... + x`, 900 terms, is 900
levels), but C++ compilers do not take one as deep (clang refuses more than 256 nested brackets,
and the emitter spells up to three per level), and the emitter recurses once per level. The
frontend also repeats a node where Python evaluates it once (`a or b` tests `a`, then gives it;
`a < b < c` reads `b` twice), which a chain of them makes exponential in the emitted text.

So a statement whose expression is too deep, or repeats a large part, computes such parts into
temporaries first: a part nested `MAX_DEPTH` levels deep, or repeated and of `REPEATED_SIZE` nodes
or more, is assigned to a temporary where it is evaluated. A part evaluated only on one side of a
condition (an arm of `a if c else b`, the right side of `and`/`or`) is computed in that branch
only: the expression around it becomes an `if` statement. Everything else is left as it is, so a
function with no such expression keeps its IR unchanged. Every pass here runs on an explicit
stack, for the same reason as the frontend's expression lowering.
"""

from __future__ import annotations

from dataclasses import replace
from types import GeneratorType

from .. import types as T
from . import ir
from .typing_rules import Type, concrete

MAX_DEPTH = 32
REPEATED_SIZE = 32

_LEAVES = (ir.Const, ir.Var, ir.Field)
_OPERANDS = {
    ir.Unary: ("operand",),
    ir.Binary: ("left", "right"),
    ir.Compare: ("left", "right"),
    ir.Cast: ("value",),
    ir.Call: ("args",),
    ir.FuncCall: ("args",),
    ir.Logical: ("left", "right"),
    ir.Select: ("cond", "then", "orelse"),
}


def bound_depth(body: list[ir.Stmt], local_types: dict[str, Type]) -> list[ir.Stmt]:
    """`body` with its deep and repeated expression parts in temporaries, added to `local_types`."""
    return _Splitter(local_types).block(body)


def _operands(e: ir.Expr) -> list[ir.Expr]:
    out = []
    for name in _OPERANDS.get(type(e), ()):
        value = getattr(e, name)
        out.extend(value if isinstance(value, list) else [value])
    return out


def _measure(root: ir.Expr) -> tuple[int, dict[int, int], dict[int, int]]:
    """(the height of `root`, references to each node by id, each node's size as a tree)."""
    height: dict[int, int] = {}
    size: dict[int, int] = {}
    references: dict[int, int] = {}
    stack = [(root, False)]
    while stack:
        e, children_done = stack.pop()
        key = id(e)
        if children_done:
            operands = _operands(e)
            height[key] = 1 + max((height[id(a)] for a in operands), default=0)
            size[key] = 1 + sum(size[id(a)] for a in operands)
        elif key not in height:
            height[key] = 0  # on the stack: its operands are measured once, however often it is used
            stack.append((e, True))
            for a in _operands(e):
                references[id(a)] = references.get(id(a), 0) + 1
                if id(a) not in height:
                    stack.append((a, False))
    return height[id(root)], references, size


class _Splitter:
    def __init__(self, local_types: dict[str, Type]):
        self.locals = local_types
        self.temps = 0

    def block(self, stmts: list[ir.Stmt]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s: ir.Stmt) -> list[ir.Stmt]:
        if isinstance(s, (ir.Assign, ir.Return)):
            first, value = self.expression(s.value, s.line)
            return [*first, replace(s, value=value)]
        if isinstance(s, ir.If):
            first, cond = self.expression(s.cond, s.line)
            return [*first, ir.If(cond, self.block(s.body), self.block(s.orelse), s.line)]
        if isinstance(s, ir.While):
            first, cond = self.expression(s.cond, s.line)
            body = self.block(s.body)
            if not first:
                return [ir.While(cond, body, s.line)]
            # The condition's statements run before every test of it: at the top of the loop.
            leave = ir.If(ir.Unary("not", cond, T.bool_), [ir.Break(s.line)], [], s.line)
            return [ir.While(ir.Const(True, T.bool_), [*first, leave, *body], s.line)]
        if isinstance(s, ir.For):
            bounds = []
            first: list[ir.Stmt] = []
            for e in (s.start, s.stop, s.step):
                stmts, e = self.expression(e, s.line)
                first.extend(stmts)
                bounds.append(e)
            start, stop, step = bounds
            return [*first, replace(s, start=start, stop=stop, step=step, body=self.block(s.body))]
        return [s]

    def expression(self, e: ir.Expr, line: int) -> tuple[list[ir.Stmt], ir.Expr]:
        """(statements to run first, `e` bounded) for an expression of a statement at `line`."""
        height, references, size = _measure(e)
        repeated = {key for key, n in references.items() if n > 1 and size[key] >= REPEATED_SIZE}
        if height <= MAX_DEPTH and not repeated:
            return [], e
        return _Expression(self, repeated, line).run(e)

    def temp(self, t: Type) -> ir.Var:
        self.temps += 1
        name = f"%t{self.temps}"  # "%": a name no Python variable can have
        self.locals[name] = concrete(t)
        return ir.Var(name, t)


class _Expression:
    """One statement's expression, rebuilt bottom-up; each node's result is (IR, height, size as a
    tree), counted from the temporaries below it."""

    def __init__(self, splitter: _Splitter, repeated: set[int], line: int):
        self.splitter = splitter
        self.repeated = repeated
        self.line = line
        self.buffers: list[list[ir.Stmt]] = [[]]  # statements to run first, one list per branch
        self.computed: dict[int, tuple[ir.Var, list[ir.Stmt]]] = {}  # node id -> its temporary, where set

    def run(self, root: ir.Expr) -> tuple[list[ir.Stmt], ir.Expr]:
        pending: list[tuple[GeneratorType, ir.Expr, bool]] = []
        request: tuple[ir.Expr, bool] | None = (root, False)
        value = None
        while True:
            if request is not None:
                node, branch = request
                if branch:
                    self.buffers.append([])
                value = self.visit(node)
                if isinstance(value, GeneratorType):
                    pending.append((value, node, branch))
                    value, request = None, None
                    continue
            else:
                generator, node, branch = pending[-1]
                try:
                    request = generator.send(value)
                    continue
                except StopIteration as done:
                    pending.pop()
                    value = done.value
            # `node` is done: `value` is its result
            if pending or branch:
                value = self.hoisted(node, value)
            if branch:
                value = (*value, self.buffers.pop())
            if not pending:
                return self.buffers[0], value[0]
            request = None

    def visit(self, e: ir.Expr):
        """The result of a leaf or of a part already in a temporary, or the generator rebuilding `e`
        (it yields (operand, evaluated only in a branch) and is sent the operand's result)."""
        done = self.computed.get(id(e))
        if done is not None and any(done[1] is b for b in self.buffers):
            return done[0], 1, 1
        if isinstance(e, _LEAVES):
            return e, 1, 1
        if isinstance(e, ir.Select):
            return self.select(e)
        if isinstance(e, ir.Logical):
            return self.logical(e)
        return self.eager(e)

    def hoisted(self, node: ir.Expr, result: tuple) -> tuple:
        e, height, size = result[:3]
        if isinstance(e, _LEAVES):
            return result
        if height >= MAX_DEPTH or (id(node) in self.repeated and size >= REPEATED_SIZE):
            temp = self.splitter.temp(node.type)
            self.buffers[-1].append(ir.Assign(temp.name, e, self.line))
            self.computed[id(node)] = (temp, self.buffers[-1])
            return temp, 1, 1
        return result

    def eager(self, e: ir.Expr):
        height = size = 0
        changes = {}
        for name in _OPERANDS[type(e)]:
            value = getattr(e, name)
            results = []
            for operand in value if isinstance(value, list) else [value]:
                results.append((yield (operand, False)))
            height = max([height, *(r[1] for r in results)])
            size += sum(r[2] for r in results)
            rebuilt = [r[0] for r in results]
            changes[name] = rebuilt if isinstance(value, list) else rebuilt[0]
        return replace(e, **changes), height + 1, size + 1

    def select(self, e: ir.Select):
        cond = yield (e.cond, False)
        then = yield (e.then, True)
        orelse = yield (e.orelse, True)
        if not then[3] and not orelse[3]:
            height = 1 + max(cond[1], then[1], orelse[1])
            return ir.Select(cond[0], then[0], orelse[0], e.type), height, 1 + cond[2] + then[2] + orelse[2]
        temp = self.splitter.temp(e.type)
        on_true = [*then[3], ir.Assign(temp.name, then[0], self.line)]
        on_false = [*orelse[3], ir.Assign(temp.name, orelse[0], self.line)]
        self.buffers[-1].append(ir.If(cond[0], on_true, on_false, self.line))
        return temp, 1, 1

    def logical(self, e: ir.Logical):
        left = yield (e.left, False)
        right = yield (e.right, True)
        if not right[3]:
            return ir.Logical(e.op, left[0], right[0], e.type), 1 + max(left[1], right[1]), 1 + left[2] + right[2]
        temp = self.splitter.temp(e.type)
        test = temp if e.op == "and" else ir.Unary("not", temp, T.bool_)
        self.buffers[-1].append(ir.Assign(temp.name, left[0], self.line))
        self.buffers[-1].append(ir.If(test, [*right[3], ir.Assign(temp.name, right[0], self.line)], [], self.line))
        return temp, 1, 1
