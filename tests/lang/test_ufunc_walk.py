"""NumPy's ufuncs, walked: each one the language has, run on the host backend over a grid of values
with every dtype's edges (0, -0, 1, -1, min, max, inf, -inf, NaN, subnormals), against NumPy; and
the walk again from the CUDA text, built for the CPU as the fake CUDA driver runs it; and every
builtin on every type, bf16 too, compiled as CUDA by NVRTC and as HIP by hiprtc.

Exact where NumPy is exact: the same bits (any NaN matching any NaN, and -0.0 only -0.0). The
transcendentals (APPROXIMATE) call the platform's math library where NumPy has its own code, so they
may differ in the last bits: within ULPS of NumPy's value, NaN and infinities exactly as NumPy's.

Each kernel computes many ufuncs: `w`, an input array, picks the ufunc of each element, so one
module of a few kernels per dtype holds the walk and one compiler run builds it. The dtypes of
SLOW_DTYPES, and most mixed pairs, are a second module, marked slow, as are the GPU text's tests.
"""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest

from gompute import types as T
from gompute.compile import hiprtc, nvrtc
from gompute.errors import CompileError
from gompute.lang import builtins as B
from gompute.lang import complex_math as C
from gompute.lang.kernel import Image, compile_module, map_kernel
from gompute.lang.module import module_source
from tests.fakes import images

from .hostrun import map_host, run_spec

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
DTYPES += [np.float16, np.float32, np.float64]
SLOW_DTYPES = {np.int16, np.int32, np.uint16, np.uint32}
MIXED = [(np.int64, np.uint64), (np.float32, np.int32), (np.int16, np.float16)]
SLOW_MIXED = [(np.int8, np.uint8), (np.bool_, np.int8), (np.float64, np.int64), (np.float16, np.float32)]
SLOW_MIXED += [(np.uint8, np.float64)]
# One name per builtin: the aliases of a row are the same entry under other names.
_ROW = {b.name: row for row in B.ROWS for b in row}
WALKED = sorted(
    {id(_ROW[n]): n for n in sorted(dir(np)) if isinstance(getattr(np, n), np.ufunc) and n in B.BUILTINS}.values()
)
# fmt: off
APPROXIMATE = {
    "sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "logaddexp", "logaddexp2",
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh", "arcsinh",
    "arccosh", "arctanh", "hypot", "float_power", "power",
}
# fmt: on
ULPS = {np.float16: 1, np.float32: 2, np.float64: 2}
# Of two equal zeros, which one these return is NumPy's loops' own choice, not the same in all of
# them (its f16 maximum returns the first, its f32 one the second; fmax's loops differ likewise):
# here -0.0 and 0.0 count as the same value.
ZERO_SIGN_UNSPECIFIED = {"maximum", "minimum", "fmax", "fmin"}


def _grid(dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.array([False, True])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = [0, 1, 2, 3, 5, 7, 8, 64, 100, info.max, info.max - 1, info.min, info.min + 1]
        values += [-1, -2, -3, -7, -64] if dtype.kind == "i" else []
        return np.array(sorted(set(values)), dtype)
    info = np.finfo(dtype)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.5, 3.0, 0.75, 1.5, 10.0, -7.0, 100.0, 1e-3, np.pi]
    values += [info.max, -info.max, info.tiny, -info.tiny, info.smallest_subnormal, -info.smallest_subnormal]
    values += [np.inf, -np.inf, np.nan]
    return np.array(values, dtype)


