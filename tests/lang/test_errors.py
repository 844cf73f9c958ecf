"""Every construct outside the language is refused with a CompileError that names the construct,
the function, the file and the line, and shows the line with a caret.

Each function below is plain Python, decorated only inside the test; the line the error must
point at carries the comment `# refused`.
"""

# ruff: noqa: F841, F821, E731, PLR0124 - these functions are never run, only refused
from __future__ import annotations

import importlib.util
import inspect
import textwrap

import numpy as np
import pytest

import gompute
import gompute.lang as g
from gompute.errors import CompileError
from gompute.lang.module import KERNELS_MARKER

LIMIT = [1, 2]


def subscript(x: g.f32) -> g.f32:
    return x[0]  # refused


def list_literal(x: g.f32) -> g.f32:
    y = [x, x]  # refused
    return x


def comprehension(x: g.f32) -> g.f32:
    return sum([x for _ in range(3)])  # refused


def lambda_expr(x: g.f32) -> g.f32:
    f = lambda v: v  # refused
    return x


def string_constant(x: g.f32) -> g.f32:
    y = "text"  # refused
    return x


def walrus(x: g.f32) -> g.f32:
    return (y := x)  # refused


def is_operator(x: g.f32) -> g.bool_:
    return x is x  # refused


def try_statement(x: g.f32) -> g.f32:
    try:  # refused
        return x
    except Exception:
        return x


def with_statement(x: g.f32) -> g.f32:
    with x:  # refused
        return x


def raise_statement(x: g.f32) -> g.f32:
    raise ValueError(x)  # refused


def nested_def(x: g.f32) -> g.f32:
    def inner(v):  # refused
        return v

    return x


def for_over_list(x: g.f32) -> g.f32:
    for v in LIMIT:  # refused
        x += v
    return x


def while_else(x: g.i32) -> g.i32:
    while x > 0:  # refused
        x -= 1
    else:
        x = 1
    return x


def keyword_argument(x: g.f32) -> g.f32:
    return g.clamp(x, lo=0, hi=1)  # refused


def unknown_call(x: g.f32) -> g.f32:
    return print(x)  # refused


def undefined_name(x: g.f32) -> g.f32:
    return x + nowhere  # refused


def non_number_global(x: g.f32) -> g.f32:
    return x + LIMIT  # refused


def assign_params_field(x: g.f32, p: g.Params) -> g.f32:
    p.scale = x  # refused
    return x


def assign_element(x: g.f32) -> g.f32:
    x[0] = 1  # refused
    return x


def tuple_unpacking(x: g.f32) -> g.f32:
    a, b = x, x  # refused
    return a


def bare_return(x: g.f32) -> g.f32:
    return  # refused


def falls_off_the_end(x: g.f32) -> g.f32:  # refused
    if x > 0:
        return x


def returns_disagree(x: g.f32, n: g.i32):
    if x > 0:
        return x
    return n  # refused


def literal_out_of_range(x: g.i8) -> g.i8:
    return x + 300  # refused


def bool_arithmetic(a: g.bool_, b: g.bool_) -> g.bool_:
    return a + b  # refused


def bitwise_on_floats(x: g.f32) -> g.f32:
    return x & 1  # refused


def wrong_arity(x: g.f32) -> g.f32:
    return g.sqrt(x, x)  # refused


def widening_an_argument(x: g.i32) -> g.i32:
    x = x / 2  # refused
    return x


def used_before_assignment(x: g.f32) -> g.f32:
    for i in range(3):
        if i > 0:
            y = z + 1  # refused
        z = y
    return x


def star_args(*xs: g.f32) -> g.f32:  # refused
    return 0


def matmul(x: g.f32) -> g.f32:
    return x @ x  # refused


def zero_step(x: g.i32) -> g.i32:
    for i in range(0, 10, 0):  # refused
        x += i
    return x


def bad_annotation(x: int) -> g.f32:  # refused
    return x


def expression_statement(x: g.f32) -> g.f32:
    g.sqrt(x)  # refused
    return x


@g.func
def recursive(v):
    return recursive(v - 1)  # refused


def calls_recursive(x: g.i32) -> g.i32:
    return recursive(x)


def generic_bad(a):
    return a % "x"  # refused


def calls_itself(x: g.f32) -> g.f32:
    return calls_itself(x - 1)  # refused


def generator(x: g.f32) -> g.f32:
    yield x  # refused
    return x


def generator_value(x: g.f32) -> g.f32:
    y = yield x  # refused
    return y


def global_declaration(x: g.f32) -> g.f32:
    global LIMIT  # refused
    return x


def _closure():
    count = 0

    def nonlocal_declaration(x: g.f32) -> g.f32:
        nonlocal count  # refused
        return x

    return nonlocal_declaration


