"""The C++ of a reduction's tiles on the host: rows of TILE_FIRST to tile_last elements, one result
each, reduced TILE rows at a time, for an f32 sum, min or max (reduce_rows.py's short and lane
rows hand them over).

A row's order is its own: TILE lanes, combined with each whole step of TILE elements in turn,
then with the last TILE elements of the row (for a sum, the lanes an earlier step read the
identity), then the lanes pairwise, neighbours TILE / 2 apart first, all in f32: an element of a
sum passes through as many roundings as in NumPy's pairwise sum of the row (eight accumulators,
then pairwise), at most TILE_SUM_LAST / TILE + log2(TILE). A tile's rows are folded at once, in
registers: each level merges two vectors of lanes into one, the rows' halves side by side, so the
rows share their folds' instructions and the results leave as one vector. Rows that are not a
whole tile (a block's last), strided rows and rows under several kept dimensions are gathered into
a tile of their own and go through the same function: a row's bits do not depend on where it lies.
"""

from __future__ import annotations

from .codegen import storage_ctype, value_ctype
from .reduce_layout import declarations, lanes, leaf_rows, mapped, narrow_sum, store_result

TILE = 8  # rows a tile reduces at once, and lanes of each row
TILE_FIRST = TILE + 1  # rows of at least this many elements: the last step overlaps an earlier one
TILE_SUM_LAST = 64  # a sum's: an element passes through at most 11 f32 roundings
# Rows of up to TILE * (FIXED_STEPS + 2) elements have a loop of their own for their count of whole
# steps between the first TILE elements and the last, unrolled; longer ones share one (K = -1).
FIXED_STEPS = 3


def tiles(unit) -> bool:
    """Whether `unit`'s rows of TILE_FIRST to tile_last(unit) elements are reduced in tiles: an f32 sum,
    min or max."""
    return value_ctype(unit.acc) == "float" and (narrow_sum(unit) or unit.combine in ("min", "max"))


def tile_last(unit) -> int:
    """A sum's rows of up to TILE_SUM_LAST elements are tiles; a min's or max's every row of up to two
    leaves: those of up to one would be lanes of their own (reduce_rows.host_lane_rows), and a rows
    item a row, of leaves and a tree, costs more than a row this short reads."""
    return TILE_SUM_LAST if unit.combine == "+" else 2 * leaf_rows(unit) * lanes(unit.acc)


def _combine(unit, a: str, b: str) -> str:
    """Two vectors of lanes combined: a sum, or a min or max that propagates NaNs where the template's
    X holds (gompute_min and gompute_max take vectors too), else one compare, which lets a NaN in `a`
    go (_nan_check)."""
    if unit.combine == "+":
        return f"{a} + {b}"
    return f"(X ? gompute_{unit.combine}({a}, {b}) : {a} {'>' if unit.combine == 'max' else '<'} {b} ? {a} : {b})"


