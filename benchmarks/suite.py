"""The host benchmark suite: every map kernel of benchmarks/kernels.py against np.copyto of the
same bytes, the NumPy expression and numexpr (same thread count), from 1 element to 1e8; strided
and broadcast inputs; small arrays against one NumPy ufunc call; dispatch overhead; peak memory;
the compiler's vectorization report; compile times. Writes benchmarks/results/<date>-<host>.json,
.md and .png files and refreshes the table in benchmarks/README.md.

    python benchmarks/suite.py            # the full suite (about 10 minutes on 2 cores)
    python benchmarks/suite.py --quick    # a few sizes (about a minute)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dispatch  # noqa: E402
import numexpr as ne  # noqa: E402
import report  # noqa: E402
from kernels import DTYPES, KERNELS, make_inputs  # noqa: E402
from timing import interleaved, machine, median_ratio, summarize  # noqa: E402

import gompute as g  # noqa: E402

RESULTS = HERE / "results"
FULL_SIZES = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000]
QUICK_SIZES = [1, 1_000, 100_000, 10_000_000]


def host_threads() -> int:
    with g.runtime.host.Compute.init() as c:
        return int(c.device_info().multiprocessors)


def repeats_for(n: int, quick: bool) -> int:
    if n >= 100_000_000:
        return 3
    if n >= 10_000_000:
        return 3 if quick else 5
    return 5 if quick else 7


def sizes_for(bench, dtype: str, quick: bool) -> list[int]:
    sizes = QUICK_SIZES if quick else FULL_SIZES
    # NumPy's f16 arithmetic is scalar code, and the compute-bound NumPy baselines at 1e8 take
    # seconds a call: keep those to 1e7 so the full suite stays near ten minutes.
    if dtype == "f16" or (bench.bound == "compute" and dtype == "f64"):
        sizes = [n for n in sizes if n <= 10_000_000]
    return sizes


def contestants(bench, dtype: str, n: int) -> dict:
    xs = make_inputs(bench, n, dtype)
    params = bench.typed_params(dtype)
    kernel = g.map(bench.kernel(dtype))
    out = np.empty(n, DTYPES[dtype])
    out.fill(0)  # touched once, so no timing pays its page faults
    c = {
        "gompute": lambda: kernel(*xs, out=out, **params),
        "numpy": lambda: bench.numpy(*xs, **params),
    }
    if bench.bound == "memory":
        moved = (bench.inputs + 1) * n  # elements read and written by the kernel
        src = np.ones(max(1, moved // 2), DTYPES[dtype])
        dst = np.zeros_like(src)
        c["copy"] = lambda: np.copyto(dst, src)
        c["gompute (new output)"] = lambda: kernel(*xs, **params)
    if dtype != "f16":  # numexpr has no f16
        names = dict(zip("xyz", xs), **params)
        if bench.numexpr is not None:
            c["numexpr"] = lambda: ne.evaluate(bench.numexpr, local_dict=names, out=out, casting="same_kind")
        else:
            c["numexpr"] = lambda: bench.numexpr_call(ne, *xs, out)
    return c


def check(bench, dtype: str) -> None:
    """The kernel computes what the NumPy expression does (within f16/transcendental rounding)."""
    xs = make_inputs(bench, 1000, dtype)
    params = bench.typed_params(dtype)
    got = g.map(bench.kernel(dtype))(*xs, **params)
    want = bench.numpy(*xs, **params)
    tol = {"f16": 1e-2, "f32": 1e-5, "f64": 1e-12}[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


def sweep(quick: bool, log) -> list[dict]:
    rows = []
    for bench in KERNELS.values():
        for dtype in DTYPES:
            check(bench, dtype)
            for n in sizes_for(bench, dtype, quick):
                samples = interleaved(contestants(bench, dtype, n), repeats_for(n, quick))
                row = {
                    "kernel": bench.name,
                    "dtype": dtype,
                    "n": n,
                    "bound": bench.bound,
                    "seconds": summarize(samples),
                }
                row["ratios"] = {
                    f"{base}/gompute": median_ratio(samples, base, "gompute") for base in samples if base != "gompute"
                }
                itemsize = np.dtype(DTYPES[dtype]).itemsize
                row["gompute_GBps"] = (bench.inputs + 1) * n * itemsize / row["seconds"]["gompute"] / 1e9
                row["gompute_Gelem_per_s"] = n / row["seconds"]["gompute"] / 1e9
                rows.append(row)
                log(report.sweep_line(row))
                del samples
    return rows


def strided_cases(n: int) -> list[tuple[str, object, str, list, list, dict]]:
    """(case, kernel, dtype, contiguous inputs, strided/broadcast inputs of the same shape, params)."""
    sr, fu = KERNELS["scale_relu"], KERNELS["fused"]
    cols = 1000
    rows = n // cols
    x = make_inputs(sr, 2 * n, "f32")[0]
    tall = x[: rows * cols].reshape(cols, rows)
    side = int(n**0.5)
    square = x[: side * side].reshape(side, side)
    a, b, c = (v.reshape(rows, cols) for v in make_inputs(fu, rows * cols, "f32"))

    def transpose(t, dtype="f32", named=""):
        t = t.astype(DTYPES[dtype], copy=False)
        case = f"scale_relu {named}2-D transpose {t.shape[1]}x{t.shape[0]}"
        return case, sr, dtype, [np.ascontiguousarray(t.T)], [t.T], sr.typed_params(dtype)

    return [
        ("scale_relu x[::2]", sr, "f32", [np.ascontiguousarray(x[::2])], [x[::2]], sr.typed_params("f32")),
        (
            "scale_relu x[::-1]",
            sr,
            "f32",
            [np.ascontiguousarray(x[n - 1 :: -1])],
            [x[n - 1 :: -1]],
            sr.typed_params("f32"),
        ),
        transpose(tall),
        transpose(square),
        transpose(square, "f64", "f64 "),
        transpose(square, "f16", "f16 "),
        (
            "fused, y a broadcast row, z a broadcast column",
            fu,
            "f32",
            [
                a,
                np.ascontiguousarray(np.broadcast_to(b[0], a.shape)),
                np.ascontiguousarray(np.broadcast_to(c[:, :1], a.shape)),
            ],
            [a, b[0], c[:, :1]],
            fu.typed_params("f32"),
        ),
    ]


def strided(quick: bool, log) -> list[dict]:
    n = 1_000_000 if quick else 10_000_000
    rows = []
    for case, bench, dtype, contiguous, views, params in strided_cases(n):
        kernel = g.map(bench.kernel(dtype))
        shape = np.broadcast_shapes(*(v.shape for v in views))
        out = np.zeros(shape, DTYPES[dtype])
        np.testing.assert_array_equal(kernel(*views, **params), kernel(*contiguous, **params))
        samples = interleaved(
            {
                "contiguous": lambda: kernel(*contiguous, out=out, **params),
                "strided": lambda: kernel(*views, out=out, **params),
                "numpy strided": lambda: bench.numpy(*views, **params),
            },
            repeats_for(n, quick),
        )
        row = {
            "case": case,
            "n": int(np.prod(shape)),
            "seconds": summarize(samples),
            "contiguous/strided": median_ratio(samples, "contiguous", "strided"),
            "numpy strided/strided": median_ratio(samples, "numpy strided", "strided"),
        }
        rows.append(row)
        log(f"strided  {case:<48} {row['contiguous/strided']:.2f}x contiguous speed")
    return rows


def small(quick: bool, log) -> list[dict]:
    """scale_relu f32 below 64 KiB, beside one NumPy ufunc call on the same array."""
    kernel = g.map(KERNELS["scale_relu"].kernel("f32"))
    rows = []
    for n in [1, 16, 256, 4096, 16384] if not quick else [1, 256, 16384]:
        x = make_inputs(KERNELS["scale_relu"], n, "f32")[0]
        out = np.zeros_like(x)
        two = np.float32(2)
        samples = interleaved(
            {
                "gompute": lambda: kernel(x, out=out, scale=two),
                "ufunc": lambda: np.multiply(x, two, out=out),
                "numpy expr": lambda: np.maximum(x * two, 0),
                "numexpr": lambda: ne.evaluate(
                    "where(x * two > 0, x * two, 0)", local_dict={"x": x, "two": two}, out=out, casting="same_kind"
                ),
            },
            5 if quick else 9,
        )
        row = {"n": n, "bytes": 4 * n, "seconds": summarize(samples)}
        row["ratios"] = {f"{b}/gompute": median_ratio(samples, b, "gompute") for b in samples if b != "gompute"}
        rows.append(row)
        log(
            f"small    n={n:<6} gompute {row['seconds']['gompute'] * 1e6:7.2f} us, ufunc/gompute {row['ratios']['ufunc/gompute']:.2f}"
        )
    return rows


MEMORY_PROBE = r"""
import json, resource, sys
sys.path.insert(0, sys.argv[1])
import numpy as np, gompute as g
from kernels import KERNELS
n = int(sys.argv[2]); how = sys.argv[3]
kernel = g.map(KERNELS["scale_relu"].kernel("f32"))
kernel(np.ones(10, np.float32), scale=np.float32(2))          # compiled and loaded before measuring
x = np.ones(n, np.float32)
out = np.ones(n, np.float32) if how == "out=" else None
def peak():
    try:  # Linux: VmHWM, the peak RSS, which writing 5 to clear_refs reset to the current RSS
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
except OSError:
    pass  # elsewhere the import-time peak may hide a small growth
