"""Running kernels beyond one process: pickling, Dask arrays, a cluster of worker processes. The
tests need the `dask` extra (dask, distributed and cloudpickle of one release); each module skips
without it (`pytest.importorskip`)."""

import os
import subprocess
import sys
from pathlib import Path

NO_EXTRA = "the dask extra is not installed: pip install gompute[dask]"

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def run_script(name: str, *args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run tests/scaling/<name> as the main program, as a user runs a script: what it defines is in
    its `__main__`, which no other process can import."""
    path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, **(env or {})}
    done = subprocess.run(
        [sys.executable, str(HERE / name), *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    return done
