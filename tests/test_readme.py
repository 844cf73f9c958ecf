"""The README's examples run as written (on the host backend)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def run(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    script = tmp_path / "example.py"  # kernels must live in a file
    script.write_text(code)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)


def test_the_first_example_runs(tmp_path):
    code = python_blocks()[0] + "\nassert (x >= 0).all() and y.dtype == np.float32\nprint('ok')\n"
    done = run(code, tmp_path)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr


def test_the_launch_by_hand_example_runs(tmp_path):
    block = next(b for b in python_blocks() if "A launch, by hand" in b or "kernel.launch(g.Dim3.linear" in b)
    done = run(block + "\nprint('ok')\n", tmp_path)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr


def test_the_streams_and_events_example_runs_after_the_launch_by_hand(tmp_path):
    """It ran outside the by-hand block's `with`, on a deinit()ed Compute, with an undefined grid.
    The by-hand block leaves host_data scaled by 2 already; this one scales it again."""
    blocks = python_blocks()
    by_hand = next(i for i, b in enumerate(blocks) if "kernel.launch(g.Dim3.linear" in b)
    check = "\nassert (host_data == np.maximum(np.linspace(-1, 1, N, dtype=np.float32) * 4, 0)).all()\nprint('ok')\n"
    done = run(blocks[by_hand] + blocks[by_hand + 1] + check, tmp_path)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr


def test_the_pipeline_example_runs(tmp_path):
    pytest.importorskip("torch", reason="PyTorch is not installed")
    kernels = python_blocks()[0].split("x = np.linspace")[0]
    (tmp_path / "my_kernels.py").write_text(kernels)
    block = next(b for b in python_blocks() if "from my_kernels import" in b)
    done = run(block + "\nprint('ok')\n", tmp_path)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr


def test_every_builtin_is_in_the_readme_table():
    from gompute.lang.builtins import BUILTINS

    table = README.read_text().split("| builtin | result | meaning |")[1].split("\n\n")[0]
    missing = [name for name in BUILTINS if f"`{name}" not in table]
    assert not missing, f"README's builtins table lacks {missing}"
