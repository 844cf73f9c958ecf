"""The machine code of the benchmark kernels, read without a GPU (tests/sass.py).

Every entry point (inplace, map, strided) of scale_relu, the fused 3-input kernel, GELU and the
Newton loop, in f32, f64 and f16, compiled for sm_80, sm_90 and the newest arch the installed
NVRTC knows: none touches thread-local memory, each keeps to a register budget that holds the
occupancy its entry needs, and the contiguous ones read and write 16 bytes at a time. One module
per element type and arch holds all four kernels.
"""

from __future__ import annotations

import functools

import pytest

from benchmarks.kernels import FAMILIES
from tests import sass

pytestmark = pytest.mark.skipif(sass.missing() is not None, reason=sass.missing() or "")

ARCHS = ("sm_80", "sm_90", "newest")
ENTRIES = [
    (dtype, name, entry.kind)
    for dtype, family in FAMILIES.items()
    for name, kernel in family.items()
    for entry in kernel.specialize().entry_points()
]

# A contiguous entry ("inplace", "map") keeps a 16-byte vector of each array live beside the
# kernel's math on as many elements (lang/entries.py), and the scalar loop's indices: it need not
# fill every warp slot to hide memory latency, since each of its loads asks for 16 bytes where a
# scalar one asked for 2 to 8. Little's law: an SM must have bandwidth x latency / SMs in flight,
# about 3.35 TB/s x 600 ns / 132 = 15 KB on an H100 SXM (2.0 TB/s over 108 SMs on an A100, 11 KB);
# three quarters of sm_80's or sm_90's 64 warps with one 16-byte load each is 24 KB a pass, per
# input. At 256 threads a block that is 6 blocks, 40 registers a thread (64 on sm_12x, whose SM
# keeps 48 warps: 4 blocks).
# A strided entry also keeps live, beside the kernel's math, a 64-bit offset per array and the
# coordinates of the element, found by 64-bit division by each dimension's extent: that does not
# fit in 32 registers without recomputing the divisions. Half the resident warps still hide a
# load's latency for a map that does one load per input; the budget catches an entry whose
# register count doubles, short of a spill, which the local-memory test catches.
OCCUPANCY = {"inplace": 0.75, "map": 0.75, "strided": 0.5}


def _arch(arch: str) -> str:
    return sass.newest_arch() if arch == "newest" else arch


@functools.cache
def _functions(dtype: str, arch: str) -> dict[str, sass.Function]:
    family = FAMILIES[dtype]
    return sass.of_kernels([k.specialize() for k in family.values()], arch, f"sass_bench_{dtype}")


def _entry(dtype: str, name: str, kind: str, arch: str) -> sass.Function:
    return _functions(dtype, arch)[FAMILIES[dtype][name].specialize().entry(kind).symbol]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype, name, kind", ENTRIES)
def test_no_entry_touches_thread_local_memory(dtype, name, kind, arch):
    """Spills and local arrays live in thread-local memory (DRAM behind L1); ptxas counts a
    spill in the stack frame (STACK), local variables in LOCAL, and either shows as LDL/STL."""
    arch = _arch(arch)
    f = _entry(dtype, name, kind, arch)
    accesses = [str(i) for i in f.local_accesses()]
    assert (f.stack, f.local, accesses) == (0, 0, []), (
        f"{f.name} ({dtype}) on {arch}: stack {f.stack} B, local {f.local} B, {len(accesses)} local accesses "
        f"{accesses[:5]}"
    )


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype, name, kind", ENTRIES)
def test_registers_keep_the_entrys_occupancy(dtype, name, kind, arch):
    arch = _arch(arch)
    kernel = FAMILIES[dtype][name]
    f = _entry(dtype, name, kind, arch)
    budget = sass.occupancy_registers(arch, kernel.block_size, OCCUPANCY[kind])
    assert f.registers <= budget, (
        f"{f.name} ({dtype}) on {arch} takes {f.registers} registers; {OCCUPANCY[kind]:.0%} occupancy at "
        f"{kernel.block_size} threads a block allows {budget}"
    )


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype, name, kind", [e for e in ENTRIES if e[2] != "strided"])
def test_contiguous_entries_move_16_bytes_at_a_time(dtype, name, kind, arch):
    """Every input is read, and the output written, with one 128-bit access a vector (nvdisasm
    spells a load LDG.E.128 and may add modifiers, .CONSTANT for read-only data); the 2-, 4- or
    8-byte accesses left are the scalar elements before and after the vectors."""
    arch = _arch(arch)
    f = _entry(dtype, name, kind, arch)
    arrays = FAMILIES[dtype][name].arity if kind == "map" else 1
    loads, stores = f.find("LDG.E.128"), f.find("STG.E.128")
    assert len(loads) >= arrays and len(stores) >= 1, (
        f"{f.name} ({dtype}) on {arch}: {len(loads)} 16-byte loads for {arrays} inputs, {len(stores)} 16-byte "
        f"stores; its accesses: {sorted({i.opcode for i in f.find('LDG') + f.find('STG')})}"
    )


# A kernel that spills for certain: 48 values live at once under a 32-register cap
# (__launch_bounds__ of 8 blocks of 256 threads on a 2048-thread SM), with float4 traffic.
SPILLING = """
extern "C" __global__ void __launch_bounds__(256, 8) spills(const float* in, float4* out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[48];
    #pragma unroll
    for (int j = 0; j < 48; ++j) v[j] = in[i + j * 4096];
    float s = 0;
    #pragma unroll
    for (int j = 0; j < 48; ++j) s = s * v[47 - j] + v[j];
    #pragma unroll
    for (int j = 0; j < 48; ++j) s = s * v[j] + v[(j * 7) % 48];
    out[i] = make_float4(s, s, s, s);
}
"""


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_the_reader_sees_spills_and_wide_stores_where_they_are(arch):
    """The checks above pass on what the tools show; a kernel made to spill shows it."""
    f = sass.of_source("sass_spills", SPILLING, arch)["spills"]
    assert f.registers <= sass.occupancy_registers(arch, 256)
    assert f.stack > 0 and f.find("STL") and f.find("LDL")
    assert [i.opcode for i in f.find("STG")] == ["STG.E.128"]
    assert f.find("LDG") and all(i.opcode == "LDG.E" for i in f.find("LDG"))
