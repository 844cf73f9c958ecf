"""Differential fuzzing of the kernel compiler: hypothesis writes kernels, the host backend runs
them, and NumPy 2 evaluates the same expressions on the same arrays; the two must agree.

Each example is one .py file (kernels must live in one): every expression or loop is an
`@g.func` over the inputs x, y, z, and one kernel per result type calls the one its params field
`which` names, so an example compiles a few kernels, not one per expression (a compile is what
costs). Integers, bools and exactly rounded float operations must agree bit for bit (NaN with
NaN, and the sign of zero); an expression with a math library function (exp, sin, g.pow of
floats, ...) at its root within `LIBM_ULPS` units in the last place. Elements where C++ leaves
the value undefined (a float converted to an integer type it does not fit) are not compared.

`GOMPUTE_FUZZ_EXAMPLES` sets how many examples run, new ones each run (`make fuzz` runs many; without
it, `make test`'s 20 are the same every run); with `GOMPUTE_FUZZ_NO_SHRINK` set, a failure is
reported as found, not shrunk (each try compiles).
"""

from __future__ import annotations

import importlib.util
import itertools
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

import gompute as g

from .fuzz_kernels import (
    BINOPS,
    CAST_TYPES,
    CMPOPS,
    EXACT_BUILTINS,
    FLOAT_LITERALS,
    INT_LITERALS,
    LIBM_BUILTINS,
    TYPES,
    VARS,
    Refused,
    RunTimeInt,
    evaluate,
    source,
    ulps_apart,
    uses_libm,
)

pytest.importorskip("gompute._core", reason="the kernels run on the host runtime")

EXAMPLES = int(os.environ.get("GOMPUTE_FUZZ_EXAMPLES", "20"))
# `make test`'s small budget runs the same examples every time (a failure there is a change's, and
# reproduces); a budget given (`make fuzz`) explores new ones each run.
FIXED = "GOMPUTE_FUZZ_EXAMPLES" not in os.environ
LIBM_ULPS = {np.dtype(np.float16): 2, np.dtype(np.float32): 8, np.dtype(np.float64): 8}
SIZE = 48


# -- kernels ----------------------------------------------------------------------------------


def expressions(names):
    literals = st.sampled_from(INT_LITERALS + FLOAT_LITERALS + (True, False)).map(lambda v: ("lit", v))
    leaves = st.one_of(st.sampled_from([("var", n) for n in names]), literals)

    def call(children, table):
        return st.sampled_from(sorted(table.items())).flatmap(
            lambda item: st.lists(children, min_size=item[1], max_size=item[1]).map(
                lambda args, name=item[0]: ("call", name, *args)
            )
        )

    def extend(children):
        return st.one_of(
            st.tuples(st.just("un"), st.sampled_from(["-", "~", "not"]), children),
            st.tuples(st.just("bin"), st.sampled_from(sorted(BINOPS)), children, children),
            st.tuples(st.just("cmp"), st.sampled_from(sorted(CMPOPS)), children, children),
            st.tuples(st.just("if"), children, children, children),
            st.tuples(st.just("bool"), st.sampled_from(["and", "or"]), children, children),
            call(children, EXACT_BUILTINS),
            st.tuples(st.just("cast"), st.sampled_from(sorted(CAST_TYPES)), children),
        )

    exact = st.recursive(leaves, extend, max_leaves=8)
    return exact, call(exact, LIBM_BUILTINS)


EXACT, LIBM = expressions(VARS)
EXPRESSIONS = st.one_of(EXACT, EXACT, LIBM)
# Loops over exact expressions only: an error of a math function would compound from trip to trip.
LOOPS = st.tuples(EXACT, expressions((*VARS, "acc", "i"))[0], st.integers(0, 3))
EXAMPLE = st.tuples(
    st.tuples(*(st.sampled_from(sorted(TYPES)) for _ in VARS)),
    st.lists(EXPRESSIONS, min_size=3, max_size=8),
    st.lists(LOOPS, max_size=2),
    st.integers(0, 2**32 - 1),
)


