"""Host module images that lie: a truncated or foreign shared object is refused by name before
dlopen maps it (a segment reaching past the end of the file faults, SIGBUS, when touched).

Each load runs in a child process (tests.interop.hostile.in_child), so a regression fails its
test rather than killing pytest.
"""

from __future__ import annotations

import hashlib
import json
import platform
import struct

from tests.interop.hostile import in_child

# Offsets in a 64-bit ELF header (elf.h's Elf64_Ehdr).
EI_CLASS, EI_DATA, E_TYPE, E_MACHINE, E_SHOFF, E_SHNUM = 4, 5, 0x10, 0x12, 0x28, 0x3C
EM_X86_64, EM_AARCH64 = 62, 183


def _patched(image: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(image)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def _without_section_headers(image: bytes) -> bytes:
    """The image with no section header table (e_shoff and e_shnum 0), as the loader allows."""
    return _patched(_patched(image, E_SHOFF, "<Q", 0), E_SHNUM, "<H", 0)


def _load_each(images: dict[str, bytes], tmp_path) -> dict[str, str]:
    """What load_module on the host says of each image, loaded in one child process."""
    for name, image in images.items():
        (tmp_path / f"{name}.so").write_bytes(image)
    lines = in_child(
        f"""
import gompute as g
from pathlib import Path
from tests.interop.hostile import outcome
host = g.runtime.host.Compute.init()
for name in {list(images)!r}:
    image = (Path({str(tmp_path)!r}) / f"{{name}}.so").read_bytes()
    print(name, outcome(lambda: host.load_module(image)))
"""
    )
    return dict(line.split(" ", 1) for line in lines)


def test_a_truncated_shared_object_is_refused_before_dlopen(host_image, tmp_path):
    said = _load_each(
        {"first-4k": host_image[:4096], "header-only": host_image[:64], "one-byte-short": host_image[:-1]},
        tmp_path,
    )
    for name, size in (("first-4k", 4096), ("header-only", 64), ("one-byte-short", len(host_image) - 1)):
        assert said[name].startswith("ModuleLoadFailed: cannot load the host module: its section header table (")
        assert said[name].endswith(f"ends past the image's {size} bytes: the file is truncated or corrupt")


def test_a_segment_past_the_end_of_the_image_is_refused(host_image, tmp_path):
    said = _load_each({"cut": _without_section_headers(host_image)[:4096]}, tmp_path)
    assert said["cut"].startswith("ModuleLoadFailed: cannot load the host module: its segment ")
    assert "(PT_LOAD) (" in said["cut"]
    assert said["cut"].endswith("ends past the image's 4096 bytes: the file is truncated or corrupt")


def test_an_image_for_another_machine_or_class_is_refused_by_name(host_image, tmp_path):
    native, other = (EM_AARCH64, EM_X86_64) if platform.machine() in ("aarch64", "arm64") else (EM_X86_64, EM_AARCH64)
    names = {EM_X86_64: "x86-64", EM_AARCH64: "AArch64"}
    said = _load_each(
        {
            "machine": _patched(host_image, E_MACHINE, "<H", other),
            "class32": _patched(host_image, EI_CLASS, "B", 1),
            "big-endian": _patched(host_image, EI_DATA, "B", 2),
            "executable": _patched(host_image, E_TYPE, "<H", 2),
        },
        tmp_path,
    )
    prefix = "ModuleLoadFailed: cannot load the host module: "
    assert said["machine"] == f"{prefix}it is built for {names[other]}, and this machine is {names[native]}"
    assert said["class32"] == f"{prefix}it is a 32-bit ELF file, and this machine loads 64-bit ones"
    assert said["big-endian"] == f"{prefix}its byte order is not this machine's"
    assert said["executable"] == f"{prefix}it is an ELF file of type 2, not a shared object"


def test_the_whole_image_still_loads(host_image, tmp_path):
    assert _load_each({"whole": host_image}, tmp_path) == {"whole": "ok"}


def test_a_truncated_module_planted_in_the_kernel_cache_is_refused_or_rebuilt(tmp_path):
    """An entry whose binary was cut short and whose checksum in meta.json was updated to match
    passes the cache's check, and goes to load_module like any other."""
    run = """
import numpy as np
from gompute.kernel import AutoKernel
from tests.interop.hostile import outcome
from tests.map.kernels import double
x = np.arange(6, dtype=np.float32)
result = []
print(outcome(lambda: result.append(AutoKernel(double)(x))), *(r.tolist() for r in result))
"""
    env = {"GOMPUTE_CACHE_DIR": str(tmp_path)}
    assert in_child(run, env) == ["ok [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]"]  # builds the entry
    entries = [meta.parent for meta in tmp_path.glob("*/meta.json")]
    assert len(entries) == 1
    meta = json.loads((entries[0] / "meta.json").read_text())
    binary = entries[0] / meta["binary"]
    binary.write_bytes(binary.read_bytes()[:4096])
    meta["files"][meta["binary"]] = hashlib.sha256(binary.read_bytes()).hexdigest()
    (entries[0] / "meta.json").write_text(json.dumps(meta))
    (said,) = in_child(run, env)
    rebuilt = said == "ok [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]"
    assert rebuilt or said.startswith("ModuleLoadFailed: cannot load the host module: its section header table ")
