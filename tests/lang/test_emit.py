"""Ahead of time: `python -m gompute emit` on the sample kernels, the `gompute_kernels` package it
writes, kernels loading from it without a compiler, and kernels found by name."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gompute.lang as g
from gompute import abi
from gompute.aot import emit_kernels, lookup
from gompute.compile import nvrtc
from gompute.errors import ArgumentError, CompileError, KernelNotFound
from gompute.lang.kernel import Image, MapKernel

from . import sample_kernels as S
from .hostrun import launch_ctypes, runtime_available

EMITTED = [
    "scale_relu",
    "collatz",
    "loops",
    "branches",
    "values",
    "casts",
    "half_ops",
    "bf16_ops",
    "narrow",
    "fill",
    "mixed_compare",
]


@pytest.fixture(scope="module")
def emitted(tmp_path_factory):
    out = tmp_path_factory.mktemp("emit")
    argv = [sys.executable, "-m", "gompute", "emit", S.__file__, "--out", str(out), "--quiet"]
    if nvrtc.available():
        argv += ["--cuda-arch", "sm_90"]
    proc = subprocess.run(argv, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "generic_mix" in proc.stderr  # a generic kernel is skipped, with a warning
    assert "RuntimeWarning" not in proc.stderr
    sys.path.insert(0, str(out))
    import gompute_kernels

    yield gompute_kernels
    sys.path.remove(str(out))
    del sys.modules["gompute_kernels"]


def test_package_has_the_seeds_attributes(emitted):
    assert emitted.emitted is True and emitted.has_hip is False and emitted.hip_images == []
    assert emitted.root_names == ["sample_kernels"]
    assert emitted.Entry._fields == ("blob", "symbol")
    assert emitted.host_index["scale_relu"] == emitted.Entry(0, "scale_relu")
    assert emitted.host_index["scale_relu__out"] == emitted.Entry(0, "scale_relu__out")
    assert {n for n in emitted.host_index if "__" not in n} == set(EMITTED)
    assert set(emitted.kernel_hashes) == set(EMITTED)
    assert emitted.host_images[0][:4] == b"\x7fELF"


@pytest.mark.skipif(not nvrtc.available(), reason="NVRTC not installed")
def test_cuda_images_are_ptx_plus_cubins_for_the_archs_asked(emitted):
    assert emitted.has_cuda and len(emitted.cuda_images) == 1
    ptx = emitted.cuda_images[0].decode()
    assert all(f".entry {name}(" in ptx for name in EMITTED)
    assert emitted.cuda_index.keys() == emitted.host_index.keys()
    assert emitted.cuda_cubins["sm_90"][0][:4] == b"\x7fELF"
    data, fmt, symbol = lookup.find_by_name("cuda", "collatz", "sm_90")
    assert fmt == "cubin" and symbol == "collatz"
    assert lookup.find_by_name("cuda", "collatz", "sm_80")[1] == "ptx"  # no CUBIN for it: the portable PTX


def test_emitted_kernel_launches_by_name_on_host(emitted):
    x = np.linspace(-3, 3, 700, dtype=np.float32)
    params = abi.pack(S.Params, scale=2)
    if runtime_available():
        import gompute as gg
        from gompute.raw import raw_kernel_by_name  # g.raw_kernel_by_name

        with raw_kernel_by_name(gg.Backend.host, "scale_relu", 0) as k:
            buf = k.alloc(x.nbytes)
            buf.upload(x)
            n = len(x)
            k.launch(
                gg.Dim3.linear(n, 256),
                gg.Dim3(256),
                0,
                [buf.arg_ptr(), gg.interface.arg(gg.u64(n)), gg.interface.arg(params)],
            )
            k.synchronize()
            got = np.empty_like(x)
            buf.download(got)
    else:
        data, fmt, symbol = lookup.find_by_name("host", "scale_relu", None)
        image = Image(data, fmt, "host", None, (), None)
        got = x.copy()
        assert launch_ctypes(image, symbol, [got, np.uint64(len(x)).tobytes(), params], 3, 256) == []
    np.testing.assert_array_equal(got, np.maximum(x * 2, 0))


def test_unknown_name_lists_near_matches(emitted):
    with pytest.raises(KernelNotFound, match="did you mean scale_relu"):
        lookup.find_by_name("host", "scale_rellu", None)
    with pytest.raises(KernelNotFound, match="known: "):
        lookup.find_by_name("host", "zzz", None)


def test_kernel_loads_from_the_emitted_package_without_compiling(emitted, monkeypatch):
    import gompute.compile

    def no_compiler(*args, **kwargs):
        raise AssertionError("a compiler ran")

    monkeypatch.setattr(gompute.compile, "build_image", no_compiler)
    image = MapKernel(S.scale_relu.fn).compile_for("host")  # a fresh kernel object: no in-memory image
    assert image.data == emitted.host_images[0] and image.cache_dir is None


def test_stale_emitted_kernel_falls_back_to_compiling_with_a_warning(emitted):
    def scale_relu(x: g.f32, p: S.Params) -> g.f32:
        return x * p.scale  # not what was emitted under this name

    with pytest.warns(UserWarning, match="older scale_relu"):
        image = g.map_kernel(scale_relu).compile_for("host")
    assert image.data != emitted.host_images[0] and image.cache_dir is not None


def test_a_kernel_emitted_by_another_gompute_is_not_its_own(emitted, monkeypatch):
    """The emitted hash covers the preludes, the host launch convention and gompute's version, not only the
    kernel's code: a package left by an older gompute is compiled over, with the warning."""
    monkeypatch.setattr(lookup, "_toolchain_digest", lambda: "another gompute's preludes")
    with pytest.warns(UserWarning, match="older scale_relu"):
        image = MapKernel(S.scale_relu.fn).compile_for("host")
    assert image.cache_dir is not None


