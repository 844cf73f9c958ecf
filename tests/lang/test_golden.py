"""The generated C++ of a few kernels, against reviewed golden files (the part after the prelude).

After a deliberate change to the generator, regenerate them with
`GOMPUTE_UPDATE_GOLDEN=1 pytest tests/lang/test_golden.py` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gompute import types as T
from gompute.lang.module import KERNELS_MARKER, module_body, module_source

from . import sample_kernels as S

GOLDEN = Path(__file__).with_name("golden")
KERNELS = [S.scale_relu, S.loops, S.branches, S.half_ops]
SUFFIX = {"host": "cpp", "cuda": "cu", "hip": "hip"}


def _normalized(text: str) -> str:
    return text.replace(S.__file__, "sample_kernels.py")


@pytest.mark.parametrize("backend", ["host", "cuda", "hip"])
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_generated_source_matches_golden(kernel, backend):
    _check_golden(kernel.specialize(), backend)


@pytest.mark.parametrize("backend", ["host", "cuda"])
def test_storage_variant_matches_golden(backend):
    """Every entry of a variant converts: i16 elements into the f32 kernel, its result to f64."""
    _check_golden(S.scale_relu.variant((T.i16,), T.f64), backend)


def _check_golden(spec, backend):
    got = _normalized(module_body([spec], backend))
    path = GOLDEN / f"{spec.name}.{SUFFIX[backend]}"
    if os.environ.get("GOMPUTE_UPDATE_GOLDEN"):
        path.write_text(got)
    assert path.exists(), f"no golden file {path}; run with GOMPUTE_UPDATE_GOLDEN=1 to create it"
    assert got == path.read_text()


def test_line_directives_point_at_the_python_source():
    source = module_source([S.loops.specialize()], "host")
    lines = open(S.__file__).read().splitlines()
    directives = [line for line in source.splitlines() if line.startswith("#line") and S.__file__ in line]
    assert directives
    for d in directives:
        n = int(d.split()[1])
        assert 1 <= n <= len(lines) and lines[n - 1].strip()  # a real, non-blank line of the kernel's file
    assert f'#line {S.loops.src.line_of(S.loops.src.tree)} "{S.__file__}"' in source


def test_module_is_prelude_then_marker_then_body():
    source = module_source([S.scale_relu.specialize()], "cuda")
    head, body = source.split(KERNELS_MARKER + "\n")
    assert "#include" not in head  # NVRTC needs no headers
    assert body == module_body([S.scale_relu.specialize()], "cuda")
    assert "#define GOMPUTE_NEEDS_F16" in module_source([S.half_ops.specialize()], "host")
    assert "#define GOMPUTE_NEEDS_F16" not in source
