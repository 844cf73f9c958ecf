"""The kernel objects: what `@g.map_kernel` and `@g.func` record, promotion rules against NumPy,
and the compilers' refusals where they are absent."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import gompute
import gompute.lang as g
from gompute import types as T
from gompute.compile import hiprtc
from gompute.dim3 import Dim3
from gompute.errors import ArgumentError, CompileError
from gompute.lang.typing_rules import WEAK_BOOL, WEAK_FLOAT, WEAK_INT, concrete, float_of, promote

from . import sample_kernels as S

NUMPY_TYPES = [t for t in T.ALL_TYPES if t.dtype is not None]


@pytest.mark.parametrize("a, b", list(itertools.product(NUMPY_TYPES, NUMPY_TYPES)), ids=lambda t: t.name)
def test_promotion_is_numpys(a, b):
    assert promote(a, b).dtype == np.result_type(a.dtype, b.dtype)


@pytest.mark.parametrize("t", NUMPY_TYPES, ids=lambda t: t.name)
def test_python_scalars_are_weak_as_in_numpy_2(t):
    x = np.zeros(1, t.dtype)
    assert concrete_dtype(promote(t, WEAK_INT)) == (x + 1).dtype
    assert concrete_dtype(promote(t, WEAK_FLOAT)) == (x + 1.5).dtype
    assert concrete_dtype(promote(t, WEAK_BOOL)) == (x + True).dtype
    assert float_of(t).dtype == np.sqrt(x).dtype


def concrete_dtype(t):
    return concrete(t).dtype


def test_bf16_promotes_like_f16_does():
    assert promote(T.bf16, T.i8) is T.bf16 and promote(T.bf16, T.f16) is T.f32
    assert promote(T.bf16, T.i32) is T.f64 and promote(T.bf16, WEAK_FLOAT) is T.bf16


def test_kernel_records_entry_points_layout_and_block_size():
    k = S.collatz
    assert k.block_size == 128 and k.arity == 1 and not k.generic
    entry, strided = k.entry_points()
    assert entry.symbol == "collatz" and entry.kind == "map" and entry.arity == 3
    assert [(a.name, a.kind, a.type) for a in entry.args] == [
        ("in0", "pointer", T.i64),
        ("out", "pointer", T.i32),
        ("len", "len", T.u64),
    ]
    assert strided.symbol == "collatz__strided" and strided.kind == "strided"
    assert [(a.name, a.kind) for a in strided.args] == [
        ("in0", "pointer"),
        ("out", "pointer"),
        ("len", "len"),
        ("strides", "strides"),
    ]
    assert strided.args[-1].nbytes == 8 + 64 + 64 * 2 and strided.args[-1].align == 8
    inplace, mapped, _ = S.scale_relu.entry_points()
    assert inplace.args[-1].type is S.Params and inplace.args[-1].nbytes == 4
    assert mapped.symbol == "scale_relu__out" and [a.name for a in mapped.args] == [
        "in0",
        "out",
        "len",
        "params",
    ]


def test_a_launch_with_another_block_size_is_refused():
    S.scale_relu.check_block(Dim3(256))
    S.scale_relu.check_block(256)
    with pytest.raises(ArgumentError, match="blocks of 256 threads"):
        S.scale_relu.check_block(Dim3(128))
    with pytest.raises(ArgumentError, match="blocks of 256 threads"):
        S.scale_relu.check_block(Dim3(256, 2))


def test_block_size_must_be_sensible():
    with pytest.raises(ArgumentError, match="block_size"):
        g.map_kernel(block_size=0)(S.square.fn)


def test_second_compile_is_a_lookup():
    first = S.scale_relu.compile_for("host")
    assert S.scale_relu.compile_for("host") is first
    assert first.entry("inplace").symbol == "scale_relu" and first.format == "so"


def test_generic_kernel_needs_types_and_checks_them():
    with pytest.raises(ArgumentError, match="generic"):
        S.generic_mix.specialize()
    with pytest.raises(ArgumentError, match="takes 2 inputs"):
        S.generic_mix.specialize(T.f32)
    with pytest.raises(ArgumentError, match="declared g.f32"):
        S.scale_relu.specialize(T.f64)


def test_func_is_plain_python_when_called_from_python():
    assert S.square(3) == 9 and S.collatz_steps(6) == 8


def test_module_constants_are_captured_in_the_source():
    source = S.loops.source("host")
    assert "0.5f" in source  # OFFSET
    assert "(k >= 3LL)" in source  # SCALE


@pytest.mark.skipif(hiprtc.available(), reason="hiprtc is installed here")
def test_hip_without_hiprtc_says_what_to_install():
    with pytest.raises(CompileError, match="install ROCm"):
        S.scale_relu.compile_for("hip", "gfx90a")


def test_hip_arch_is_checked():
    with pytest.raises(CompileError, match="not an AMD GPU arch"):
        hiprtc.check_arch("sm_90")
    hiprtc.check_arch("gfx90a")
    hiprtc.check_arch("gfx942:sramecc+:xnack-")


def test_unknown_backend_is_refused():
    with pytest.raises(ArgumentError, match="host, cuda or hip"):
        S.scale_relu.compile_for("metal")


def test_an_annotated_local_keeps_its_type():
    def k(x: g.i32) -> g.i32:
        y: g.i16 = x
        y += 1
        return y * 2

    fn = g.map_kernel(k).specialize().function
    assert fn.locals == {"y": T.i16} and fn.body[-1].value.type is T.i32  # i16 * 2, converted on return


FUNC_MODULE = """import gompute as g

