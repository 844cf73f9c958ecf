"""The runtime compilers' shared flow (gompute/compile/rtc.py), over a stand-in library.

NVRTC and hiprtc are driven by one `RuntimeCompiler`; the stand-in below implements their
common API under either prefix in Python, so the flow (options, log, output, errors, the
program always destroyed, the disk cache) is tested for both without a GPU toolkit.
"""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import pytest

from gompute import CompileError, SourceRejected
from gompute.compile import DiskCache, hiprtc, nvrtc

ERRORS = {1: b"OUT_OF_MEMORY", 6: b"COMPILATION"}


def fake_library(prefix: str, *, code: bytes = b"CODE", log: bytes = b"", status: int = 0, size_status: int = 0):
    """A runtime compiler library whose entry points are Python functions; `lib.seen` records
    the options of each compile and the programs still alive."""
    seen = SimpleNamespace(options=[], alive=set(), compiled=0)

    def create(prog, source, filename, *_):
        prog._obj.value = 1000 + len(seen.alive)
        seen.alive.add(prog._obj.value)
        return 0

    def compile_program(prog, n, argv):
        seen.options.append([argv[i].decode() for i in range(n)])
        seen.compiled += 1
        return status

    def put_size(data):
        def get_size(prog, size):
            size._obj.value = len(data)
            return size_status

        return get_size

    def put(data):
        def get(prog, buffer):
            ctypes.memmove(buffer, data, len(data))
            return 0

        return get

    def version(major, minor):
        major._obj.value, minor._obj.value = 12, 4
        return 0

    def archs_count(n):
        n._obj.value = 2
        return 0

    def archs(out):
        out[0], out[1] = 75, 90
        return 0

    functions = {
        "CreateProgram": create,
        "CompileProgram": compile_program,
        "DestroyProgram": lambda prog: seen.alive.discard(prog._obj.value) or 0,
        "GetProgramLogSize": put_size(log + b"\0"),
        "GetProgramLog": put(log + b"\0"),
        "GetErrorString": lambda status: ERRORS[status],
        "Version": version,
        "GetNumSupportedArchs": archs_count,
        "GetSupportedArchs": archs,
        "GetCodeSize": put_size(code),
        "GetCode": put(code),
        "GetPTXSize": put_size(code + b"\0"),
        "GetPTX": put(code + b"\0"),
        "GetCUBINSize": put_size(code),
        "GetCUBIN": put(code),
    }
    lib = SimpleNamespace(**{prefix + name: fn for name, fn in functions.items()})
    lib.seen = seen
    return lib


@pytest.fixture(params=["hip", "cuda"])
def vendor(request):
    """(the compiler class, its API prefix, an arch it takes, the option naming that arch)."""
    if request.param == "hip":
        return hiprtc.Hiprtc, "hiprtc", "gfx90a", "--offload-arch=gfx90a"
    return nvrtc.Nvrtc, "nvrtc", "sm_90", "--gpu-architecture=sm_90"


def test_a_compile_passes_the_options_and_returns_the_code_and_log(vendor):
    kind, prefix, arch, arch_option = vendor
    lib = fake_library(prefix, log=b"a warning")
    code, log = kind(lib, f"/lib/lib{prefix}.so").compile("int x;", arch)
    assert (code, log) == (b"CODE", "a warning")
    assert lib.seen.options == [[*kind.options, arch_option]]
    assert not lib.seen.alive


def test_nvrtcs_ptx_comes_without_its_terminating_nul():
    lib = fake_library("nvrtc")
    code, _ = nvrtc.Nvrtc(lib, "libnvrtc.so").compile("int x;", "compute_75")
    assert code == b"CODE"


def test_a_rejected_source_raises_with_the_log_and_destroys_the_program(vendor):
    kind, prefix, arch, _ = vendor
    lib = fake_library(prefix, log=b"source.cu(1): error: expected a ';'", status=6)
    with pytest.raises(SourceRejected) as raised:
        kind(lib, "lib.so").compile("int x", arch, filename="/cache/k/source.cu")
    message = str(raised.value)
    assert message.startswith(f"{kind.title} failed for {arch} (COMPILATION).\nsource: /cache/k/source.cu\n")
    assert message.endswith("expected a ';'") and not lib.seen.alive


def test_a_failed_call_is_a_compile_error_naming_it(vendor):
    kind, prefix, arch, _ = vendor
    lib = fake_library(prefix, size_status=1)
    with pytest.raises(CompileError, match=rf"^{prefix}Get\w+Size failed: OUT_OF_MEMORY$"):
        kind(lib, "lib.so").compile("int x;", arch)
    assert not lib.seen.alive


def test_an_arch_the_compiler_does_not_take_is_refused_before_a_program_exists(vendor):
    kind, prefix, _, _ = vendor
    lib = fake_library(prefix)
    with pytest.raises(CompileError, match="arch|cannot compile"):
        kind(lib, "lib.so").compile("int x;", "sm_10" if prefix == "nvrtc" else "sm_90")
    assert lib.seen.compiled == 0 and not lib.seen.alive


def test_the_cache_key_names_the_compiler_and_a_hit_compiles_nothing(vendor, tmp_path):
    kind, prefix, arch, _ = vendor
    lib = fake_library(prefix)
    compiler = kind(lib, f"/opt/lib{prefix}.so.12")
    cache = DiskCache(tmp_path)
    data, folder = compiler.compile_cached("k", "int x;", arch, "k.bin", cache)
    again, same = compiler.compile_cached("k", "int x;", arch, "k.bin", cache)
    assert data == again == b"CODE" and folder == same and lib.seen.compiled == 1
    assert (folder / f"source{kind.source_suffix}").read_text() == "int x;"
    assert f"{prefix} 12.4 lib{prefix}.so.12" in (folder / "meta.json").read_text()
