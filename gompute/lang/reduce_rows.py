"""The C++ of a reduction's rows items on the host (reduce_entries.py has the entry points that
call them): a row's elements combined in lanes over leaves, leaves merged pairwise in a binary
counter (`host_cascade`), or added in order to f64 lanes for an f32 sum (`_sink`); rows of up to a
leaf in lanes of their own width (`host_lane_rows`); short rows in a loop of their own
(`host_short_rows`), or for an f32 sum, min or max in tiles of several rows (reduce_short.py).
reduce_entries.py's docstring says how the work is cut and why results are the same for any
thread count.
"""

from __future__ import annotations

from .codegen import storage_ctype, value_ctype
from .reduce_layout import (
    LEAF_ROWS,
    ROW_LEAVES,
    ROW_STEPS,
    declarations,
    group_leaves,
    lanes,
    layout_type,
    leaf_rows,
    mapped,
    narrow_sum,
    store_result,
    tree_type,
)
from .reduce_short import TILE_FIRST, host_tiles, tile_last, tiles


def host_cascade(unit) -> list[str]:
    """push: one leaf's lanes into the binary counter; fold: the lanes of all pushed so far."""
    sym, t = unit.name, tree_type(unit)
    return [
        "template <int L, typename V>",
        f"GOMPUTE_FN void {sym}_push({t} (*stack)[L], int& depth, uint64_t& count, const V* leaf, int level = 0) {{",
        f"  {t} v[L];",
        f"  for (int l = 0; l < L; ++l) v[l] = ({t})leaf[l];",
        "  // `leaf` stands for 2^level leaves, merged pairwise already; count is a multiple of 2^level.",
        "  const uint64_t first = count >> level;",
        "  count += (uint64_t)1 << level;",
        "  for (uint64_t k = first; k & 1; k >>= 1) {",
        "    --depth;",
        f"    for (int l = 0; l < L; ++l) v[l] = {sym}_tcomb(stack[depth][l], v[l]);",
        "  }",
        "  for (int l = 0; l < L; ++l) stack[depth][l] = v[l];",
        "  ++depth;",
        "}",
        f"template <int L> GOMPUTE_FN void {sym}_fold({t} (*stack)[L], int depth, {t}* v) {{",
        f"  for (int l = 0; l < L; ++l) v[l] = depth ? stack[depth - 1][l] : ({t}){unit.identity};",
        "  for (int d = depth - 2; d >= 0; --d)",
        f"    for (int l = 0; l < L; ++l) v[l] = {sym}_tcomb(stack[d][l], v[l]);",
        "}",
    ]


def _sink(unit) -> dict[str, str]:
    """Where a rows item puts its leaves, as C++ snippets: `params` and `args` of the run function,
    `declare` in the item, `push` of the lanes v, `fold` into the lanes v.

    A narrow sum's leaves go in order into f64 lanes: an item has at most 2^18 of them, so the f64
    additions add under 2^-35 of the magnitudes' sum, far below the result's own f32 rounding, and
    the item skips the binary counter's branches and stack. Other combines merge them pairwise,
    in the binary counter."""
    t, L = tree_type(unit), lanes(unit.acc)
    if narrow_sum(unit):
        return {
            "params": f"{t}* acc",
            "args": "acc",
            "declare": f"  {t} acc[{L}];\n  for (int l = 0; l < {L}; ++l) acc[l] = 0;",
            "push": f"for (int l = 0; l < {L}; ++l) acc[l] += ({t})v[l];",
            "fold": f"for (int l = 0; l < {L}; ++l) v[l] = acc[l];",
        }
    stack = (LEAF_ROWS * L * ROW_LEAVES).bit_length()
    return {
        "params": f"{t} (*stack)[{L}], int& depth, uint64_t& count",
        "args": "stack, depth, count",
        # The counter holds at most bit_length(leaves) levels, and an item of short runs has a leaf a
        # run, up to one an element: sized for the item's elements, not for ROW_LEAVES.
        "declare": f"  {t} stack[{stack}][{L}];\n  int depth = 0;\n  uint64_t count = 0;",
        "push": f"{unit.name}_push<{L}>(stack, depth, count, v);",
        "fold": f"{unit.name}_fold<{L}>(stack, depth, v);",
    }