before = peak()
if how == "out=":
    kernel(x, out=out, scale=np.float32(2))
elif how == "new output":
    y = kernel(x, scale=np.float32(2)); y[::1024].sum()
else:
    y = np.maximum(x * np.float32(2), 0); y[::1024].sum()
print(json.dumps({"how": how, "grew_bytes": peak() - before, "output_bytes": 4 * n}))
"""


def memory(quick: bool, log) -> list[dict]:
    n = 10_000_000 if quick else 100_000_000
    rows = []
    for how in ("out=", "new output", "numpy expression"):
        proc = subprocess.run(
            [sys.executable, "-c", MEMORY_PROBE, str(HERE), str(n), how], capture_output=True, text=True, check=True
        )
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        row["n"] = n
        rows.append(row)
        log(
            f"memory   {how:<18} peak RSS grew {row['grew_bytes'] / 1e6:8.1f} MB (output {row['output_bytes'] / 1e6:.0f} MB)"
        )
    return rows


def vectorization(log) -> dict:
    """What g++ -fopt-info-vec-optimized says about scale_relu's generated host source."""
    from gompute.compile.host import INCLUDE_DIR, find_compiler

    source = KERNELS["scale_relu"].kernel("f32").source("host")
    compiler = find_compiler()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "scale_relu.cpp"
        src.write_text(source)
        flags = [f for f in compiler.flags if f != "-w"]
        argv = [
            *compiler.command,
            *flags,
            "-fopt-info-vec-optimized",
            f"-I{INCLUDE_DIR}",
            "-o",
            str(Path(tmp) / "k.so"),
            str(src),
        ]
        proc = subprocess.run(argv, capture_output=True, text=True)
    lines = [line.replace(str(src), "scale_relu.cpp") for line in (proc.stdout + proc.stderr).splitlines()]
    vectorized = [line for line in lines if "loop vectorized" in line]
    log(f"vectorization: {len(vectorized)} loop(s) vectorized in scale_relu's host source")
    return {"command": " ".join(argv[: len(compiler.command)] + flags + ["-fopt-info-vec-optimized"]), "report": lines}


