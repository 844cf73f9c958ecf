"""gompute/_core.pyi says what the compiled module has: mypy's stubtest compares the two both ways
(every public name, its kind, and each function's parameters)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ALLOWLIST = Path(__file__).with_name("stubtest_allowlist.txt")


def test_the_stub_matches_the_compiled_module(tmp_path):
    pytest.importorskip("mypy.stubtest", reason="mypy is not installed (the test extra brings it)")
    # follow_imports=skip: the stub's own names are what is checked; following its imports
    # (gompute, NumPy's stubs) would take half a minute and check nothing more here.
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\nfollow_imports = skip\ncache_dir = {tmp_path / 'cache'}\n")
    done = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "gompute._core"]
        + ["--allowlist", str(ALLOWLIST), "--mypy-config-file", str(config)],
        # The stub is found in the source tree: in site-packages an editable install holds only the
        # compiled module, and stubtest passes a module whose stub it cannot find.
        cwd=REPO,
        env=os.environ | {"MYPYPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