def module_source(types, units, groups) -> str:
    """The kernel file: one @g.func per unit (an expression or a loop), one kernel per group."""
    lines = ["import gompute as g", "", "", "class Which(g.Params):", "    which: g.i32", ""]
    for n, unit in enumerate(units):
        lines += ["", "@g.func", f"def e{n}({', '.join(VARS)}):"]
        if unit[0] == "loop":
            _, init, body, trips = unit
            lines += [f"    acc = {source(init)}", f"    for i in range({trips}):", f"        acc = {source(body)}"]
            lines += ["    return acc", ""]
        else:
            lines += [f"    return {source(unit[1])}", ""]
    signature = ", ".join(f"{v}: g.{t}" for v, t in zip(VARS, types))
    for name, members in groups.items():
        lines += ["", f"def {name}({signature}, p: Which):"]
        for which, n in enumerate(members[:-1]):
            lines += [f"    if p.which == {which}:", f"        return e{n}({', '.join(VARS)})"]
        lines += [f"    return e{members[-1]}({', '.join(VARS)})", ""]
    return "\n".join(lines)


def load(path, text: str):
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- inputs and NumPy's answers ---------------------------------------------------------------


def inputs(types, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, t in zip(VARS, types):
        dtype = np.dtype(TYPES[t])
        if dtype.kind == "b":
            values = np.array([False, True])
            extra = rng.integers(0, 2, SIZE - len(values)).astype(bool)
        elif dtype.kind == "f":
            info = np.finfo(dtype)
            edges = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 0.1, 1e10, -1e10, 2.0**31, 2.0**63]
            edges += [255.5, 65504.0, 1e-8, float(info.max), -float(info.max), float(info.tiny)]
            edges += [float(info.smallest_subnormal), np.inf, -np.inf, np.nan]
            with np.errstate(over="ignore"):
                values = np.array(edges).astype(dtype)
            extra = rng.standard_normal(SIZE - len(values)) * 10.0 ** rng.integers(-3, 4, SIZE - len(values))
        else:
            info = np.iinfo(dtype)
            edges = [0, 1, -1, 2, -2, 7, -7, 100, -100, 127, 128, 255, 256, info.min, info.max, info.min + 1]
            lo, span = int(info.min), int(info.max) - int(info.min) + 1  # wrapped into the type, as C converts
            values = np.array([(int(v) - lo) % span + lo for v in edges + [info.max - 1]], dtype=object).astype(dtype)
            extra = rng.integers(info.min, info.max, SIZE - len(values), dtype=dtype, endpoint=True)
        arrays[name] = rng.permutation(np.concatenate([values, extra.astype(dtype)]))
    return arrays


def reference(unit, env):
    """(NumPy's value as an array of SIZE, the elements left undefined, whether libm computed it)."""
    with np.errstate(all="ignore"):  # NumPy's warnings (a division by zero) are its answers here
        if unit[0] == "loop":
            return _loop_reference(unit, env)
        value, mask = evaluate(unit[1], env)
        return _full(value), _full_mask(mask), uses_libm(unit[1])


def _loop_reference(unit, env):
    # `acc` takes the promoted type of every value assigned to it, as a local variable does.
    _, init, body, trips = unit
    start, mask = evaluate(init, env)
    if isinstance(start, (bool, int, float)):
        raise Refused("a loop's accumulator starts as a Python number")
    t = start.dtype
    for _ in range(4):
        probe, _ = evaluate(body, {**env, "acc": _full(start).astype(t), "i": RunTimeInt(0)})
        t = np.result_type(t, probe)
    acc = _full(start).astype(t)
    for i in range(trips):
        value, m = evaluate(body, {**env, "acc": acc, "i": RunTimeInt(i)})
        if np.result_type(t, value) != t:
            raise Refused("the accumulator's type does not settle")
        python_int = isinstance(value, int) and not isinstance(value, bool)
        if python_int and t.kind in "iu" and not np.iinfo(t).min <= value <= np.iinfo(t).max:
            raise Refused("a Python int the accumulator's type cannot hold (the language refuses it)")
        acc = _full(value).astype(t)
        mask = m if mask is None else mask if m is None else mask | m
    return acc, _full_mask(mask), uses_libm(init) or uses_libm(body)


