"""C-layout params structs: `class Params(g.Params)` and `g.abi.pack`.

A Params class declares its fields with gompute types. Its layout is what a C compiler
gives the same struct: each field at the next multiple of its own alignment, the size
rounded up to the largest alignment. `pack` builds those bytes for a launch.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ArgumentError
from .types import ScalarType


@dataclass(frozen=True)
class Field:
    name: str
    type: ScalarType
    offset: int


class Params:
    """Base class of a kernel's params struct; subclass it and annotate the fields.

    >>> class Params(g.Params):
    ...     scale: g.f32
    ...     count: g.u32
    """

    __fields__: tuple[Field, ...] = ()
    __size__: int = 1
    __align__: int = 1

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fields = list(cls.__fields__)  # fields inherited from a Params base come first
        offset = max((f.offset + f.type.itemsize for f in fields), default=0)
        align = max((f.type.itemsize for f in fields), default=1)
        for name, annotation in cls.__dict__.get("__annotations__", {}).items():
            if any(f.name == name for f in fields):  # the struct would have two fields of the name
                raise ArgumentError(
                    f"{cls.__name__}.{name}: a field its Params base defines already; a Params subclass "
                    "adds fields, it cannot redefine one (give it another name)"
                )
            ftype = _field_type(cls, name, annotation)
            offset = _round_up(offset, ftype.itemsize)
            fields.append(Field(name, ftype, offset))
            offset += ftype.itemsize
            align = max(align, ftype.itemsize)
        cls.__fields__ = tuple(fields)
        cls.__align__ = align
        # An empty struct is one byte in C++, which is what the generated code is.
        cls.__size__ = _round_up(offset, align) if fields else 1

    def __init__(self):
        raise TypeError(f"{type(self).__name__} describes a layout; build its bytes with g.abi.pack")


def _field_type(cls, name: str, annotation) -> ScalarType:
    if isinstance(annotation, str):  # `from __future__ import annotations` in the user's module
        import sys

        from . import types

        module = sys.modules.get(cls.__module__)
        namespace = {**vars(types), **(vars(module) if module else {})}
        try:
            annotation = eval(annotation, namespace)  # noqa: S307 - the user's own annotation
        except Exception:
            annotation = None
    if not isinstance(annotation, ScalarType):
        raise ArgumentError(
            f"{cls.__name__}.{name}: a Params field needs a gompute scalar type such as g.f32, got {annotation!r}"
        )
    return annotation


def _round_up(n: int, align: int) -> int:
    return (n + align - 1) // align * align


def layout(params: type[Params]) -> tuple[Field, ...]:
    """The fields of `params` with their byte offsets."""
    _check_params_class(params)
    return params.__fields__


def sizeof(params: type[Params]) -> int:
    _check_params_class(params)
    return params.__size__


def alignof(params: type[Params]) -> int:
    _check_params_class(params)
    return params.__align__


def pack(params: type[Params], **values) -> bytes:
    """The C-layout bytes of `params` with the given field values.

    Every field must be given, no others, each in its type's range.
    """
    _check_params_class(params)
    names = [f.name for f in params.__fields__]  # in their order, for the message
    unknown = sorted(set(values) - set(names))
    missing = [f.name for f in params.__fields__ if f.name not in values]
    if unknown:
        raise ArgumentError(
            f"{params.__name__} has no field {', '.join(unknown)} (fields: {', '.join(names) or 'none'})"
        )
    if missing:
        raise ArgumentError(f"{params.__name__} needs a value for {', '.join(missing)}")
    out = bytearray(params.__size__)
    for f in params.__fields__:
        try:
            out[f.offset : f.offset + f.type.itemsize] = f.type.pack(values[f.name])
        except ArgumentError as e:
            raise ArgumentError(f"{params.__name__}.{f.name}: {e}") from None
    return bytes(out)


def _check_params_class(params) -> None:
    if not (isinstance(params, type) and issubclass(params, Params)):
        raise ArgumentError(f"expected a g.Params subclass, got {params!r}")