def _numpy(name, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return getattr(np, name)(*args)


def _numpy_dtype(name, dtypes):
    try:
        return _numpy(name, *(np.zeros(1, d) for d in dtypes)).dtype
    except (TypeError, ValueError):
        return None


def _inputs(name, dtypes, out) -> list[np.ndarray]:
    """The grid (one argument) or every pair from the grids, less the values NumPy refuses or leaves
    unspecified: an integer to a negative power raises, 1 // 0 in np.reciprocal overflows a float."""
    if len(dtypes) == 1:
        a = _grid(dtypes[0])
        return [a[a != 0]] if name == "reciprocal" and out.kind in "iu" else [a]
    a, b = (x.ravel() for x in np.meshgrid(_grid(dtypes[0]), _grid(dtypes[1]), indexing="ij"))
    if name == "power" and out.kind in "iu":
        keep = b >= 0
        a, b = a[keep], b[keep]
    return [a, b]


def _cases():
    """(module, dtypes, result dtype, names) per kernel: the ufuncs NumPy takes on those dtypes,
    grouped by the dtype of their result."""
    combos = [(d,) for d in DTYPES] + [(d, d) for d in DTYPES] + MIXED + SLOW_MIXED
    cases = []
    for dtypes in combos:
        slow = bool(SLOW_DTYPES & set(dtypes)) or dtypes in SLOW_MIXED
        groups: dict[np.dtype, list[str]] = {}
        for name in WALKED:
            out = _numpy_dtype(name, dtypes) if getattr(np, name).nin == len(dtypes) else None
            if out is not None:
                groups.setdefault(out, []).append(name)
        cases += [("slow" if slow else "quick", dtypes, out, names) for out, names in groups.items()]
    return cases


CASES = _cases()


def _source(cases, prefix: str = "np") -> str:
    """A module of kernels `walk_K(w, a, ...)`, one per case, each calling `prefix.NAME` of each
    of the case's names on the elements where `w` is the name's index."""
    lines = ["import numpy as np", "import gompute.lang as g", ""]
    for k, (_, dtypes, _, names) in enumerate(cases):
        args = ", ".join("abc"[: len(dtypes)])
        lines += ["", "@g.map_kernel", f"def walk_{k}(w, {args}):"]
        calls = [f"return {prefix}.{name}({args})" for name in names]
        if len(calls) == 1:
            lines.append(f"    {calls[0]}")
            continue
        for i, call in enumerate(calls):
            head = "if" if i == 0 else "elif"
            lines += [f"    {head} w == {i}:" if i < len(calls) - 1 else "    else:", f"        {call}"]
    return "\n".join(lines) + "\n"


def _kernels(folder, source: str):
    """The module of `source`, written to a file in `folder` (a kernel's source must be in one)."""
    path = folder / "walk_kernels.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("walk_kernels", path)
    kernels = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kernels)
    return kernels


@pytest.fixture(scope="module")
def walk(tmp_path_factory):
    """module name -> (the specializations of CASES, in order, None for the other module's; the
    module), each compiled at its first use."""
    kernels = _kernels(tmp_path_factory.mktemp("walk"), _source(CASES))
    compiled = {}

    def get(module: str):
        if module not in compiled:
            specs = [
                getattr(kernels, f"walk_{k}").specialize(T.i32, *map(T.from_dtype, dtypes)) if m == module else None
                for k, (m, dtypes, _, _) in enumerate(CASES)
            ]
            built = [s for s in specs if s is not None]
            compiled[module] = specs, compile_module(built, "host", None, f"test_ufunc_walk_{module}")
        return compiled[module]

    return get


def _ordered(x: np.ndarray) -> np.ndarray:
    """Float bits as integers in the floats' order, so that neighbours differ by 1 (as Python ints)."""
    bits = x.view({2: np.int16, 4: np.int32, 8: np.int64}[x.dtype.itemsize]).astype(object)
    top = 1 << (8 * x.dtype.itemsize - 1)
    return np.array([b if b >= 0 else -top - b for b in bits], dtype=object)


def _disagreeing(got: np.ndarray, want: np.ndarray, ulps: int, zero_sign: bool) -> np.ndarray:
    """The indices where `got` is not `want`: in value, or beyond `ulps` for a float; -0.0 is not
    0.0 where `zero_sign`."""
    if want.dtype.kind != "f":
        return np.flatnonzero(got != want)
    both_nan = np.isnan(got) & np.isnan(want)
    same = (got.view(np.uint8).reshape(len(got), -1) == want.view(np.uint8).reshape(len(want), -1)).all(1)
    same |= (got == 0) & (want == 0) & (not zero_sign)
    if ulps:
        finite = np.isfinite(got) & np.isfinite(want)
        close = np.zeros(len(got), bool)
        close[finite] = np.abs(_ordered(got[finite]) - _ordered(want[finite])) <= ulps
        same |= close
    return np.flatnonzero(~(same | both_nan))


def _id(case) -> str:
    _, dtypes, out, _ = case
    return f"{'-'.join(np.dtype(d).name for d in dtypes)}-to-{out.name}"


@pytest.mark.parametrize(
    "k", [pytest.param(k, id=_id(c), marks=[pytest.mark.slow] if c[0] == "slow" else []) for k, c in enumerate(CASES)]
)
def test_every_ufunc_gives_numpys_values(walk, k):
    _check(*walk(CASES[k][0]), k)


