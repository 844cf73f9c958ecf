"""benchmarks/timing.py's record of what was measured: the commit, and whether the tree matched it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import timing  # noqa: E402


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_the_commit_is_marked_dirty_when_the_tree_has_changes(tmp_path):
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    git("add", "a.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    head = git("rev-parse", "--short", "HEAD")
    assert timing.git_commit(tmp_path) == head
    (tmp_path / "a.txt").write_text("two\n")
    assert timing.git_commit(tmp_path) == f"{head}-dirty"


def test_outside_a_checkout_the_commit_is_empty(tmp_path):
    assert timing.git_commit(tmp_path) == ""
