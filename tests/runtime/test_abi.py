"""Launch geometry and arguments: g.Dim3, g.interface.arg, and params structs laid out as C does."""

from __future__ import annotations

import ctypes
import struct
import subprocess

import numpy as np
import pytest

import gompute as g

# ---- Dim3 -----------------------------------------------------------------------------


def test_dim3_defaults_and_count():
    assert g.Dim3(5) == g.Dim3(5, 1, 1)
    assert (g.Dim3(2, 3, 4).x, g.Dim3(2, 3, 4).y, g.Dim3(2, 3, 4).z) == (2, 3, 4)
    assert g.Dim3(2, 3, 4).count == 24


@pytest.mark.parametrize("n, block, blocks", [(1024, 256, 4), (1025, 256, 5), (1, 256, 1), (256, 256, 1), (7, 1, 7)])
def test_dim3_linear_is_ceil_division(n, block, blocks):
    assert g.Dim3.linear(n, block) == g.Dim3(blocks)


@pytest.mark.parametrize("n, block", [(0, 256), (-1, 256), (10, 0), (10, -4), (2.5, 1), ("8", 2)])
def test_dim3_linear_refuses_non_positive_or_non_int(n, block):
    with pytest.raises(g.ArgumentError, match="Dim3.linear"):
        g.Dim3.linear(n, block)


@pytest.mark.parametrize("args", [(0,), (1, 0), (1, 1, -1), (1.5,), (2**31,)], ids=str)
def test_dim3_refuses_bad_axes(args):
    with pytest.raises(g.ArgumentError, match="Dim3"):
        g.Dim3(*args)


# ---- interface.arg ------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, fmt",
    [
        (g.u64(2**40 + 3), "<Q"),
        (g.i32(-5), "<i"),
        (g.f32(2.5), "<f"),
        (g.f64(-0.125), "<d"),
        (g.u8(255), "<B"),
    ],
    ids=repr,
)
def test_typed_scalars_become_their_little_endian_bytes(value, fmt):
    a = g.interface.arg(value)
    assert isinstance(a, g.interface.Arg)
    assert a.data == struct.pack(fmt, value.value)
    assert a.nbytes == struct.calcsize(fmt)
    assert not a.is_buffer


def test_packed_params_and_raw_bytes_are_arguments():
    class P(g.Params):
        scale: g.f32

    assert g.interface.arg(g.abi.pack(P, scale=2)).data == struct.pack("<f", 2.0)
    assert g.interface.arg(bytearray(b"\x01\x02")).data == b"\x01\x02"


@pytest.mark.parametrize(
    "value, hint",
    [(5, r"g\.u64\(5\)"), (2.5, r"g\.f32\(2\.5\)"), (True, r"g\.bool_"), (object(), "cannot pass")],
    ids=["int", "float", "bool", "object"],
)
def test_untyped_python_values_are_refused_with_the_type_to_pick(value, hint):
    with pytest.raises(g.ArgumentError, match=hint):
        g.interface.arg(value)


@pytest.mark.parametrize("make", [lambda: g.u64(-1), lambda: g.i8(128), lambda: g.u32(2**32), lambda: g.i32(1.5)])
def test_typed_scalars_refuse_values_they_cannot_hold(make):
    with pytest.raises(g.ArgumentError):
        make()


# ---- params structs -----------------------------------------------------------------

_CTYPES = {
    g.bool_: ctypes.c_bool,
    g.i8: ctypes.c_int8,
    g.i16: ctypes.c_int16,
    g.i32: ctypes.c_int32,
    g.i64: ctypes.c_int64,
    g.u8: ctypes.c_uint8,
    g.u16: ctypes.c_uint16,
    g.u32: ctypes.c_uint32,
    g.u64: ctypes.c_uint64,
    g.f16: ctypes.c_uint16,
    g.bf16: ctypes.c_uint16,
    g.f32: ctypes.c_float,
    g.f64: ctypes.c_double,
}
_C_TYPES = {
    g.bool_: "bool",
    g.i8: "int8_t",
    g.i16: "int16_t",
    g.i32: "int32_t",
    g.i64: "int64_t",
    g.u8: "uint8_t",
    g.u16: "uint16_t",
    g.u32: "uint32_t",
    g.u64: "uint64_t",
    g.f16: "uint16_t",
    g.bf16: "uint16_t",
    g.f32: "float",
    g.f64: "double",
}


def _params(name: str, fields: list[tuple[str, g.types.ScalarType]]) -> type[g.Params]:
    return type(name, (g.Params,), {"__annotations__": dict(fields)})


LAYOUTS = {
    "One": [("scale", g.f32)],
    "CharThenDouble": [("flag", g.bool_), ("x", g.f64)],
    "DoubleThenChar": [("x", g.f64), ("c", g.i8)],
    "Mixed": [("a", g.u8), ("b", g.u16), ("c", g.u8), ("d", g.u32), ("e", g.i8), ("f", g.u64), ("g", g.f16)],
    "Halves": [("h", g.f16), ("bh", g.bf16), ("i", g.i32), ("s", g.i16)],
    "Bytes": [("a", g.u8), ("b", g.i8), ("c", g.bool_)],
    "Everything": [(f"f{i}", t) for i, t in enumerate(g.types.ALL_TYPES) if t.kind != "c"],  # no complex fields yet
}