def _full(value) -> np.ndarray:
    return np.broadcast_to(np.asarray(value), (SIZE,)).copy()


def _full_mask(mask) -> np.ndarray:
    return np.zeros(SIZE, bool) if mask is None else np.broadcast_to(np.asarray(mask, bool), (SIZE,))


def mismatches(got: np.ndarray, want: np.ndarray, undefined: np.ndarray, libm: bool) -> np.ndarray:
    """The elements where the kernel's result and NumPy's disagree."""
    if want.dtype.kind != "f":
        return (got != want) & ~undefined
    nan = np.isnan(got) & np.isnan(want)
    if libm:
        with np.errstate(invalid="ignore"):
            close = ulps_apart(got, want) <= LIBM_ULPS[want.dtype]
        return ~(nan | (close & (np.isnan(got) == np.isnan(want)))) & ~undefined
    same = (got == want) & (np.signbit(got) == np.signbit(want))
    return ~(nan | same) & ~undefined


# -- the test ---------------------------------------------------------------------------------

_files = itertools.count()


@settings(
    max_examples=EXAMPLES,
    derandomize=FIXED,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate] if os.environ.get("GOMPUTE_FUZZ_NO_SHRINK") else list(Phase),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
@given(example=EXAMPLE)
@example(  # once failures: f16 min/max zero ties, the reference's crashes, a run-time int past 64 bits
    example=(
        ("f16", "f64", "i64"),
        [
            ("call", "min", ("var", "x"), ("un", "-", ("var", "x"))),  # x holds +0.0 and -0.0
            ("call", "max", ("un", "-", ("var", "x")), ("var", "x")),
            ("bin", "+", ("var", "y"), ("bin", "**", ("lit", -1), ("lit", 0.5))),  # complex: refused
            ("bin", "+", ("var", "y"), ("call", "isnan", ("bin", "+", ("lit", 2**63 - 1), ("lit", 1)))),
            ("call", "isnan", ("bin", "*", ("lit", 2**63 - 1), ("lit", 4))),  # NumPy refuses it
        ],
        [
            (("var", "y"), ("bin", "+", ("var", "acc"), ("bin", "*", ("var", "i"), ("lit", 2**63 - 1))), 3),
            (("var", "z"), ("bin", "-", ("var", "acc"), ("un", "-", ("var", "i"))), 3),
        ],
        7,
    )
)
def test_kernels_compute_what_numpy_computes(tmp_path_factory, example):
    types, exprs, loops, seed = example
    env = inputs(types, seed)
    units, answers = [], []
    for unit in [("expr", e) for e in exprs] + [("loop", *loop) for loop in loops]:
        try:
            answers.append(reference(unit, env))
        except Refused:
            continue
        units.append(unit)
    if not units:
        return
    groups: dict[str, list[int]] = {}
    for n, (want, _, _) in enumerate(answers):
        groups.setdefault(f"k_{want.dtype.name}", []).append(n)
    folder = tmp_path_factory.mktemp("fuzz")
    text = module_source(types, units, groups)
    module = load(folder / f"fuzz_kernels_{next(_files)}.py", text)
    inputs_list = [env[v] for v in VARS]
    for name, members in groups.items():
        kernel = g.map_kernel(getattr(module, name))
        for which, n in enumerate(members):
            want, undefined, libm = answers[n]
            got = g.map(kernel)(*inputs_list, which=which)
            where = f"e{n} of {folder}/ (x, y, z: {', '.join(types)}):\n{text}"
            assert got.dtype == want.dtype, f"{got.dtype} where NumPy gives {want.dtype} in {where}"
            bad = np.flatnonzero(mismatches(got, want, undefined, libm))
            if bad.size:
                i = bad[0]
                args = ", ".join(f"{v}={env[v][i]!r}" for v in VARS)
                pytest.fail(
                    f"{args}: the kernel gives {got[i]!r}, NumPy {want[i]!r}; {bad.size} elements differ in {where}"
                )
