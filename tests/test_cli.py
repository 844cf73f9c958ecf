"""The `gompute` command as a user runs it: a subprocess, its exit status, what it prints."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import gompute as g
from gompute.info import cuda_extra, cuda_extras

SCRIPT = Path(sys.executable).with_name("gompute")


def run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m gompute ARGV...` in a fresh process, with `env` added to the environment."""
    return subprocess.run(
        [sys.executable, "-m", "gompute", *argv],
        env=os.environ | (env or {}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_version_is_the_package_version():
    done = run("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"gompute {g.__version__}\n"
    assert metadata.version("gompute") == g.__version__  # pyproject reads it from gompute/__init__.py


def test_the_console_script_is_the_same_command():
    if not SCRIPT.exists():
        pytest.skip(f"no gompute command beside {sys.executable}: gompute is not pip-installed here")
    done = subprocess.run([str(SCRIPT), "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, f"gompute {g.__version__}\n"), done.stderr


def test_info_says_version_compilers_cache_and_cuda_extra(tmp_path):
    done = run("info", env={"GOMPUTE_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines()[1:5])
    assert done.stdout.startswith(f"gompute {g.__version__}\n")
    assert set(lines) == {"host compiler", "NVRTC", "kernel cache", "CUDA extra"}
    assert lines["kernel cache"] == f"{tmp_path} (from GOMPUTE_CACHE_DIR)"
    assert "gompute[cuda" in lines["CUDA extra"]
    assert "host  usable: host launch convention" in done.stdout


def test_the_extras_read_back_are_those_pyproject_offers():
    assert cuda_extras() == [12, 13]


@pytest.mark.parametrize(
    "driver, says",
    [
        (None, "no CUDA driver found; on an NVIDIA machine pick gompute[cuda12] or gompute[cuda13]"),
        (12080, "gompute[cuda12] fits this CUDA 12.8 driver"),
        (13000, "gompute[cuda13] fits this CUDA 13.0 driver"),
        (14020, "gompute[cuda13] fits this CUDA 14.2 driver"),  # a driver loads older NVRTCs' code
        (11080, "none fits this CUDA 11.8 driver: the extras bring NVRTC 12, 13"),
    ],
)
def test_the_cuda_extra_is_the_one_of_the_drivers_major_or_the_newest_below(driver, says):
    assert cuda_extra(driver, [12, 13]).startswith(says)


def test_demo_without_the_backend_it_asks_for_ends_in_one_line():
    # A GOMPUTE_LIBCUDA that is not there: CUDA is missing here even on a machine with a GPU.
    done = run("demo", env={"GOMPUTE_BACKEND": "cuda", "GOMPUTE_LIBCUDA": "/nonexistent/libcuda.so"})
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("gompute demo: CUDA is unavailable"), done.stderr


def test_demo_runs_and_checks_its_results(tmp_path):
    done = run("demo", env={"GOMPUTE_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stdout + done.stderr
    for part in ("1. g.map on a NumPy array", "2. g.reduce on the same array", "4. The runtime by hand"):
        assert part in done.stdout
    assert ": False" not in done.stdout  # each check the demo prints says True
