"""HIP with a real hiprtc and no AMD GPU: finding hiprtc where ROCm puts it, and every test
kernel compiled for gfx90a (CDNA2) and gfx1030 (RDNA2) and read back as machine code.

What a CPU machine can check of the HIP path: the generated HIP text and its prelude compile
with the hiprtc installed (Debian's ROCm 5.2 here, in CI), every entry point is in the code
object with the launch bound gompute launches it with, its loads and stores go to global
memory, 16 bytes at a time in the contiguous entries, and nothing spills or uses scratch.
Whether the kernels compute the right values on an AMD device needs one.
"""

from __future__ import annotations

import ctypes.util
import json
import os
import re
import subprocess
import sys

import pytest

import gompute as g
from benchmarks.kernels import FAMILIES
from gompute import _core
from gompute import types as T
from gompute.compile import DiskCache, hiprtc
from gompute.errors import CompileError
from gompute.lang.entries import vector_elements
from tests import amdgcn
from tests.lang import sample_kernels as S
from tests.map import kernels as M

ARCHS = ("gfx90a", "gfx1030")
SAMPLES = [S.scale_relu, S.collatz, S.loops, S.branches, S.values, S.casts, S.half_ops, S.bf16_ops]
MAP_KERNELS = [M.scale_relu, M.axpy, M.is_positive, M.scale_half, M.to_bf16, M.relax, M.pick]
needs_tools = pytest.mark.skipif(amdgcn.missing() is not None, reason=amdgcn.missing() or "")


@pytest.fixture
def fresh_load():
    hiprtc.load.cache_clear()
    yield hiprtc.load
    hiprtc.load.cache_clear()


def _sample_specs():
    specs = [k.specialize() for k in SAMPLES] + [S.generic_mix.specialize(T.f16, T.i64)]
    specs += [S.scale_relu.variant((T.i16,), T.f64), S.half_ops.variant((T.i8, T.f16), T.f32)]
    return specs + [S.bf16_ops.variant((T.u8, T.i16), T.f64), S.fill.variant((), T.f64)]


def _map_specs():
    specs = [k.specialize() for k in MAP_KERNELS]
    specs += [M.add.specialize(T.f32, T.f32), M.add.specialize(T.i64, T.f64), M.double.specialize(T.f16)]
    return specs + [M.double.specialize(T.i8)]  # one-byte lanes, 16 to a dwordx4


# The modules compiled for each arch: the language's samples (as test_nvrtc.py compiles them for
# CUDA), the kernels the g.map tests launch, and the benchmark kernels in each element type. Their
# names overlap, so they cannot share a module.
MODULES = {"samples": _sample_specs, "map": _map_specs}
MODULES |= {f"bench_{t}": (lambda f=family: [k.specialize() for k in f.values()]) for t, family in FAMILIES.items()}


@pytest.fixture(scope="module", params=[(arch, m) for arch in ARCHS for m in MODULES], ids="-".join)
def compiled(request):
    if amdgcn.missing():
        pytest.skip(amdgcn.missing())
    arch, module = request.param
    specs = MODULES[module]()
    return specs, amdgcn.of_kernels(specs, arch, f"test_hip_{module}")


def _entries(specs):
    return [(spec, e) for spec in specs for e in spec.entry_points()]


def test_every_entry_point_is_in_the_code_object_with_its_block_size(compiled):
    specs, kernels = compiled
    for spec, entry in _entries(specs):
        assert entry.symbol in kernels, entry.symbol
        kernel = kernels[entry.symbol]
        assert kernel.instructions, f"{entry.symbol}: no instructions in the disassembly"
        assert kernel.max_block == spec.block_size, entry.symbol


def test_inputs_are_loaded_and_results_stored_through_global_memory(compiled):
    specs, kernels = compiled
    for _, entry in _entries(specs):
        kernel = kernels[entry.symbol]
        reads = entry.kind == "inplace" or any(a.kind == "pointer" and a.name != "out" for a in entry.args)
        assert kernel.find("global_store"), f"{entry.symbol} stores nothing to global memory"
        assert bool(kernel.find("global_load")) == reads, entry.symbol
        assert not kernel.find("flat_"), f"{entry.symbol}: generic (flat) accesses: {kernel.find('flat_')[:3]}"


def test_contiguous_entries_move_16_bytes_at_a_time(compiled):
    """A contiguous entry moves 16 bytes of its widest type at a time (lang/entries.py): those
    arrays are read with global_load_dwordx4 and written with global_store_dwordx4."""
    specs, kernels = compiled
    narrow, checked = {}, 0
    for _, entry in _entries(specs):
        if entry.kind == "strided" or vector_elements(entry) == 1:
            continue
        kernel, pointers = kernels[entry.symbol], [a for a in entry.args if a.kind == "pointer"]
        widest = max(p.type.itemsize for p in pointers)
        read = pointers if entry.kind == "inplace" else pointers[:-1]
        if any(p.type.itemsize == widest for p in read) and not kernel.find("global_load_dwordx4"):
            narrow[entry.symbol] = sorted({i.split()[0] for i in kernel.find("global_load")})
        if pointers[-1].type.itemsize == widest:
            assert kernel.find("global_store_dwordx4"), f"{entry.symbol}: {sorted(set(kernel.find('global_store')))}"
        checked += 1
    assert checked
    assert not narrow, f"loads narrower than 16 bytes: {narrow}"


