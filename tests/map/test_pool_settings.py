"""The host worker pool under each of its settings: pool threads that spin between launches or
sleep at once (GOMPUTE_HOST_SPIN_US), more pool threads than cores, none at all. Launches of one
kernel cross the fixed inline limit and the measured-cost thresholds both ways (csrc/driver_host.cpp:
cheap ones above the limit inline, costly ones below it pooled, and a kernel whose cost is a
parameter misjudged on purpose), from several threads at once, beside async copies on streams
ordered by events, whose threads spin or sleep the same way. Each setting runs in a child
process: the pool is made once a process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import sys, threading
import numpy as np
sys.path.insert(0, {kernels_dir!r})
import gompute as g
from kernels import axpy, relax, scale_relu

relu, fused, steps = g.map(scale_relu), g.map(axpy), g.map(relax)
SIZES = [1000, 16384, 16640, 40000, 200000, 1 << 20, 16640, 40000, 1000, 300 * 300]

def check(seed):
    rng = np.random.default_rng(seed)
    for _ in range(3):
        for n in SIZES:
            x = rng.standard_normal(n).astype(np.float32)
            np.testing.assert_array_equal(relu(x, scale=1.5), np.maximum(x * np.float32(1.5), 0))
            side = int(n ** 0.5)
            a, y = rng.standard_normal((2, side, side))
            np.testing.assert_array_equal(fused(a, y.T, a[:1]), a * y.T + a[:1])
        for n, count in [(8192, 1), (8192, 1), (8192, 400), (16384, 400), (8192, 1), (40000, 1), (40000, 100)]:
            x = rng.standard_normal(n)
            want = x.copy()
            for _ in range(count):
                want = 0.5 * (want + 1.0)
            np.testing.assert_array_equal(steps(x, steps=count), want)

# Async copies down a chain of buffers on two streams, ordered by an event: the streams' own
# threads run them, spinning between tasks or sleeping.
def check_streams(seed):
    compute = g.runtime.host.Compute.init()
    x = np.random.default_rng(seed).standard_normal(1 << 14).astype(np.float32)
    first, second = compute.create_stream(), compute.create_stream()
    bufs = [compute.alloc(x.nbytes) for _ in range(4)]
    for round in range(50):
        bufs[0].upload(x + round, stream=first)
        bufs[1].copy_from(bufs[0], stream=first)
        done = compute.create_event()
        done.record(first)
        done.wait(second)
        bufs[2].copy_from(bufs[1], stream=second)
        bufs[3].copy_from(bufs[2], stream=second)
        out = np.empty_like(x)
        bufs[3].download(out, stream=second)
        second.synchronize()
        np.testing.assert_array_equal(out, x + round)

failed = []
def run(seed):
    try:
        check(seed)
        check_streams(seed)
    except BaseException as e:
        failed.append(e)
threads = [threading.Thread(target=run, args=(seed,)) for seed in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if failed:
    raise failed[0]
print("ok")
"""


@pytest.mark.parametrize(
    "threads, spin_us",
    [("3", "0"), ("3", "20000"), ("1", ""), ("", "")],
    ids=["3-threads-no-spin", "3-threads-long-spin", "1-thread", "defaults"],
)
def test_maps_are_exact_under_every_pool_setting(threads, spin_us, tmp_path):
    script = tmp_path / "pool.py"
    script.write_text(SCRIPT.format(kernels_dir=str(Path(__file__).parent)))
    env = {**os.environ, "GOMPUTE_HOST_THREADS": threads, "GOMPUTE_HOST_SPIN_US": spin_us}
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, env=env)
    output = f"exit status {result.returncode}\n{result.stdout}{result.stderr}"
    assert result.returncode == 0 and result.stdout.strip() == "ok", output


@pytest.mark.parametrize(
    ("name", "value", "warned"),
    [
        ("GOMPUTE_HOST_THREADS", "abc", True),
        ("GOMPUTE_HOST_THREADS", "8abc", True),  # atoi read 8
        ("GOMPUTE_HOST_THREADS", "0", True),
        ("GOMPUTE_HOST_THREADS", "99999", True),
        ("GOMPUTE_HOST_THREADS", " 3 ", False),
        ("GOMPUTE_HOST_THREADS", "", False),
        ("GOMPUTE_HOST_SPIN_US", "fast", True),  # atoi read 0: never spin
        ("GOMPUTE_HOST_SPIN_US", "0", False),
    ],
)
def test_a_setting_the_pool_ignores_is_warned_about(name, value, warned):
    """Values C++ could not read fell back to the default, or to what atoi made of them, silently."""
    code = "import numpy as np, gompute as g; g.runtime.host.Compute.init().alloc(8)"
    env = {**os.environ, name: value}
    result = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert (f"{name}={value!r} is not a whole number" in result.stderr) == warned, result.stderr
