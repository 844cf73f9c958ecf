"""benchmarks/gpu_tuning.py before it meets a GPU: its float4 entry compiles with NVRTC, and its
launch sweep runs on the fake libcuda (make test's second pass), results checked, so a GPU
session does not spend its few minutes on a script error. The speed is the GPU's to show."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import gompute as g
from gompute.compile import nvrtc
from tests.conftest import open_compute
from tests.fakes import images

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import gpu_tuning  # noqa: E402


@pytest.mark.skipif(not nvrtc.available(), reason="NVRTC not installed (pip install 'gompute[cuda13]')")
def test_the_float4_entry_compiles_beside_g_maps_own():
    image = nvrtc.compile_cuda("scale_relu_v4", gpu_tuning.vector_source(), "compute_75")[0].decode()
    assert ".entry scale_relu__out_v4(" in image and ".entry scale_relu__out(" in image
    assert "ld.global.v4.f32" in image and "st.global.v4.f32" in image


def test_grids_are_g_maps_and_whole_waves_never_more_blocks_than_elements():
    found = gpu_tuning.grids(100_000_000, 256, 132)
    assert found == {"per element": 390625, "1 wave": 1056, "2 waves": 2112, "4 waves": 4224}
    assert gpu_tuning.grids(1000, 1024, 132) == {"per element": 1, "1 wave": 1, "2 waves": 1, "4 waves": 1}


def test_the_launch_sweep_runs_and_checks_its_results():
    compute = open_compute(g.Backend.cuda)
    if not images.is_fake(compute):
        pytest.skip("on a real GPU benchmarks/gpu_check.py runs the sweep at full size")
    with images.host_images():
        figure, rows = gpu_tuning.launch_configs(compute, n=10_001, arch="sm_90")
    assert len(rows) == 2 * len(gpu_tuning.BLOCKS) * 4
    assert all(r["ms"] > 0 and r["copy/this"] > 0 and r["error"] is None for r in rows)
    assert figure.startswith("scale_relu: copy") and "; gelu: copy" in figure
    table = gpu_tuning.sweep_table(rows)
    assert table.count("\n") == 1 + 2 * len(gpu_tuning.BLOCKS) and "| gelu | 1024 |" in table


def test_a_block_size_with_a_wrong_result_fails_the_scenario_and_keeps_the_figures(monkeypatch):
    compute = open_compute(g.Backend.cuda)
    if not images.is_fake(compute):
        pytest.skip("on a real GPU benchmarks/gpu_check.py runs the sweep at full size")
    checked = gpu_tuning.Setup.check

    def check(self, kernel, grid, block, args, expected):
        checked(self, kernel, grid, block, args, expected * (2 if block == 512 else 1))

    monkeypatch.setattr(gpu_tuning.Setup, "check", check)

    class Check:  # gpu_check's, reduced to what tuning_scenarios calls
        rows: list = []
        figures: dict = {}

        def run(self, name, fn):
            try:
                self.rows.append((name, True, fn()))
            except Exception as e:  # noqa: BLE001 - the 16-byte scenario needs PTX, which the fake refuses
                self.rows.append((name, False, str(e)))

    check_rows = Check()
    with images.host_images():
        rows = gpu_tuning.tuning_scenarios(compute, check_rows, n=10_001)
    assert {r["block"] for r in rows if r["error"]} == {512} and len(rows) == 2 * len(gpu_tuning.BLOCKS) * 4
    name, ok, figure = check_rows.rows[0]
    assert not ok and "results differ from NumPy at [('gelu', 512), ('scale_relu', 512)]" in figure
    assert "WRONG RESULT" in gpu_tuning.sweep_table(rows)
    assert set(check_rows.figures) == {
        f"tuning.{k}.{f}" for k in ("scale_relu", "gelu") for f in ("ours_ms", "copy_ms", "best_ms", "best")
    }
    assert all(not check_rows.figures[f"tuning.{k}.best"].startswith("512") for k in ("scale_relu", "gelu"))