KERNEL = """import gompute as g


@g.map_kernel
def twice(x: g.f32) -> g.f32:
    return x * 2
"""


@pytest.fixture
def no_compiler(monkeypatch):
    import gompute.compile

    def no_compiler(*args, **kwargs):
        raise AssertionError("a compiler ran")

    monkeypatch.setattr(gompute.compile, "build_image", no_compiler)


def test_a_broken_package_is_skipped_with_one_warning(emitted, tmp_path, monkeypatch):
    """A package with a blob deleted stops no kernel from compiling, its own or another's."""
    shutil.copytree(Path(emitted.__file__).parent, tmp_path / "gompute_kernels")
    (tmp_path / "gompute_kernels" / "host_0.so").unlink()
    monkeypatch.delitem(sys.modules, "gompute_kernels")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(lookup, "_broken", {})

    def twice(x: g.f32) -> g.f32:
        return x * 2

    with pytest.warns(UserWarning, match="cannot be imported") as caught:
        assert g.map_kernel(twice).compile_for("host").cache_dir is not None
        assert MapKernel(S.scale_relu.fn).compile_for("host").cache_dir is not None
    assert [str(w.message) for w in caught if "cannot be imported" in str(w.message)] == [
        f"gompute_kernels at {tmp_path / 'gompute_kernels'} cannot be imported (FileNotFoundError: [Errno 2] No such "
        f"file or directory: '{tmp_path / 'gompute_kernels' / 'host_0.so'}'); re-emit it (`python -m gompute emit "
        f"ROOT --out {tmp_path}`) or take it off sys.path; compiling kernels instead"
    ]
    with pytest.raises(KernelNotFound, match="no emitted kernels: gompute_kernels at .* cannot be imported"):
        lookup.find_by_name("host", "scale_relu", None)


def test_a_damaged_blob_is_a_broken_package_too(emitted, tmp_path, monkeypatch):
    """A blob changed since emit (truncated, overwritten) fails the package's import as a missing
    one does: kernels compile instead of loading bytes no driver can use."""
    shutil.copytree(Path(emitted.__file__).parent, tmp_path / "gompute_kernels")
    blob = tmp_path / "gompute_kernels" / "host_0.so"
    blob.write_bytes(blob.read_bytes()[:4096])
    monkeypatch.delitem(sys.modules, "gompute_kernels")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(lookup, "_broken", {})
    with pytest.warns(UserWarning, match=r"cannot be imported \(ValueError: host_0.so is not the file emit wrote"):
        image = MapKernel(S.scale_relu.fn).compile_for("host")
    assert image.cache_dir is not None  # compiled, not the emitted blob


