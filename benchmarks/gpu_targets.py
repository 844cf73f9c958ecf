"""Issue 5's and issue 32's GPU targets (g.map's, g.reduce's), judged from the figures gpu_check.py's scenarios record.

Each scenario that measures something a target reads stores it in `check.figures` under a key
listed here; `targets(figures)` turns them into (target, measured, met) rows, met None where a
figure is missing (its scenario failed or was skipped) so the table says what was not measured
instead of leaving the target out. "Beat or match" allows 5%: event timings of the same kernel
at 1e8 f32 vary by a few percent from run to run.
"""

from __future__ import annotations

MATCH = 0.95  # "beat or match": at least this fraction of the other's speed
BANDWIDTH = 0.9  # of the device-to-device copy of the same bytes
OVERHEAD = 1.2  # a cached g.map over a bare launch of the same kernel
SHAPES = 1.5  # a row or column reduction's time over the full reduction's of the same array

# key -> what records it, for the "not measured" rows
SOURCES = {
    "cupy": "g.map bandwidth at 1e8",
    "torch": "g.map vs the PyTorch expressions at 1e8",
    "dispatch": "dispatch overhead vs CuPy",
    "memory": "g.map bandwidth at 1e8",
    "tuning": "launch config: block size x grid",
    "float4": "16-byte loads",
    "buffer": "g.map bandwidth on Buffers at 1e8",
    "torch_dispatch": "dispatch overhead vs torch",
    "reduce": "g.reduce bandwidth at 1e8",
    "reduce_cupy": "g.reduce vs cupy.sum at 1e8",
    "reduce_torch": "g.reduce vs torch.sum at 1e8",
}


def _missing(keys: list[str], figures: dict) -> str | None:
    absent = [k for k in keys if k not in figures]
    if not absent:
        return None
    rows = sorted({SOURCES[k.split(".")[0]] for k in absent})
    return "not measured (see " + ", ".join(f"'{r}'" for r in rows) + ")"


