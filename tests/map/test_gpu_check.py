"""benchmarks/gpu_check.py end to end on the fake libcuda (make test's second pass), so the one
run it gets on a GPU is not spent on an import error or a crash of the script. The fake runs no
PTX or CUBIN, so those scenarios fail here at their module load, and only those; every other
row must pass or skip. What comes after a module load in those scenarios is not run here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gompute as g
from gompute.compile import nvrtc
from tests.conftest import open_compute
from tests.fakes import images

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.py"
CANNOT_RUN_ON_THE_FAKE = ("ModuleLoadFailed",)  # PTX it cannot JIT, CUBINs it cannot load


@pytest.mark.skipif(not nvrtc.available(), reason="NVRTC not installed (pip install nvidia-cuda-nvrtc)")
def test_gpu_check_runs_every_scenario_and_saves_its_table(tmp_path):
    if not images.is_fake(open_compute(g.Backend.cuda)):
        pytest.skip("on a real GPU gpu_check.py is run by hand (benchmarks/README.md)")
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--save", "--results", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        env=os.environ | {"GOMPUTE_CACHE_DIR": str(tmp_path / "cache")},
    )
    saved = list(tmp_path.glob("gpu_check-*.md"))
    assert len(saved) == 1, run.stdout[-3000:] + run.stderr[-3000:]
    table = saved[0].read_text()
    rows = re.findall(r"^\| (.+?) \| (ok|FAIL|skip) \| (.*) \|$", table, re.M)
    names = [name for name, _, _ in rows]
    assert names[0] == "upload/download 64 MiB" and names[-1] == "16-byte loads", names
    assert len(rows) >= 20
    unexpected = [(n, f) for n, r, f in rows if r == "FAIL" and not any(c in f for c in CANNOT_RUN_ON_THE_FAKE)]
    assert not unexpected, unexpected
    assert "driver 12.8" in table and "NVRTC" in table
    assert run.returncode == 1  # the rows the fake cannot run