def _fold(unit) -> list[str]:
    """The tile's rows' lanes v[r] folded into v[0]: level h merges pairs of vectors, each of TILE / h
    rows' h lanes side by side, into one of twice the rows, each row's lanes [0, h/2) with its [h/2, h)."""
    lines, count, h = [], TILE, TILE
    while h > 1:
        lo = [b + i for b in range(0, 2 * TILE, h) for i in range(h // 2)]
        hi = [b + h // 2 + i for b in range(0, 2 * TILE, h) for i in range(h // 2)]
        a, b = (f"{unit.name}_shuffle(v[2 * k], v[2 * k + 1], {', '.join(map(str, s))})" for s in (lo, hi))
        count //= 2
        lines.append(f"  for (int k = 0; k < {count}; ++k) v[k] = {_combine(unit, a, b)};")
        h //= 2
    return [*lines, "  return v[0];"]


def _nan_check(unit, rows: str, pass_params: str) -> list[str]:
    """A min's or max's tile first combines with one compare, which keeps a NaN only where it is the
    second operand, and sums everything it reads (d): where that sum has no NaN (no NaN read, and no
    infinities of both signs), those results are exact; otherwise the tile is reduced again with
    NaN-propagating combines. Either way a row's result depends on the row alone."""
    if unit.combine == "+":
        return []
    sym = unit.name
    return [
        "  if (!X) {",
        *(f"    d[{r}] = d[{r}] + d[{r} + {h}];" for h in (TILE // 2, TILE // 4, TILE // 8) for r in range(h)),
        f"    const {sym}_m nan = d[0] != d[0];",
        "    uint64_t any[sizeof nan / 8];",
        "    memcpy(any, &nan, sizeof nan);",
        f"    if (__builtin_expect(({' | '.join(f'any[{w}]' for w in range(TILE // 2))}) != 0, 0))",
        f"      return {sym}_tile_exact({rows}, n, keep, identity{pass_params});",
        "  }",
    ]


def _tile(unit, structs, call_name: str) -> list[str]:
    """`tile<K, X>`: TILE rows, row r at p + r * s in each input, K whole steps each (-1: counted
    from n), reduced at once into their results' vector; `tile_exact`: the same, NaN-propagating."""
    sym, n = unit.name, len(unit.in_storage)
    _, params, pass_params = declarations(unit, structs)
    p_decl = ", ".join(f"const {storage_ctype(s)}* p{k}" for k, s in enumerate(unit.in_storage))
    rows_decl = ", ".join(f"const {storage_ctype(s)}* r{k}, int64_t s{k}" for k, s in enumerate(unit.in_storage))
    rows, ps = ", ".join(f"r{k}, s{k}" for k in range(n)), ", ".join(f"p{k}" for k in range(n))
    rows_at = ", ".join(f"r{k} + r * s{k}" for k in range(n))
    at = lambda j: f"{sym}_tile_at({ps}, {j}{pass_params})"  # noqa: E731
    v, m, sums = f"{sym}_v", f"{sym}_m", unit.combine == "+"
    exact = f"GOMPUTE_ROWS {v} {sym}_tile_exact({rows_decl}, int64_t n, {m} keep, {v} identity{params})"
    return [
        f"GOMPUTE_FN {v} {sym}_tile_at({p_decl}, int64_t j{params}) {{",
        f"  {v} x;",
        f"  for (int l = 0; l < {TILE}; ++l) x[l] = {mapped(unit, call_name, [f'p{k}[j + l]' for k in range(n)])};",
        "  return x;",
        "}",
        "// A tile row's lanes, and for a min or max the sum of all it read (d).",
        "template <int K, bool X>",
        f"GOMPUTE_FN {v} {sym}_tile_lanes({p_decl}, int64_t n, {m} keep, {v} identity, {v}& d{params}) {{",
        f"  {v} v = {at(0)};",
        *([] if sums else ["  d = v;"]),
        f"  const int steps = K < 0 ? (int)((n - 1) / {TILE} - 1) : K;",
        "  for (int j = 1; j <= steps; ++j) {",
        f"    const {v} x = {at(f'j * {TILE}')};",
        f"    v = {_combine(unit, 'v', 'x')};",
        *([] if sums else ["    d = d + x;"]),
        "  }",
        f"  const {v} y = {at(f'n - {TILE}')};",
        *([] if sums else ["  d = d + y;"]),
        # A min or max may read an element twice: its last step needs no identity in the lanes read before.
        f"  return {_combine(unit, 'v', '(keep ? y : identity)' if sums else 'y')};",
        "}",
        *([] if sums else [f"{exact};"]),
        "template <int K, bool X>",
        f"GOMPUTE_FN {v} {sym}_tile({rows_decl}, int64_t n, {m} keep, {v} identity{params}) {{",
        f"  {v} v[{TILE}], d[{TILE}];",
        f"#pragma GCC unroll {TILE}",
        f"  for (int r = 0; r < {TILE}; ++r) v[r] = {sym}_tile_lanes<K, X>({rows_at}, n, keep, identity, d[r]"
        f"{pass_params});",
        *_nan_check(unit, rows, pass_params),
        *_fold(unit),
        "}",
        *(
            []
            if sums
            else [f"{exact} {{", f"  return {sym}_tile<-1, true>({rows}, n, keep, identity{pass_params});", "}"]
        ),
    ]


def _tile_rows_of(unit, structs) -> list[str]:
    """`tile_rows_of<K>`: results [first, last) of a block, whole tiles of packed rows read in place,
    the rest gathered a tile at a time (a short tile's missing rows zeros, their results dropped)."""
    sym, a, n = unit.name, value_ctype(unit.acc), len(unit.in_storage)
    ins, params, pass_params = declarations(unit, structs)
    o, v, m = storage_ctype(unit.out_storage), f"{sym}_v", f"{sym}_m"
    packed = ", ".join(f"in{k} + m * lay.kept[{k}][0], lay.kept[{k}][0]" for k in range(n))
    gathered = ", ".join(f"b{k}[0], {tile_last(unit)}" for k in range(n))
    store = f"for (int e = 0; e < {TILE}; ++e) {store_result(unit, 'out[m + e]', 'v[e]')}"
    if storage_ctype(unit.out_storage) == a and unit.result == unit.acc:  # a tile's results, stored whole
        store = "memcpy(out + m, &v, sizeof v);"
        if unit.adds_identity:  # (store_result's addition, a vector at once)
            store = f"{{ const {v} z = v + identity; memcpy(out + m, &z, sizeof z); }}"
    return [
        "template <int K>",
        f"GOMPUTE_FN void {sym}_tile_rows_of({', '.join(ins)}, {o}* out, const gompute_reduce_layout<{n + 1}>& lay,",
        f"                                  int64_t first, int64_t last{params}) {{",
        "  const int64_t count = lay.red_count;",
        f"  {m} keep;",
        f"  {v} identity;",
        f"  for (int l = 0; l < {TILE}; ++l) {{",
        f"    keep[l] = l >= ({TILE} - count % {TILE}) % {TILE} ? -1 : 0;",
        f"    identity[l] = ({a}){unit.identity};",
        "  }",
        "  int64_t m = first;",
        f"  if (lay.kept_ndim == 1 && {' && '.join(f'lay.red[{k}][0] == 1' for k in range(n))}) {{",
        f"    const int64_t step = lay.kept[{n}][0];",
        f"    for (; m + {TILE} <= last; m += {TILE}) {{",
        f"      const {v} v = {sym}_tile<K, false>({packed}, count, keep, identity{pass_params});",
        "      if (step == 1)",
        f"        {store}",
        "      else",
        f"        for (int e = 0; e < {TILE}; ++e) {store_result(unit, 'out[(m + e) * step]', 'v[e]')}",
        "    }",
        "  }",
        f"  int64_t at[{n + 1}], idx[GOMPUTE_MAX_NDIM], to[{TILE}];",
        f"  gompute_unravel<{n + 1}>(lay.kept_shape, lay.kept, lay.kept_ndim, m, at, idx);",
        *(f"  {storage_ctype(s)} b{k}[{TILE}][{tile_last(unit)}];" for k, s in enumerate(unit.in_storage)),
        "  while (m < last) {",
        "    int c = 0;",
        f"    for (; c < {TILE} && m < last; ++c, ++m, gompute_next_kept(lay, idx, at)) {{",
        f"      to[c] = at[{n}];",
        "      for (int64_t e = 0; e < count; ++e) {",
        *(f"        b{k}[c][e] = in{k}[at[{k}] + e * lay.red[{k}][0]];" for k in range(n)),
        "      }",
        "    }",
        f"    for (int r = c; r < {TILE}; ++r) {{  // zeros in every storage type",
        *(f"      memset(b{k}[r], 0, sizeof b{k}[r]);" for k in range(n)),
        "    }",
        f"    const {v} v = {sym}_tile<K, false>({gathered}, count, keep, identity{pass_params});",
        f"    for (int e = 0; e < c; ++e) {store_result(unit, 'out[to[e]]', 'v[e]')}",
        "  }",
        "}",
    ]


def host_tiles(unit, structs, call_name: str) -> list[str]:
    """`tile_rows`: results [first, last) of a block, rows of TILE_FIRST to tile_last elements along one
    reduced dimension, a tile at a time. The vectors are GCC's and Clang's vector extensions."""
    sym, n = unit.name, len(unit.in_storage)
    ins, params, pass_params = declarations(unit, structs)
    o, inputs = storage_ctype(unit.out_storage), ", ".join(f"in{k}" for k in range(n))
    call = f"({inputs}, out, lay, first, last{pass_params});"
    most = (tile_last(unit) - 1) // TILE - 1  # whole steps of the longest row
    steps = [*range(min(most, FIXED_STEPS) + 1), *([-1] if most > FIXED_STEPS else [])]
    return [
        f"typedef {value_ctype(unit.acc)} {sym}_v __attribute__((vector_size({TILE * 4})));",
        f"typedef int32_t {sym}_m __attribute__((vector_size({TILE * 4})));",
        "#if defined(__has_builtin)",
        "#if __has_builtin(__builtin_shufflevector)  // GCC 12+, clang",
        f"#define {sym}_shuffle(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)",
        "#endif",
        "#endif",
        f"#ifndef {sym}_shuffle  // older GCC",
        f"#define {sym}_shuffle(a, b, ...) __builtin_shuffle(a, b, ({sym}_m){{__VA_ARGS__}})",
        "#endif",
        *_tile(unit, structs, call_name),
        *_tile_rows_of(unit, structs),
        f"GOMPUTE_ROWS void {sym}_tile_rows({', '.join(ins)}, {o}* out, const gompute_reduce_layout<{n + 1}>& lay,",
        f"                               int64_t first, int64_t last{params}) {{",
        f"  switch ((lay.red_count - 1) / {TILE}) {{  // whole steps between a row's first TILE elements and its last",
        *(f"    case {k + 1}: return {sym}_tile_rows_of<{k}>{call}" for k in steps[:-1]),
        f"    default: return {sym}_tile_rows_of<{steps[-1]}>{call}",
        "  }",
        "}",
    ]