def _exact(unit) -> bool:
    """Whether the combine gives the same value in any order (min, max, bits, integer + and *):
    then a run is reduced in one pass over its lanes, with no pairwise tree above its leaves."""
    return unit.combine in ("min", "max", "&", "|", "^") or (unit.combine in ("+", "*") and unit.acc.kind in "iub")


def _full_leaf_rows(unit, value: str) -> list[str]:
    """Rows 1 to `rows` of a full leaf into the lanes v[l] (row 0 is in them), `value` row r's lane l.

    A float min or max keeps its NaN apart: each lane's chain through v is then one vector
    max or min (`x > v ? x : v` is x86's maxps, which keeps a NaN v), and each NaN read goes
    into q, a chain of blends on a mask that does not depend on v; q's NaN wins at the end.
    gompute_max's NaN test on both sides would put two compares and a mask merge in the chain
    before each blend."""
    sym, a = unit.name, value_ctype(unit.acc)
    rows = "n / L" if _exact(unit) else "R"
    if not (unit.combine in ("min", "max") and unit.acc.is_float):
        return [
            f"    for (int64_t r = 1; r < {rows}; ++r)",
            f"      for (int l = 0; l < L; ++l) v[l] = {sym}_comb(v[l], {value});",
        ]
    cmp = ">" if unit.combine == "max" else "<"
    return [
        f"    {a} q[L];",
        "    for (int l = 0; l < L; ++l) q[l] = 0;",
        f"    for (int64_t r = 1; r < {rows}; ++r)",
        "      for (int l = 0; l < L; ++l) {",
        f"        const {a} x = {value};",
        "        q[l] = x != x ? x : q[l];",
        f"        v[l] = x {cmp} v[l] ? x : v[l];",
        "      }",
        "    for (int l = 0; l < L; ++l) v[l] = q[l] != q[l] ? q[l] : v[l];",
    ]


def _pairwise(terms: list[str], merge) -> str:
    """The C++ of `terms` merged pairwise, neighbours first, by merge(x, y)."""
    while len(terms) > 1:
        terms = [merge(x, y) for x, y in zip(terms[::2], terms[1::2])]
    return terms[0]


def _group_leaves(unit, at: list[str], pass_params: str) -> list[str]:
    """group_leaves whole leaves at once, merged pairwise. A narrow sum merges them in f32 and
    adds them to its f64 lanes (`_sink`), anywhere in a run. Other combines push them as one: the
    values the binary counter would make of them one by one, with a fraction of its branches
    (the depth it merges to varies leaf by leaf, and the branch on it mispredicts), so a group
    starts where the counter holds a multiple of group_leaves."""
    sym, a, t, L = unit.name, value_ctype(unit.acc), tree_type(unit), lanes(unit.acc)
    G, RL = group_leaves(unit), leaf_rows(unit) * lanes(unit.acc)
    leaves = [f"{sym}_leaf(q{s}, {', '.join(f'{p} + {s * RL}' for p in at)}, {RL}{pass_params});" for s in range(G)]
    if narrow_sum(unit):
        merged = f"({t}){_pairwise([f'q{s}[l]' for s in range(G)], lambda x, y: f'{sym}_comb({x}, {y})')}"
        first, push = [], [f"for (int l = 0; l < {L}; ++l) acc[l] += {merged};"]
    else:
        merged = _pairwise([f"({t})q{s}[l]" for s in range(G)], lambda x, y: f"{sym}_tcomb({x}, {y})")
        first = [f"(count & {G - 1}) == 0"]
        push = [
            f"{t} w[{L}];",
            f"for (int l = 0; l < {L}; ++l) w[l] = {merged};",
            f"{sym}_push<{L}>(stack, depth, count, w, {G.bit_length() - 1});",
        ]
    return [
        f"    if ({' && '.join([*first, f'n - j >= {G * RL}'])}) {{",
        f"      {a} {', '.join(f'q{s}[{L}]' for s in range(G))};",
        *(f"      {line}" for line in [*leaves, *push]),
        f"      m = {G * RL};",
        "      continue;",
        "    }",
    ]


