"""gpu_check's run of the test suite's CUDA-marked tests against the real driver: one row that
says how many ran, passed, failed and were skipped, naming the first failures."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FAKE_DEVICE = "Fake CUDA Device"  # tests/fakes/images.py's: make test's fake pass runs them there
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|deselected|xfailed|xpassed)")


def test_scenarios(gpu, check) -> None:
    check.run("the CUDA-marked tests (pytest -m cuda)", lambda: _run(gpu))


def _run(gpu) -> str:
    if gpu.device_info().name == FAKE_DEVICE:
        return "skipped: on the fake driver make test's second pass runs them"
    if importlib.util.find_spec("pytest") is None or not (REPO / "tests").is_dir():
        return "skipped: needs pytest and the repository's tests/ folder"
    env = {k: v for k, v in os.environ.items() if k != "GOMPUTE_LIBCUDA"}  # the real driver
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-m", "cuda", "-p", "no:cacheprovider", "-rfE", "tests"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    summary = _summary(done.stdout)
    failures = re.findall(r"^(?:FAILED|ERROR) (\S+)", done.stdout, re.M)
    if done.returncode not in (0, 5) or failures:  # 5: no test was selected
        named = ", ".join(failures[:5]) + (f" and {len(failures) - 5} more" if len(failures) > 5 else "")
        raise AssertionError(f"{summary}; {named or done.stdout[-300:] + done.stderr[-300:]}")
    return summary


def _summary(out: str) -> str:
    """The closing counts of a pytest run: '120 passed, 3 skipped'."""
    last = next((line for line in reversed(out.splitlines()) if _COUNT.search(line)), "")
    return ", ".join(f"{n} {what}" for n, what in _COUNT.findall(last)) or "no summary line"
