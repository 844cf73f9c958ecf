"""What only a GPU can show, in one script: the runtime scenarios on Backend.cuda.

Runs offline (numpy and gompute only; CuPy and PyTorch are used where installed) in a
few minutes and prints a table: scenario, ok/FAIL, figure. Without a usable CUDA device
it says so and stops before the first GPU call.

    python benchmarks/gpu_check.py [--save] [--no-tests]

--save also writes benchmarks/results/gpu_check-<date>.md. Last, it runs the test suite's
CUDA-marked tests (pytest -m cuda) against the real driver and reports their counts in a row.

With --save the file is rewritten after every scenario, so a run cut short keeps what it did.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import re
import subprocess
import sys
import textwrap
import threading
import time
import traceback
from importlib import metadata
from pathlib import Path

import numpy as np


def missing_requirements() -> list[str]:
    """gompute's run-time requirements that are not installed: `pip install --no-deps` on a
    machine without internet leaves them out, and gompute fails at first use without them."""
    try:
        requirements = metadata.requires("gompute") or []
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return []
    missing = []
    for requirement in requirements:
        if "extra ==" in requirement:
            continue
        name = re.match(r"[A-Za-z0-9._-]+", requirement).group(0)
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    return missing


if missing := missing_requirements():
    sys.exit(
        f"gompute's requirements {', '.join(missing)} are not installed. Without internet: `make gpu-wheels` "
        "where there is, carry build/gpu-wheels, and install with "
        "`pip install --no-build-isolation --no-index --find-links build/gpu-wheels -e .`"
    )

from gpu_targets import BANDWIDTH, targets_table  # noqa: E402
from gpu_timing import BATCH, BATCHES, WARM_UPS, event_ms, host_us  # noqa: E402

import gompute as g  # noqa: E402 - after the check, which names what an import would only fail on
from gompute.backend import cuda_version  # noqa: E402
from gompute.demo import SCALE_RELU_PTX, Params  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"

# One thread per element: data[i] = data[i] + 1.0 (for launch overhead and threads).
ADD_ONE_PTX = r"""
.version 7.0
.target sm_52
.address_size 64
.visible .entry add_one(.param .u64 data, .param .u64 len)
{
    .reg .pred %p<2>; .reg .f32 %f<3>; .reg .b32 %r<4>; .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [data];
    ld.param.u64 %rd2, [len];
    mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x;
    cvt.u64.u32 %rd3, %r3;
    mad.wide.u32 %rd4, %r1, %r2, %rd3;
    setp.ge.u64 %p1, %rd4, %rd2;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd5, %rd1;
    shl.b64 %rd6, %rd4, 2;
    add.s64 %rd7, %rd5, %rd6;
    ld.global.f32 %f1, [%rd7];
    add.f32 %f2, %f1, 0f3F800000;
    st.global.f32 [%rd7], %f2;
DONE:
    ret;
}
.visible .entry faulty()
{
    trap;
}
"""


class Check:
    """Collects (scenario, ok, figure) rows; a scenario that raises is a FAIL with its error
    (on one line, cut to `FIGURE_CHARS`; the traceback goes to stderr). `on_row` is called
    after each row. Scenarios store the numbers issues 5's and 32's targets are judged on in `figures`
    (gpu_targets.py names the keys)."""

    FIGURE_CHARS = 400

    def __init__(self, on_row=None):
        self.rows: list[tuple[str, bool, str]] = []
        self.figures: dict[str, float | str] = {}
        self.on_row = on_row

    def run(self, name: str, fn) -> None:
        start = time.perf_counter()
        try:
            figure = fn() or ""
            ok = True
        except Exception as e:  # noqa: BLE001 - every failure is reported in the table
            ok, figure = False, f"{type(e).__name__}: {e}"
            traceback.print_exc(file=sys.stderr)
        figure = " ".join(str(figure).split()).replace("|", "/")
        if len(figure) > self.FIGURE_CHARS:
            figure = figure[: self.FIGURE_CHARS - 3] + "..."
        self.rows.append((name, ok, f"{figure} [{time.perf_counter() - start:.1f} s]"))
        print(f"  {_result(ok, figure):4} {name}: {figure}", flush=True)
        if self.on_row:
            self.on_row()

    def table(self) -> str:
        lines = ["| scenario | result | figure |", "|---|---|---|"]
        lines += [f"| {n} | {_result(ok, f)} | {f} |" for n, ok, f in self.rows]
        return "\n".join(lines)


def _result(ok: bool, figure: str) -> str:
    """ok, FAIL, or skip for a scenario that found what it compares against missing."""
    return "FAIL" if not ok else "skip" if figure.startswith("skipped") else "ok"


def gbps(nbytes: int, seconds: float) -> str:
    return f"{nbytes / seconds / 1e9:.1f} GB/s"


def scenarios(gpu, check: Check) -> None:
    d = gpu.device_info()
    n = 1 << 24
    host = np.random.default_rng(0).standard_normal(n).astype(np.float32)

    def roundtrip():
        out = np.zeros_like(host)  # touched, so no page fault lands inside the D2H timing
        up, down = [], []
        with gpu.alloc(host.nbytes) as buf:
            for _ in range(5):
                t = time.perf_counter()
                buf.upload(host)
                up.append(time.perf_counter() - t)
                t = time.perf_counter()
                buf.download(out)
                down.append(time.perf_counter() - t)
            assert np.array_equal(out, host)
        return (
            f"pageable H2D {gbps(host.nbytes, np.median(up))}, D2H {gbps(host.nbytes, np.median(down))} (median of 5)"
        )

    def pinned_async():
        pinned = gpu.alloc_pinned(host.nbytes)
        view = np.frombuffer(pinned, dtype=np.float32)
        view[:] = host
        stream = gpu.create_stream()
        with gpu.alloc(host.nbytes) as buf:
            ms = event_ms(gpu, stream, lambda: buf.upload(pinned, stream=stream))
            view[:] = 0
            buf.download(pinned, stream=stream)
            stream.synchronize()
            assert np.array_equal(view, host)
        return f"pinned async H2D {gbps(host.nbytes, ms / 1e3)}"

    def launch_by_hand():
        module = gpu.load_module(SCALE_RELU_PTX)
        again = gpu.load_module(SCALE_RELU_PTX)
        assert module.id == again.id, "the same image loaded twice"
        kernel = module.get_kernel("scale_relu")
        with gpu.alloc(host.nbytes) as buf:
            buf.upload(host)
            args = [buf.arg_ptr(), g.interface.arg(g.u64(n)), g.interface.arg(g.abi.pack(Params, scale=2))]
            kernel.launch(g.Dim3.linear(n, 256), g.Dim3(256), 0, args)
            gpu.synchronize()
            out = np.empty_like(host)
            buf.download(out)
        expected = np.maximum(host * np.float32(2), 0)
        assert np.array_equal(out, expected), f"max error {np.max(np.abs(out - expected))}"
        return f"PTX JIT + launch matches NumPy; stats {g.runtime.stats()['module_cache_hits']} cache hit(s)"

    def errors():
        module = gpu.load_module(ADD_ONE_PTX)
        try:
            module.get_kernel("nope")
            raise AssertionError("no KernelNotFound")
        except g.KernelNotFound as e:
            listed = "add_one" in str(e)
        buf = gpu.alloc(16)
        try:
            buf.upload(np.zeros(8, np.float32))
            raise AssertionError("no CopyFailed")
        except g.CopyFailed:
            pass
        buf.free()
        try:
            buf.arg_ptr()
            raise AssertionError("no BufferFreed")
        except g.BufferFreed:
            pass
        return f"KernelNotFound {'lists' if listed else 'cannot list (driver < 12.4)'} names; CopyFailed; BufferFreed"

    def bandwidth():
        big = 100_000_000
        kernel = gpu.load_module(SCALE_RELU_PTX).get_kernel("scale_relu")
        stream = gpu.create_stream()
        with gpu.alloc(big * 4) as a, gpu.alloc(big * 4) as b:
            args = [a.arg_ptr(), g.interface.arg(g.u64(big)), g.interface.arg(g.abi.pack(Params, scale=2))]
            copy = event_ms(gpu, stream, lambda: b.copy_from(a, stream=stream))
            run = event_ms(gpu, stream, lambda: kernel.launch(g.Dim3.linear(big, 256), 256, 0, args, stream=stream))
        moved = 2 * big * 4  # read + write
        return f"1e8 f32: copy {gbps(moved, copy / 1e3)}, hand-written scale_relu {gbps(moved, run / 1e3)} ({copy / run:.2f}x copy)"

    def map_bandwidth():
        from gpu_kernels import scale_relu  # the benchmarks' own

        k = g.map(scale_relu)
        first = gpu.empty((1,), g.f32)
        k(first, out=first, scale=2)  # compiled and loaded before the big buffers exist
        big, stream = 100_000_000, gpu.create_stream()
        with gpu.empty((big,), g.f32) as x, gpu.empty((big,), g.f32) as out:
            x.stream = out.stream = stream  # so g.map launches on it, from its C++ path
            copy = event_ms(gpu, stream, lambda: out.copy_from(x, stream=stream))
            ours = event_ms(gpu, stream, lambda: k(x, out=out, scale=2))
        check.figures.update({"buffer.copy_ms": copy, "buffer.scale_relu_ms": ours})
        moved = 2 * big * 4  # read + write
        return (
            f"1e8 f32 Buffers: copy {gbps(moved, copy / 1e3)}, cached g.map scale_relu {gbps(moved, ours / 1e3)} = "
            f"{copy / ours:.2f}x copy (aim >= {BANDWIDTH}x: {'met' if copy / ours >= BANDWIDTH else 'NOT met'})"
        )

    def launch_overhead():
        kernel = gpu.load_module(ADD_ONE_PTX).get_kernel("add_one")
        with gpu.alloc(4) as buf:
            buf.upload(np.zeros(1, np.float32))
            args = [buf.arg_ptr(), g.interface.arg(g.u64(1))]
            us = host_us(lambda: kernel.launch(1, 1, 0, args), gpu.synchronize)
            out = np.zeros(1, np.float32)
            buf.download(out)
        assert out[0] == WARM_UPS + BATCH * BATCHES, out
        return f"{us:.2f} us per kernel.launch (host side, cached args, median of {BATCHES} x {BATCH})"

    def streams_overlap():
        kernel = gpu.load_module(SCALE_RELU_PTX).get_kernel("scale_relu")
        s1, s2 = gpu.create_stream(), gpu.create_stream()
        pinned = gpu.alloc_pinned(host.nbytes)
        with gpu.alloc(host.nbytes) as a, gpu.alloc(host.nbytes) as b:
            args = [a.arg_ptr(), g.interface.arg(g.u64(n)), g.interface.arg(g.abi.pack(Params, scale=1))]

            # A 64 MiB pinned upload takes a few ms over PCIe, one launch over 16M elements tens
            # of us: `launches` of them per copy make the two comparable, so overlap can show.
            launches = 64

            def both(first, second):
                t = time.perf_counter()
                for _ in range(10):
                    for _ in range(launches):
                        kernel.launch(g.Dim3.linear(n, 256), 256, 0, args, stream=first)
                    b.upload(pinned, stream=second)
                first.synchronize()
                second.synchronize()
                return time.perf_counter() - t

            both(s1, s2)  # warm-up
            serial, overlapped = both(s1, s1), both(s1, s2)
        return (
            f"(64 MiB pinned upload + {launches} launches) x10: one stream {serial * 1e3:.1f} ms, "
            f"two streams {overlapped * 1e3:.1f} ms ({serial / overlapped:.2f}x)"
        )

    def events_across_streams():
        kernel = gpu.load_module(ADD_ONE_PTX).get_kernel("add_one")
        s1, s2 = gpu.create_stream(), gpu.create_stream()
        out = np.empty(n, np.float32)
        with gpu.alloc(host.nbytes) as buf:
            buf.upload(np.zeros(n, np.float32))
            for _ in range(20):
                kernel.launch(g.Dim3.linear(n, 256), 256, 0, [buf.arg_ptr(), g.interface.arg(g.u64(n))], stream=s1)
            done = gpu.create_event(timing=False)
            done.record(s1)
            done.wait(s2)
            buf.download(out, stream=s2)
            s2.synchronize()
        assert np.all(out == 20), "s2 ran before s1's kernels"
        return "s2 waits for s1 through an event, no host sync"

    def threads():
        kernel = gpu.load_module(ADD_ONE_PTX).get_kernel("add_one")
        failures = []

        def work(i):
            try:
                stream = gpu.create_stream()
                with gpu.alloc(4096 * 4) as buf:
                    buf.upload(np.full(4096, i, np.float32), stream=stream)
                    for _ in range(50):
                        kernel.launch(16, 256, 0, [buf.arg_ptr(), g.interface.arg(g.u64(4096))], stream=stream)
                    out = np.empty(4096, np.float32)
                    buf.download(out, stream=stream)
                    stream.synchronize()
                    assert np.all(out == i + 50)
            except Exception as e:  # noqa: BLE001
                failures.append(e)

        ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not failures, failures
        return "8 threads x (stream, alloc, 50 launches, sync) correct"

    def fault_in_subprocess():
        # A trap poisons the CUDA context, so it runs in a process of its own.
        code = textwrap.dedent(f"""
            import gompute as g
            gpu = g.runtime.cuda.Compute.init()
            k = gpu.load_module({ADD_ONE_PTX!r}).get_kernel("faulty")
            k.launch(1, 1, 0, [])
            try:
                gpu.synchronize()
                print("no error")
            except g.SyncFailed as e:
                print("SyncFailed", e.code)
        """)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert "SyncFailed" in out.stdout, out.stdout + out.stderr
        return out.stdout.strip()

    def shutdown_reinit():
        code = textwrap.dedent("""
            import gompute as g
            gpu = g.runtime.cuda.Compute.init()
            buf = gpu.alloc(64)
            g.runtime.shutdown()
            try:
                buf.upload(bytes(64))
                print("no error")
            except g.InvalidHandle:
                print("InvalidHandle")
            again = g.runtime.cuda.Compute.init()
            again.alloc(64).upload(bytes(64))
            print("reinit ok")
        """)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert "InvalidHandle" in out.stdout and "reinit ok" in out.stdout, out.stdout + out.stderr
        return "old handle raises InvalidHandle; Compute.init works again"

    print(f"device: {d.name}, {d.arch}, {d.total_memory / 2**30:.0f} GiB, driver {d.driver_version}", flush=True)
    for name, fn in [
        ("upload/download 64 MiB", roundtrip),
        ("pinned async copies", pinned_async),
        ("launch by hand (seed example, PTX)", launch_by_hand),
        ("errors before the driver", errors),
        ("bandwidth: kernel vs device copy", bandwidth),
        ("g.map bandwidth on Buffers at 1e8", map_bandwidth),
        ("launch overhead", launch_overhead),
        ("two streams overlap", streams_overlap),
        ("events order streams", events_across_streams),
        ("8 threads", threads),
        ("kernel fault -> SyncFailed", fault_in_subprocess),
        ("shutdown and re-init", shutdown_reinit),
    ]:
        check.run(name, fn)


def versions(gpu) -> str:
    """The driver, the NVRTC gompute compiles with, and the frameworks, as one line."""
    from gompute.compile import nvrtc

    try:
        lib = nvrtc.load()
        compiler = f"NVRTC {lib.version[0]}.{lib.version[1]} ({lib.path})"
    except g.CompileError as e:
        compiler = f"no NVRTC ({e})"
    found = metadata.packages_distributions()
    frameworks = [
        f"{dist} {metadata.version(dist)}" for module in ("numpy", "cupy", "torch") for dist in found.get(module, [])
    ]
    driver = "{}.{}".format(*cuda_version(gpu.device_info().driver_version))
    return f"driver {driver}, {compiler}, {', '.join(frameworks)}, Python {platform.python_version()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--save", action="store_true", help="also write the table under --results")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where --save writes (default: %(default)s)")
    parser.add_argument("--no-tests", action="store_true", help="skip running the CUDA-marked tests (pytest -m cuda)")
    args = parser.parse_args()
    print(f"gompute {g.__version__} gpu_check on {platform.node()} ({platform.machine()}), {datetime.date.today()}")
    try:
        gpu = g.runtime.cuda.Compute.init()
    except g.BackendUnavailable as e:
        print(f"No GPU found, so nothing was checked: {e}")
        return 0
    device = gpu.device_info()
    header = (
        f"# gpu_check, {datetime.datetime.now():%Y-%m-%d %H:%M}, {device.name} ({device.arch})\n\n{versions(gpu)}\n\n"
    )
    print(header, flush=True)
    path = args.results / f"gpu_check-{datetime.date.today()}.md"

    sweep: list[dict] = []
    reduce_rows: list[dict] = []

    def report() -> str:
        """The scenarios, the targets judged on what they measured so far, the two sweeps."""
        text = f"{check.table()}\n\n## Targets (issues 5 and 32, GPU)\n\n{targets_table(check.figures)}"
        if sweep:
            text += f"\n\n## Launch configurations, 1e8 f32, event-timed (g.map launches 256 x per element)\n\n{sweep_table(sweep)}"
        if reduce_rows:
            text += (
                f"\n\n## g.reduce's constants, full sums of 1e8 (gpu_reduce_tuning.py)\n\n{tuning_table(reduce_rows)}"
            )
        return text

    def save() -> None:
        if args.save:
            args.results.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{header}{report()}\n")

    check = Check(on_row=save)
    scenarios(gpu, check)
    from gpu_interop import interop_scenarios
    from gpu_kernels import kernel_scenarios
    from gpu_reduce import reduce_scenarios
    from gpu_reduce_tuning import reduce_tuning, tuning_table
    from gpu_tests import test_scenarios
    from gpu_tuning import sweep_table, tuning_scenarios

    kernel_scenarios(gpu, check)
    interop_scenarios(gpu, check)
    reduce_scenarios(gpu, check)
    sweep = tuning_scenarios(gpu, check)
    reduce_rows = reduce_tuning(gpu, check)
    if not args.no_tests:
        test_scenarios(gpu, check)
    print("\n" + report())
    save()
    if args.save:
        print(f"saved {path}")
    return 0 if all(ok for _, ok, _ in check.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
