"""The C++ of a reduction's entry points: the host's here (its rows items in reduce_rows.py), the
GPU's in reduce_gpu.py.

A reduction runs as one or two launches (gompute/reduce.py plans them). The first cuts the work
into items of a FIXED size, whatever the thread count: `rows` (the reduced elements of one result
element, in runs along the innermost reduced dimension, or gathered where that is strided) or
`columns` (a tile of result elements contiguous in every input, across a chunk of reduced rows:
the lanes are the results). Where an item covers all of its results' reduced elements
(`layout.chunks == 1`) the first launch stores the results through the output's strides and is
the only one; otherwise it writes one partial per item, and the second, `finish`, combines each
result's partials pairwise and stores the result (an empty reduction, `chunks == 0`, has only
the finish, which stores the identity). So the result depends on the shape, layout and types
alone, not on the threads that ran it.

Inside an item, values are combined in lanes (independent accumulators, which also vectorize)
over leaves of 8 steps (16 for a sum of f32: no more than NumPy's), and leaves are merged in a
binary counter (`push`): a pairwise tree, so a float sum's error grows with log(n), as NumPy's
pairwise sum's does. A float sum's tree is f64. An f32 sum's leaves are merged in f32 a few at
a time (reduce_layout.NARROW_GROUP), then added in order into f64 lanes (reduce_rows._sink): f64's
rounding over an item's few thousand additions is far below the result's own, and the loop is
left with no branches or stack between groups, so it reads as fast as an integer sum.

On a GPU an item is a thread block: its threads stride through the item's elements, then the
block reduces its threads' values with warp shuffles and shared memory; partials and the second
pass are as on the host.
"""

from __future__ import annotations

from .codegen import storage_ctype, value_ctype
from .reduce_columns import host_narrow_columns
from .reduce_gpu import gpu_entries
from .reduce_layout import (
    COLUMN_GROUP,
    COLUMN_ITEMS,
    DRAM_BYTES,
    LAYOUT_SOURCE,
    SHORT_ROWS,
    column_width,
    combine_code,
    declarations,
    lanes,
    layout_type,
    mapped,
    store_result,
    tree_type,
)
from .reduce_rows import host_cascade, host_lane_rows, host_rows, host_short_rows, lane_rows_last


def reduce_entries_source(backend: str, unit, structs, call_name: str, combine_name: str | None) -> list[str]:
    """The lines of `unit`'s reduction entry points for `backend`."""
    sym, a, t = unit.name, value_ctype(unit.acc), tree_type(unit)
    tree = f"{sym}_comb(a, b)" if t == a else "a + b"  # a float sum's tree, in f64
    common = [
        *LAYOUT_SOURCE.strip("\n").splitlines(),
        f"GOMPUTE_FN {a} {sym}_comb({a} a, {a} b) {{ return {combine_code(unit, 'a', 'b', combine_name)}; }}",
        f"GOMPUTE_FN {t} {sym}_tcomb({t} a, {t} b) {{ return {tree}; }}",
    ]
    if backend == "host":
        return common + _host_entries(unit, structs, call_name)
    return common + gpu_entries(unit, structs, call_name, backend)


# ---- host ----------------------------------------------------------------------------------


def _host_arg_lines(entry, structs, lay: str) -> list[str]:
    lines = []
    for i, arg in enumerate(entry.args):
        if arg.kind == "pointer":
            ctype = storage_ctype(arg.type)
            lines.append(f"  {ctype}* {arg.name} = ({ctype}*)(uintptr_t)*(const uint64_t*)launch->args[{i}];")
        else:
            ctype = lay if arg.kind == "layout" else structs[arg.type]
            lines += [f"  {ctype} {arg.name};", f"  memcpy(&{arg.name}, launch->args[{i}], sizeof {arg.name});"]
    return lines