nonlocal_declaration = _closure()


def star_argument(x: g.f32) -> g.f32:
    return g.max(*LIMIT)  # refused


def double_star_argument(x: g.f32) -> g.f32:
    return g.clamp(**LIMIT)  # refused


def calls_a_lambda(x: g.f32) -> g.f32:
    return (lambda v: v)(x)  # refused


def unused_call(x: g.f32) -> g.f32:
    print(x)  # refused
    return x


def calls_a_variable(x: g.f32) -> g.f32:
    x(1)  # refused
    return x


def _double(x: g.f32) -> g.f32:
    return x * 2


double = g.map_kernel(_double)


def calls_a_map_kernel(x: g.f32) -> g.f32:
    return double(x)  # refused


def attribute_of_a_local(x: g.f32) -> g.f32:
    y = x
    return y.shape  # refused


CASES = [
    (subscript, "subscripting"),
    (list_literal, "a list"),
    (comprehension, "a list comprehension"),
    (lambda_expr, "a lambda is not supported in the kernel language; define a module-level @g.func"),
    (string_constant, "'text' is not a number"),
    (walrus, "walrus"),
    (is_operator, "'is'"),
    (try_statement, "try/except is not supported in the kernel language: nothing in a kernel raises"),
    (with_statement, "with is not supported in the kernel language: a kernel has no context managers"),
    (raise_statement, "raise"),
    (nested_def, "a nested def is not supported in the kernel language; define the function at module level"),
    (for_over_list, "range(...)"),
    (while_else, "while ... else"),
    (keyword_argument, "keyword arguments"),
    (unknown_call, "calling print"),
    (undefined_name, "'nowhere'"),
    (non_number_global, "not a number"),
    (assign_params_field, "params are read-only"),
    (assign_element, "assigning to an element"),
    (tuple_unpacking, "a tuple"),
    (bare_return, "must return a value"),
    (falls_off_the_end, "without returning"),
    (returns_disagree, "g.i32"),
    (literal_out_of_range, "300"),
    (bool_arithmetic, "two bools"),
    (bitwise_on_floats, "bitwise"),
    (wrong_arity, "takes 1 arguments, got 2"),
    (widening_an_argument, "would change its type"),
    (used_before_assignment, "'z' is used before"),
    (star_args, "*args"),
    (matmul, "@"),
    (zero_step, "must not be zero"),
    (bad_annotation, "annotate it"),
    (expression_statement, "no effect"),
    (generic_bad, "not a number"),
    (calls_itself, "'calls_itself' calls itself; kernels and @g.func functions cannot recurse"),
    (generator, "yield makes 'generator' a generator, and generators are not supported"),
    (generator_value, "generators are not supported"),
    (global_declaration, "a global declaration is not supported in the kernel language: a kernel cannot assign"),
    (nonlocal_declaration, "a nonlocal declaration is not supported"),
    (star_argument, "unpacking arguments (*LIMIT) is not supported"),
    (double_star_argument, "unpacking keyword arguments (**LIMIT) is not supported"),
    (calls_a_lambda, "a lambda cannot be called in the kernel language; define a module-level @g.func"),
    (unused_call, "calling print is not supported"),
    (calls_a_variable, "'x' is a variable, not a function"),
    (calls_a_map_kernel, "double is a map kernel, which only g.map runs"),
    (attribute_of_a_local, "y.shape: y is a scalar of the kernel, whose only attributes are .real and .imag"),
]


def _refused_line(fn) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if "# refused" in line)


@pytest.mark.parametrize("fn, fragment", CASES, ids=[c[0].__name__ for c in CASES])
def test_refused_construct_points_at_the_line(fn, fragment):
    with pytest.raises(CompileError) as info:
        kernel = g.map_kernel(fn)
        kernel.specialize(g.f32)  # reached by generic kernels only
    err = info.value
    message = str(err)
    assert fragment in message
    assert err.filename == __file__ and err.lineno == _refused_line(fn)
    assert f"in {fn.__name__!r} ({__file__}:{err.lineno})" in message
    source_line, caret_line = message.splitlines()[-2:]
    line_text = inspect.getsourcelines(fn)[0][err.lineno - inspect.getsourcelines(fn)[1]].rstrip()
    assert source_line.strip() == line_text.strip()
    assert caret_line.strip() == "^" and len(caret_line) - 4 <= len(line_text)


def test_recursion_in_a_func_is_refused():
    with pytest.raises(CompileError, match="'recursive' calls itself; kernels and @g.func functions cannot") as info:
        g.map_kernel(calls_recursive)
    assert info.value.lineno == _refused_line(recursive.fn)


@g.func
def ping(v):
    return pong(v)


@g.func
def pong(v):
    return ping(g.f64(v))  # refused: another signature of ping is recursion too