@g.func
def helper(x):
    return x * 2


@g.func
def other(x):
    return x - 100


@g.map_kernel
def uses_helper(x):
    return helper(x)


def plain(x: g.f32) -> g.f32:
    return x + 1
"""


def _import_fresh(tmp_path, name: str, text: str):
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def test_a_func_is_read_as_it_was_defined(tmp_path):
    """Its file edited after the import (a notebook, a long-running process), a @g.func still
    compiles the code Python runs: read at its first kernel, it gave the lines now at its old place."""
    import linecache

    lines = FUNC_MODULE.splitlines()
    shift = lines.index("def other(x):") - lines.index("def helper(x):")
    module, path = _import_fresh(tmp_path, "edited_after_import", "#\n" * shift + FUNC_MODULE)
    path.write_text(FUNC_MODULE)  # `other` now where `helper` was
    linecache.checkcache(str(path))
    x = np.ones(3, np.float32)
    np.testing.assert_array_equal(gompute.map(module.uses_helper)(x), x * 2)


def test_a_kernel_made_from_an_edited_file_says_so(tmp_path):
    import linecache

    module, path = _import_fresh(tmp_path, "edited_before_kernel", FUNC_MODULE)
    lines = FUNC_MODULE.splitlines()
    shift = lines.index("def plain(x: g.f32) -> g.f32:") - lines.index("def uses_helper(x):")
    path.write_text("\n" * shift + FUNC_MODULE)  # `def uses_helper` now where `def plain` was
    linecache.checkcache(str(path))
    with pytest.raises(CompileError, match="has changed since it was defined.*re-import"):
        g.map_kernel(module.plain)


def test_threads_specializing_through_one_func_do_not_take_each_other_for_recursion(tmp_path):
    import threading

    long_func = "import gompute as g\n\n@g.func\ndef slow(x):\n" + "    x = x * 2 - x\n" * 300 + "    return x\n"
    long_func += "".join(f"\n@g.map_kernel\ndef k{i}(x):\n    return slow(x) + {i}\n" for i in range(6))
    for attempt in range(5):
        module, _ = _import_fresh(tmp_path, f"shared_func_{attempt}", long_func)
        barrier, errors = threading.Barrier(6), []

        def specialize(kernel, barrier=barrier, errors=errors):
            barrier.wait()
            try:
                kernel.specialize(T.f32)
            except CompileError as e:
                errors.append(e)

        threads = [threading.Thread(target=specialize, args=(getattr(module, f"k{i}"),)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors


@pytest.mark.parametrize("name", ["sqrt", "double", "memcpy", "main", "int64_t", "NAN", "threadIdx", "max", "計算"])
def test_a_kernel_named_like_c_cannot_be_made_and_says_rename_it(tmp_path, name):
    """Its entry point is a C function of its name: `sqrt` clashed with <math.h>'s, and the
    compiler's failure read as a gompute bug."""
    text = f"import gompute as g\n\n\ndef {name}(x: g.f32) -> g.f32:\n    return x + 1\n"
    module, _ = _import_fresh(tmp_path, f"named_{abs(hash(name))}", text)
    with pytest.raises(CompileError, match=f"cannot be called '{name}'.*rename it"):
        g.map_kernel(getattr(module, name))


def test_a_generic_kernel_may_be_named_like_c(tmp_path):
    """Its entry points are suffixed by their types (double__i32)."""
    text = "import gompute as g\n\n\ndef double(x):\n    return x + x\n"
    module, _ = _import_fresh(tmp_path, "named_double", text)
    x = np.arange(3, dtype=np.int32)
    np.testing.assert_array_equal(gompute.map(g.map_kernel(module.double))(x), x + x)


def test_a_kernel_may_be_named_like_a_c_name_with_more_to_it(tmp_path):
    text = "import gompute as g\n\n\ndef sqrt_plus(x: g.f32) -> g.f32:\n    return x + 1\n"
    module, _ = _import_fresh(tmp_path, "named_sqrt_plus", text)
    x = np.ones(3, np.float32)
    np.testing.assert_array_equal(gompute.map(g.map_kernel(module.sqrt_plus))(x), x + 1)