def _column_steps(unit, structs, call_name: str, g: int) -> list[str]:
    """`{sym}_column_steps{g}`: an item's whole steps of g rows into its accumulators v; returns the row
    after the last. Where s > 0 the item's rows are g runs of s consecutive rows, a row of each a step
    (step q: rows q, q + s, ..., q + (g - 1)s): a run goes on where its last row ended, so the
    prefetchers follow g long streams, not g new rows a step. Otherwise it takes g consecutive rows a
    step. A step's columns start where the first row's next 64-byte line does: rows
    a multiple of 64 bytes apart then load whole lines, not two halves of a line each."""
    sym, t, n = unit.name, tree_type(unit), len(unit.in_storage)
    ins, params, _ = declarations(unit, structs)
    pairs = [mapped(unit, call_name, [f"p{k}_{r}[l]" for k in range(n)]) for r in range(g)]
    while len(pairs) > 1:
        pairs = [f"{sym}_comb({x}, {y})" for x, y in zip(pairs[::2], pairs[1::2])]
    step = f"v[l] = {sym}_tcomb(v[l], ({t}){pairs[0]});"
    return [
        f"GOMPUTE_FN int64_t {sym}_column_steps{g}({', '.join(ins)}, {t}* v, const {layout_type(unit)}& lay,",
        "                                 const int64_t* at, int64_t* off, int64_t* idx, int64_t k0, int64_t k1,",
        f"                                 int64_t nw, int64_t s{params}) {{",
        "  int64_t k = k0;",
        f"  for (; k + {g} <= k1; k += {g}) {{",
        *(
            f"    const {storage_ctype(st)} {', '.join(f'*p{k}_{r}' for r in range(g))};"
            for k, st in enumerate(unit.in_storage)
        ),
        "    if (s) {",
        f"      const int64_t q = (k - k0) / {g};",
        *(
            f"      p{k}_{r} = in{k} + at[{k}] + off[{k}] + (q + {r} * s) * lay.red[{k}][0];"
            for r in range(g)
            for k in range(n)
        ),
        "    } else {",
        *(
            line
            for r in range(g)
            for line in (
                *(f"      p{k}_{r} = in{k} + at[{k}] + off[{k}];" for k in range(n)),
                "      gompute_advance(lay, idx, off, 1);",
            )
        ),
        "    }",
        "    int64_t lead = (int64_t)((0 - (uintptr_t)p0_0) % 64 / sizeof *p0_0);  // elements to the next line",
        "    if (lead > nw) lead = nw;",
        "    for (int64_t l = 0; l < lead; ++l) " + step,
        "    GOMPUTE_INDEPENDENT  // the accumulators are the item's own: no input is among them",
        "    for (int64_t l = lead; l < nw; ++l) " + step,
        "  }",
        "  return k;",
        "}",
    ]


