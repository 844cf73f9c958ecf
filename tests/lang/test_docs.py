"""docs/kernels.md: its example runs, and it documents every builtin."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from gompute.lang.builtins import BUILTINS

DOC = Path(__file__).resolve().parents[2] / "docs" / "kernels.md"
# Until gompute/__init__.py re-exports the language, the example reaches it through gompute.lang.
SHIM = (
    "import gompute, gompute.lang\n"
    "if not hasattr(gompute, 'map_kernel'):\n"
    "    gompute.map_kernel = gompute.lang.map_kernel\n"
)


def test_every_builtin_is_documented():
    text = DOC.read_text()
    missing = [name for name in [*BUILTINS, "pow"] if not re.search(rf"`{name}[(`]", text)]
    assert not missing


def test_the_example_runs(tmp_path):
    pytest.importorskip("gompute._core", reason="the example launches through the runtime")
    example = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    script = tmp_path / "example.py"
    script.write_text(SHIM + example)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=DOC.parents[1])
    assert proc.returncode == 0, proc.stderr
    assert "['scale_relu', 'scale_relu__out', 'scale_relu__strided']" in proc.stdout
