"""gpu_check.py's tuning scenarios: the measurements g.map's launch choices rest on.

At 1e8 f32 elements, timed with events on one stream, beside a device-to-device copy of the
same bytes measured in the same run:

- block size (128 to 1024 threads) and grid: one thread per element, which is what g.map
  launches, against a grid-stride loop over 1, 2 or 4 waves of resident blocks;
- 16-byte loads: g.map's own scale_relu entry beside the same kernel function called from an
  entry that moves four elements per load and store (`float4`);
- for both a memory-bound kernel (scale_relu) and a compute-bound one (GELU, tanh form).

gpu_check.py calls `tuning_scenarios(gpu, check)`. `launch_configs` also runs on the fake
libcuda with host images (tests/map/test_gpu_tuning.py), which checks the script, not the speed.
"""

from __future__ import annotations

import numpy as np
from gpu_timing import event_ms
from kernels import KERNELS

import gompute as g
from gompute.compile import build_image
from gompute.lang.kernel import MapKernel

N = 100_000_000
BLOCKS = (128, 256, 512, 1024)
WAVES = (1, 2, 4)
# Resident threads per SM: 2048 on sm_52 to sm_72, sm_80 and sm_90, fewer on these.
THREADS_PER_SM = {"sm_75": 1024, "sm_86": 1536, "sm_87": 1536, "sm_89": 1536}


BENCHES = {name: KERNELS[name] for name in ("scale_relu", "gelu")}


def with_block(kernel: MapKernel, block: int) -> MapKernel:
    return MapKernel(kernel.fn, block)


def vector_source(block: int = 256) -> str:
    """g.map's CUDA module for scale_relu, and after it an entry that calls the same kernel
    function on four elements per 16-byte load and store (the last len % 4 one at a time)."""
    kernel = with_block(KERNELS["scale_relu"].kernel("f32"), block)
    body = "\n".join(f"    v.{c} = gompute_kernel_scale_relu(v.{c}, params);" for c in "xyzw")
    return f"""{kernel.source("cuda")}
GOMPUTE_GLOBAL void __launch_bounds__({block}) scale_relu__out_v4(float* in0, float* out, uint64_t len, const {kernel.params_class.__name__} params) {{
  const uint64_t quads = len / 4;
  for (uint64_t i = gompute_thread_index(); i < quads; i += gompute_thread_count()) {{
    float4 v = reinterpret_cast<const float4*>(in0)[i];
{body}
    reinterpret_cast<float4*>(out)[i] = v;
  }}
  for (uint64_t i = quads * 4 + gompute_thread_index(); i < len; i += gompute_thread_count())
    out[i] = gompute_kernel_scale_relu(in0[i], params);
}}
"""