def _host_columns(unit, structs, call_name: str) -> list[str]:
    sym, t, n = unit.name, tree_type(unit), len(unit.in_storage)
    ins, params, pass_params = declarations(unit, structs)
    lay = layout_type(unit)
    g, few = COLUMN_GROUP, COLUMN_GROUP // 2
    o = storage_ctype(unit.out_storage)
    inputs = ", ".join(f"in{k}" for k in range(n))
    steps_args = f"{inputs}, v, lay, at, off, idx, k0, k1, nw"
    one = mapped(unit, call_name, [f"p{k}_0[l]" for k in range(n)])
    return [
        *host_narrow_columns(unit, structs, call_name),
        *_column_steps(unit, structs, call_name, g),
        *_column_steps(unit, structs, call_name, few),
        "// Item i: result elements [m0, m0 + nw), contiguous in every input, over the reduced rows [k0, k1):",
        "// the lanes are the results, accumulated in the item's partials row (the finish pass combines the",
        f"// items' rows pairwise), {g} input rows at a time, combined pairwise first. An item that is its",
        "// results' only one accumulates on the stack and stores them in the output. Where a step's rows",
        "// are a multiple of 4 KB apart, their lines at a column all fall in one set of the L1 (64 sets of",
        f"// 64 bytes): {few} rows a step, so that they fit its ways.",
        f"GOMPUTE_ROWS void {sym}_column_item({', '.join(ins)}, {t}* partials, {o}* out, const {lay}& lay, int64_t i"
        f"{params}) {{",
        f"  constexpr int W = {column_width(unit.acc)};",
        "  const int64_t cols = lay.kept_shape[lay.kept_ndim - 1], tiles = (cols + W - 1) / W;",
        "  const int64_t kc = i % lay.chunks, t = i / lay.chunks % tiles, m0 = i / lay.chunks / tiles * cols + t * W;",
        "  const int64_t nw = cols - t * W < W ? cols - t * W : W;",
        "  const int64_t k0 = kc * lay.chunk, k1 = k0 + lay.chunk < lay.red_count ? k0 + lay.chunk : lay.red_count;",
        f"  int64_t at[{n + 1}], off[{n + 1}], idx[GOMPUTE_MAX_NDIM];",
        f"  gompute_unravel<{n + 1}>(lay.kept_shape, lay.kept, lay.kept_ndim, m0, at, idx);",
        f"  gompute_unravel<{n + 1}>(lay.red_shape, lay.red, lay.red_ndim, k0, off, idx);",
        f"  {t} own[W];",
        f"  {t}* const v = lay.chunks == 1 ? own : partials + kc * lay.kept_count + m0;",
        f"  for (int64_t l = 0; l < nw; ++l) v[l] = ({t}){unit.identity};",
        "  // A whole chunk along one reduced dimension is read as runs of rows (column_steps), s rows each.",
        f"  const int64_t s = lay.red_ndim == 1 && k1 - k0 == lay.chunk && lay.chunk % {g} == 0 ? lay.chunk / {g} : 0;",
        "  const int64_t apart = (s ? s : 1) * lay.red[0][lay.red_ndim - 1] * (int64_t)sizeof *in0;",
        f"  int64_t k = apart % 4096 ? {sym}_column_steps{g}({steps_args}, s{pass_params})",
        f"                           : {sym}_column_steps{few}({steps_args}, {g // few} * s{pass_params});",
        "  for (; k < k1; ++k) {",
        *(
            f"    const {storage_ctype(st)}* p{k}_0 = in{k} + at[{k}] + off[{k}];"
            for k, st in enumerate(unit.in_storage)
        ),
        "    gompute_advance(lay, idx, off, 1);",
        "    GOMPUTE_INDEPENDENT",
        f"    for (int64_t l = 0; l < nw; ++l) v[l] = {sym}_tcomb(v[l], ({t}){one});",
        "  }",
        "  if (lay.chunks != 1) return;",
        f"  const int64_t step = lay.kept[{n}][lay.kept_ndim - 1];",
        f"  for (int64_t l = 0; l < nw; ++l) {store_result(unit, f'out[at[{n}] + l * step]', 'v[l]')}",
        "}",
        f"GOMPUTE_FN void {sym}_column_items({', '.join(ins)}, {t}* partials, {o}* out, const {lay}& lay,"
        f" int64_t first, int64_t last{params}) {{",
        f"  if ({sym}_narrow(lay))",
        "    for (int64_t i = first; i < last; ++i)",
        f"      {sym}_narrow_item({inputs}, partials, out, lay, i{pass_params});",
        "  else",
        "    for (int64_t i = first; i < last; ++i)",
        f"      {sym}_column_item({inputs}, partials, out, lay, i{pass_params});",
        "}",
    ]


def _host_packed(entries) -> list[str]:
    """The packed entries, where the unit has them: the planner takes them on GPUs only, and the
    host's loops read vectors already, so here each is its unpacked entry."""
    lines = []
    for kind in ("rows", "columns"):
        if f"packed_{kind}" in entries:  # with its unpacked entry: the two are in one group
            e, plain = entries[f"packed_{kind}"], entries[kind]
            lines += [
                f"GOMPUTE_HOST_ARITY({e.symbol}, {e.arity});",
                f"GOMPUTE_HOST_KERNEL({e.symbol}) {{ {plain.symbol}(launch); }}",
            ]
    return lines