def host_rows(unit, structs, call_name: str) -> list[str]:
    sym, a, t, n = unit.name, value_ctype(unit.acc), tree_type(unit), len(unit.in_storage)
    ins, params, pass_params = declarations(unit, structs)
    L, R, sink = lanes(unit.acc), leaf_rows(unit), _sink(unit)
    ptr = lambda j: mapped(unit, call_name, [f"p{k}[{j}]" for k in range(n)])  # noqa: E731
    p_decl = ", ".join(f"const {storage_ctype(t)}* p{k}" for k, t in enumerate(unit.in_storage))
    lay = layout_type(unit)
    contiguous = " && ".join(f"lay.red[{k}][last] == 1" for k in range(n))
    at = lambda k: f"in{k} + at[{k}] + off[{k}]"  # noqa: E731
    return [
        f"GOMPUTE_FN void {sym}_leaf({a}* v, {p_decl}, int64_t n{params}) {{",
        f"  constexpr int L = {L}, R = {R};",
        # An exact combine's run is one leaf of all its whole leaves; a sum's leaves are R rows.
        "  if (n > 0 && n % (R * L) == 0) {" if _exact(unit) else "  if (n == R * L) {",
        f"    for (int l = 0; l < L; ++l) v[l] = {ptr('l')};",
        *_full_leaf_rows(unit, ptr("r * L + l")),
        "    return;",
        "  }",
        f"  for (int l = 0; l < L; ++l) v[l] = {unit.identity};",
        "  int64_t j = 0;",
        "  for (; j + L <= n; j += L)",
        f"    for (int l = 0; l < L; ++l) v[l] = {sym}_comb(v[l], {ptr('j + l')});",
        f"  for (int l = 0; j + l < n; ++l) v[l] = {sym}_comb(v[l], {ptr('j + l')});",
        "}",
        # The same run twice: for inputs in the caches, and built for DRAM's pace (GOMPUTE_FROM_DRAM).
        *(
            line
            for attr, name in (("GOMPUTE_ROWS", "run"), ("GOMPUTE_FROM_DRAM", "run_from_dram"))
            for line in (
                f"{attr} void {sym}_{name}({sink['params']}, {p_decl}, int64_t n{params}) {{",
                "  for (int64_t j = 0, m; j < n; j += m) {",
                f"    {a} v[{L}];",
                *([] if _exact(unit) else _group_leaves(unit, [f"p{k} + j" for k in range(n)], pass_params)),
                f"    m = n - j < {R * L} ? n - j : {f'(n - j) / {R * L} * {R * L}' if _exact(unit) else R * L};",
                f"    {sym}_leaf(v, {', '.join(f'p{k} + j' for k in range(n))}, m{pass_params});",
                f"    {sink['push']}",
                "  }",
                "}",
            )
        ),
        "// Item i: the reduced elements [k0, k1) of the result element whose offsets are `at`, one partial;",
        "// `dram`: the launch reads far more than the caches hold (the entry's DRAM_BYTES).",
        f"GOMPUTE_ROWS {t} {sym}_row_item({', '.join(ins)}, const {lay}& lay, int64_t i, const int64_t* at, bool dram"
        f"{params}) {{",
        "  const int64_t k0 = i % lay.chunks * lay.chunk;",
        "  const int64_t k1 = k0 + lay.chunk < lay.red_count ? k0 + lay.chunk : lay.red_count;",
        f"  int64_t off[{n + 1}], idx[GOMPUTE_MAX_NDIM];",
        f"  gompute_unravel<{n + 1}>(lay.red_shape, lay.red, lay.red_ndim, k0, off, idx);",
        *sink["declare"].split("\n"),
        "  const int64_t last = lay.red_ndim - 1;",
        f"  if ({contiguous}) {{  // runs along the innermost reduced dimension, read where they are",
        "    for (int64_t k = k0; k < k1;) {",
        "      const int64_t left = lay.red_shape[last] - idx[last];",
        "      const int64_t run = k1 - k < left ? k1 - k : left;",
        "      if (dram)",
        f"        {sym}_run_from_dram({sink['args']}, {', '.join(at(k) for k in range(n))}, run{pass_params});",
        "      else",
        f"        {sym}_run({sink['args']}, {', '.join(at(k) for k in range(n))}, run{pass_params});",
        "      gompute_advance(lay, idx, off, run);",
        "      k += run;",
        "    }",
        "  } else {  // strided: gathered a leaf at a time",
        f"    for (int64_t k = k0; k < k1; k += {R * L}) {{",
        f"      const int64_t m = k1 - k < {R * L} ? k1 - k : {R * L};",
        *(f"      {storage_ctype(t)} b{k}[{R * L}];" for k, t in enumerate(unit.in_storage)),
        "      for (int64_t e = 0; e < m; ++e) {",
        *(f"        b{k}[e] = in{k}[at[{k}] + off[{k}]];" for k in range(n)),
        "        gompute_advance(lay, idx, off, 1);",
        "      }",
        f"      {a} v[{L}];",
        f"      {sym}_leaf(v, {', '.join(f'b{k}' for k in range(n))}, m{pass_params});",
        f"      {sink['push']}",
        "    }",
        "  }",
        f"  {t} v[{L}];",
        f"  {sink['fold']}",
        f"  for (int w = {L // 2}; w > 0; w /= 2)",
        f"    for (int l = 0; l < w; ++l) v[l] = {sym}_tcomb(v[l], v[l + w]);",
        "  return v[0];",
        "}",
    ]


