"""The C++ of a reduction's narrow columns items on the host (reduce_entries.py writes the entry
that calls them, and the wide tiles' items).

A narrow tile is a whole row of at most NARROW_COLUMNS results whose reduced rows follow one
another in every input: an item's rows [k0, k1) are then one run of (k1 - k0) * cols elements.
The wide tiles' loop reads COLUMN_GROUP rows a step and spends its time on a row this short in the
vector epilogue; these read the run whole, in one of two loops by width:
- period (_periods): where a block of E elements, a multiple of both cols and a vector's elements,
  fills NARROW_PERIOD vectors, the run is read as whole blocks into E accumulators held in
  registers, each lane always the same column; every NARROW_BLOCKS blocks they go into lanes of
  the item's tree, which are folded into their columns at the end.
- stream: other rows of at most NARROW_STREAM elements, NARROW_STREAM_BYTES of accumulators, stream
  into NARROW_SETS sets of accumulators in registers, a row a set in turn, each row read as a whole
  number of vectors from its start (the lanes past the row read the next rows, inside the run, and
  are dropped); every NARROW_FOLD rows the sets are combined pairwise into the item's tree.
Wider rows with no period are not narrow: the wide tiles' loop reads an item as COLUMN_GROUP long
runs of rows, which keeps the prefetchers ahead where a whole-run loop would hold more accumulators
than registers and load and store them a step.
An element of a float sum passes through at most NARROW_BLOCKS (period) or NARROW_FOLD / NARROW_SETS
+ log2(NARROW_SETS) (stream) roundings in its accumulator's type before the tree (NumPy's pairwise
sum: 16 in its blocks of 128, then one a level). Which rows meet in an accumulator depends on the
item's rows alone, so the results do not depend on the thread count.
"""

from __future__ import annotations

import math

from .codegen import storage_ctype, value_ctype
from .reduce_layout import (
    COLUMN_GROUP,
    NARROW_BLOCKS,
    NARROW_COLUMNS,
    NARROW_FOLD,
    NARROW_PERIOD,
    NARROW_SETS,
    NARROW_STREAM,
    NARROW_STREAM_BYTES,
    declarations,
    layout_type,
    mapped,
    store_result,
    tree_type,
    value_bytes,
)


