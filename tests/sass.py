"""The NVIDIA machine code (SASS) of a kernel, read without a GPU.

A module is compiled to a CUBIN for one `sm_XX` through gompute's own NVRTC path (the source,
options and cache a launch would use), then read with the disassemblers NVIDIA ships as wheels
(`nvidia-cuda-cuobjdump`, `nvidia-cuda-nvdisasm`): cuobjdump gives each function's resources,
nvdisasm its instructions. Any test can ask; where a tool or NVRTC is missing, `missing()` says
what to install, for a skip.

    functions = sass.of_kernels([k.specialize() for k in kernels], "sm_90", "name")
    f = functions["scale_relu"]
    f.registers, f.local, f.stack, f.find("LDG")
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gompute.compile import nvrtc
from gompute.lang.kernel import compile_module
from gompute.lang.module import Specialization

# Each tool's wheel, newest CUDA major first: a disassembler reads the arches of its own
# release and older ones, and NVRTC's newest arch needs the newest release.
TOOL_WHEELS = {
    "cuobjdump": ("nvidia-cuda-cuobjdump", "nvidia-cuda-cuobjdump-cu12"),
    "nvdisasm": ("nvidia-cuda-nvdisasm", "nvidia-cuda-nvdisasm-cu12"),
}
SPILL_OPCODES = ("LDL", "STL")  # loads and stores of thread-local memory: spills and local arrays

REGISTERS_PER_SM = 65536  # 32-bit registers in one SM's register file, on every arch NVRTC targets
REGISTER_UNIT = 256  # registers are given to a warp in multiples of this
# The warps one SM keeps resident, by compute capability (CUDA programming guide, technical
# specifications). An arch not listed is taken to keep 64, the most of any: its budget is then
# the strictest there is, never a lenient guess.
RESIDENT_WARPS = {75: 32, 80: 64, 86: 48, 89: 48, 90: 64, 100: 64, 120: 48, 121: 48}


@dataclass(frozen=True)
class Instruction:
    opcode: str  # with its modifiers: "LDG.E.128"
    operands: str  # as nvdisasm spells them, comma-separated: "R2,desc[UR4][R2.64]"
    predicate: str  # "" or the guard: "@!P0"

    def __str__(self) -> str:
        return " ".join(part for part in (self.predicate, self.opcode, self.operands) if part)


@dataclass(frozen=True)
class Function:
    """One function of a CUBIN, usually an entry point; sizes in bytes per thread."""

    name: str
    registers: int
    stack: int  # the call stack of its subroutine calls
    local: int  # thread-local memory: register spills and arrays kept in memory
    shared: int  # static shared memory, per block
    instructions: tuple[Instruction, ...]

    def find(self, opcode: str) -> list[Instruction]:
        """The instructions of `opcode`, with any modifiers: find("LDG") holds LDG.E and LDG.E.128."""
        return [i for i in self.instructions if i.opcode == opcode or i.opcode.startswith(opcode + ".")]

    def local_accesses(self) -> list[Instruction]:
        """Every load or store of thread-local memory (none where nothing spills)."""
        return [i for op in SPILL_OPCODES for i in self.find(op)]


def tool(name: str) -> Path | None:
    """The `name` ("cuobjdump", "nvdisasm") an installed NVIDIA wheel carries, or None."""
    for dist in TOOL_WHEELS[name]:
        try:
            files = importlib.metadata.files(dist) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for file in files:
            if file.name == name and file.parent.name == "bin":
                path = Path(file.locate())
                if path.is_file():
                    return path
    return None


def missing() -> str | None:
    """Why SASS cannot be read here (what to install), or None where it can."""
    if not nvrtc.available():
        return "NVRTC not installed (pip install nvidia-cuda-nvrtc cuda-pathfinder)"
    absent = [TOOL_WHEELS[name][0] for name in TOOL_WHEELS if tool(name) is None]
    return f"no SASS tools (pip install {' '.join(absent)})" if absent else None


def newest_arch() -> str:
    """The newest real arch the installed NVRTC compiles for: "sm_121"."""
    return f"sm_{max(nvrtc.load().supported_archs)}"


def occupancy_registers(arch: str, block_size: int, fraction: float = 1.0) -> int:
    """The most registers per thread at which the register file of one `arch` SM ("sm_90") holds
    blocks of `block_size` threads filling `fraction` of its resident warps: 32 for a full sm_90
    of 256-thread blocks (8 blocks of 8 warps, 1024 registers a warp). Only the register file is
    modelled; shared memory and the block-count limit do not bind for the maps gompute generates."""
    warps_per_block = -(-block_size // 32)
    blocks = int(RESIDENT_WARPS.get(nvrtc.parse_arch(arch)[1], 64) * fraction) // warps_per_block
    per_warp = REGISTERS_PER_SM // (max(blocks, 1) * warps_per_block) // REGISTER_UNIT * REGISTER_UNIT
    return min(per_warp // 32, 255)


def resident_blocks(arch: str, block_size: int, registers: int) -> int:
    """Blocks of `block_size` threads using `registers` registers a thread that one `arch` SM
    holds at once: as many as its register file (given to a warp in units of 256) and its resident
    warps allow. The block-count limit (16 or more on every arch) binds only below 128 threads."""
    warps_per_block = -(-block_size // 32)
    per_warp = -(-registers * 32 // REGISTER_UNIT) * REGISTER_UNIT
    by_registers = REGISTERS_PER_SM // (per_warp * warps_per_block)
    return min(by_registers, RESIDENT_WARPS.get(nvrtc.parse_arch(arch)[1], 64) // warps_per_block)


def of_kernels(specs: list[Specialization], arch: str, name: str) -> dict[str, Function]:
    """Every function of the module gompute builds for `specs` on `arch` ("sm_90"), by symbol."""
    return read_cubin(compile_module(specs, "cuda", arch, name).data)


def of_source(name: str, source: str, arch: str) -> dict[str, Function]:
    """Every function of CUDA `source` compiled by gompute's NVRTC path for `arch`, by symbol."""
    cubin, _ = nvrtc.compile_cuda(name, source, arch)
    return read_cubin(cubin)