def _lane_row(unit, structs, call_name: str) -> list[str]:
    """`lane_row<W>`: a row of n >= W contiguous elements in W lanes: steps of W elements in order,
    then the last n % W elements read in the W that end the row, the lanes below them masked with the
    identity (one read, no scalar tail), then the lanes pairwise in the tree's type.

    It is not inlined: GCC's vectorizer leaves the fold in scalar conversions and additions where the
    row is inlined into the loop over rows. Its loops over lanes stay loops until the vectorizer (no
    unrolling first), which turns a min's or max's selects into vector blends; unrolled, they stay scalar."""
    sym, a, t, n = unit.name, value_ctype(unit.acc), tree_type(unit), len(unit.in_storage)
    _, params, _ = declarations(unit, structs)
    p_decl = ", ".join(f"const {storage_ctype(s)}* p{k}" for k, s in enumerate(unit.in_storage))
    val = lambda j: mapped(unit, call_name, [f"p{k}[{j}]" for k in range(n)])  # noqa: E731
    tail = mapped(unit, call_name, [f"(p{k} + n - W)[l]" for k in range(n)])
    # A float min or max keeps its NaNs apart, in q, as a full leaf does (_full_leaf_rows).
    nan_apart = unit.combine in ("min", "max") and unit.acc.is_float
    if nan_apart:
        cmp = ">" if unit.combine == "max" else "<"
        update = ["      q[l] = x != x ? x : q[l];", f"      v[l] = x {cmp} v[l] ? x : v[l];"]
        keep, merge = (
            [f"  {a} q[W];", "  for (int l = 0; l < W; ++l) q[l] = 0;"],
            [
                "#pragma GCC unroll 1",
                "  for (int l = 0; l < W; ++l) v[l] = q[l] != q[l] ? q[l] : v[l];",
            ],
        )
    else:
        update, keep, merge = [f"      v[l] = {sym}_comb(v[l], x);"], [], []
    return [
        "// w[0] = w[0..2H) pairwise, neighbours H apart first: each level a loop of constant length.",
        "template <int H>",
        f"GOMPUTE_FN void {sym}_halve({t}* w) {{",
        f"  for (int l = 0; l < H; ++l) w[l] = {sym}_tcomb(w[l], w[l + H]);",
        f"  if constexpr (H > 1) {sym}_halve<H / 2>(w);",
        "}",
        "template <int W>",
        f"GOMPUTE_ROWS {t} {sym}_lane_row({p_decl}, int64_t n{params}) {{",
        f"  {a} v[W];",
        *keep,
        f"  for (int l = 0; l < W; ++l) v[l] = {val('l')};",
        "  int64_t j = W;",
        "  for (; j + W <= n; j += W)",
        "#pragma GCC unroll 1",
        "    for (int l = 0; l < W; ++l) {",
        f"      const {a} x = {val('j + l')};",
        *update,
        "    }",
        "  if (j < n) {  // lanes below s of the last W elements were read above",
        "    const int s = (int)(j + W - n);",
        "#pragma GCC unroll 1",
        "    for (int l = 0; l < W; ++l) {",
        f"      const {a} y = {tail}, x = l >= s ? y : ({a}){unit.identity};",
        *update,
        "    }",
        "  }",
        *merge,
        f"  {t} w[W];",
        f"  for (int l = 0; l < W; ++l) w[l] = ({t})v[l];",
        f"  if constexpr (W > 1) {sym}_halve<W / 2>(w);",
        "  return w[0];",
        "}",
    ]


