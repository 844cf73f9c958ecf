"""What the general paths teach the C++ fast paths (csrc/dispatch.cpp for g.map,
csrc/reduce_dispatch.cpp for g.reduce): the format characters a call's types are keyed on, a
kernel's params table, and which calls to take."""

from __future__ import annotations

from . import _core, types

# The format characters the fast path keys a call's types on (csrc/array_view.cpp): the buffer
# protocol's, and NumPy's type characters for complex (bf16 has none).
FORMATS = {
    types.bool_: "?",
    types.i8: "b",
    types.u8: "B",
    types.i16: "h",
    types.u16: "H",
    types.i32: "i",
    types.u32: "I",
    types.i64: "q",
    types.u64: "Q",
    types.f16: "e",
    types.f32: "f",
    types.f64: "d",
    types.c64: "F",
    types.c128: "D",
}


def params_table(kernel) -> tuple:
    """What a C++ path needs to launch `kernel` (a map or reduction kernel) and pack its params: its
    arity, block size and params field table."""
    cls = kernel.params_class
    kind = lambda t: "e" if t is types.f16 else t.kind  # noqa: E731 - f16 apart from bf16
    fields = [] if cls is None else [(f.name, f.offset, kind(f.type), f.type.bits) for f in cls.__fields__]
    size = 0 if cls is None else cls.__size__
    return kernel.arity, kernel.block_size, fields, size, cls is not None


def teach(fast, inputs, out: _core.Buffer, kind: str, first, make, remember) -> None:
    """Lets `fast`'s C++ path (g.map's or g.reduce's) take later calls like this one: same dtypes,
    entry kind and device, recorded once by `remember(signature, out_format)`; and, when this call
    made its output with `make(shape)` (a `_Maker`), make theirs so for a first array of `first`'s
    type. Calls the C++ path can't take come back here every time, so each is recorded once."""
    if any(b.dtype not in FORMATS for b in (*inputs, out)):
        return  # bf16 has no buffer-protocol format: the C++ path can't name it
    signature = "".join(FORMATS[b.dtype] for b in inputs)
    key = (signature, FORMATS[out.dtype], kind, out.backend, out.device)
    if key not in fast._learned:
        remember(signature, key[1])
        fast._learned.add(key)
    made = (signature, type(first), out.backend, out.device)
    if make is not None and made not in fast._learned:
        fast.remember_output(signature, type(first), make.fn, make.args, make.kwargs)
        fast._learned.add(made)
