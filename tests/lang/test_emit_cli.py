"""`python -m gompute emit` on bad input: `gompute emit: error: ...` on stderr, exit status 2 for bad
arguments and 1 for a kernel that does not compile, found before any compiler runs and before
anything is written; no traceback."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from gompute.__main__ import main
from gompute.compile import hiprtc

from .test_emit import KERNEL, no_compiler  # noqa: F401 - a fixture

BAD_KERNEL = """import gompute as g


@g.map_kernel
def pair(x: g.f32) -> g.f32:
    return [x, x]
"""


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the command puts "." on it
    (tmp_path / "kernels.py").write_text(KERNEL)
    (tmp_path / "bad_kernel.py").write_text(BAD_KERNEL)
    (tmp_path / "bad_syntax.py").write_text("def (\n")
    (tmp_path / "no_kernels.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("x = 1\n")
    (tmp_path / "a_folder").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    "argv, status, message",
    [
        (["nosuch.py"], 2, "nosuch.py: no such file; give a path to a .py file or an importable module name"),
        (["nosuch_module"], 2, "no module named 'nosuch_module'; give a path to a .py file, or put the folder"),
        (["a_folder"], 2, "a_folder is a folder, not a Python module; give the .py files in it as roots"),
        (["notes.txt"], 2, "notes.txt is not a .py file"),
        (["bad_syntax.py"], 1, r"bad_syntax.py is not valid Python: invalid syntax \(.*bad_syntax.py:1\)"),
        (["bad_kernel.py"], 1, r"a list is not supported in the kernel language in 'pair' \(.*bad_kernel.py:6\)"),
        (["no_kernels.py"], 2, "no_kernels.py defines no annotated map kernels to emit"),
        (["kernels.py", "--out", "kernels.py"], 2, "cannot write gompute_kernels into 'kernels.py': Not a directory"),
        pytest.param(
            ["kernels.py", "--out", "/proc/x"],
            2,
            "cannot write gompute_kernels into '/proc/x'",
            marks=pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc"),
        ),
        (["kernels.py", "--no-cuda", "--cuda-arch", "sm_90"], 2, "--no-cuda.*--cuda-arch.*drop one of the two"),
        (["kernels.py", "--cuda-arch", "compute_90"], 2, "takes sm_XX archs, one CUBIN each, not compute_90"),
        pytest.param(
            ["kernels.py", "--hip-arch", "gfx90a"],
            1,
            "compiling HIP kernels needs hiprtc, which was not found: install ROCm",
            marks=pytest.mark.skipif(hiprtc.available(), reason="hiprtc is installed"),
        ),
    ],
)
def test_bad_input_is_an_error_line_before_any_compile(folder, no_compiler, capsys, argv, status, message):  # noqa: F811
    assert main(["emit", *argv, "--quiet"]) == status
    err = capsys.readouterr().err
    assert err.startswith("gompute emit: error: ") and re.search(message, err.splitlines()[0]), err
    assert not (folder / "gompute_kernels").exists()


def test_the_command_prints_no_traceback(tmp_path):
    argv = [sys.executable, "-m", "gompute", "emit", "nosuch.py", "--quiet"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr == (
        "gompute emit: error: nosuch.py: no such file; give a path to a .py file or an importable module name\n"
    )


def test_the_docs_show_the_command_as_it_is():
    """`gompute emit` (or `python -m gompute emit`): a subcommand of gompute, not a module to run."""
    root = Path(__file__).resolve().parents[2]
    for doc in ("README.md", "docs/kernels.md"):
        text = (root / doc).read_text()
        assert re.search(r"\bgompute emit ", text), doc
        assert not re.search(r"python -m gompute\.", text), doc