def read_cubin(cubin: bytes) -> dict[str, Function]:
    """Every function of a CUBIN with its resources and instructions, by symbol."""
    with tempfile.TemporaryDirectory(prefix="gompute-sass-") as folder:
        path = Path(folder) / "module.cubin"
        path.write_bytes(cubin)
        usage = parse_resource_usage(_run("cuobjdump", "--dump-resource-usage", str(path)))
        code = parse_disassembly(_run("nvdisasm", "--emit-json", str(path)))
    if usage.keys() != code.keys():
        raise ValueError(f"cuobjdump lists functions {sorted(usage)}, nvdisasm {sorted(code)}")
    return {
        name: Function(name, res["REG"], res["STACK"], res["LOCAL"], res.get("SHARED", 0), tuple(code[name]))
        for name, res in usage.items()
    }


def _run(name: str, *args: str) -> str:
    path = tool(name)
    if path is None:
        raise FileNotFoundError(f"{name} not installed (pip install {TOOL_WHEELS[name][0]})")
    done = subprocess.run([str(path), *args], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{name} {' '.join(args)} failed ({done.returncode}):\n{done.stderr}{done.stdout}")
    return done.stdout


_FUNCTION = re.compile(r"^\s*Function\s+(\S+?):\s*$")
_RESOURCE = re.compile(r"([A-Z_]+(?:\[\d+\])?):(\d+)")
_NEEDED = ("REG", "STACK", "LOCAL")


def parse_resource_usage(text: str) -> dict[str, dict[str, int]]:
    """cuobjdump --dump-resource-usage → {function: {"REG": 12, "STACK": 0, "LOCAL": 0, ...}}.

    Each function is a "Function <name>:" line, then "KEY:value" pairs on the lines up to the
    next heading; the module-wide "Common:" block belongs to no function."""
    found: dict[str, dict[str, int]] = {}
    current = None
    for line in text.splitlines():
        heading = _FUNCTION.match(line)
        if heading:
            current = found.setdefault(heading.group(1), {})
        elif line.strip().endswith(":") and not _RESOURCE.search(line):
            current = None  # "Common:", "Resource usage:" or a new section
        elif current is not None:
            current.update((key, int(value)) for key, value in _RESOURCE.findall(line))
    for name, res in found.items():
        lacking = [key for key in _NEEDED if key not in res]
        if lacking:
            raise ValueError(f"cuobjdump gave no {', '.join(lacking)} for {name}:\n{text}")
    return found


def parse_disassembly(text: str) -> dict[str, list[Instruction]]:
    """nvdisasm --emit-json → {function: its instructions}.

    The document is a list: a header object (ELF, SM, the schema version), then a list of
    functions, each with "function-name" and "sass-instructions"; an instruction has an
    "opcode" and, where it has them, "operands" and a "predicate"."""
    functions = next(
        (part for part in json.loads(text) if isinstance(part, list)),
        None,
    )
    if functions is None:
        raise ValueError(f"nvdisasm --emit-json gave no function list:\n{text[:2000]}")
    return {
        f["function-name"]: [
            Instruction(i["opcode"], i.get("operands", ""), i.get("predicate", "")) for i in f["sass-instructions"]
        ]
        for f in functions
    }
