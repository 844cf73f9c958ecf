"""suite.py's output: the JSON of raw numbers, the Markdown tables (targets first), the PNG plots,
and the results block of benchmarks/README.md."""

from __future__ import annotations

import datetime
import json
import platform
import re
from pathlib import Path

README_BEGIN, README_END = "<!-- results:begin -->", "<!-- results:end -->"


def sweep_line(row: dict) -> str:
    r = row["ratios"]
    parts = [f"{k.split('/')[0]} {v:.2f}x" for k, v in r.items()]
    return (
        f"sweep    {row['kernel']:<12} {row['dtype']} n={row['n']:<10} {row['seconds']['gompute'] * 1e6:11.1f} us "
        f"{row['gompute_GBps']:6.2f} GB/s {row['gompute_Gelem_per_s']:7.3f} Gelem/s | " + ", ".join(parts)
    )


def _fmt_s(s: float) -> str:
    return f"{s * 1e9:.0f} ns" if s < 1e-6 else f"{s * 1e6:.1f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def _row(rows, kernel, dtype, n):
    return next((r for r in rows if r["kernel"] == kernel and r["dtype"] == dtype and r["n"] == n), None)


def targets(results: dict) -> list[tuple[str, str, bool | None]]:
    """(target, measured, met) for each of issue 5's host targets that this run measured."""
    out = []
    rows = results.get("sweep", [])
    big = sorted({r["n"] for r in rows if r["n"] >= 10_000_000})
    for n in big:
        for kernel in ("scale_relu", "fused"):
            r = _row(rows, kernel, "f32", n)
            if r:
                v = r["ratios"]["copy/gompute"]
                out.append((f"{kernel} f32 n={n:.0e}: >= 0.8x np.copyto bandwidth", f"{v:.2f}x", v >= 0.8))
        r = _row(rows, "fused", "f32", n)
        if r:
            v = r["ratios"]["numpy/gompute"]
            out.append((f"fused f32 n={n:.0e}: >= 3x faster than NumPy", f"{v:.2f}x", v >= 3))
        for kernel in ("gelu", "newton_sqrt"):
            r = _row(rows, kernel, "f32", n)
            if r:
                v = r["ratios"]["numpy/gompute"]
                rate = f"{v:.2f}x NumPy, {r['gompute_Gelem_per_s']:.3f} Gelem/s"
                out.append((f"{kernel} f32 n={n:.0e}: beats NumPy", rate, v > 1))
    for r in results.get("strided", []):
        v = r["contiguous/strided"]
        out.append((f"strided: {r['case']} within 2x of contiguous", f"{1 / v:.2f}x the contiguous time", v >= 0.5))
    for r in results.get("small", []):
        v = r["ratios"]["ufunc/gompute"]
        out.append(
            (
                f"small n={r['n']} ({r['bytes']} B): within 2x of one ufunc call",
                f"{1 / v:.2f}x the ufunc time",
                v >= 0.5,
            )
        )
    for r in results.get("dispatch", []):
        if r["call"].startswith("g.map"):
            v = r["ufunc/this"]
            out.append((f"dispatch: {r['call']} within 2x of the ufunc", f"{r['ns']:.0f} ns, {1 / v:.2f}x", v >= 0.5))
    for r in results.get("memory", []):
        if r["how"] != "numpy expression":
            allowed = (r["output_bytes"] if r["how"] == "new output" else 0) + 16 * 2**20
            out.append(
                (
                    f"memory: map over {r['n']:.0e} elements ({r['how']}) allocates at most its output",
                    f"peak RSS +{r['grew_bytes'] / 1e6:.0f} MB (output {r['output_bytes'] / 1e6:.0f} MB)",
                    r["grew_bytes"] <= allowed,
                )
            )
    vec = results.get("vec")
    if vec:
        n = sum("loop vectorized" in line for line in vec["report"])
        out.append(
            ("scale_relu's host loops vectorized (g++ -fopt-info-vec-optimized)", f"{n} loop(s) vectorized", n > 0)
        )
    return out