def _check(specs, image, k):
    """Case `k` of CASES, run from `image`, against NumPy."""
    _, dtypes, out, names = CASES[k]
    assert specs[k].out_type.dtype == out
    inputs = [_inputs(name, dtypes, out) for name in names]
    w = np.concatenate([np.full(len(x[0]), i, np.int32) for i, x in enumerate(inputs)])
    args = [np.concatenate([x[j] for x in inputs]) for j in range(len(dtypes))]
    got = run_spec(image, specs[k], w, *args)
    failures = []
    for i, name in enumerate(names):
        want = np.asarray(_numpy(name, *inputs[i]))
        mine = got[w == i]
        approximate = any(b.name in APPROXIMATE for b in _ROW[name])
        ulps = ULPS[out.type] if approximate and out.kind == "f" else 0
        for j in _disagreeing(mine, want, ulps, name not in ZERO_SIGN_UNSPECIFIED)[:4]:
            at = ", ".join(repr(x[j]) for x in inputs[i])
            failures.append(f"np.{name}({at}): NumPy {want[j]!r}, gompute {mine[j]!r}")
    assert not failures, "\n".join(failures)


@pytest.fixture(scope="module")
def cuda_text(walk):
    """The quick module's kernels from their CUDA text, as NVRTC gets it, built for the CPU through
    the CUDA shim of the fake driver's tests (tests/fakes/images.py)."""
    specs, _ = walk("quick")
    built = [s for s in specs if s is not None]
    entries = tuple(e for s in built for e in s.entry_points())
    data = images.gpu_text_image(module_source(built, "cuda"), [e.symbol for e in entries], "test_ufunc_walk_text")
    return specs, Image(data, "so", "host", None, entries, None)


@pytest.mark.slow
@pytest.mark.parametrize("k", [pytest.param(k, id=_id(c)) for k, c in enumerate(CASES) if c[0] == "quick"])
def test_the_cuda_text_gives_numpys_values_on_the_cpu(cuda_text, k):
    _check(*cuda_text, k)


# -- the GPU text ----------------------------------------------------------------------------------

GPU_TYPES = [T.bool_, T.i8, T.i16, T.i32, T.i64, T.u8, T.u16, T.u32, T.u64, T.f16, T.bf16, T.f32, T.f64]


def _single(fn, arity: int):
    """A generic kernel calling `fn` on its `arity` arguments."""

    @map_kernel
    def one(a):
        return fn(a)

    @map_kernel
    def two(a, b):
        return fn(a, b)

    @map_kernel
    def three(a, b, c):
        return fn(a, b, c)

    return (one, two, three)[arity - 1]


def _gpu_cases():
    """(None, argument types, result type, names) per kernel: every builtin (one name per row of
    the table) on each type, its arguments all of that type, grouped by the result type."""
    cases = []
    for t in GPU_TYPES:
        groups: dict[tuple, list[str]] = {}
        for row in B.ROWS:
            b = row[0]
            try:
                out = _single(b, b.min_args).specialize(*[t] * b.min_args).out_type
            except CompileError:  # no loop for t
                continue
            groups.setdefault((b.min_args, out), []).append(b.name)
        cases += [(None, [t] * arity, out, names) for (arity, out), names in groups.items()]
    return cases


@pytest.fixture(scope="module")
def gpu_specs(tmp_path_factory):
    cases = _gpu_cases()
    kernels = _kernels(tmp_path_factory.mktemp("gpu"), _source(cases, prefix="g"))
    specs = [getattr(kernels, f"walk_{k}").specialize(T.i32, *types) for k, (_, types, _, _) in enumerate(cases)]
    names = {name for _, _, _, group in cases for name in group}
    assert names == {row[0].name for row in B.ROWS}, "a builtin compiles on no type"
    return specs


@pytest.mark.slow
@pytest.mark.skipif(not nvrtc.available(), reason="NVRTC not installed (pip install nvidia-cuda-nvrtc cuda-pathfinder)")
def test_every_builtin_compiles_for_cuda(gpu_specs):
    ptx = compile_module(gpu_specs, "cuda", "compute_75", "test_ufunc_walk_cuda").data.decode()
    assert all(f".entry {e.symbol}(" in ptx for s in gpu_specs for e in s.entry_points())


@pytest.mark.slow
@pytest.mark.skipif(not hiprtc.available(), reason="no hiprtc (apt install libamdhip64-5, or install ROCm)")
def test_every_builtin_compiles_for_hip(gpu_specs):
    code = compile_module(gpu_specs, "hip", "gfx90a", "test_ufunc_walk_hip").data
    assert all(e.symbol.encode() in code for s in gpu_specs for e in s.entry_points())


# -- bf16, which NumPy lacks ----------------------------------------------------------------------


@map_kernel
def _bf16_next(x: T.bf16, y: T.bf16) -> T.bf16:
    return B.nextafter(x, y)


