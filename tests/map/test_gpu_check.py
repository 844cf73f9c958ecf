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

import numpy as np
import pytest

import gompute as g
from gompute.compile import nvrtc
from tests.conftest import open_compute
from tests.fakes import images
from tests.reduce.test_fake_cuda import cuda  # noqa: F401 - the fixture: reductions' CUDA text on the fake

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.py"
CANNOT_RUN_ON_THE_FAKE = ("ModuleLoadFailed",)  # PTX it cannot JIT, CUBINs it cannot load


@pytest.mark.skipif(not nvrtc.available(), reason="NVRTC not installed (pip install 'gompute[cuda13]')")
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
    assert names[0] == "upload/download 64 MiB" and names[-1] == "the CUDA-marked tests (pytest -m cuda)", names
    assert rows[-1][1] == "skip"  # the fake pass of make test runs them
    assert len(rows) >= 20
    unexpected = [(n, f) for n, r, f in rows if r == "FAIL" and not any(c in f for c in CANNOT_RUN_ON_THE_FAKE)]
    assert not unexpected, unexpected
    assert "driver 12.8" in table and "NVRTC" in table
    # The targets: none measured on the fake (no CuPy, no CUDA torch, no PTX to time), each
    # naming a row of the table above that would have measured it.
    targets = re.findall(r"^\| (.+?) \| not measured \(see (.+)\) \| - \|$", table.split("## Targets")[1], re.M)
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        from gpu_targets import targets as every_target
    finally:
        sys.path.remove(str(SCRIPT.parent))
    assert len(targets) == len(every_target({})), table
    assert {row.strip("'") for _, seen in targets for row in seen.split(", ")} <= set(names)
    assert run.returncode == 1  # the rows the fake cannot run


def test_the_generated_kernel_scenarios_run_on_the_cuda_text():
    """What the end-to-end run cannot reach on the fake: gpu_kernels' launches and checks, with
    the generated CUDA text built for the CPU through the shim (tests/fakes/images.py) in place
    of CUBINs."""
    compute = open_compute(g.Backend.cuda)
    if not images.is_fake(compute):
        pytest.skip("on a real GPU gpu_check.py is run by hand (benchmarks/README.md)")
    sys.path.insert(0, str(SCRIPT.parent))
    import gpu_kernels

    rows = []

    class Check:  # gpu_check's, reduced to what kernel_scenarios calls
        def run(self, name, fn):
            rows.append((name, fn()))

    with images.host_images():
        gpu_kernels.kernel_scenarios(compute, Check())
    assert [name for name, _ in rows][2:] == ["generated integer floor division", "generated f16 kernel"]
    assert all("matches NumPy" in figure or "skipped" in figure for name, figure in rows[:2]), rows


def test_the_reduction_scenarios_run_on_the_cuda_text(cuda):  # noqa: F811 - the imported fixture
    """gpu_reduce's launches, timings and checks against NumPy, which the end-to-end run cannot
    reach on the fake, at a small size, with the reductions' CUDA text built for the CPU (the
    `cuda` fixture of tests/reduce/test_fake_cuda.py)."""
    if not images.is_fake(cuda):
        pytest.skip("on a real GPU gpu_check.py is run by hand (benchmarks/README.md)")
    sys.path.insert(0, str(SCRIPT.parent))
    import gpu_reduce

    rows = []

    class Check:  # gpu_check's, reduced to what reduce_scenarios uses
        figures: dict = {}

        def run(self, name, fn):
            rows.append((name, fn()))

    check = Check()
    gpu_reduce.reduce_scenarios(cuda, check, n=128 * 128, calls=2, repeats=1)  # the fake runs blocks on fibers
    assert [name for name, _ in rows] == [
        "g.reduce bandwidth at 1e8",
        "g.reduce vs cupy.sum at 1e8",
        "g.reduce vs torch.sum at 1e8",
    ]
    assert "matches NumPy's f64 sums" in rows[0][1], rows[0]
    assert all(figure.startswith("skipped") for _, figure in rows[1:]), rows  # no CuPy, no CUDA torch
    measured = {f"reduce.{what}_ms" for what in ("copy", "sum", "sumsq", "f16", "rows", "columns", "short")}
    assert set(check.figures) == measured and all(ms > 0 for ms in check.figures.values()), check.figures


