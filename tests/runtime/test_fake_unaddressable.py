"""Device memory on the fake libcuda is out of the host's reach, as a GPU's is.

tests/fakes/fake_device_memory.h keeps every device allocation PROT_NONE while no device work
runs, so a host read or write of a device pointer is a SIGSEGV where it happens: the fake CUDA
pass of `make test` passing means gompute itself never touches device memory from the host.
Here a child process touches it on purpose; each child runs on the fake with no other work.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import REPO

SETUP = """
import ctypes
import numpy as np
import gompute as g

compute = g.runtime.cuda.Compute.init()
buf = compute.empty((4,), g.f32)
buf.upload(np.arange(4, dtype=np.float32))
out = np.empty(4, np.float32)
compute.synchronize()
buf.download(out)
assert out.tolist() == [0, 1, 2, 3], out
print("driver calls work", flush=True)
"""

TOUCHES = {
    "read": "ctypes.string_at(buf.data_addr(), 4)",
    "write": "ctypes.memset(buf.data_addr(), 0, 4)",
    "numpy": "np.frombuffer((ctypes.c_char * 16).from_address(buf.data_addr()), np.float32).sum()",
}


def run_child(fake_libcuda, code: str, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_CUDA_", "GOMPUTE_BACKEND"))}
    full.update(env, GOMPUTE_LIBCUDA=str(fake_libcuda["fake"]), FAKE_CUDA_DELAY_US="0")
    if "ASAN_OPTIONS" in full:  # under `make sanitize` the SIGSEGV must kill the child, not ASan's report
        full["ASAN_OPTIONS"] += ":handle_segv=0"
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SETUP) + code + "\nprint('touched', flush=True)\n"],
        env=full,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("touch", TOUCHES)
def test_a_host_touch_of_device_memory_is_a_sigsegv(fake_libcuda, touch):
    child = run_child(fake_libcuda, TOUCHES[touch])
    assert "driver calls work" in child.stdout, child.stderr
    assert child.returncode == -signal.SIGSEGV, (child.returncode, child.stdout, child.stderr)
    assert "touched" not in child.stdout


def test_the_switch_leaves_device_memory_addressable(fake_libcuda):
    """FAKE_CUDA_ADDRESSABLE=1, for debugging: the same touches then pass, which shows that the
    SIGSEGVs above are the protection's and nothing else's."""
    child = run_child(fake_libcuda, "\n".join(TOUCHES.values()), FAKE_CUDA_ADDRESSABLE="1")
    assert child.returncode == 0 and "touched" in child.stdout, child.stderr


def test_pinned_memory_stays_addressable(fake_libcuda):
    """Page-locked host memory is host memory, on a GPU machine too: the host reads and writes it
    between driver calls, and copies to and from it still land."""
    code = """
pinned = compute.alloc_pinned(16)
view = np.frombuffer(pinned, np.float32)
view[:] = [5, 6, 7, 8]
buf.upload(view)
view[:] = 0
buf.download(view)
compute.synchronize()
assert view.tolist() == [5, 6, 7, 8], view
"""
    child = run_child(fake_libcuda, code)
    assert child.returncode == 0 and "touched" in child.stdout, child.stderr