def compile_times(log) -> str:
    proc = subprocess.run([sys.executable, str(HERE / "compile.py")], capture_output=True, text=True)
    text = proc.stdout + (proc.stderr if proc.returncode else "")
    for line in text.splitlines():
        log(f"compile  {line}")
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few sizes and fewer repetitions")
    parser.add_argument("--only", nargs="*", help="sections to run (sweep strided small dispatch memory vec compile)")
    parser.add_argument("--no-readme", action="store_true", help="do not refresh the table in benchmarks/README.md")
    args = parser.parse_args(argv)
    threads = host_threads()
    ne.set_num_threads(threads)
    wanted = set(args.only or ["sweep", "strided", "small", "dispatch", "memory", "vec", "compile"])

    def log(line: str) -> None:
        print(line, flush=True)

    results = {"machine": machine(threads), "quick": args.quick, "numexpr_threads": ne.get_num_threads()}
    log(f"{results['machine']['cpu']}, {threads} gompute host thread(s), numexpr {ne.get_num_threads()}")
    sections = {
        "sweep": lambda: sweep(args.quick, log),
        "strided": lambda: strided(args.quick, log),
        "small": lambda: small(args.quick, log),
        "dispatch": lambda: dispatch.measure(5 if args.quick else 9, log),
        "memory": lambda: memory(args.quick, log),
        "vec": lambda: vectorization(log),
        "compile": lambda: compile_times(log),
    }
    for name, run in sections.items():
        if name in wanted:
            results[name] = run()
    paths = report.write(results, RESULTS, update_readme=not args.no_readme and not args.only)
    for p in paths:
        log(f"wrote {p.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("MPLBACKEND", "Agg")
    sys.exit(main())