def test_the_reduction_tuning_builds_each_variant_with_its_constants(cuda, monkeypatch):  # noqa: F811
    """gpu_reduce_tuning's variants of an i8 sum, whole and down the columns, on the fake at a small
    size: every entry each runs generated with its own constants (none generated afterwards), the
    packed entries planned except where packs are off, every result right."""
    if not images.is_fake(cuda):
        pytest.skip("on a real GPU gpu_check.py is run by hand (benchmarks/README.md)")
    sys.path.insert(0, str(SCRIPT.parent))
    import gpu_reduce_tuning

    from gompute.lang import reduce_entries, reduce_gpu
    from gompute.reduce import BoundReduce

    generated, planned, building = [], [], [None]
    gpu_entries, plan, built = reduce_entries.gpu_entries, BoundReduce.plan, gpu_reduce_tuning._built

    def generate(*args):
        constants = (reduce_gpu.GPU_PACK_LOADS, reduce_gpu.GPU_BLOCKS_AN_SM, reduce_gpu.GPU_LOADS)
        generated.append((building[0], constants))
        return gpu_entries(*args)

    def plans(self, *args):
        found = plan(self, *args)
        planned.append(found[0])
        return found

    def build(gpu, name, constants):
        building[0] = next(v for v, c in gpu_reduce_tuning.VARIANTS.items() if c is constants)
        try:
            return built(gpu, name, constants)
        finally:
            building[0] = None

    monkeypatch.setattr(reduce_entries, "gpu_entries", generate)
    monkeypatch.setattr(BoundReduce, "plan", plans)
    monkeypatch.setattr(gpu_reduce_tuning, "_built", build)
    monkeypatch.setattr(gpu_reduce_tuning, "TYPES", {"i8": np.int8})
    rows = gpu_reduce_tuning.sweep(cuda, n=256 * 256, calls=1, repeats=1)
    assert [(r["variant"], r["what"]) for r in rows] == [
        (variant, what) for variant in gpu_reduce_tuning.VARIANTS for what in ("sum", "columns")
    ]
    assert all(r["error"] is None and r["ms"] > 0 and r["x copy"] > 0 for r in rows), rows
    want = {
        "as built": (4, 2, 8),
        "2 packs at once": (2, 2, 8),
        "8 packs at once": (8, 2, 8),
        "launch bound 4 blocks an SM": (4, 4, 8),
        "no packs": (4, 2, 8),
        "no packs, 16 elements at once": (4, 2, 16),
    }
    assert set(want) == set(gpu_reduce_tuning.VARIANTS)
    assert generated and all(constants == want.get(variant) for variant, constants in generated), generated
    # Each variant's small sums (whole, columns) in Python; the timed calls take the C++ path.
    assert planned == ["packed_rows", "packed_columns"] * 4 + ["rows", "columns"] * 2, planned
    assert "| no packs | " in gpu_reduce_tuning.tuning_table(rows)


def test_the_reduction_check_refuses_a_plain_f32_running_sum():
    """The tolerance gpu_reduce holds g.reduce's sums to tells a blocked sum from a running one."""
    sys.path.insert(0, str(SCRIPT.parent))
    import gpu_reduce

    host = np.random.default_rng(0).standard_normal(1 << 20, dtype=np.float32) + np.float32(1)
    reference = gpu_reduce._Reference(host)
    assert reference.check("sum", np.sum(host)) <= 1  # NumPy's pairwise sum
    running = np.cumsum(host, dtype=np.float32)[-1]
    with pytest.raises(AssertionError, match="tolerance"):
        reference.check("sum", running)


def test_missing_requirements_are_named_before_gompute_is_imported(monkeypatch):
    sys.path.insert(0, str(SCRIPT.parent))
    import gpu_check

    declared = ["numpy>=1.24", "no-such-package-here>=1", 'tqdm; extra == "progress"']
    monkeypatch.setattr(gpu_check.metadata, "requires", lambda name: declared)
    assert gpu_check.missing_requirements() == ["no-such-package-here"]


def test_the_test_row_reads_pytests_closing_counts():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        from gpu_tests import _summary
    finally:
        sys.path.remove(str(SCRIPT.parent))
    out = "....F\nFAILED tests/x.py::t - boom\n1 failed, 4 passed, 2 skipped, 1 deselected in 3.2s\n"
    assert _summary(out) == "1 failed, 4 passed, 2 skipped, 1 deselected"
    assert _summary("no tests ran in 0.1s\n") == "no summary line"


def test_the_launch_cost_benchmark_runs_on_the_fake(tmp_path):
    if not images.is_fake(open_compute(g.Backend.cuda)):
        pytest.skip("measured by hand on a GPU (benchmarks/launch_cost.py)")
    run = subprocess.run(
        [sys.executable, str(SCRIPT.parent / "launch_cost.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ | {"GOMPUTE_CACHE_DIR": str(tmp_path / "cache"), "FAKE_CUDA_DELAY_US": "0"},
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = re.findall(r"^\| (.+?) \| ([\d.]+) \| ([\d.]+)x \|$", run.stdout, re.M)
    assert [name for name, _, _ in rows] == [
        "bare kernel.launch",
        "g.map on a Buffer",
        "g.map on a CUDA-interface array",
        "g.map on a torch CUDA tensor",
    ]
    assert rows[0][2] == "1.00"
