"""Generated kernels through NVRTC (no GPU needed): PTX with the expected entry points and
parameter lists, CUBIN for a real arch, and failures that carry the log and the source path."""

from __future__ import annotations

import re

import pytest

from gompute import types as T
from gompute.compile import DiskCache, nvrtc
from gompute.errors import CompileError
from gompute.lang.kernel import compile_module

from . import sample_kernels as S

pytestmark = pytest.mark.skipif(
    not nvrtc.available(), reason="NVRTC not installed (pip install nvidia-cuda-nvrtc cuda-pathfinder)"
)
SAMPLES = [S.scale_relu, S.collatz, S.loops, S.branches, S.values, S.casts, S.half_ops, S.bf16_ops]


@pytest.fixture(scope="module")
def ptx_image(tmp_path_factory):
    specs = [k.specialize() for k in SAMPLES] + [S.generic_mix.specialize(T.f16, T.i64)]
    specs += [S.scale_relu.variant((T.i16,), T.f64), S.half_ops.variant((T.i8, T.f16), T.f32)]
    specs += [S.bf16_ops.variant((T.u8, T.i16), T.f64), S.fill.variant((), T.f64)]
    return compile_module(specs, "cuda", "compute_75", "test_nvrtc")


def _entry_params(ptx: str, symbol: str) -> list[str]:
    match = re.search(rf"\.entry {symbol}\(\s*(.*?)\s*\)", ptx, re.S)
    assert match, f"no .entry {symbol} in the PTX"
    return [p.strip() for p in match.group(1).split(",")]


def test_ptx_has_every_entry_point_with_its_parameter_list(ptx_image):
    ptx = ptx_image.data.decode()
    assert ptx_image.format == "ptx" and ".target sm_75" in ptx
    for entry in ptx_image.entry_points:
        params = _entry_params(ptx, entry.symbol)
        assert len(params) == entry.arity, entry
        for k, (arg, text) in enumerate(zip(entry.args, params)):
            if arg.kind in ("params", "strides"):  # a struct by value
                assert text == f".param .align {arg.align} .b8 {entry.symbol}_param_{k}[{arg.nbytes}]"
            else:
                assert text == f".param .u64 {entry.symbol}_param_{k}"  # a device pointer, or len


def test_scale_relu_is_the_seeds_data_len_params_entry(ptx_image):
    params = _entry_params(ptx_image.data.decode(), "scale_relu")
    assert params == [
        ".param .u64 scale_relu_param_0",
        ".param .u64 scale_relu_param_1",
        ".param .align 4 .b8 scale_relu_param_2[4]",
    ]
    assert re.search(r"\.entry scale_relu\([^)]*\)\s*\.maxntid 256, 1, 1", ptx_image.data.decode())


def test_strided_entry_takes_the_strides_struct_by_value(ptx_image):
    ptx = ptx_image.data.decode()
    assert _entry_params(ptx, "scale_relu__strided") == [
        ".param .u64 scale_relu__strided_param_0",
        ".param .u64 scale_relu__strided_param_1",
        ".param .u64 scale_relu__strided_param_2",
        ".param .align 8 .b8 scale_relu__strided_param_3[200]",  # 8 + 64 + 64 * 2 arrays
        ".param .align 4 .b8 scale_relu__strided_param_4[4]",
    ]
    assert _entry_params(ptx, "half_ops__from_i8_f16__to_f32__strided")[4].endswith("_param_4[264]")
    assert re.search(r"\.entry scale_relu__strided\([^)]*\)\s*\.maxntid 256, 1, 1", ptx)


def test_every_operator_and_builtin_compiles_for_cuda():
    from .test_ops import CASES, _spec

    image = compile_module([_spec(c) for c in CASES], "cuda", "compute_75", "test_ops")
    ptx = image.data.decode()
    assert all(f".entry {e.symbol}(" in ptx for e in image.entry_points)


@pytest.mark.parametrize("suffix", ["f32", "f64"])
def test_a_product_plus_a_sum_rounds_twice_on_the_gpu_and_fma_once(suffix):
    """NumPy rounds a * b before adding c; nvcc would fuse the two into one fma.rn unless told
    not to (--fmad=false). g.fma is the one place an fma.rn belongs."""
    from . import ops_kernels as K

    t = getattr(T, suffix)
    image = compile_module([K.mul_add.specialize(t, t, t), K.b_fma.specialize(t, t, t)], "cuda", "compute_75", "fmad")
    ptx = image.data.decode()
    bodies = dict(re.findall(r"\.entry (\w+)\((.*?)\n\}", ptx, re.S))
    separate = [body for name, body in bodies.items() if name.startswith("mul_add")]
    fused = [body for name, body in bodies.items() if name.startswith("b_fma")]
    assert separate and fused
    for body in separate:
        assert f"mul.rn.{suffix}" in body and f"add.rn.{suffix}" in body and "fma." not in body
    for body in fused:
        assert f"fma.rn.{suffix}" in body


def test_cubin_for_a_real_arch():
    image = S.scale_relu.compile_for("cuda", "sm_90")
    assert image.format == "cubin" and image.data[:4] == b"\x7fELF"
    assert (image.cache_dir / "sm_90.cubin").read_bytes() == image.data
    assert (image.cache_dir / "source.cu").read_text() == S.scale_relu.source("cuda")


def test_nvrtc_failure_carries_the_log_and_the_source_path(tmp_path):
    with pytest.raises(CompileError) as info:
        nvrtc.compile_cuda(
            "broken", 'extern "C" __global__ void k() { undeclared_thing(); }', "sm_90", DiskCache(tmp_path)
        )
    message = str(info.value)
    assert "undeclared_thing" in message and "error" in message
    path = re.search(r"source: (\S+)", message).group(1)
    assert open(path).read().startswith('extern "C"')


def test_an_arch_nvrtc_does_not_know_is_refused():
    with pytest.raises(CompileError, match="cannot compile for sm_10"):
        nvrtc.compile_cuda("k", "", "sm_10")
    with pytest.raises(CompileError, match="not a CUDA arch"):
        nvrtc.parse_arch("gfx90a")