def host_lane_rows(unit, structs, call_name: str) -> list[str]:
    """Rows of at most lane_rows_last elements along one reduced dimension, one item each: results
    [first, last) of a block, the result's offsets stepped along (no division a row), those of
    TILE_FIRST to tile_last elements in tiles, the others, of at most a leaf (leaf_rows steps of
    `lanes`), each a `lane_row<W>`. W is the least power of two with n <= ROW_STEPS * W, at most
    `lanes` and never above n: a short row's lanes are few and its fold short, a longer one's
    several vectors, whose chains of combines run at once. An element passes through at most
    leaf_rows combines in the accumulator's type, as in a leaf. Strided rows are gathered into a row
    of their own first and reduced the same way: the bits of packed rows."""
    sym, t, n = unit.name, tree_type(unit), len(unit.in_storage)
    ins, params, pass_params = declarations(unit, structs)
    lay, o, L = layout_type(unit), storage_ctype(unit.out_storage), lanes(unit.acc)
    contiguous = " && ".join(f"lay.red[{k}][0] == 1" for k in range(n))
    rows = ", ".join(f"in{k} + at[{k}]" for k in range(n))
    cases = [
        f"    case {w}: return {sym}_lane_rows<{w}>({', '.join(f'in{k}' for k in range(n))}, out, lay, first, last"
        f"{pass_params});"
        for w in (1 << e for e in range(L.bit_length()))
    ]
    return [
        *_lane_row(unit, structs, call_name),
        "template <int W>",
        f"GOMPUTE_ROWS void {sym}_lane_rows({', '.join(ins)}, {o}* out, const {lay}& lay, int64_t first, int64_t last"
        f"{params}) {{",
        f"  int64_t at[{n + 1}], idx[GOMPUTE_MAX_NDIM];",
        f"  gompute_unravel<{n + 1}>(lay.kept_shape, lay.kept, lay.kept_ndim, first, at, idx);",
        "  const int64_t count = lay.red_count;",
        f"  if ({contiguous}) {{",
        "    for (int64_t m = first; m < last; ++m, gompute_next_kept(lay, idx, at)) {",
        f"      const {t} v = {sym}_lane_row<W>({rows}, count{pass_params});",
        f"      {store_result(unit, f'out[at[{n}]]', 'v')}",
        "    }",
        "    return;",
        "  }",
        *(f"  {storage_ctype(s)} b{k}[{leaf_rows(unit) * L}];" for k, s in enumerate(unit.in_storage)),
        "  for (int64_t m = first; m < last; ++m, gompute_next_kept(lay, idx, at)) {",
        "    for (int64_t k = 0; k < count; ++k) {",
        *(f"      b{k}[k] = in{k}[at[{k}] + k * lay.red[{k}][0]];" for k in range(n)),
        "    }",
        f"    const {t} v = {sym}_lane_row<W>({', '.join(f'b{k}' for k in range(n))}, count{pass_params});",
        f"    {store_result(unit, f'out[at[{n}]]', 'v')}",
        "  }",
        "}",
        f"GOMPUTE_ROWS void {sym}_lane_rows_of({', '.join(ins)}, {o}* out, const {lay}& lay, int64_t first,",
        f"                                     int64_t last{params}) {{",
        *_to_tiles(unit, pass_params),
        "  int w = 1;",
        "  while (2 * w <= lay.red_count && w < 8) w *= 2;",
        f"  while (w < {L} && lay.red_count > {ROW_STEPS} * w) w *= 2;",
        "  switch (w) {",
        *cases,
        "  }",
        "}",
    ]


