"""benchmarks/gpu_targets.py: the GPU targets of issues 5, 32 and 33, judged from the figures gpu_check's
scenarios record, and named as not measured where a figure is missing."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import gpu_targets  # noqa: E402
import gpu_tuning  # noqa: E402

# A run where every target holds: bandwidths at 0.95x the copy, g.map and g.reduce a little ahead
# of CuPy and torch, 5 us a call beside a 4.5 us bare launch and an 8 us ElementwiseKernel.
MET = {
    "cupy.copy_ms": 0.40, "cupy.scale_relu_ms": 0.42, "cupy.fused_ms": 0.84,
    "cupy.ew.scale_relu_ms": 0.43, "cupy.ew.fused_ms": 0.86,
    "torch.scale_relu_ms": 0.42, "torch.expr.scale_relu_ms": 0.84,
    "torch.fused_ms": 0.84, "torch.expr.fused_ms": 1.70,
    "dispatch.gmap_us": 5.0, "dispatch.bare_us": 4.5, "dispatch.ew_us": 8.0,
    "memory.output_bytes": 400_000_000, "memory.new_result_bytes": 400_000_000,
    "memory.out_bytes": 0, "memory.gompute_bytes": 0,
    "tuning.scale_relu.ours_ms": 0.42, "tuning.scale_relu.copy_ms": 0.40,
    "tuning.scale_relu.best_ms": 0.41, "tuning.scale_relu.best": "512 x 2 waves",
    "tuning.gelu.ours_ms": 0.43, "tuning.gelu.copy_ms": 0.40,
    "tuning.gelu.best_ms": 0.43, "tuning.gelu.best": "256 x per element",
    "float4.scalar_ms": 0.42, "float4.vector_ms": 0.41,
    "buffer.copy_ms": 0.40, "buffer.scale_relu_ms": 0.42, "torch.copy_ms": 0.40,
    "torch_dispatch.gmap_us": 5.0, "torch_dispatch.bare_us": 4.5, "torch_dispatch.expr_us": 9.0,
    "reduce.copy_ms": 0.40, "reduce.sum_ms": 0.21, "reduce.sumsq_ms": 0.21, "reduce.f16_ms": 0.105,
    "reduce.rows_ms": 0.25, "reduce.columns_ms": 0.28,
    "reduce_cupy.sum_ms": 0.21, "reduce_cupy.theirs_ms": 0.22,
    "reduce_torch.sum_ms": 0.21, "reduce_torch.theirs_ms": 0.22,
}  # fmt: skip
TARGETS = 25


def _met(figures: dict) -> dict[str, bool | None]:
    return {target: met for target, _, met in gpu_targets.targets(figures)}


def test_every_target_is_met_on_figures_that_meet_them():
    met = _met(MET)
    assert len(met) == TARGETS and all(met.values()), met


def test_each_miss_is_the_target_it_breaks():
    slow = MET | {"cupy.fused_ms": 1.0, "dispatch.gmap_us": 6.0, "memory.out_bytes": 512}
    missed = [target for target, met in _met(slow).items() if not met]
    assert missed == [
        "g.map fused on CuPy, 1e8 f32: >= 0.9x device copy bandwidth",
        "g.map fused: beats or matches a CuPy ElementwiseKernel (ElementwiseKernel / g.map time)",
        "cached g.map on a CuPy array: <= 1.2x a bare launch through the runtime",
        "map over 1e8 elements allocates nothing beyond its output (CuPy's pool, gompute's own)",
    ]
    measured = {target: text for target, text, _ in gpu_targets.targets(slow)}
    assert measured["g.map fused on CuPy, 1e8 f32: >= 0.9x device copy bandwidth"] == "0.80x"
    assert measured["cached g.map on a CuPy array: <= 1.2x a bare launch through the runtime"].startswith("1.33x")


def test_a_target_whose_figures_are_missing_names_the_row_that_measures_them():
    no_cupy = {k: v for k, v in MET.items() if not k.startswith(("cupy.", "dispatch.", "memory.", "reduce_cupy."))}
    rows = gpu_targets.targets(no_cupy)
    unmeasured = [(target, text) for target, text, met in rows if met is None]
    assert len(unmeasured) == 8 and all(met for _, _, met in rows if met is not None)
    assert ("cached g.map on a CuPy array: below CuPy's ElementwiseKernel call",
            "not measured (see 'dispatch overhead vs CuPy')") in unmeasured  # fmt: skip
    table = gpu_targets.targets_table({})
    assert table.count("| - |") == TARGETS and "**no**" not in table


def test_the_sweep_records_g_maps_launch_and_the_fastest_right_one():
    rows = [
        {"kernel": "gelu", "block": 256, "grid": "per element", "ms": 0.5, "copy/this": 0.8, "error": None},
        {"kernel": "gelu", "block": 512, "grid": "1 wave", "ms": 0.3, "copy/this": 1.3, "error": "wrong"},
        {"kernel": "gelu", "block": 1024, "grid": "-", "ms": float("nan"), "copy/this": 0.0, "error": "no load"},
        {"kernel": "gelu", "block": 128, "grid": "2 waves", "ms": 0.45, "copy/this": 0.9, "error": None},
    ]
    figures: dict = {}
    gpu_tuning.record(figures, rows)
    assert figures == {
        "tuning.gelu.ours_ms": 0.5,
        "tuning.gelu.copy_ms": 0.4,
        "tuning.gelu.best_ms": 0.45,
        "tuning.gelu.best": "128 x 2 waves",
    }
    gpu_tuning.record(figures := {}, rows[1:])  # g.map's own launch did not run: nothing to judge
    assert figures == {}