def grids(n: int, block: int, sms: int, arch: str | None = None) -> dict[str, int]:
    """The grids compared at one block size: g.map's one thread per element, and grid-stride
    loops over whole waves of resident blocks."""
    resident = sms * max(1, THREADS_PER_SM.get(arch, 2048) // block)
    found = {"per element": -(-n // block)}
    found.update({f"{w} wave{'s' if w > 1 else ''}": min(resident * w, found["per element"]) for w in WAVES})
    return found


class Setup:
    """Device buffers of n f32 inputs and outputs, a stream, and the copy time of the same bytes."""

    def __init__(self, gpu, n: int):
        self.gpu, self.n = gpu, n
        self.stream = gpu.create_stream()
        self.x, self.out = gpu.alloc(n * 4), gpu.alloc(n * 4)
        rng = np.random.default_rng(3)
        self.host = rng.standard_normal(n, dtype=np.float32)
        self.x.upload(self.host)
        self.copy_ms = event_ms(gpu, self.stream, lambda: self.out.copy_from(self.x, stream=self.stream))

    def free(self) -> None:
        self.x.free()
        self.out.free()

    def gbps(self, ms: float) -> float:
        return 2 * self.n * 4 / (ms / 1e3) / 1e9

    def check(self, kernel, grid: int, block: int, args, expected: np.ndarray) -> None:
        """Runs one launch on a cleared output and compares it with `expected`. GPU tanhf is
        within 2 ulp, NumPy's within 1: the tolerance covers both."""
        self.out.upload(np.full(self.n, np.nan, np.float32))
        kernel.launch(grid, block, 0, args, stream=self.stream)
        got = np.empty(self.n, np.float32)
        self.stream.synchronize()
        self.out.download(got)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)

    def time(self, kernel, grid: int, block: int, args) -> float:
        return event_ms(self.gpu, self.stream, lambda: kernel.launch(grid, block, 0, args, stream=self.stream))


def _arguments(setup: Setup, name: str) -> tuple[list, np.ndarray]:
    """The `name__out` entry's arguments over setup's buffers, and the NumPy result."""
    bench = BENCHES[name]
    params = bench.typed_params("f32")
    packed = [g.interface.arg(g.abi.pack(bench.kernel("f32").params_class, **params))] if params else []
    args = [setup.x.arg_ptr(), setup.out.arg_ptr(), g.interface.arg(g.u64(setup.n)), *packed]
    return args, bench.numpy(setup.host, **params)


def sweep(gpu, setup: Setup, name: str, arch: str | None) -> list[dict]:
    """Each (block, grid) of `name`'s g.map entry: milliseconds and its ratio to the copy. Each
    block size's result is checked on its smallest grid, the one that loops most; a row's
    "error" is what that check found (None: it matched NumPy), so one bad block size does
    not lose the others' figures."""
    base = BENCHES[name].kernel("f32")
    args, expected = _arguments(setup, name)
    sms = gpu.device_info().multiprocessors
    rows = []
    for block in BLOCKS:
        try:
            kernel = with_block(base, block)
            loaded = gpu.load_module(kernel.compile_for("cuda", arch).data).get_kernel(f"{name}__out")
            configs = grids(setup.n, block, sms, arch)
        except Exception as e:  # noqa: BLE001 - a block size that cannot load is a row, not the end
            rows.append({"kernel": name, "block": block, "grid": "-", "ms": float("nan"), "copy/this": 0.0,
                         "error": f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"})  # fmt: skip
            continue
        try:
            setup.check(loaded, min(configs.values()), block, args, expected)
            error = None
        except Exception as e:  # noqa: BLE001 - a wrong result (AssertionError) or a fault: noted
            error = f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
        for label, grid in configs.items():
            ms = setup.time(loaded, grid, block, args)
            row = {"kernel": name, "block": block, "grid": label, "ms": ms, "copy/this": setup.copy_ms / ms}
            rows.append(row | {"error": error})
    return rows


def _summary(rows: list[dict], setup: Setup) -> str:
    best = max(rows, key=lambda r: r["copy/this"])
    ours = next((r for r in rows if r["block"] == 256 and r["grid"] == "per element"), None)
    if ours is None:
        return "g.map's launch (256, per element) did not run: see the rows' errors"
    spread = {b: max(r["copy/this"] for r in rows if r["block"] == b) for b in BLOCKS}
    per_block = ", ".join(f"{b}: {v:.2f}x" for b, v in spread.items())
    return (
        f"copy {setup.gbps(setup.copy_ms):.0f} GB/s; g.map's launch (256, per element) "
        f"{setup.gbps(ours['ms']):.0f} GB/s = {ours['copy/this']:.2f}x copy; best {best['block']} x "
        f"{best['grid']} {best['copy/this']:.2f}x; best per block size {per_block}"
    )


def launch_configs(gpu, n: int = N, arch: str | None = None) -> tuple[str, list[dict]]:
    """The block-size and grid sweep of both kernels: a one-line figure and the rows."""
    setup = Setup(gpu, n)
    try:
        rows = [r for name in BENCHES for r in sweep(gpu, setup, name, arch)]
        figures = [f"{name}: {_summary([r for r in rows if r['kernel'] == name], setup)}" for name in BENCHES]
    finally:
        setup.free()
    return "; ".join(figures), rows


def vector_loads(gpu, n: int = N + 3, figures: dict | None = None) -> str:
    """g.map's scale_relu entry against the float4 one, best grid of each, at block 256 (n is
    not a multiple of 4, so the check covers the float4 entry's tail). The two best times go
    into `figures` (gpu_targets.py's "float4." keys)."""
    arch = gpu.device_info().arch
    setup = Setup(gpu, n)
    try:
        module = gpu.load_module(build_image("cuda", vector_source(), arch, "scale_relu_v4")[0])
        args, expected = _arguments(setup, "scale_relu")
        sms = gpu.device_info().multiprocessors
        best = {}
        for symbol, elements in (("scale_relu__out", n), ("scale_relu__out_v4", -(-n // 4))):
            kernel = module.get_kernel(symbol)
            configs = grids(elements, 256, sms, arch)
            times = {label: setup.time(kernel, grid, 256, args) for label, grid in configs.items()}
            setup.check(kernel, min(configs.values()), 256, args, expected)
            label = min(times, key=times.get)
            best[symbol] = (label, times[label])
    finally:
        setup.free()
    (s_label, s_ms), (v_label, v_ms) = best["scale_relu__out"], best["scale_relu__out_v4"]
    if figures is not None:
        figures.update({"float4.scalar_ms": s_ms, "float4.vector_ms": v_ms})
    return (
        f"1e8 f32 scale_relu, block 256: 4-byte loads {setup.gbps(s_ms):.0f} GB/s ({s_label}), "
        f"16-byte loads {setup.gbps(v_ms):.0f} GB/s ({v_label}): {s_ms / v_ms:.2f}x; copy {setup.gbps(setup.copy_ms):.0f} GB/s"
    )


def record(figures: dict, rows: list[dict]) -> None:
    """gpu_targets.py's "tuning." figures of each kernel from the sweep's rows: g.map's own
    launch (256, per element), the copy time, and the fastest configuration whose result was
    right."""
    for name in dict.fromkeys(r["kernel"] for r in rows):
        timed = [r for r in rows if r["kernel"] == name and r["error"] is None and r["ms"] > 0]
        ours = next((r for r in timed if r["block"] == 256 and r["grid"] == "per element"), None)
        if ours is None:
            continue
        best = min(timed, key=lambda r: r["ms"])
        figures.update({
            f"tuning.{name}.ours_ms": ours["ms"],
            f"tuning.{name}.copy_ms": ours["ms"] * ours["copy/this"],
            f"tuning.{name}.best_ms": best["ms"],
            f"tuning.{name}.best": f"{best['block']} x {best['grid']}",
        })  # fmt: skip


def tuning_scenarios(gpu, check, n: int = N) -> list[dict]:
    """Runs both scenarios, over `n` elements, into `check` (figures into `check.figures`);
    returns the sweep's rows for gpu_check's saved table."""
    arch = gpu.device_info().arch
    rows: list[dict] = []

    def configs():
        figure, found = launch_configs(gpu, n, arch)
        rows.extend(found)
        record(check.figures, found)
        failed = {(r["kernel"], r["block"]): r["error"] for r in found if r["error"]}
        if failed:
            raise AssertionError(f"results differ from NumPy at {sorted(failed)}: {next(iter(failed.values()))}")
        return figure

    check.run("launch config: block size x grid", configs)
    check.run("16-byte loads", lambda: vector_loads(gpu, n + 3, check.figures))
    return rows


def _cell(row: dict) -> str:
    return f"{row['ms']:.3f} ms ({row['copy/this']:.2f}x copy{', WRONG RESULT' if row['error'] else ''})"


def sweep_table(rows: list[dict]) -> str:
    """The sweep as Markdown: one row per kernel and block size, one column per grid."""
    labels = list(dict.fromkeys(r["grid"] for r in rows))
    lines = ["| kernel | block | " + " | ".join(labels) + " |", "|---|---|" + "---|" * len(labels)]
    for name in dict.fromkeys(r["kernel"] for r in rows):
        for block in BLOCKS:
            cells = {r["grid"]: r for r in rows if r["kernel"] == name and r["block"] == block}
            if cells:
                lines.append(f"| {name} | {block} | " + " | ".join(_cell(cells[c]) for c in labels) + " |")
    return "\n".join(lines)
