"""Facts stated in more than one language, checked to agree.

The C++ core is the home of each: the error kinds (csrc/errors.h) and the strided entry's
dimension limit (the planner). The Python classes and the kernel preludes that restate
them are checked here, both ways, so a kind or a limit added on one side fails until the
other side has it too.
"""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import gompute as g
from gompute import _core, errors
from gompute.lang.module import pack_strides, strides_nbytes
from tests.conftest import REPO

COMMON_PRELUDE = REPO / "gompute" / "lang" / "preludes" / "common.h"


def _error_classes() -> dict[str, type]:
    """Every exception class gompute/errors.py defines, by name."""
    return {
        name: cls
        for name, cls in vars(errors).items()
        if inspect.isclass(cls) and issubclass(cls, BaseException) and cls.__module__ == errors.__name__
    }


def test_each_cpp_error_kind_is_a_gompute_error_class():
    kinds = _core.ERROR_KINDS
    assert len(kinds) == len(set(kinds)) >= 10, kinds
    classes = _error_classes()
    for kind in kinds:
        assert kind in classes, f"csrc/errors.h raises {kind}, which gompute/errors.py does not define"
        assert issubclass(classes[kind], g.GomputeError)
        assert getattr(g, kind) is classes[kind], f"{kind} is not exported as g.{kind}"


def test_each_error_class_is_a_cpp_kind_or_python_only():
    kinds, python_only = set(_core.ERROR_KINDS), set(errors.PYTHON_ONLY)
    assert not kinds & python_only, f"both a C++ kind and Python-only: {kinds & python_only}"
    assert set(_error_classes()) == kinds | python_only


def test_a_cpp_error_arrives_as_the_class_its_kind_names():
    with g.runtime.host.Compute.init() as c:
        buffer = c.alloc(16)
        buffer.free()
        with pytest.raises(g.BufferFreed) as raised:
            buffer.download(bytearray(16))
    assert type(raised.value) is g.BufferFreed and "BufferFreed" in _core.ERROR_KINDS


def _prelude_max_ndim() -> int:
    match = re.search(r"^#define GOMPUTE_MAX_NDIM (\d+)$", COMMON_PRELUDE.read_text(), re.M)
    assert match, f"no GOMPUTE_MAX_NDIM in {COMMON_PRELUDE}"
    return int(match.group(1))


def test_the_prelude_takes_as_many_strided_dims_as_the_planner():
    assert _prelude_max_ndim() == _core.MAX_STRIDED_DIMS


def test_the_languages_strides_struct_is_the_planners():
    """lang/module.py's pack_strides (for launches by hand) writes what the planner writes for a
    layout it cannot collapse: a transposed 3-D input, a broadcast row and a C-order output."""
    shape = (2, 3, 4)
    inputs = [np.zeros((4, 3, 2), np.float32).T, np.zeros(4, np.float32)]
    out = np.zeros(shape, np.float32)
    kind, _, planned = _core.plan_launch([g.asbuffer(a) for a in inputs], g.asbuffer(out), 64)
    steps = [[1, 2, 6], [0, 0, 1], [12, 4, 1]]
    assert kind == "strided" and planned == pack_strides(shape, steps)
    assert len(planned) == strides_nbytes(3)