def _targets_md(results) -> list[str]:
    lines = ["| target | measured | met |", "|---|---|---|"]
    for what, measured, met in targets(results):
        lines.append(f"| {what} | {measured} | {'yes' if met else '**no**'} |")
    return lines


def _sweep_md(rows, only_big=False) -> list[str]:
    cols = ["copy", "numpy", "numexpr", "gompute (new output)"]
    lines = [
        "| kernel | dtype | n | g.map time | GB/s | Gelem/s | " + " | ".join(f"{c} / g.map" for c in cols) + " |",
        "|---|---|---:|---:|---:|---:|" + "---:|" * len(cols),
    ]
    for r in rows:
        if only_big and not (r["n"] >= 10_000_000 and r["dtype"] == "f32"):
            continue
        ratios = [r["ratios"].get(f"{c}/gompute") for c in cols]
        cells = " | ".join("" if v is None else f"{v:.2f}x" for v in ratios)
        lines.append(
            f"| {r['kernel']} | {r['dtype']} | {r['n']:.0e} | {_fmt_s(r['seconds']['gompute'])} | "
            f"{r['gompute_GBps']:.2f} | {r['gompute_Gelem_per_s']:.3f} | {cells} |"
        )
    return lines


def _table(title: str, columns: str, rows: list[list[str]]) -> list[str]:
    """A titled Markdown table: `columns` is "name|name|...", the first column left-aligned."""
    names = columns.split("|")
    rule = "|".join(["---", *["---:"] * (len(names) - 1)])
    return ["", f"### {title}", "", f"| {' | '.join(names)} |", f"|{rule}|", *(f"| {' | '.join(r)} |" for r in rows)]


def _other_md(results) -> list[str]:
    lines = []
    if results.get("strided"):
        rows = [
            [
                r["case"],
                f"{r['n']:.0e}",
                _fmt_s(r["seconds"]["contiguous"]),
                _fmt_s(r["seconds"]["strided"]),
                f"{r['contiguous/strided']:.2f}x",
                f"{r['numpy strided/strided']:.2f}x",
            ]
            for r in results["strided"]
        ]
        lines += _table(
            "Strided and broadcast inputs (f32 unless named)",
            "case|n|contiguous|strided|contiguous/strided|NumPy/strided",
            rows,
        )
    if results.get("small"):
        rows = [
            [
                str(r["n"]),
                str(r["bytes"]),
                *(_fmt_s(r["seconds"][k]) for k in ("gompute", "ufunc", "numpy expr", "numexpr")),
                f"{r['ratios']['ufunc/gompute']:.2f}x",
            ]
            for r in results["small"]
        ]
        columns = "n|bytes|g.map|np.multiply (one ufunc)|NumPy expression|numexpr|ufunc/g.map"
        lines += _table("Small arrays: scale_relu f32, out= preallocated", columns, rows)
    if results.get("dispatch"):
        rows = [[r["call"], f"{r['ns']:.0f}", f"{r['ufunc/this']:.2f}x"] for r in results["dispatch"]]
        lines += _table("Dispatch: one call on a 1-element array", "call|ns per call|ufunc / this", rows)
    if results.get("memory"):
        rows = [
            [r["how"], f"{r['n']:.0e}", f"{r['grew_bytes'] / 1e6:.0f} MB", f"{r['output_bytes'] / 1e6:.0f} MB"]
            for r in results["memory"]
        ]
        lines += _table(
            "Peak RSS growth of one call over a fresh process's baseline", "call|n|peak RSS growth|output", rows
        )
    if results.get("compile"):
        lines += ["", "### Compile (benchmarks/compile.py)", "", "```", results["compile"].rstrip(), "```"]
    if results.get("vec"):
        lines += ["", "### Vectorization report (scale_relu, host)", "", f"`{results['vec']['command']}`", "", "```"]
        lines += [line for line in results["vec"]["report"] if "vectorized" in line] or [
            "(no loop reported vectorized)"
        ]
        lines += ["```"]
    return lines


