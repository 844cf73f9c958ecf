"""Ahead of time: `python -m gompute.emit` on the sample kernels, the `gompute_kernels` package it
writes, kernels loading from it without a compiler, and kernels found by name."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import gompute.lang as g
from gompute import abi, emit
from gompute.compile import nvrtc
from gompute.errors import KernelNotFound
from gompute.lang.kernel import MapKernel

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
    argv = [sys.executable, "-m", "gompute.emit", S.__file__, "--out", str(out), "--quiet"]
    if nvrtc.available():
        argv += ["--cuda-arch", "sm_90"]
    proc = subprocess.run(argv, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "generic_mix" in proc.stderr  # a generic kernel is skipped, with a warning
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
    data, fmt, symbol = emit.find_by_name("cuda", "collatz", "sm_90")
    assert fmt == "cubin" and symbol == "collatz"
    assert emit.find_by_name("cuda", "collatz", "sm_80")[1] == "ptx"  # no CUBIN for it: the portable PTX


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
        data, fmt, symbol = emit.find_by_name("host", "scale_relu", None)
        image = emit.Image(data, fmt, "host", None, (), None)
        got = x.copy()
        assert launch_ctypes(image, symbol, [got, np.uint64(len(x)).tobytes(), params], 3, 256) == []
    np.testing.assert_array_equal(got, np.maximum(x * 2, 0))


def test_unknown_name_lists_near_matches(emitted):
    with pytest.raises(KernelNotFound, match="did you mean scale_relu"):
        emit.find_by_name("host", "scale_rellu", None)
    with pytest.raises(KernelNotFound, match="known: "):
        emit.find_by_name("host", "zzz", None)


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
    """The emitted hash covers the preludes, the host ABI and gompute's version, not only the
    kernel's code: a package left by an older gompute is compiled over, with the warning."""
    monkeypatch.setattr(emit, "_toolchain_digest", lambda: "another gompute's preludes")
    with pytest.warns(UserWarning, match="older scale_relu"):
        image = MapKernel(S.scale_relu.fn).compile_for("host")
    assert image.cache_dir is not None