def test_no_entry_spills_or_uses_scratch(compiled):
    _, kernels = compiled
    for kernel in kernels.values():
        assert (kernel.scratch, kernel.spills, kernel.dynamic_stack) == (0, 0, False), kernel
        assert not kernel.scratch_accesses(), f"{kernel.name}: {kernel.scratch_accesses()[:3]}"


@needs_tools
def test_every_operator_and_builtin_compiles_for_hip():
    """The prelude's helpers and every builtin's HIP spelling, through hiprtc (one arch: the
    front end that could refuse them is the same for every arch)."""
    from tests.lang.test_ops import CASES, _spec

    kernels = amdgcn.of_kernels([_spec(c) for c in CASES], "gfx90a", "test_hip_ops")
    symbols = [e.symbol for c in CASES for e in _spec(c).entry_points()]
    assert symbols and all(s in kernels for s in symbols)
    assert not [k.name for k in kernels.values() if k.scratch or k.spills]


@needs_tools
def test_compile_for_gives_an_hsaco_in_the_cache():
    image = S.scale_relu.compile_for("hip", "gfx1030")
    assert image.format == "hsaco" and image.data[:4] == b"\x7fELF"
    assert (image.cache_dir / "gfx1030.hsaco").read_bytes() == image.data
    assert (image.cache_dir / "source.hip").read_text() == S.scale_relu.source("hip")


@needs_tools
def test_the_cache_key_names_the_file_hiprtc_was_loaded_from():
    """hiprtcVersion answers 9.0 in every ROCm release: the key holds the library's real file, so
    that code compiled by one ROCm is not served after an upgrade."""
    found = hiprtc.load()
    image = S.loops.compile_for("hip", "gfx90a")
    key = json.loads((image.cache_dir / "meta.json").read_text())["key"]
    assert key["compiler"] == found.identity
    path = found.identity.split()[3]
    assert os.path.isfile(path) and os.path.realpath(path) == path
    assert os.path.basename(path).startswith(("libhiprtc.so", "libamdhip64.so"))


@needs_tools
def test_hiprtc_failure_carries_the_log_and_the_source_path(tmp_path):
    with pytest.raises(CompileError) as info:
        hiprtc.compile_hip(
            "broken", 'extern "C" __global__ void k() { undeclared_thing(); }', "gfx90a", DiskCache(tmp_path)
        )
    message = str(info.value)
    assert "undeclared_thing" in message and "error" in message
    path = re.search(r"source: (\S+)", message).group(1)
    assert open(path).read().startswith('extern "C"')


def test_the_runtime_library_is_tried_after_libhiprtc(monkeypatch):
    for var in ("HIP_PATH", "ROCM_PATH"):
        monkeypatch.delenv(var, raising=False)
    candidates = hiprtc._candidates()
    runtime = [i for i, p in enumerate(candidates) if "libamdhip64" in p]
    compiler = [i for i, p in enumerate(candidates) if "libhiprtc" in p]
    assert runtime and compiler and max(compiler) < min(runtime)
    assert "/opt/rocm/lib/libamdhip64.so.5" in candidates and "libamdhip64.so.5" in candidates


@pytest.mark.skipif(not ctypes.util.find_library("amdhip64"), reason="no libamdhip64 (apt install libamdhip64-5)")
def test_hiprtc_inside_libamdhip64_is_found_without_libhiprtc(fresh_load, monkeypatch):
    monkeypatch.delenv(hiprtc.ENV_VAR, raising=False)
    monkeypatch.setattr(hiprtc, "_SONAMES", ("/nonexistent/libhiprtc.so",))
    find = ctypes.util.find_library
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None if name == "hiprtc" else find(name))
    try:
        found = fresh_load()
    except CompileError as e:  # ROCm 6 on: its libamdhip64 has no hiprtc
        pytest.skip(f"this libamdhip64 does not carry hiprtc: {e}")
    assert "libamdhip64" in found.path
    data, _ = found.compile('extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }', "gfx90a")
    assert data[:4] == b"\x7fELF"


def test_an_override_that_does_not_load_says_where_and_what_to_install(fresh_load, monkeypatch, tmp_path):
    missing = tmp_path / "libhiprtc.so"
    monkeypatch.setenv(hiprtc.ENV_VAR, str(missing))
    with pytest.raises(
        CompileError, match=f"needs hiprtc.*install ROCm.*libamdhip64-5.*{missing} .from {hiprtc.ENV_VAR}"
    ):
        fresh_load()


def test_a_library_without_hiprtc_is_passed_over(fresh_load, monkeypatch):
    libm = ctypes.util.find_library("m")
    if libm is None:
        pytest.skip("no libm to stand in for a HIP runtime without hiprtc")
    monkeypatch.setenv(hiprtc.ENV_VAR, libm)
    with pytest.raises(CompileError, match=f"needs hiprtc.*Tried {re.escape(libm)}"):
        fresh_load()


def test_the_hip_backend_names_its_init_error_once():
    """Where libamdhip64 loads but finds no AMD device, `gompute info` says why, naming the HIP
    error once: ROCm 5's hipGetErrorString returns the error's name itself."""
    usable, reason, _, _ = _core.probe(g.Backend.hip.kind)
    if usable or "hipInit failed" not in reason:
        pytest.skip(f"needs a libamdhip64 without an AMD device; here HIP is {'usable' if usable else reason}")
    name = re.search(r"hipInit failed with (\w+)", reason).group(1)
    assert reason.count(name) == 1, reason
    done = subprocess.run([sys.executable, "-m", "gompute", "info"], capture_output=True, text=True, check=True)
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("hip ")]
    assert line.count(name) == 1, line
