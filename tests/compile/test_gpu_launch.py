"""docs/gpu_launch.md against what it describes: its register counts against the SASS of the
benchmark kernels, its occupancy figures against the register-file arithmetic of tests/sass.py,
and its grids against the launcher's own `grid_blocks` (csrc/planner.h, built here by the host
C++ compiler)."""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks.kernels import FAMILIES
from tests import sass

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "gpu_launch.md"
BLOCK = 256


def _table(heading: str) -> list[list[str]]:
    """The rows of the table whose header line starts with `heading`, cells stripped."""
    lines = DOC.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    rows = []
    for line in lines[start:]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
        elif rows:
            break
    return rows[2:]  # no header, no rule


def _occupancy() -> dict[str, list[str]]:
    return {row[0]: row for row in _table("| arch | registers")}


@functools.cache
def _most_registers(arch: str) -> int:
    counts = []
    for dtype, family in FAMILIES.items():
        functions = sass.of_kernels([k.specialize() for k in family.values()], arch, f"launch_doc_{dtype}")
        for kernel in family.values():
            counts += [functions[e.symbol].registers for e in kernel.specialize().entry_points() if e.kind != "strided"]
    return max(counts)


@pytest.mark.skipif(sass.missing() is not None, reason=sass.missing() or "")
@pytest.mark.parametrize("arch", sorted(_occupancy()))
def test_the_occupancy_table_is_the_sass_and_the_register_file(arch):
    _, registers, per_warp, blocks, warps, share = _occupancy()[arch]
    assert int(registers) == _most_registers(arch)
    assert int(per_warp) == -(-int(registers) * 32 // sass.REGISTER_UNIT) * sass.REGISTER_UNIT
    assert int(blocks) == sass.resident_blocks(arch, BLOCK, int(registers))
    assert int(warps) == int(blocks) * BLOCK // 32
    full = sass.RESIDENT_WARPS[int(arch.removeprefix("sm_"))]
    assert share == f"{round(100 * int(warps) / full)}%"


def test_the_block_size_table_follows_from_the_registers():
    occupancy = _occupancy()
    rows = _table("| block size")
    assert [int(r[0]) for r in rows] == [128, 256, 512, 1024]
    for block, *blocks in rows:
        got = [sass.resident_blocks(arch, int(block), int(occupancy[arch][1])) for arch in ("sm_80", "sm_90", "sm_121")]
        assert [int(b) for b in blocks] == got, block


@pytest.fixture(scope="module")
def grid_blocks(tmp_path_factory):
    """`grid_blocks` of csrc/planner.h as a function, through a program built with it."""
    compiler = next((c for c in ("c++", "g++", "clang++") if shutil.which(c)), None)
    if compiler is None:
        pytest.skip("no host C++ compiler (c++, g++ or clang++)")
    source = tmp_path_factory.mktemp("grid") / "grid.cpp"
    source.write_text(
        '#include "planner.h"\n#include <cstdio>\n#include <cstdlib>\n'
        "using gompute::plan::grid_blocks;\n"
        "int main(int argc, char** argv) {\n"
        "  auto at = [&](int i) { return std::strtoull(argv[i], nullptr, 10); };\n"
        "  for (int i = 1; i + 3 < argc; i += 4)\n"
        '    std::printf("%u\\n", grid_blocks(at(i), uint32_t(at(i + 1)), uint32_t(at(i + 2)), at(i + 3)));\n'
        "}\n"
    )
    program = source.with_suffix("")
    subprocess.run([compiler, "-std=c++17", f"-I{ROOT / 'csrc'}", str(source), "-o", str(program)], check=True)

    def run(*rows: tuple[int, int, int, int]) -> list[int]:
        args = [str(v) for row in rows for v in row]
        return [
            int(x)
            for x in subprocess.run([str(program), *args], capture_output=True, text=True, check=True).stdout.split()
        ]

    return run


def test_the_grid_table_is_what_grid_blocks_computes(grid_blocks):
    occupancy = _occupancy()
    rows = _table("| device")
    asked = []
    for device, sms, n, width, _ in rows:
        arch = device[device.index("(") + 1 : device.index(")")]
        asked.append((int(n), BLOCK, int(width), int(sms) * int(occupancy[arch][3]) * 4))
    assert grid_blocks(*asked) == [int(row[-1]) for row in rows]
    # Past the bound the grid stays at it; below it, one vector a thread.
    assert grid_blocks((10**12, BLOCK, 4, 3168), (4 * BLOCK + 1, BLOCK, 4, 3168), (0, BLOCK, 4, 3168)) == [3168, 2, 0]
    assert grid_blocks((2**64 - 1, 1, 1, 0)) == [2**31 - 1]