def host_narrow_columns(unit, structs, call_name: str) -> list[str]:
    """`{sym}_narrow(layout)`, whether a columns launch's tiles are narrow (a whole row, contiguous rows, and
    a width the period or the stream loop takes), and `{sym}_narrow_item`."""
    sym, t, n = unit.name, tree_type(unit), len(unit.in_storage)
    ins, params, pass_params = declarations(unit, structs)
    lay, o, g = layout_type(unit), storage_ctype(unit.out_storage), COLUMN_GROUP
    contiguous = " && ".join(f"lay.red[{k}][0] == cols" for k in range(n))
    ps = ", ".join(f"p{k}" for k in range(n))
    widths = range(g, min(NARROW_STREAM, NARROW_STREAM_BYTES // value_bytes(unit.acc)) + 1, g)
    periods = _periods(unit)
    wider = sorted(c for c in periods if c > widths[-1])  # the stream's widest rows: widths[-1] elements
    one = _val(unit, call_name, n, "r * cols + l")
    return [
        f"GOMPUTE_FN bool {sym}_narrow(const {lay}& lay) {{",
        "  const int64_t cols = lay.kept_shape[lay.kept_ndim - 1];",
        f"  if (cols > lay.width || lay.red_ndim != 1 || !({contiguous})) return false;",
        "  switch (cols) {",
        *(f"    case {c}:" for c in wider),
        "      return true;",
        "    default:",
        f"      return cols <= {widths[-1]};",
        "  }",
        "}",
        *_period(unit, structs, call_name),
        *_stream(unit, structs, call_name),
        f"// Item i of a narrow tile ({sym}_narrow): all cols results of one result row over the reduced rows",
        "// [k0, k1), one contiguous run in every input, into the item's partials row (or, when the item is its",
        "// results' only one, into the output). Rows the stream cannot read whole vectors of go one by one.",
        f"GOMPUTE_ROWS void {sym}_narrow_item({', '.join(ins)}, {t}* partials, {o}* out, const {lay}& lay, int64_t i"
        f"{params}) {{",
        "  const int64_t cols = lay.kept_shape[lay.kept_ndim - 1];",
        "  const int64_t kc = i % lay.chunks, m0 = i / lay.chunks * cols;",
        "  const int64_t k0 = kc * lay.chunk, rows = k0 + lay.chunk < lay.red_count ? lay.chunk : lay.red_count - k0;",
        f"  int64_t at[{n + 1}], idx[GOMPUTE_MAX_NDIM];",
        f"  gompute_unravel<{n + 1}>(lay.kept_shape, lay.kept, lay.kept_ndim, m0, at, idx);",
        *(f"  const {storage_ctype(s)}* p{k} = in{k} + at[{k}] + k0 * cols;" for k, s in enumerate(unit.in_storage)),
        f"  {t} w[{max(NARROW_COLUMNS + g, *periods.values())}];",
        f"  const int64_t e = (cols + {g - 1}) / {g};",
        f"  for (int64_t l = 0; l < e * {g}; ++l) w[l] = ({t}){unit.identity};",
        "  int64_t r = 0;",
        "  switch (cols) {",
        *(f"    case {c}: r = {sym}_period<{e}>({ps}, cols, rows, w{pass_params}); break;" for c, e in periods.items()),
        "    default:",
        "      switch (e) {",
        *(f"        case {e // g}: r = {sym}_stream<{e}>({ps}, cols, rows, w{pass_params}); break;" for e in widths),
        "      }",
        "  }",
        "  for (; r < rows; ++r)",
        f"    for (int64_t l = 0; l < cols; ++l) w[l] = {sym}_tcomb(w[l], ({t}){one});",
        "  if (lay.chunks == 1) {",
        f"    const int64_t step = lay.kept[{n}][lay.kept_ndim - 1];",
        f"    for (int64_t l = 0; l < cols; ++l) {store_result(unit, f'out[at[{n}] + l * step]', 'w[l]')}",
        "  } else {",
        "    for (int64_t l = 0; l < cols; ++l) partials[kc * lay.kept_count + m0 + l] = w[l];",
        "  }",
        "}",
    ]


def _periods(unit) -> dict[int, int]:
    """{cols: E} for the widths the period loop takes: E, the smallest multiple of both cols and a vector's
    elements that fills NARROW_PERIOD[0] vectors at least, where it fills NARROW_PERIOD[1] at most
    (NARROW_PERIOD[2] for a combine of more than one instruction)."""
    v = 64 // value_bytes(unit.acc)
    most = NARROW_PERIOD[1] if _one_instruction(unit) else NARROW_PERIOD[2]
    out = {}
    for c in range(1, NARROW_COLUMNS + 1):
        e = math.lcm(c, v)
        e *= -(-NARROW_PERIOD[0] * v // e)
        if e <= most * v:
            out[c] = e
    return out


def _period(unit, structs, call_name: str) -> list[str]:
    sym, a, t, n = unit.name, value_ctype(unit.acc), tree_type(unit), len(unit.in_storage)
    ptrs = ", ".join(f"const {storage_ctype(s)}* p{k}" for k, s in enumerate(unit.in_storage))
    _, params, _ = declarations(unit, structs)
    return [
        "// The run's whole blocks of E elements, E a multiple of cols and of a vector's elements (_periods):",
        "// element q of each block into accumulator q (registers: each vector's lanes hold the same columns in",
        f"// every block, and the run is read in order), {NARROW_BLOCKS} blocks at a time, then accumulator q into",
        "// lane q of w (w[0, cols) set by the caller); at the end the lanes past cols into their columns, in",
        "// order. Returns how many rows it took.",
        "template <int E>",
        f"{_linkage(unit)} int64_t {sym}_period({ptrs}, int64_t cols, int64_t rows, {t}* w{params}) {{",
        "  const int64_t blocks = rows * cols / E;",
        f"  for (int64_t q = cols; q < E; ++q) w[q] = ({t}){unit.identity};",
        "  for (int64_t b = 0; b < blocks;) {",
        f"    const int64_t end = blocks - b < {NARROW_BLOCKS} ? blocks : b + {NARROW_BLOCKS};",
        f"    {a} s[E];",
        f"    for (int q = 0; q < E; ++q) s[q] = ({a}){unit.identity};",
        "    for (; b < end; ++b)",
        f"      for (int q = 0; q < E; ++q) s[q] = {sym}_comb(s[q], {_val(unit, call_name, n, 'b * E + q')});",
        f"    for (int q = 0; q < E; ++q) w[q] = {sym}_tcomb(w[q], ({t})s[q]);",
        "  }",
        f"  for (int64_t q = cols; q < E; ++q) w[q % cols] = {sym}_tcomb(w[q % cols], w[q]);",
        "  return blocks * E / cols;",
        "}",
    ]


def _pairwise(sym: str, terms: list[str]) -> str:
    while len(terms) > 1:
        terms = [f"{sym}_comb({x}, {y})" for x, y in zip(terms[::2], terms[1::2])]
    return terms[0]


def _stream(unit, structs, call_name: str) -> list[str]:
    sym, a, t, n, S = unit.name, value_ctype(unit.acc), tree_type(unit), len(unit.in_storage), NARROW_SETS
    ptrs = ", ".join(f"const {storage_ctype(s)}* p{k}" for k, s in enumerate(unit.in_storage))
    _, params, _ = declarations(unit, structs)
    sets = _pairwise(sym, [f"s{j}[q]" for j in range(S)])
    return [
        f"// The first rows of the run, a multiple of {S}, whose E elements from the row's start lie in the run:",
        f"// row r into set r % {S} of E accumulators (registers: E is small and fixed; the lanes past the row",
        f"// read the rows after it and are dropped), {NARROW_FOLD} rows at a time, then the sets pairwise into w.",
        "// Returns how many rows it took.",
        "template <int E>",
        f"{_linkage(unit)} int64_t {sym}_stream({ptrs}, int64_t cols, int64_t rows, {t}* w{params}) {{",
        "  int64_t fit = rows * cols < E ? 0 : (rows * cols - E) / cols + 1;",
        f"  fit -= fit % {S};",
        "  for (int64_t r = 0; r < fit;) {",
        f"    const int64_t end = fit - r < {NARROW_FOLD} ? fit : r + {NARROW_FOLD};",
        f"    {a} {', '.join(f's{j}[E]' for j in range(S))};",
        f"    for (int q = 0; q < E; ++q) {' '.join(f's{j}[q] =' for j in range(S))} ({a}){unit.identity};",
        f"    for (; r < end; r += {S}) {{",
        *(f"      const {storage_ctype(s)}* const row{k} = p{k} + r * cols;" for k, s in enumerate(unit.in_storage)),
        "      for (int q = 0; q < E; ++q) {",
        *(
            f"        s{j}[q] = {sym}_comb(s{j}[q], {_val(unit, call_name, n, f'{j} * cols + q', 'row')});"
            for j in range(S)
        ),
        "      }",
        "    }",
        f"    for (int q = 0; q < E; ++q) w[q] = {sym}_tcomb(w[q], ({t}){sets});",
        "  }",
        "  return fit;",
        "}",
    ]


def _linkage(unit) -> str:
    """How a period or stream loop is compiled: a function of its own where the combine is one
    instruction, which GCC then compiles apart, on a core of its own (partitioned_build; the columns
    module of an f32 sum, 3.2-3.9 -> 1.3 s, its loops 0.84-1.11 of their time inline); inlined into
    the narrow item otherwise (out of line, an f32 max took 1.15-1.63x the time at 3 to 7 columns)."""
    return "GOMPUTE_ROWS" if _one_instruction(unit) else "GOMPUTE_FN"


def _one_instruction(unit) -> bool:
    """Whether `unit`'s combine is one vector instruction (min, max and functions are selects or calls)."""
    return unit.combine in ("+", "*", "&", "|", "^")


def _val(unit, call_name: str, n: int, at: str, base: str = "p") -> str:
    return mapped(unit, call_name, [f"{base}{k}[{at}]" for k in range(n)])