@map_kernel
def _bf16_spacing(x: T.bf16) -> T.bf16:
    return B.spacing(x)


def test_bf16_steps_in_its_own_ulps():
    """nextafter and spacing on bf16 step in bf16's ulps (not f32's), by the rules NumPy has for
    its floats: nextafter(x, x) is x, and spacing steps away from zero, from either zero up."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = ml_dtypes.bfloat16
    grid = np.array([0.0, -0.0, 1.0, -1.0, 3.5, 1e-40, -1e-40, 3.3e38, -3.3e38, np.inf, -np.inf, np.nan], bf16)
    x, y = (v.ravel() for v in np.meshgrid(grid, grid, indexing="ij"))
    with np.errstate(all="ignore"):
        want = np.where(x == y, x, np.nextafter(x, y))
        away = np.nextafter(grid, np.copysign(np.array(np.inf, bf16), grid)) - grid
        spacing = np.where(grid == 0, np.array(2.0**-133, bf16), np.where(np.isinf(grid), np.nan, away)).astype(bf16)
    got = map_host(_bf16_next, x.view(np.uint16), y.view(np.uint16)).view(bf16)
    assert not _disagreeing(got.astype(np.float32), want.astype(np.float32), 0, True).size
    got = map_host(_bf16_spacing, grid.view(np.uint16)).view(bf16)
    assert not _disagreeing(got.astype(np.float32), spacing.astype(np.float32), 0, True).size


# -- complex numbers -------------------------------------------------------------------------------

COMPLEX_DTYPES = [(np.complex64,), (np.complex128,), (np.complex64, np.complex64), (np.complex128, np.complex128)]
COMPLEX_DTYPES += [(np.float32, np.complex64), (np.complex64, np.float64)]
# The ufuncs NumPy computes on complex numbers and gompute refuses (complex_math.REFUSED says why),
# by their rows' names: the orderings, which mean nothing for complex numbers, and the inverse
# trigonometric and hyperbolic functions.
# fmt: off
REFUSED_ON_COMPLEX = {
    "less", "less_equal", "greater", "greater_equal", "maximum", "minimum", "fmax", "fmin",
    "asin", "acos", "atan", "asinh", "acosh", "atanh",
}
# fmt: on
# Computed in c128 for c64 too (complex.h), so checked against NumPy's c128 values rounded to c64.
IN_DOUBLE = {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos", "tan", "sinh", "cosh"}
IN_DOUBLE |= {"tanh"}
# Annex G leaves which part of these functions' non-finite results is NaN to the library: only
# finite arguments are compared.
NONFINITE_UNSPECIFIED = {"sin", "cos", "tan", "sinh", "cosh", "tanh"}
COMPLEX_ULPS = {np.float32: 2, np.float64: 8}  # in ulps of the result's magnitude, as test_complex's


def _complex_grid(dtype, parts=(0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-3, 100.0, np.inf, -np.inf, np.nan)):
    dtype = np.dtype(dtype)
    if dtype.kind != "c":
        return np.array(parts, dtype)
    re, im = np.meshgrid(parts, parts, indexing="ij")
    with np.errstate(invalid="ignore"):
        return (re + 1j * im).ravel().astype(dtype)


def _complex_inputs(name, dtypes):
    grids = [_complex_grid(d) for d in dtypes]
    if len(grids) == 1:
        return grids
    a, b = (x.ravel() for x in np.meshgrid(*grids, indexing="ij"))
    if name in ("power", "float_power"):  # exp(b log a) carries log's error times |b log a|, NumPy's too
        a, b = a[np.abs(b) <= 3], b[np.abs(b) <= 3]
    return [a, b]


def _complex_cases():
    cases, refused = [], []
    for dtypes in COMPLEX_DTYPES:
        groups: dict[np.dtype, list[str]] = {}
        for name in WALKED:
            out = _numpy_dtype(name, dtypes) if getattr(np, name).nin == len(dtypes) else None
            if out is not None and B.ROW_NAME[name] in REFUSED_ON_COMPLEX:
                refused.append((name, dtypes))
            elif out is not None:
                groups.setdefault(out, []).append(name)
        cases += [("complex", dtypes, out, names) for out, names in groups.items()]
    return cases, refused


COMPLEX_CASES, COMPLEX_REFUSALS = _complex_cases()


def test_the_complex_refusals_are_the_short_list():
    assert {B.ROW_NAME[n] for n, _ in COMPLEX_REFUSALS} == REFUSED_ON_COMPLEX
    assert REFUSED_ON_COMPLEX <= set(C.REFUSED)
    walked = {n for _, _, _, names in COMPLEX_CASES for n in names} | {n for n, _ in COMPLEX_REFUSALS}
    has_loop = {n for n in WALKED if any(set(t.split("->")[0]) <= set("FD") for t in getattr(np, n).types)}
    assert walked == has_loop, "a ufunc with a complex loop is neither walked nor refused"


@pytest.mark.parametrize("name, dtypes", COMPLEX_REFUSALS, ids=str)
def test_a_ufunc_gompute_refuses_on_complex_says_so(tmp_path, name, dtypes):
    kernels = _kernels(tmp_path, _source([(None, dtypes, None, [name])]))
    with pytest.raises(CompileError, match=rf"g\.{B.ROW_NAME[name]} of complex numbers is not supported: "):
        kernels.walk_0.specialize(T.i32, *map(T.from_dtype, dtypes))


@pytest.fixture(scope="module")
def complex_walk(tmp_path_factory):
    kernels = _kernels(tmp_path_factory.mktemp("complex"), _source(COMPLEX_CASES))
    specs = [
        getattr(kernels, f"walk_{k}").specialize(T.i32, *map(T.from_dtype, dtypes))
        for k, (_, dtypes, _, _) in enumerate(COMPLEX_CASES)
    ]
    return specs, compile_module(specs, "host", None, "test_ufunc_walk_complex")


def _complex_want(name, inputs, out):
    """NumPy's values: of the c128 arguments rounded to `out` where gompute computes in c128, and
    for a power where the exponent is not an integer below 100 (npy_cpow multiplies those in the
    type itself)."""
    same = np.asarray(_numpy(name, *inputs))
    if out != np.complex64 or name not in IN_DOUBLE | {"power"}:
        return same
    wide = np.asarray(_numpy(name, *(x.astype(np.complex128) for x in inputs)))
    with np.errstate(over="ignore", invalid="ignore"):
        wide = wide.astype(out)
    if name != "power":
        return wide
    b = inputs[1]
    integer = (b.imag == 0) & (np.abs(b.real) < 100) & (b.real == np.round(b.real))
    return np.where(integer, same, wide)


@pytest.mark.parametrize("k", [pytest.param(k, id=_id(c)) for k, c in enumerate(COMPLEX_CASES)])
def test_every_ufunc_on_complex_gives_numpys_values(complex_walk, k):
    specs, image = complex_walk
    _, dtypes, out, names = COMPLEX_CASES[k]
    assert specs[k].out_type.dtype == out
    inputs = [_complex_inputs(name, dtypes) for name in names]
    w = np.concatenate([np.full(len(x[0]), i, np.int32) for i, x in enumerate(inputs)])
    args = [np.concatenate([x[j] for x in inputs]) for j in range(len(dtypes))]
    got = run_spec(image, specs[k], w, *args)
    failures = []
    for i, name in enumerate(names):
        want, mine = _complex_want(name, inputs[i], out), got[w == i]
        keep = np.ones(len(want), bool)
        if name in NONFINITE_UNSPECIFIED:
            keep = np.isfinite(inputs[i][0])
        bad = _complex_disagreeing(mine[keep], want[keep])
        for j in np.flatnonzero(keep)[bad][:4]:
            at = ", ".join(repr(x[j]) for x in inputs[i])
            failures.append(f"np.{name}({at}): NumPy {want[j]!r}, gompute {mine[j]!r}")
    assert not failures, "\n".join(failures)


def _complex_disagreeing(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Where `got` is not `want`: a different pattern of NaN and infinite parts, or a finite value
    beyond COMPLEX_ULPS of the result's magnitude (bools and integers exactly)."""
    if want.dtype.kind not in "fc":
        return got != want
    part = np.float32 if want.dtype in (np.complex64, np.float32) else np.float64
    got_c, want_c = got.astype(np.complex128), want.astype(np.complex128)
    bad = np.zeros(len(want), bool)
    for p in ("real", "imag"):
        g_part, w_part = getattr(got_c, p), getattr(want_c, p)
        bad |= (np.isnan(g_part) != np.isnan(w_part)) | (np.isinf(g_part) != np.isinf(w_part))
        bad |= np.isinf(w_part) & (g_part != w_part)
    finite = np.isfinite(want_c) & ~bad
    scale = np.spacing(np.abs(want_c[finite]).astype(part)).astype(np.float64)
    scale = np.maximum(scale, np.finfo(part).smallest_subnormal)
    bad[finite] = np.abs(got_c[finite] - want_c[finite]) > COMPLEX_ULPS[part] * scale
    return bad
