"""A script's output under several host thread counts: the tests that a reduction's bits do not
depend on the thread count run one in a fresh interpreter per count (the pool is sized at start)."""

from __future__ import annotations

import os
import subprocess
import sys


def outputs_by_thread_count(script: str, counts: tuple[str, ...] = ("1", "2", "3")) -> list[str]:
    """`script`'s standard output, run with GOMPUTE_HOST_THREADS set to each of `counts` in turn."""
    outs = []
    for threads in counts:
        env = {**os.environ, "GOMPUTE_HOST_THREADS": threads}
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        outs.append(done.stdout)
    return outs
