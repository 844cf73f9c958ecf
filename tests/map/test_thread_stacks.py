"""A map call runs on a thread with the smallest stack Python allows (threading.stack_size,
32 KiB): the host entries keep their buffers off the stack. Each layout runs in a child process,
where a stack overflow is a failed test with its output, not a crashed test run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import sys, threading
import numpy as np
sys.path.insert(0, {kernels_dir!r})
import gompute as g
from kernels import axpy, scale_relu

rng = np.random.default_rng(0)

def arrays(shape, dtype):
    return [rng.standard_normal(shape).astype(dtype) for _ in range(3)]

def check():
    relu = g.map(scale_relu)
    fused = g.map(axpy)
    for shape in [(40, 40), (300, 200), (2100, 2100)]:  # inline, pooled, tall tiles (>= 16 MB)
        x, _, _ = arrays(shape, np.float32)
        for view in (x, x.T, x[::2, ::3], x[:1].repeat(4, 0)[:, ::-1]):
            want = np.maximum(view * np.float32(1.5), 0)
            np.testing.assert_array_equal(relu(view, scale=1.5), want)
        a, x, y = arrays(shape, np.float64)
        np.testing.assert_array_equal(fused(a.T, x.T, y[::-1].T), a.T * x.T + y[::-1].T)
        np.testing.assert_array_equal(fused(a[:1], x[:, :1], y.T.T), a[:1] * x[:, :1] + y)

threading.stack_size(32 << 10)
failed = []
def run():
    try:
        check()
    except BaseException as e:
        failed.append(e)
thread = threading.Thread(target=run)
thread.start()
thread.join()
if failed:
    raise failed[0]
print("ok")
"""


def test_maps_on_a_32_kib_thread_stack(tmp_path):
    script = tmp_path / "small_stack.py"
    script.write_text(SCRIPT.format(kernels_dir=str(Path(__file__).parent)))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    output = f"exit status {result.returncode}\n{result.stdout}{result.stderr}"
    assert result.returncode == 0 and result.stdout.strip() == "ok", output