@pytest.mark.parametrize("name", LAYOUTS)
def test_params_layout_matches_ctypes(name):
    params = _params(name, LAYOUTS[name])
    ref = type(name, (ctypes.Structure,), {"_fields_": [(f, _CTYPES[t]) for f, t in LAYOUTS[name]]})
    assert g.abi.sizeof(params) == ctypes.sizeof(ref)
    assert g.abi.alignof(params) == ctypes.alignment(ref)
    expected = [(f, getattr(ref, f).offset) for f, _ in LAYOUTS[name]]
    assert [(f.name, f.offset) for f in g.abi.layout(params)] == expected


def _c_layout_program() -> str:
    lines = ["#include <cstddef>", "#include <cstdint>", "#include <cstdio>"]
    for name, fields in LAYOUTS.items():
        lines.append(f"struct {name} {{ " + " ".join(f"{_C_TYPES[t]} {f};" for f, t in fields) + " };")
    lines.append("struct Empty {};")
    lines.append("int main() {")
    for name, fields in LAYOUTS.items():
        offsets = "".join(f' printf(" %zu", offsetof({name}, {f}));' for f, _ in fields)
        lines.append(f'  printf("{name} %zu %zu", sizeof({name}), alignof({name}));{offsets} printf("\\n");')
    lines.append('  printf("Empty %zu %zu\\n", sizeof(Empty), alignof(Empty));')
    lines.append("  return 0;\n}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def c_layouts(build_host) -> dict[str, list[int]]:
    """{struct name: [sizeof, alignof, offsetof each field]} as the host C++ compiler lays them out."""
    exe = build_host(_c_layout_program(), shared=False)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return {line.split()[0]: [int(v) for v in line.split()[1:]] for line in out.splitlines()}


@pytest.mark.parametrize("name", LAYOUTS)
def test_params_layout_matches_the_host_c_compiler(c_layouts, name):
    params = _params(name, LAYOUTS[name])
    size, align, *offsets = c_layouts[name]
    assert (g.abi.sizeof(params), g.abi.alignof(params)) == (size, align)
    assert [f.offset for f in g.abi.layout(params)] == offsets


def test_an_empty_params_struct_is_one_byte_as_in_cpp(c_layouts):
    class Empty(g.Params):
        pass

    assert [g.abi.sizeof(Empty), g.abi.alignof(Empty)] == c_layouts["Empty"]
    assert g.abi.pack(Empty) == b"\x00"


def test_pack_writes_each_field_at_its_offset_and_zeroes_padding():
    fields = LAYOUTS["Mixed"]
    params = _params("Mixed", fields)
    values = dict(a=250, b=65000, c=7, d=4_000_000_000, e=-100, f=2**63 + 5, g=1.5)
    packed = g.abi.pack(params, **values)
    ref = type("Mixed", (ctypes.Structure,), {"_fields_": [(f, _CTYPES[t]) for f, t in fields]})
    expected = ref(**{k: v for k, v in values.items() if k != "g"}, g=int(np.float16(1.5).view(np.uint16)))
    assert packed == bytes(expected)  # ctypes zero-initialises padding, as pack must


def test_pack_spells_bf16_and_bool_as_c_does():
    class P(g.Params):
        flag: g.bool_
        b: g.bf16

    assert g.abi.pack(P, flag=True, b=1.0) == b"\x01\x00\x80\x3f"


def test_params_accepts_string_annotations(tmp_path, monkeypatch):
    """A user module with `from __future__ import annotations` declares Params the same way."""
    (tmp_path / "user_params.py").write_text(
        "from __future__ import annotations\nimport gompute as g\n\nclass P(g.Params):\n    x: g.u32\n    y: g.f64\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import user_params

    layout = [(f.name, f.type, f.offset) for f in g.abi.layout(user_params.P)]
    assert layout == [("x", g.u32, 0), ("y", g.f64, 8)]


def test_inherited_fields_come_first():
    class Base(g.Params):
        a: g.f64

    class Derived(Base):
        b: g.u8

    assert [(f.name, f.offset) for f in g.abi.layout(Derived)] == [("a", 0), ("b", 8)]
    assert g.abi.sizeof(Derived) == 16


class _Two(g.Params):
    scale: g.f32
    count: g.u32


@pytest.mark.parametrize(
    "values, match",
    [
        (dict(scale=1.0), "needs a value for count"),
        (dict(scale=1.0, count=1, extra=2), "no field extra"),
        (dict(scale=1.0, count=-1), "count.*out of range"),
        (dict(scale=1.0, count=2**32), "count.*out of range"),
        (dict(scale="big", count=1), "scale"),
        (dict(scale="2", count=1), "scale: '2' is not a number"),  # float() would parse it
        (dict(scale=bytearray(b"2"), count=1), "scale: bytearray.* is not a number"),
        (dict(scale=1.0, count="2"), "count: '2' is not an integer"),
        (dict(scale=1e300, count=1), "scale"),  # a finite value f32 cannot hold
    ],
    ids=[
        *("missing", "unknown", "negative", "too-big", "not-a-number"),
        *("numeric-str", "bytearray", "str-int", "f32-overflow"),
    ],
)
def test_pack_refuses_missing_unknown_or_out_of_range_fields(values, match):
    with pytest.raises(g.ArgumentError, match=match):
        g.abi.pack(_Two, **values)


def test_a_params_field_needs_a_gompute_type():
    with pytest.raises(g.ArgumentError, match="g.f32"):

        class Bad(g.Params):  # noqa: F841
            x: int


@pytest.mark.parametrize("call", [g.abi.sizeof, g.abi.alignof, g.abi.layout, g.abi.pack])
def test_abi_calls_want_a_params_class(call):
    with pytest.raises(g.ArgumentError, match="Params subclass"):
        call(ctypes.c_int)


def test_a_params_class_is_a_layout_not_a_value():
    with pytest.raises(TypeError, match="g.abi.pack"):
        _Two()