def test_a_name_without_an_image_for_this_target_says_so(emitted, monkeypatch):
    if lookup._host_target() is None:
        pytest.skip("no host compiler: the emitted host images are the only ones, whatever their target")
    monkeypatch.setattr(emitted, "host_target", "another-cpu")
    with pytest.raises(
        KernelNotFound,
        match=r"has 'scale_relu' but no host image for this target: it holds host images for another-cpu, and this "
        r"machine builds for .*; re-emit it on this machine",
    ):
        lookup.find_by_name("host", "scale_relu", None)
    monkeypatch.setattr(emitted, "hip_images_by_arch", {"gfx90a": emitted.host_images})
    monkeypatch.setattr(emitted, "hip_index", emitted.host_index)
    with pytest.raises(
        KernelNotFound, match="holds HSACO for gfx90a, and this device is gfx942; re-emit it with --hip-arch"
    ):
        lookup.find_by_name("hip", "scale_relu", "gfx942")


def test_a_root_without_kernels_is_refused(tmp_path, monkeypatch, no_compiler):
    (tmp_path / "emit_test_defines.py").write_text(KERNEL)
    (tmp_path / "imports_only.py").write_text("from emit_test_defines import twice\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        ArgumentError,
        match=r"imports_only.py defines no annotated map kernels to emit; the kernels it imports, twice \(from "
        r"emit_test_defines\), are emitted from the module that defines them: give that module as a root",
    ):
        emit_kernels(tmp_path / "imports_only.py", out=tmp_path, progress=False)


def test_a_kernel_named_like_another_kernels_entry_point_is_refused(tmp_path, no_compiler):
    root = tmp_path / "clash.py"
    root.write_text(KERNEL + "\n\n@g.map_kernel\ndef twice__out(a: g.f32, b: g.f32) -> g.f32:\n    return a * b\n")
    with pytest.raises(
        CompileError, match="kernel 'twice__out' \\(in clash\\) is named like an entry point of kernel 'twice'"
    ):
        emit_kernels(root, out=tmp_path, progress=False)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"cuda": False, "cuda_archs": ["sm_90"]}, "cuda=False .* asks for sm_90; drop one of the two"),
        (
            {"cuda_archs": ["compute_90"]},
            "takes sm_XX archs, one CUBIN each, not compute_90: the package always holds PTX",
        ),
        ({"cuda_archs": 90}, "cuda_archs takes an arch such as sm_90, or a list of them; got 90"),
        ({"roots": ["kernels.py", 3]}, "roots takes a module name or a .py path, or a list of them"),
        ({"out": None}, "out takes a folder"),
    ],
)
def test_bad_arguments_are_refused_before_compiling(tmp_path, no_compiler, arguments, message):
    (tmp_path / "kernels.py").write_text(KERNEL)
    arguments = {"roots": tmp_path / "kernels.py", "out": tmp_path, **arguments}
    with pytest.raises(ArgumentError, match=message):
        emit_kernels(**arguments, progress=False)
    assert not (tmp_path / "gompute_kernels").exists()


def test_a_path_root_is_a_path_or_a_list_and_replaces_no_module(tmp_path):
    """A kernel file named random.py is imported under a name of its own, not as `random`."""
    import random

    (tmp_path / "kernels").mkdir()
    root = tmp_path / "kernels" / "random.py"
    root.write_text(KERNEL)
    for roots in (root, [root]):
        package = emit_kernels(roots, out=tmp_path, cuda=False, progress=False)
        assert sys.modules["random"] is random
        text = (package / "__init__.py").read_text()
        assert "root_names = ['random']" in text and "host_index = {'twice': Entry(0, 'twice')" in text


@pytest.mark.skipif(not nvrtc.available(), reason="NVRTC not installed")
def test_one_cuda_arch_may_be_a_string(tmp_path):
    root = tmp_path / "kernels.py"
    root.write_text(KERNEL)
    package = emit_kernels(str(root), out=tmp_path, cuda_archs="sm_90", host=False, progress=False)
    assert "cuda_cubins = {'sm_90': [_blob('cuda_0.sm_90.cubin', '" in (package / "__init__.py").read_text()
