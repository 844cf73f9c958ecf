"""The grid g.map launches on a GPU, as the driver sees it: docs/gpu_launch.md's rule, with the
entry's vector width and the device's SM count, on the first call (the general path) and on
repeated ones (the C++ path), and right results for lengths that are not whole vectors, tiny
arrays and misaligned views.

The driver is tests/fakes/fake_libcuda.cpp built with a cuLaunchKernel of this file's in front
of its own, which notes each launch's grid; a child process loads it (a process loads one
libcuda) and runs g.map on its CUDA Buffers under tests/fakes/images.py.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BLOCK = 256  # @g.map_kernel's default block size, the kernels' below
RESIDENT_BLOCKS = 6  # of 256 threads an SM, docs/gpu_launch.md's occupancy table
ROUNDS = 4  # of resident blocks a grid is bounded to (docs/gpu_launch.md)

# The fake with its cuLaunchKernel renamed, and one in front of it that notes the grid.
RECORDING_SOURCE = r"""
#define cuLaunchKernel fake_cuLaunchKernel_unrecorded
#include "fake_libcuda.cpp"
#undef cuLaunchKernel

namespace {
std::mutex grids_mu;
std::vector<unsigned> grids;
}  // namespace

FAKE_API CUresult cuLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shared_bytes, void* stream, void** params, void** extra) {
  {
    std::lock_guard<std::mutex> lock(grids_mu);
    grids.push_back(gx);
  }
  return fake_cuLaunchKernel_unrecorded(function, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra);
}

// The grids (x) launched since the last call, at most `room` of them into `out`; how many there were.
FAKE_API int recorded_grids(unsigned* out, int room) {
  std::lock_guard<std::mutex> lock(grids_mu);
  const int n = int(grids.size());
  for (int i = 0; i < n && i < room; ++i) out[i] = grids[size_t(i)];
  grids.clear();
  return n;
}
"""

# Each case calls g.map twice and reports the grids of the two launches, whether both results
# were NumPy's, and how many calls took the general path (the first of a signature only).
CHILD = r"""
import ctypes, json, sys
import numpy as np
import gompute as g
from tests.fakes import images
from tests.map.calls import counting
from tests.map.kernels import double

lib = ctypes.CDLL(sys.argv[1])
lib.recorded_grids.argtypes = [ctypes.POINTER(ctypes.c_uint), ctypes.c_int]


def grids():
    room = (ctypes.c_uint * 16)()
    n = lib.recorded_grids(room, 16)
    return list(room[: min(n, 16)])


def host(compute, buf):
    compute.synchronize()
    whole = np.empty(buf.nbytes // buf.dtype.itemsize, buf.dtype.dtype)
    buf.view_bytes(0, buf.nbytes).download(whole)
    first = (buf.data_addr() - buf.device_addr()) // buf.dtype.itemsize
    return np.lib.stride_tricks.as_strided(whole[first:], buf.shape, buf.strides).copy()


compute = g.runtime.cuda.Compute.init()
k, general = counting(double)
report = {"sms": compute.device_info().multiprocessors, "cases": []}
with images.host_images():
    for dtype, n, offset, step in json.loads(sys.argv[2]):
        t = getattr(g, dtype)
        values = (np.arange(n * step + offset) % 100).astype(t.dtype)
        base = compute.empty(values.shape, t)
        base.upload(values)
        size = t.itemsize
        x = base.view(t, (n,), (step * size,), offset=offset * size)
        out = compute.empty((n,), t)
        right, calls = True, len(general)
        for _ in range(2):
            k(x, out=out)
            right = right and np.array_equal(host(compute, out), values[offset::step][:n] * t.dtype.type(2))
            out.upload(np.zeros(n, t.dtype))
        general_calls = len(general) - calls
        report["cases"].append({"grids": grids(), "right": right, "general_calls": general_calls})
print(json.dumps(report))
"""

# (dtype, n, offset in elements, step): contiguous arrays of each vector width, lengths that are
# whole vectors and not, past the grid's bound (f32), a view that starts off a vector, a
# strided one, and complex arrays, whose entries stay scalar.
CASES = [
    ("f32", 1, 0, 1),
    ("f32", 3, 0, 1),
    ("f32", 1000, 0, 1),
    ("f32", 1_000_001, 0, 1),
    ("f32", 3_300_001, 0, 1),
    ("f32", 4099, 1, 1),
    ("f32", 5000, 0, 2),
    ("f16", 1001, 0, 1),
    ("f16", 100_000, 3, 1),
    ("u8", 17, 0, 1),
    ("u8", 1_000_000, 0, 1),
    ("u8", 4097, 5, 1),
    ("f64", 1001, 0, 1),
    ("f64", 1_000_000, 1, 1),
    ("c64", 1001, 0, 1),
    ("c128", 999, 1, 1),
]
VECTOR = {"f32": 4, "f16": 8, "u8": 16, "f64": 2, "c64": 1, "c128": 1}  # 16 bytes of each; complex: scalar


@pytest.fixture(scope="module")
def recording_libcuda(cxx, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("recording-libcuda")
    source, library = folder / "recording.cpp", folder / "libcuda-recording.so"
    source.write_text(RECORDING_SOURCE)
    command = [
        cxx,
        "-std=c++17",
        "-O1",
        "-shared",
        "-fPIC",
        "-fvisibility=hidden",
        f"-I{REPO / 'gompute' / 'include'}",
        f"-I{REPO / 'tests' / 'fakes'}",
        str(source),
        "-o",
        str(library),
        "-ldl",
    ]
    built = subprocess.run(command, capture_output=True, text=True)
    if built.returncode != 0:
        pytest.fail(f"building the recording fake libcuda failed: {' '.join(command)}\n{built.stderr}")
    return library


def expected_grid(sms: int, dtype: str, n: int, step: int) -> int:
    per_thread = VECTOR[dtype] if step == 1 else 1  # a strided entry takes an element a pass
    return min(math.ceil(math.ceil(n / per_thread) / BLOCK), sms * RESIDENT_BLOCKS * ROUNDS)


def test_both_paths_launch_the_documented_grid_with_right_results(recording_libcuda):
    env = dict(os.environ, GOMPUTE_LIBCUDA=str(recording_libcuda), FAKE_CUDA_DELAY_US="0", FAKE_CUDA_DEVICES="1")
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(recording_libcuda), json.dumps(CASES)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=600,
    )
    assert child.returncode == 0, child.stderr
    report = json.loads(child.stdout.splitlines()[-1])
    sms = report["sms"]
    assert sms == 132  # the fake's (fake_libcuda.cpp), so the bound is the H100 row's 3168
    seen = set()
    for (dtype, n, offset, step), case in zip(CASES, report["cases"], strict=True):
        want = expected_grid(sms, dtype, n, step)
        signature = (dtype, step == 1)  # the types and the entry: contiguous or strided
        general_calls = 0 if signature in seen else 1  # a signature's first call teaches the C++ path
        seen.add(signature)
        assert case == {"grids": [want, want], "right": True, "general_calls": general_calls}, (dtype, n, offset, step)
