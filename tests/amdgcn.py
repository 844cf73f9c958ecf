"""The AMD GPU machine code of a kernel, read without a GPU.

A module is compiled to an HSACO code object for one gfx arch through gompute's own hiprtc path
(the source, options and cache a launch would use), then read with LLVM's tools, which know
AMDGPU in every Debian/Ubuntu build: llvm-objdump gives each kernel's instructions, llvm-readelf
the code object's metadata note (registers, spills, scratch). Where hiprtc or the tools are
missing, `missing()` says what to install, for a skip.

    kernels = amdgcn.of_kernels([k.specialize() for k in kernels], "gfx90a", "name")
    k = kernels["scale_relu"]
    k.vgprs, k.scratch, k.find("global_load")
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gompute.compile import hiprtc
from gompute.lang.kernel import compile_module
from gompute.lang.module import Specialization

# Unversioned first, then Debian's versioned names, newest first: any LLVM since 13 reads
# gfx90a and gfx1030 code objects.
TOOL_VERSIONS = ("",) + tuple(f"-{v}" for v in range(22, 12, -1))
PACKAGES = "libamdhip64-5 (hiprtc) and llvm-15 (llvm-objdump, llvm-readelf)"
# Instructions that reach scratch (private) memory: spills, and arrays the compiler keeps in memory.
SCRATCH_PREFIXES = ("scratch_", "buffer_load", "buffer_store")


@dataclass(frozen=True)
class Kernel:
    """One kernel of a code object, from its metadata note and its disassembly."""

    name: str
    vgprs: int
    sgprs: int
    spills: int  # vector and scalar registers spilled to scratch
    scratch: int  # private segment bytes per work-item: spills and local arrays in memory
    dynamic_stack: bool
    max_block: int  # .max_flat_workgroup_size: the launch bound the kernel was compiled for
    instructions: tuple[str, ...]  # each as llvm-objdump writes it: "global_load_dword v1, v[0:1], off"

    def find(self, prefix: str) -> list[str]:
        """The instructions whose opcode starts with `prefix`: "global_load" holds global_load_dwordx2."""
        return [i for i in self.instructions if i.split(" ", 1)[0].startswith(prefix)]

    def scratch_accesses(self) -> list[str]:
        return [i for p in SCRATCH_PREFIXES for i in self.find(p)]


@functools.cache
def tool(name: str) -> str | None:
    """`name` ("llvm-objdump", "llvm-readelf") on the PATH from an LLVM that knows amdgcn, or None;
    both tools are taken from the LLVM version llvm-objdump is found in."""
    for suffix in TOOL_VERSIONS:
        objdump = shutil.which(f"llvm-objdump{suffix}")
        if objdump and "amdgcn" in subprocess.run([objdump, "--version"], capture_output=True, text=True).stdout:
            return shutil.which(f"{name}{suffix}")
    return None


def missing() -> str | None:
    """Why AMD machine code cannot be read here (for a skip), or None."""
    if not hiprtc.available():
        return f"no hiprtc: apt install {PACKAGES}, or install ROCm"
    if tool("llvm-objdump") is None or tool("llvm-readelf") is None:
        return f"no llvm-objdump/llvm-readelf that knows amdgcn: apt install {PACKAGES}"
    return None


def of_kernels(specs: list[Specialization], arch: str, name: str) -> dict[str, Kernel]:
    """Each kernel of the module holding `specs`, compiled for `arch`, by symbol."""
    image = compile_module(specs, "hip", arch, name)
    return read(image.data, arch)


def read(code_object: bytes, arch: str) -> dict[str, Kernel]:
    """Each kernel of an HSACO code object for `arch`, by symbol."""
    with tempfile.TemporaryDirectory(prefix="gompute-amdgcn-") as folder:
        path = Path(folder) / f"{arch}.hsaco"
        path.write_bytes(code_object)
        notes = _run(tool("llvm-readelf"), "--notes", str(path))
        listing = _run(tool("llvm-objdump"), "-d", f"--mcpu={arch}", str(path))
    bodies = _bodies(listing)
    return {
        m["name"]: Kernel(
            name=m["name"],
            vgprs=int(m["vgpr_count"]),
            sgprs=int(m["sgpr_count"]),
            spills=int(m["vgpr_spill_count"]) + int(m["sgpr_spill_count"]),
            scratch=int(m["private_segment_fixed_size"]),
            dynamic_stack=m.get("uses_dynamic_stack", "false") == "true",
            max_block=int(m["max_flat_workgroup_size"]),
            instructions=bodies.get(m["name"], ()),
        )
        for m in _kernel_metadata(notes)
    }


def _run(*argv: str | None) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def _kernel_metadata(notes: str) -> list[dict[str, str]]:
    """The scalar fields of each entry of `amdhsa.kernels` in llvm-readelf's YAML of the note.
    Each entry starts at "  - "; its own fields are the lines indented by four spaces."""
    kernels: list[dict[str, str]] = []
    inside = False
    for line in notes.splitlines():
        if line.startswith("amdhsa.kernels:"):
            inside = True
        elif inside and line and not line.startswith(" "):
            inside = False
        elif inside:
            field = re.match(r"  (?:- |  )\.(\w+):\s+(\S+)$", line)
            if line.startswith("  - "):
                kernels.append({})
            if field:
                kernels[-1][field.group(1)] = field.group(2)
    return kernels


def _bodies(listing: str) -> dict[str, tuple[str, ...]]:
    """Each function's instructions in llvm-objdump's listing, the encoding comment dropped."""
    bodies: dict[str, list[str]] = {}
    current: list[str] = []
    for line in listing.splitlines():
        label = re.match(r"[0-9a-f]+ <([^>]+)>:$", line)
        if label:
            current = bodies.setdefault(label.group(1), [])
        elif line.startswith("\t"):
            current.append(line.split("//", 1)[0].strip())
    return {name: tuple(body) for name, body in bodies.items()}
