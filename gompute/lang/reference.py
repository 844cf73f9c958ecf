"""The builtins table of docs/kernels.md, made from the one table the compiler uses
(`builtins.ROWS`) and what `complex_math` adds to it, so that the docs cannot disagree with it."""

from __future__ import annotations

from .. import types as T
from . import complex_math
from .builtins import FLOAT, INTEGERS, INTS, NUMBERS, PREDICATE, ROWS, WHERE, Builtin


def markdown() -> str:
    """The builtins table of docs/kernels.md; a test checks that the two agree
    (`python -c "from gompute.lang.reference import markdown; print(markdown())"`)."""
    lines = ["| builtin | result | meaning | complex |", "|---|---|---|---|"]
    for row in ROWS:
        b = row[0]
        names = ", ".join([f"`{b.name}({b.signature})`", *(f"`{alias.name}`" for alias in row[1:])])
        note = _takes_doc(b)
        lines.append(f"| {names} | {_result_doc(b)} | {b.doc}{f'; {note}' if note else ''} | {_complex_doc(b)} |")
    return "\n".join(lines) + "\n"


def _complex_doc(b: Builtin) -> str:
    """Whether the row takes complex arguments: yes, refused (where NumPy takes them), or blank."""
    entry = complex_math.COMPLEX.get(b.name)
    if b.rule == WHERE:  # picks between complex values as between real ones
        return "yes"
    if entry is None:
        return "refused" if b.name in complex_math.REFUSED else ""
    return "yes, its part type" if entry.rule == complex_math.PART else "yes"


def _takes_doc(b: Builtin) -> str:
    """What the arguments may be, where not any number."""
    if b.loops in (INTS, INTEGERS):
        return "integers" + ("" if b.no_bools else " and bools" if b.loops == INTEGERS else "; bools as i8")
    if b.loops == NUMBERS:
        return "not on bools alone" if b.no_bools else "bools as i8"
    return ""


def _result_doc(b: Builtin) -> str:
    if b.shows:
        return b.shows
    if b.returns is not None:
        return f"`{b.returns.name}`"
    if b.rule == PREDICATE:
        return "bool"
    if b.rule == FLOAT:
        return "`f64`" if b.loops == (T.f64,) else "float"
    return "x's type" if b.max_args == 1 else "promoted"