def _machine_md(m) -> str:
    v = ", ".join(f"{k} {x}" for k, x in m["versions"].items() if x)
    return (
        f"Measured {m['date']} on `{m['host']}`: {m['cpu']}, {m['cores']} cores, {m['memory_gib']:.0f} GiB, "
        f"{m['os']}; Python {m['python']}, {v}; gompute host threads {m['gompute_host_threads']}; "
        f"compiler {m['compiler']}; commit {m['git_commit'] or '?'}."
    )


def _plots(results, stem: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    rows = results.get("sweep", [])
    for dtype in sorted({r["dtype"] for r in rows}):
        fig, axes = plt.subplots(2, 2, figsize=(11, 8))
        for ax, kernel in zip(axes.flat, ("scale_relu", "fused", "gelu", "newton_sqrt")):
            mine = [r for r in rows if r["kernel"] == kernel and r["dtype"] == dtype]
            if not mine:
                continue
            compute = mine[0]["bound"] == "compute"
            ns = [r["n"] for r in mine]
            for who in ("gompute", "gompute (new output)", "numpy", "numexpr", "copy"):
                if who not in mine[0]["seconds"]:
                    continue
                if compute:
                    ys = [r["n"] / r["seconds"][who] / 1e9 for r in mine]
                else:
                    ys = [r["gompute_GBps"] * r["seconds"]["gompute"] / r["seconds"][who] for r in mine]
                ax.plot(ns, ys, marker="o", label="np.copyto, same bytes" if who == "copy" else who)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{kernel} {dtype}")
            ax.set_xlabel("elements")
            ax.set_ylabel("Gelem/s" if compute else "GB/s (bytes read + written)")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle(f"gompute host map kernels, {results['machine']['cpu']}")
        fig.tight_layout()
        path = stem.with_name(f"{stem.name}-sweep-{dtype}.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        paths.append(path)
    if results.get("small"):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        ns = [r["n"] for r in results["small"]]
        for who in ("gompute", "ufunc", "numpy expr", "numexpr"):
            ax.plot(ns, [r["seconds"][who] * 1e6 for r in results["small"]], marker="o", label=who)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("elements (f32)")
        ax.set_ylabel("us per call")
        ax.set_title("small arrays: scale_relu, out= preallocated")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = stem.with_name(f"{stem.name}-small.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        paths.append(path)
    return paths


def write(results: dict, folder: Path, update_readme: bool = True) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    day = datetime.date.today().isoformat()
    stem = folder / f"{day}-{platform.node() or 'host'}{'-quick' if results.get('quick') else ''}"
    json_path = stem.with_suffix(".json")
    json_path.write_text(json.dumps(results, indent=1))
    plots = _plots(results, stem)
    head = ["## Targets (issue 5, host)", "", _machine_md(results["machine"]), "", *_targets_md(results)]
    body = [
        "",
        "### Sweep, f32 at 1e7+ elements",
        "",
        *_sweep_md(results.get("sweep", []), only_big=True),
        *_other_md(results),
    ]
    md = [*head, *body, "", "### Full sweep", "", *_sweep_md(results.get("sweep", []))]
    md_path = stem.with_suffix(".md")
    md_path.write_text("\n".join(md) + "\n")
    if update_readme:
        _update_readme(folder.parent / "README.md", head + body, plots, folder.parent)
    return [json_path, md_path, *plots]


def _update_readme(readme: Path, lines: list[str], plots: list[Path], root: Path) -> None:
    if not readme.exists():
        return
    text = readme.read_text()
    shown = next((p for p in plots if p.name.endswith("sweep-f32.png")), plots[0] if plots else None)
    block = [README_BEGIN, *lines]
    if shown is not None:
        block += ["", f"![host sweep]({shown.relative_to(root).as_posix()})"]
    block.append(README_END)
    pattern = re.compile(re.escape(README_BEGIN) + ".*?" + re.escape(README_END), re.S)
    if pattern.search(text):
        readme.write_text(pattern.sub(lambda _: "\n".join(block), text))