def calls_ping(x: g.f32) -> g.f32:
    return ping(x)


def test_mutual_recursion_names_the_functions_between():
    with pytest.raises(CompileError, match="'ping' calls itself through 'pong'; kernels and @g.func") as info:
        g.map_kernel(calls_ping)
    assert info.value.lineno == _refused_line(pong.fn)


def _import_file(tmp_path, name: str, text: str):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_decorated_kernel_calling_itself_is_refused_as_recursion(tmp_path):
    # While the decorator runs, the kernel's name is not bound yet.
    text = """
        import gompute as g

        @g.map_kernel
        def k(x: g.f32) -> g.f32:
            return k(x) if x > 0 else x
    """
    with pytest.raises(CompileError, match="'k' calls itself; kernels and @g.func functions cannot recurse") as info:
        _import_file(tmp_path, "recursive_kernel", text)
    assert info.value.lineno == 6


async def coroutine(x: g.f32) -> g.f32:
    return x


def test_an_async_def_is_refused_as_one():
    with pytest.raises(CompileError, match="coroutine is an async def; kernels and @g.func functions are plain def"):
        g.map_kernel(coroutine)


def test_a_lambda_is_refused_as_one():
    with pytest.raises(CompileError, match="a lambda cannot be a kernel or @g.func; write it as a def"):
        g.map_kernel(lambda x: x)


def test_calling_a_builtin_outside_a_kernel_says_where_it_belongs():
    with pytest.raises(CompileError, match="inside a @g.map_kernel"):
        g.sqrt(2.0)


# What Python compiles, gompute compiles: expressions nested far deeper than Python's recursion
# limit, in every position (eager operands, the arms of a conditional, a loop's condition), and
# chains that repeat a part (`a or b` tests a, then gives it). Compared with Python evaluating the
# same text on NumPy scalars, element by element.
DEEP = {
    "sum_900": ("x: g.f32", " + ".join(["x"] * 900)),
    "wrapping_sum_900": ("x: g.i32", " + ".join(["x * 3"] * 900)),
    "nested_conditionals": ("x: g.f32", "".join(f"x + {i} if x > {i} else (" for i in range(150)) + "x" + ")" * 150),
    "or_chain": ("x: g.f32, y: g.f32", " or ".join(["x - 1", "y"] * 25)),
    "chained_compare": ("x: g.f32", " < ".join(["(x + 1)"] * 300)),
    "max_of_40": ("x: g.f32", f"g.max({', '.join(f'x - {i}' for i in range(40))})"),
    "and_of_ors": ("x: g.f32", " and ".join(f"(x + {i} > 0 or x - {i} < 0)" for i in range(300))),
}


def _deep_module(tmp_path):
    lines = ["import gompute as g", ""]
    for name, (args, expr) in DEEP.items():
        lines += [f"def {name}({args}):", f"    return {expr}", ""]
    lines += [
        "def deep_while(x: g.f32) -> g.f32:",
        "    i = 0",
        f"    while {' + '.join(['x'] * 300)} > i and i < 7:",
        "        i += 1",
        "    return x + i",
    ]
    return _import_file(tmp_path, "deep_kernels", "\n".join(lines) + "\n")


def _bracket_depth(text: str) -> int:
    depth = deepest = 0
    for ch in text:
        depth += (ch in "([{") - (ch in ")]}")
        deepest = max(deepest, depth)
    return deepest


@pytest.mark.parametrize("name", [*DEEP, "deep_while"])
def test_a_deep_expression_compiles_and_computes_what_python_does(tmp_path, name):
    module = _deep_module(tmp_path)
    python = getattr(module, name)
    kernel = g.map_kernel(python)
    source = kernel.source("host")
    generated = source[source.index(KERNELS_MARKER) :]
    assert _bracket_depth(generated) < 256  # clang's default limit (-fbracket-depth)
    assert len(generated) < 1_000_000  # a repeated part is computed once, not copied per use
    floats = np.array([0.5, -1.5, 2.0, 3.0, 0.0, -0.0, 150.5, 1.0, np.inf, np.nan], np.float32)
    ints = np.array([0, 1, -1, 7, 2**31 - 1, -(2**31), 123456, -99], np.int32)
    inputs = [ints] if kernel.annotations == (g.i32,) else [floats, floats[::-1]][: kernel.arity]
    got = gompute.map(kernel)(*inputs)
    if name == "max_of_40":  # g.max is a kernel builtin only; x - 0 is the largest of the x - i
        want = inputs[0]
    else:
        with np.errstate(all="ignore"):
            want = [python(*(a[i] for a in inputs)) for i in range(len(inputs[0]))]
    np.testing.assert_array_equal(got, np.array(want, dtype=got.dtype))