def targets(figures: dict) -> list[tuple[str, str, bool | None]]:
    """(target, measured, met) for each GPU target; met is None where it was not measured."""
    out: list[tuple[str, str, bool | None]] = []

    def add(target: str, keys: list[str], judge) -> None:
        missing = _missing(keys, figures)
        if missing:
            out.append((target, missing, None))
        else:
            measured, met = judge(*(figures[k] for k in keys))
            out.append((target, measured, bool(met)))

    def bandwidth(arrays: int):
        # copy moves 2 arrays of n, the kernel `arrays` (a reduction reads 1): its bandwidth over the copy's
        return lambda copy, ms: (f"{arrays / 2 * copy / ms:.2f}x", arrays / 2 * copy / ms >= BANDWIDTH)

    def faster(ours, theirs):
        return f"{theirs / ours:.2f}x ({ours:.3f} ms vs {theirs:.3f} ms)", theirs / ours >= MATCH

    for name, arrays in (("scale_relu", 2), ("fused", 4)):
        add(
            f"g.map {name} on CuPy, 1e8 f32: >= {BANDWIDTH}x device copy bandwidth",
            ["cupy.copy_ms", f"cupy.{name}_ms"],
            bandwidth(arrays),
        )
    for library in ("buffer", "torch"):
        add(
            f"g.map scale_relu on {'Buffers' if library == 'buffer' else 'torch tensors'}, 1e8 f32: "
            f">= {BANDWIDTH}x device copy bandwidth",
            [f"{library}.copy_ms", f"{library}.scale_relu_ms"],
            bandwidth(2),
        )
    for name in ("scale_relu", "gelu"):
        add(
            f"g.map's {name} entry at its own block size and grid, 1e8 f32: >= {BANDWIDTH}x copy",
            [f"tuning.{name}.copy_ms", f"tuning.{name}.ours_ms"],
            bandwidth(2),
        )
    for name in ("scale_relu", "fused"):
        add(
            f"g.map {name}: beats or matches a CuPy ElementwiseKernel (ElementwiseKernel / g.map time)",
            [f"cupy.{name}_ms", f"cupy.ew.{name}_ms"],
            faster,
        )
    for name, expression in (("scale_relu", "mul + relu_"), ("fused", "addcmul + clamp_")):
        add(
            f"g.map {name}: beats or matches torch {expression} (torch / g.map time)",
            [f"torch.{name}_ms", f"torch.expr.{name}_ms"],
            faster,
        )
    add(
        f"cached g.map on a CuPy array: <= {OVERHEAD}x a bare launch through the runtime",
        ["dispatch.gmap_us", "dispatch.bare_us"],
        lambda ours, bare: (f"{ours / bare:.2f}x ({ours:.1f} us vs {bare:.1f} us)", ours / bare <= OVERHEAD),
    )
    add(
        "cached g.map on a CuPy array: below CuPy's ElementwiseKernel call",
        ["dispatch.gmap_us", "dispatch.ew_us"],
        lambda ours, ew: (f"{ours:.1f} us vs {ew:.1f} us", ours < ew),
    )
    add(
        f"cached g.map on a torch CUDA tensor: <= {OVERHEAD}x a bare launch on torch's stream",
        ["torch_dispatch.gmap_us", "torch_dispatch.bare_us"],
        lambda ours, bare: (f"{ours / bare:.2f}x ({ours:.1f} us vs {bare:.1f} us)", ours / bare <= OVERHEAD),
    )
    add(
        "cached g.map on a torch CUDA tensor: below the torch expression x.mul_(1).relu_()",
        ["torch_dispatch.gmap_us", "torch_dispatch.expr_us"],
        lambda ours, expr: (f"{ours:.1f} us vs {expr:.1f} us", ours < expr),
    )
    add(
        "map over 1e8 elements allocates nothing beyond its output (CuPy's pool, gompute's own)",
        ["memory.output_bytes", "memory.new_result_bytes", "memory.out_bytes", "memory.gompute_bytes"],
        lambda output, new, with_out, own: (
            f"new result {new} B (output {output} B), out= {with_out} B, gompute's own {own} B",
            new <= output and with_out == 0 and own == 0,
        ),
    )
    for name in ("scale_relu", "gelu"):
        add(
            f"block size and grid: g.map's own within 5% of the sweep's best, {name}",
            [f"tuning.{name}.ours_ms", f"tuning.{name}.best_ms", f"tuning.{name}.best"],
            lambda ours, best, label: (f"{best / ours:.2f}x the best ({label})", best / ours >= MATCH),
        )
    add(
        "g.map's scale_relu entry within 5% of a hand-written float4 one (16-byte loads both)",
        ["float4.scalar_ms", "float4.vector_ms"],
        lambda ours, vector: (f"{vector / ours:.2f}x float4's speed", vector / ours >= MATCH),
    )
    reduce_targets(add, bandwidth, faster)
    return out


def reduce_targets(add, bandwidth, faster) -> None:
    """Issue 32's GPU targets for g.reduce."""
    for name, what in (("sum", "sum"), ("sumsq", "sum of squares")):
        add(
            f"g.reduce {what} on Buffers, 1e8 f32: reads >= {BANDWIDTH}x device copy bandwidth "
            "(copy time / (2 x reduction time))",
            ["reduce.copy_ms", f"reduce.{name}_ms"],
            bandwidth(1),
        )
    add(
        f"g.reduce sum of the same values as f16 (half the bytes): reads >= {BANDWIDTH}x device copy bandwidth",
        ["reduce.copy_ms", "reduce.f16_ms"],
        bandwidth(0.5),
    )
    for name in ("rows", "columns"):
        add(
            f"g.reduce over the {name} of a (1e4, 1e4) f32 Buffer: within {SHAPES}x the full sum's time",
            [f"reduce.{name}_ms", "reduce.sum_ms"],
            lambda part, full: (f"{part / full:.2f}x ({part:.3f} ms vs {full:.3f} ms)", part / full <= SHAPES),
        )
    for library in ("cupy", "torch"):
        add(
            f"g.reduce sum, 1e8 f32: beats or matches {library}.sum ({library}.sum / g.reduce time)",
            [f"reduce_{library}.sum_ms", f"reduce_{library}.theirs_ms"],
            faster,
        )


def targets_table(figures: dict) -> str:
    lines = ["| target | measured | met |", "|---|---|---|"]
    for target, measured, met in targets(figures):
        lines.append(f"| {target} | {measured} | {'-' if met is None else 'yes' if met else '**no**'} |")
    return "\n".join(lines)