def lane_rows_last(unit) -> int:
    """The longest rows host_lane_rows takes: a leaf, or the tiles' longest where that is longer."""
    leaf = leaf_rows(unit) * lanes(unit.acc)
    return max(leaf, tile_last(unit)) if tiles(unit) else leaf


def _to_tiles(unit, pass_params: str) -> list[str]:
    """The C++ that hands rows of TILE_FIRST to tile_last elements to reduce_short's tiles, where `unit` has them."""
    if not tiles(unit):
        return []
    inputs = ", ".join(f"in{k}" for k in range(len(unit.in_storage)))
    return [
        f"  if (lay.red_count >= {TILE_FIRST} && lay.red_count <= {tile_last(unit)})",
        f"    return {unit.name}_tile_rows({inputs}, out, lay, first, last{pass_params});",
    ]


# Short rows of up to this many elements get a loop of their own width, vectorized across rows:
# longer ones of an f32 sum, min or max are tiles (reduce_short.py), and other combines gain less
# or lose past eight.
SHORT_FIXED = 8


def host_short_rows(unit, structs, call_name: str) -> list[str]:
    """Rows of at most SHORT_ROWS elements along one reduced dimension, one item each, one kept
    dimension: results [first, last) of a block, each reduced in order in the partial's type (an
    f32 sum's in f32) and stored in the output, or handed to the tiles. Widths up to SHORT_FIXED
    are compile-time constants, so the loop over results vectorizes; where every input's rows are
    packed and the output is contiguous, at constant strides too. Wider ones are a chain of
    combines a row, the rows' chains running at once."""
    sym, t, n = unit.name, tree_type(unit), len(unit.in_storage)
    ins, params, pass_params = declarations(unit, structs)
    lay, o = layout_type(unit), storage_ctype(unit.out_storage)
    # An f32 sum's rows add in f32, as its tiles do (reduce_short.py) and NumPy does a row this short.
    if tiles(unit) and narrow_sum(unit):
        t, comb = value_ctype(unit.acc), f"{sym}_comb"
    else:
        comb = f"{sym}_tcomb"
    value = mapped(unit, call_name, [f"in{k}[m * lay.kept[{k}][0] + k * lay.red[{k}][0]]" for k in range(n)])
    dense = mapped(unit, call_name, [f"in{k}[m * C + k]" for k in range(n)])
    packed = " && ".join([*(f"lay.kept[{k}][0] == C && lay.red[{k}][0] == 1" for k in range(n)), "step == 1"])
    inputs = ", ".join(f"in{k}" for k in range(n))
    cases = [
        f"    case {c}: return {sym}_short_fixed<{c}>({inputs}, out, lay, first, last{pass_params});"
        for c in range(1, SHORT_FIXED + 1)
    ]
    return [
        *(host_tiles(unit, structs, call_name) if tiles(unit) else []),
        "template <int C>",
        f"GOMPUTE_FN void {sym}_short_fixed({', '.join(ins)}, {o}* out, const {lay}& lay, int64_t first,",
        f"                                  int64_t last{params}) {{",
        f"  const int64_t count = C ? C : lay.red_count, step = lay.kept[{n}][0];",
        f"  if (C && {packed}) {{",
        "    for (int64_t m = first; m < last; ++m) {",
        f"      {t} v = ({t}){unit.identity};",
        f"      for (int64_t k = 0; k < C; ++k) v = {comb}(v, ({t}){dense});",
        f"      {store_result(unit, 'out[m]', 'v')}",
        "    }",
        "    return;",
        "  }",
        "  for (int64_t m = first; m < last; ++m) {",
        f"    {t} v = ({t}){unit.identity};",
        f"    for (int64_t k = 0; k < count; ++k) v = {comb}(v, ({t}){value});",
        f"    {store_result(unit, 'out[m * step]', 'v')}",
        "  }",
        "}",
        f"GOMPUTE_ROWS void {sym}_short_rows({', '.join(ins)}, {o}* out, const {lay}& lay, int64_t first,",
        f"                                   int64_t last{params}) {{",
        *_to_tiles(unit, pass_params),
        "  switch (lay.red_count) {",
        *cases,
        f"    default: return {sym}_short_fixed<0>({inputs}, out, lay, first, last{pass_params});",
        "  }",
        "}",
    ]