def _host_entries(unit, structs, call_name: str) -> list[str]:
    sym, t, n = unit.name, tree_type(unit), len(unit.in_storage)
    entries = {e.kind: e for e in unit.entry_points()}
    lay = layout_type(unit)
    pass_params = ", params" if unit.params_class is not None else ""
    inputs = ", ".join(f"in{k}" for k in range(n))

    def first_pass(kind: str, items: str, body: list[str]) -> list[str]:
        e = entries[kind]
        return [
            f"GOMPUTE_HOST_ARITY({e.symbol}, {e.arity});",
            f"GOMPUTE_HOST_KERNEL({e.symbol}) {{",
            *_host_arg_lines(e, structs, lay),
            f"  const int64_t items = {items};",
            "  for (uint64_t b = launch->block_begin; b < launch->block_end; ++b) {",
            "    const int64_t first = (int64_t)b * layout.per_block;",
            "    const int64_t last = first + layout.per_block < items ? first + layout.per_block : items;",
            *body,
            "  }",
            "}",
        ]

    read = " + ".join(f"(int64_t)sizeof *in{k}" for k in range(n))
    rows_body = [
        "    if (first >= last) continue;",
        "    // Rows of one item each, of at most a leaf (or a tile), along one dimension: loops of their own (the",
        "    // row items' path would divide and call per row); the shortest across rows, the others in lanes or",
        "    // tiles along each.",
        f"    if (layout.chunks == 1 && layout.red_ndim == 1 && layout.red_count <= {lane_rows_last(unit)}) {{",
        f"      if (layout.kept_ndim == 1 && layout.red_count <= {SHORT_ROWS})",
        f"        {sym}_short_rows({inputs}, out, layout, first, last{pass_params});",
        "      else",
        f"        {sym}_lane_rows_of({inputs}, out, layout, first, last{pass_params});",
        "      continue;",
        "    }",
        "    // The result's offsets step along with the items (a result's items are consecutive).",
        f"    const bool dram = layout.kept_count * layout.red_count * ({read}) >= {DRAM_BYTES};",
        f"    int64_t at[{n + 1}], idx[GOMPUTE_MAX_NDIM], m = first / layout.chunks;",
        f"    gompute_unravel<{n + 1}>(layout.kept_shape, layout.kept, layout.kept_ndim, m, at, idx);",
        "    for (int64_t i = first; i < last; ++i) {",
        "      if (i / layout.chunks != m) {",
        "        gompute_next_kept(layout, idx, at);",
        "        ++m;",
        "      }",
        f"      const {t} v = {sym}_row_item({inputs}, layout, i, at, dram{pass_params});",
        "      if (layout.chunks == 1)  // the item is the result",
        f"        {store_result(unit, f'out[at[{n}]]', 'v')}",
        "      else",
        "        partials[gompute_partial(layout, i)] = v;",
        "    }",
    ]
    columns_body = [f"    {sym}_column_items({inputs}, partials, out, layout, first, last{pass_params});"]

    finish, F = entries["finish"], lanes(unit.partial_type)
    first_passes = []
    if "rows" in entries:
        first_passes += [
            *host_rows(unit, structs, call_name),
            *host_short_rows(unit, structs, call_name),
            *host_lane_rows(unit, structs, call_name),
            *first_pass("rows", "layout.kept_count * layout.chunks", rows_body),
        ]
    if "columns" in entries:
        first_passes += [*_host_columns(unit, structs, call_name), *first_pass("columns", COLUMN_ITEMS, columns_body)]
    return [
        *host_cascade(unit),
        *first_passes,
        *_host_packed(entries),
        "// Results [m, m + L): each one's partials pairwise.",
        "template <int L>",
        f"GOMPUTE_FN void {sym}_merge_partials(const {t}* partials, const {lay}& layout, int64_t m, {t}* v) {{",
        f"  {t} stack[64][L];",
        "  int depth = 0;",
        "  uint64_t count = 0;",
        "  for (int64_t c = 0; c < layout.chunks; ++c)",
        f"    {sym}_push<L>(stack, depth, count, partials + c * layout.kept_count + m);",
        f"  {sym}_fold<L>(stack, depth, v);",
        "}",
        f"GOMPUTE_HOST_ARITY({finish.symbol}, {finish.arity});",
        f"GOMPUTE_HOST_KERNEL({finish.symbol}) {{",
        *_host_arg_lines(finish, structs, lay),
        "  const int64_t per = layout.finish_per_block;",
        "  for (uint64_t b = launch->block_begin; b < launch->block_end; ++b) {",
        "    const int64_t first = (int64_t)b * per, end = first + per;",
        "    const int64_t stop = end < layout.kept_count ? end : layout.kept_count;",
        f"    int64_t at[{n + 1}], idx[GOMPUTE_MAX_NDIM];",
        f"    gompute_unravel<{n + 1}>(layout.kept_shape, layout.kept, layout.kept_ndim, first, at, idx);",
        "    // Each result's chunks > 1 partials pairwise (or none: the identity), in lanes where a whole",
        f"    // vector of {F} results is left (a chunk's partials of consecutive results are contiguous, and",
        "    // every lane's counter is the same), the rest one by one.",
        "    for (int64_t m = first; m < stop;) {",
        f"      const int w = stop - m < {F} ? 1 : {F};",
        f"      {t} v[{F}];",
        f"      if (w == {F})",
        f"        {sym}_merge_partials<{F}>(partials, layout, m, v);",
        "      else",
        f"        {sym}_merge_partials<1>(partials, layout, m, v);",
        "      for (int l = 0; l < w; ++l, ++m) {",
        f"        {store_result(unit, f'out[at[{n}]]', 'v[l]')}",
        "        gompute_next_kept(layout, idx, at);",
        "      }",
        "    }",
        "  }",
        "}",
    ]
