"""The C++ of a reduction's CUDA and HIP entry points (reduce_entries.py writes the host's and
says how the work is cut).

An item is a thread block: its threads stride through the item's elements, then the block
reduces its threads' values with warp shuffles and shared memory (`_gpu_block`); where an item
covers its result (`layout.chunks == 1`) thread 0 stores it, else it writes the item's partial
and the finish launch combines each result's partials, a thread a result. Short rows are a
thread's each (up to the planner's gpu_thread_rows elements) or a group's of GPU_GROUP threads (up
to gpu_group_rows), which combine their values with shuffles: a block's worth of them a block.
Columns items are tiles of results, a thread a result (`_columns`). Where every input's elements
lie on 16-byte boundaries (the planner's packs_rows, packs_columns), the packed entries read a pack
of elements a load (`_chunks`): rows a pack at a time, columns a pack of results a thread.
"""

from __future__ import annotations

from .codegen import storage_ctype, value_ctype
from .reduce_layout import (
    COLUMN_ITEMS,
    GPU_FINISH_RUN,
    GPU_LOADS,
    GPU_PACK_LOADS,
    layout_type,
    mapped,
    pack_elements,
    store_result,
    tree_type,
)
from .typing_rules import concrete

GPU_BLOCKS_AN_SM = 2  # the entries' launch bound's least blocks an SM (_gpu_head)

# A warp's shuffle down for each partial type: CUDA's names its mask (every lane: reduction blocks
# are whole warps), HIP's runs on the whole wavefront. Small integers and bools go as int.
_GPU_SHUFFLE = r"""
#ifndef GOMPUTE_REDUCE_SHUFFLE
#define GOMPUTE_REDUCE_SHUFFLE
// Within each run of w lanes (a power of two up to the warp's size).
template <typename T> GOMPUTE_FN T gompute_shfl_down(T v, int d, int w) { return (T)GOMPUTE_SHFL_DOWN((int)v, d, w); }
GOMPUTE_FN float gompute_shfl_down(float v, int d, int w) { return GOMPUTE_SHFL_DOWN(v, d, w); }
GOMPUTE_FN double gompute_shfl_down(double v, int d, int w) { return GOMPUTE_SHFL_DOWN(v, d, w); }
GOMPUTE_FN int64_t gompute_shfl_down(int64_t v, int d, int w) {
  return (int64_t)GOMPUTE_SHFL_DOWN((long long)v, d, w);
}
GOMPUTE_FN uint64_t gompute_shfl_down(uint64_t v, int d, int w) {
  return (uint64_t)GOMPUTE_SHFL_DOWN((long long)v, d, w);
}
// Element u of a chunk a packed load read (the preludes' gompute_rawB), from its 32-bit words by
// shifts: hiprtc (ROCm 5.2) keeps a struct of 1- or 2-byte elements over the chunk in scratch, and
// reads every lane of a vector of them as lane 0.
GOMPUTE_FN uint32_t gompute_chunk_word(gompute_raw16 c, int i) {
  return i == 0 ? c.x : i == 1 ? c.y : i == 2 ? c.z : c.w;
}
GOMPUTE_FN uint32_t gompute_chunk_word(gompute_raw8 c, int i) { return i == 0 ? c.x : c.y; }
GOMPUTE_FN uint32_t gompute_chunk_word(gompute_raw4 c, int) { return c; }
GOMPUTE_FN uint32_t gompute_chunk_word(gompute_raw2 c, int) { return c; }
// Lane u of S bytes, as the unsigned integer of S bytes.
template <int S> struct gompute_bytes {};
template <typename R> GOMPUTE_FN uint8_t gompute_chunk_lane(gompute_bytes<1>, R c, int u) {
  return (uint8_t)(gompute_chunk_word(c, u / 4) >> (8 * (u % 4)));
}
template <typename R> GOMPUTE_FN uint16_t gompute_chunk_lane(gompute_bytes<2>, R c, int u) {
  return (uint16_t)(gompute_chunk_word(c, u / 2) >> (16 * (u % 2)));
}
template <typename R> GOMPUTE_FN uint32_t gompute_chunk_lane(gompute_bytes<4>, R c, int u) {
  return gompute_chunk_word(c, u);
}
template <typename R> GOMPUTE_FN uint64_t gompute_chunk_lane(gompute_bytes<8>, R c, int u) {
  return (uint64_t)gompute_chunk_word(c, 2 * u) | (uint64_t)gompute_chunk_word(c, 2 * u + 1) << 32;
}
template <typename T, typename R> GOMPUTE_FN T gompute_chunk_element(R c, int u) {
  return __builtin_bit_cast(T, gompute_chunk_lane(gompute_bytes<sizeof(T)>(), c, u));
}
GOMPUTE_FN uint64_t gompute_block_linear() {
  return blockIdx.x + (uint64_t)gridDim.x * (blockIdx.y + (uint64_t)gridDim.y * blockIdx.z);
}
#endif
"""
_SHFL = {
    "cuda": "#define GOMPUTE_SHFL_DOWN(v, d, w) __shfl_down_sync(0xffffffffu, (v), (d), (w))",
    # The HIP text built for the CPU (tests/fakes/cuda_shim.h, GOMPUTE_CUDA_ON_CPU) has CUDA's spelling.
    "hip": "#if defined(GOMPUTE_CUDA_ON_CPU)\n"
    "#define GOMPUTE_SHFL_DOWN(v, d, w) __shfl_down_sync(~0ull, (v), (d), (w))\n"
    "#else\n#define GOMPUTE_SHFL_DOWN(v, d, w) __shfl_down((v), (d), (w))\n#endif",
}


def _gpu_block(unit) -> list[str]:
    """The combine of every thread's value in a block, in thread 0: shuffles within each warp,
    then the first warp over the warps' results, through shared memory."""
    sym, t = unit.name, tree_type(unit)
    return [
        f"GOMPUTE_FN {t} {sym}_block({t} v) {{",
        f"  __shared__ {t} warps[32];",
        "  const unsigned int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;",
        f"  for (int d = warpSize / 2; d > 0; d /= 2) v = {sym}_tcomb(v, gompute_shfl_down(v, d, warpSize));",
        "  if (lane == 0) warps[warp] = v;",
        "  __syncthreads();",
        "  if (warp == 0) {",
        f"    v = lane < blockDim.x / warpSize ? warps[lane] : ({t}){unit.identity};",
        f"    for (int d = warpSize / 2; d > 0; d /= 2) v = {sym}_tcomb(v, gompute_shfl_down(v, d, warpSize));",
        "  }",
        "  __syncthreads();  // warps[] is free for the block's next item",
        "  return v;",
        "}",
    ]


def _thread_loop(unit, call_name: str, start: str, gap: str, shift: str, comb: str, cast: str, pad: str) -> list[str]:
    """A thread's elements k = start, start + gap, ... before k1 combined into v. Along one reduced
    dimension it loads GPU_LOADS of them into registers, then combines each in turn (the order of one
    at a time: a load a thread in flight does not fill the memory's pipe); along several it finds
    each element's offsets (off) from k."""
    sym, n = unit.name, len(unit.in_storage)
    kj = "k + j" if gap == "1" else f"k + j * {gap}"
    loads = " ".join(f"s{i}[j] = in{i}[at[{i}] + ({kj}) * layout.red[{i}][0]{shift}];" for i in range(n))
    value = mapped(unit, call_name, [f"s{i}[j]" for i in range(n)])
    strided = mapped(unit, call_name, [f"in{i}[at[{i}] + off[{i}]{shift}]" for i in range(n)])
    return [
        f"{pad}if (layout.red_ndim == 1) {{",
        f"{pad}  for (int64_t k = {start}; k < k1; k += {GPU_LOADS} * {gap}) {{",
        *(f"{pad}    {storage_ctype(st)} s{i}[{GPU_LOADS}];" for i, st in enumerate(unit.in_storage)),
        "#pragma unroll",
        f"{pad}    for (int j = 0; j < {GPU_LOADS}; ++j)",
        f"{pad}      if ({kj} < k1) {{ {loads} }}",
        "#pragma unroll",
        f"{pad}    for (int j = 0; j < {GPU_LOADS}; ++j)",
        f"{pad}      if ({kj} < k1) v = {sym}_{comb}(v, {cast}{value});",
        f"{pad}  }}",
        f"{pad}}} else {{",
        f"{pad}  int64_t off[{n + 1}];",
        f"{pad}  for (int64_t k = {start}; k < k1; k += {gap}) {{",
        f"{pad}    gompute_unravel<{n + 1}>(layout.red_shape, layout.red, layout.red_ndim, k, off, nullptr);",
        f"{pad}    v = {sym}_{comb}(v, {cast}{strided});",
        f"{pad}  }}",
        f"{pad}}}",
    ]


def _chunks(unit, entry, call_name: str, address: str, into) -> tuple[list[str], list[str], list[str]]:
    """A pack of each input read at `address` (its {i}, and j, the pack's place among those loaded
    at once, filled in): the raw chunk types, the loads of s{i}[j] (each checked for alignment where
    the text runs on the CPU), and a statement an element u combining it, `into(u, value)`."""
    n, v = len(unit.in_storage), pack_elements(unit)
    types = [storage_ctype(st) for st in unit.in_storage]
    raws = [f"gompute_raw{v * concrete(st).itemsize}" for st in unit.in_storage]
    loads = []
    for i, raw in enumerate(raws):
        at = address.format(i=i)
        loads += [
            f'GOMPUTE_VECTOR_CHECK({at}, sizeof({raw}), "{entry.symbol}", "in{i}");',
            f"s{i}[j] = *(const {raw}*)({at});",
        ]
    # One statement an element, not a loop: a chunk indexed at run time would live in local memory.
    elements = [[f"gompute_chunk_element<{types[i]}>(s{i}[j], {u})" for i in range(n)] for u in range(v)]
    return raws, loads, [into(u, mapped(unit, call_name, e)) for u, e in enumerate(elements)]


def _chunk_loop(chunks, k: str, stop: str, step: str, pad: str) -> list[str]:
    """Packs k, k + step, ... before `stop`: GPU_PACK_LOADS of them loaded at once, then combined in
    order; the last ones one at a time."""
    raws, loads, combines = chunks
    return [
        f"{pad}int64_t k = {k};",
        f"{pad}for (; k + {GPU_PACK_LOADS - 1} * {step} < {stop}; k += {GPU_PACK_LOADS} * {step}) {{",
        *(f"{pad}  {raw} s{i}[{GPU_PACK_LOADS}];" for i, raw in enumerate(raws)),
        "#pragma unroll",
        f"{pad}  for (int j = 0; j < {GPU_PACK_LOADS}; ++j) {{",
        *(f"{pad}    {line}" for line in loads),
        f"{pad}  }}",
        "#pragma unroll",
        f"{pad}  for (int j = 0; j < {GPU_PACK_LOADS}; ++j) {{",
        *(f"{pad}    {line}" for line in combines),
        f"{pad}  }}",
        f"{pad}}}",
        f"{pad}for (; k < {stop}; k += {step}) {{  // the thread's last packs, fewer than its loads at once",
        *(f"{pad}  {raw} s{i}[1];" for i, raw in enumerate(raws)),
        f"{pad}  const int j = 0;",
        *(f"{pad}  {line}" for line in loads),
        *(f"{pad}  {line}" for line in combines),
        f"{pad}}}",
    ]


def _packed_rows(unit, entry, call_name: str) -> list[str]:
    """An item's elements [k0, k1) along one reduced dimension, contiguous in every input and at
    the same element of a pack in each (the planner's packs_rows): the h elements before the first
    pack boundary a thread each, then thread t takes packs t, t + block, ..., then the last (< V)
    elements a thread each."""
    sym, n, v, a = unit.name, len(unit.in_storage), pack_elements(unit), value_ctype(unit.acc)
    types = [storage_ctype(st) for st in unit.in_storage]
    one = lambda k: mapped(unit, call_name, [f"in{i}[at[{i}] + {k}]" for i in range(n)])  # noqa: E731
    into = lambda u, x: f"v = {sym}_comb(v, ({a}){x});"  # noqa: E731
    chunks = _chunks(unit, entry, call_name, f"p{{i}} + (k + j * b) * {v}", into)
    return [
        "    const int64_t b = blockDim.x, t = threadIdx.x;",
        f"    const int64_t phase = (int64_t)((uint64_t)(in0 + at[0] + k0) / sizeof({types[0]}) % {v});",
        f"    const int64_t h = ({v} - phase) % {v} < k1 - k0 ? ({v} - phase) % {v} : k1 - k0;",
        f"    const int64_t packs = (k1 - k0 - h) / {v}, rest = k0 + h + packs * {v};",
        f"    if (t < h) v = {sym}_comb(v, ({a}){one('k0 + t')});",
        *(f"    const {c}* p{i} = in{i} + at[{i}] + k0 + h;" for i, c in enumerate(types)),
        *_chunk_loop(chunks, "t", "packs", "b", "    "),
        f"    if (rest + t < k1) v = {sym}_comb(v, ({a}){one('rest + t')});",
    ]


def _columns(unit, entry, structs, call_name: str, v: int) -> list[str]:
    """A columns entry: block by block over the items (a tile of w <= `width` results contiguous in
    every input, over the reduced rows [k0, k1)), thread l + q r takes the v results c = lv, ...,
    c + v - 1 of the tile (q threads across it) on rows k0 + r, k0 + r + R, ... (R rows a step: the
    most a power of two of q threads fill of the block), so each row is read in whole lines; a
    narrow tile's R values of a result are then combined pairwise in shared memory, in a fixed
    order. Its partials, or the results where the item is the only one. The plain entry takes a
    result a thread (v = 1), an element a row at a time, GPU_LOADS rows at once; the packed one a
    pack of results (the planner's packs_columns), a pack of each input a row, GPU_PACK_LOADS rows
    at once, and the tile's last results, fewer than a pack, an element at a time."""
    sym, n, t = unit.name, len(unit.in_storage), tree_type(unit)
    acc = ["v"] if v == 1 else [f"v{u}" for u in range(v)]
    if v == 1:
        read = [
            "    if (r < R) {",
            *_thread_loop(unit, call_name, "k0 + r", "R", " + c", "tcomb", f"({t})", "      "),
            "    }",
        ]
    else:
        types = [storage_ctype(st) for st in unit.in_storage]
        into = lambda u, x: f"v{u} = {sym}_tcomb(v{u}, ({t}){x});"  # noqa: E731
        chunks = _chunks(unit, entry, call_name, "p{i} + (k + j * R) * layout.red[{i}][0]", into)
        at = [f"at[{i}] + k * layout.red[{i}][0]" for i in range(n)]
        one = lambda u: mapped(unit, call_name, [f"in{i}[{a} + c + {u}]" for i, a in enumerate(at)])  # noqa: E731
        read = [
            f"    if (r < R && c + {v} <= w) {{",
            *(f"      const {c}* p{i} = in{i} + at[{i}] + c;" for i, c in enumerate(types)),
            *_chunk_loop(chunks, "k0 + r", "k1", "R", "      "),
            "    } else if (r < R) {  // the tile's last results, fewer than a pack",
            "      for (int64_t k = k0 + r; k < k1; k += R) {",
            *(f"        if (c + {u} < w) v{u} = {sym}_tcomb(v{u}, ({t}){one(u)});" for u in range(v)),
            "      }",
            "    }",
        ]
    combine = []
    for a in acc:
        combine += [
            f"      lanes[threadIdx.x] = {a};",
            "      __syncthreads();",
            "      for (int s = R / 2; s > 0; s /= 2) {",
            f"        if (r < s) lanes[threadIdx.x] = {sym}_tcomb(lanes[threadIdx.x], lanes[threadIdx.x + s * q]);",
            "        __syncthreads();",
            "      }",
            # A thread reads back its own slot only, the one it writes next: no barrier before that.
            f"      {a} = lanes[threadIdx.x];",
        ]
    store = []
    for u, a in enumerate(acc):
        target = f"out[at[{n}] + (c + {u}) * layout.kept[{n}][layout.kept_ndim - 1]]"
        store += [
            f"    if (c + {u} < w) {{" if v > 1 else "    {",
            "      if (layout.chunks == 1)",
            f"        {store_result(unit, target, a)}",
            "      else",
            f"        partials[kc * layout.kept_count + m0 + c + {u}] = {a};",
            "    }",
        ]
    what = "a result" if v == 1 else f"{v} results, a pack of each input a row"
    return [
        f"// Tiles of results contiguous in every input, a thread {what} (reduce_gpu.py's _columns).",
        _gpu_head(unit, entry, structs),
        f"  __shared__ {t} lanes[{unit.block_size}];",
        f"  const int64_t items = {COLUMN_ITEMS};",
        "  const int64_t cols = layout.kept_shape[layout.kept_ndim - 1];",
        "  const int64_t tiles = (cols + layout.width - 1) / layout.width;",
        "  for (int64_t i = gompute_block_linear(); i < items; i += (int64_t)gridDim.x * gridDim.y * gridDim.z) {",
        "    const int64_t kc = i % layout.chunks, t = i / layout.chunks % tiles;",
        "    const int64_t m0 = i / layout.chunks / tiles * cols + t * layout.width;",
        f"    int64_t at[{n + 1}];",
        f"    gompute_unravel<{n + 1}>(layout.kept_shape, layout.kept, layout.kept_ndim, m0, at, nullptr);",
        "    const int w = (int)(cols - t * layout.width < layout.width ? cols - t * layout.width : layout.width);",
        f"    const int q = (w + {v - 1}) / {v};",
        "    int R = 1;",
        "    while (2 * R * q <= (int)blockDim.x) R *= 2;",
        f"    const int l = (int)threadIdx.x % q, r = (int)threadIdx.x / q, c = l * {v};",
        "    const int64_t k0 = kc * layout.chunk;",
        "    const int64_t k1 = k0 + layout.chunk < layout.red_count ? k0 + layout.chunk : layout.red_count;",
        f"    {t} {', '.join(f'{a} = ({t}){unit.identity}' for a in acc)};",
        *read,
        "    if (R > 1) {  // the same R for the whole block: its barriers meet every thread",
        *combine,
        "    }",
        "    if (r > 0) continue;",
        *store,
        "  }",
        "}",
    ]


def _block_items(unit, loop: list[str]) -> list[str]:
    """Block by block over the items (each a result's reduced elements [k0, k1)): `loop` combines
    the thread's share into v, the block its threads' values, and thread 0 stores the item's
    partial, or the result where the item is the only one."""
    sym, n, t = unit.name, len(unit.in_storage), tree_type(unit)
    return [
        "  const int64_t items = layout.kept_count * layout.chunks;",
        "  for (int64_t i = gompute_block_linear(); i < items; i += (int64_t)gridDim.x * gridDim.y * gridDim.z) {",
        "    const int64_t m = i / layout.chunks, k0 = i % layout.chunks * layout.chunk;",
        "    const int64_t k1 = k0 + layout.chunk < layout.red_count ? k0 + layout.chunk : layout.red_count;",
        f"    int64_t at[{n + 1}];",
        f"    gompute_unravel<{n + 1}>(layout.kept_shape, layout.kept, layout.kept_ndim, m, at, nullptr);",
        f"    {value_ctype(unit.acc)} v = {unit.identity};",
        *loop,
        f"    const {t} r = {sym}_block(({t})v);",
        "    if (threadIdx.x == 0) {",
        "      if (layout.chunks == 1)",
        f"        {store_result(unit, f'out[at[{n}]]', 'r')}",
        "      else",
        "        partials[gompute_partial(layout, i)] = r;",
        "    }",
        "  }",
        "}",
    ]


def _gpu_head(unit, entry, structs) -> str:
    """The entry's signature. Its launch bound asks for two blocks an SM at least, no more: with the
    block size alone ptxas aims at an occupancy it reaches by spilling a value or two across the
    64-bit divisions' calls (48 or 64 registers and 8-16 bytes of stack, sm_80 to sm_121), where the
    entries need 46-108 registers; two blocks of 256 with eight loads a thread in flight fill the pipe.
    HIP reads the second number as waves a SIMD (amdgpu_waves_per_eu): a block of 256 on a CDNA CU
    (four SIMDs, waves of 64) is a wave a SIMD, so it asks the same two blocks there."""
    args = []
    for arg in entry.args:
        if arg.kind == "pointer":
            args.append(f"{storage_ctype(arg.type)}* {arg.name}")
        elif arg.kind == "layout":
            args.append(f"const {layout_type(unit)} {arg.name}")
        else:
            args.append(f"const {structs[arg.type]} params")
    bounds = f"__launch_bounds__({unit.block_size}, {GPU_BLOCKS_AN_SM})"
    return f"GOMPUTE_GLOBAL void {bounds} {entry.symbol}({', '.join(args)}) {{"


def gpu_entries(unit, structs, call_name: str, backend: str) -> list[str]:
    """The entries `unit` has (all, or its part's: reduce_kernel.GROUPS), each first pass with the
    helpers only it calls, and the finish."""
    entries = {e.kind: e for e in unit.entry_points()}
    first_passes = []
    if "rows" in entries:
        first_passes += _gpu_rows(unit, entries["rows"], structs, call_name)
    if "packed_rows" in entries:
        first_passes += [
            "// The rows entry's block items where every input is contiguous along the one reduced dimension",
            "// (csrc/planner.cpp's packs_rows): a load moves a pack of elements, not one.",
            _gpu_head(unit, entries["packed_rows"], structs),
            *_block_items(unit, _packed_rows(unit, entries["packed_rows"], call_name)),
        ]
    if "columns" in entries:
        first_passes += _columns(unit, entries["columns"], structs, call_name, 1)
    if "packed_columns" in entries:
        first_passes += _columns(unit, entries["packed_columns"], structs, call_name, pack_elements(unit))
    return [
        _SHFL[backend],
        *_GPU_SHUFFLE.strip("\n").splitlines(),
        *_gpu_block(unit),
        *first_passes,
        *_gpu_finish(unit, entries["finish"], structs),
    ]


def _gpu_rows(unit, entry, structs, call_name: str) -> list[str]:
    sym, a, t, n = unit.name, value_ctype(unit.acc), tree_type(unit), len(unit.in_storage)
    strided = _thread_loop(unit, call_name, "k0 + threadIdx.x", "(int64_t)blockDim.x", "", "comb", f"({a})", "    ")
    return [
        "// Block by block over the items (each a result's reduced elements [k0, k1)), the threads",
        "// striding through an item's elements; one partial an item, or the result where it is the only one.",
        _gpu_head(unit, entry, structs),
        "  if (layout.per_block > 1) {  // short rows: g threads a row (1 or GPU_GROUP: csrc/planner.cpp)",
        "    const int g = (int)(blockDim.x / layout.per_block), lane = (int)(threadIdx.x % g);",
        "    const int64_t groups = (int64_t)gridDim.x * gridDim.y * gridDim.z * layout.per_block;",
        "    const int64_t k1 = layout.red_count, rows = layout.kept_count;",
        "    // Every thread of a block goes round as often: a group's shuffles meet its every lane.",
        "    for (int64_t first = gompute_block_linear() * layout.per_block; first < rows; first += groups) {",
        "      const int64_t m = first + threadIdx.x / g;",
        f"      {a} v = {unit.identity};",
        f"      int64_t at[{n + 1}];",
        "      if (m < rows) {",
        f"        gompute_unravel<{n + 1}>(layout.kept_shape, layout.kept, layout.kept_ndim, m, at, nullptr);",
        *_thread_loop(unit, call_name, "lane", "g", "", "comb", f"({a})", " " * 8),
        "      }",
        f"      {t} r = ({t})v;",
        f"      for (int d = g / 2; d > 0; d /= 2) r = {sym}_tcomb(r, gompute_shfl_down(r, d, g));",
        "      if (m < rows && lane == 0)",
        f"        {store_result(unit, f'out[at[{n}]]', 'r')}",
        "    }",
        "    return;",
        "  }",
        *_block_items(unit, strided),
    ]


def _gpu_finish(unit, entry, structs) -> list[str]:
    sym, t, n = unit.name, tree_type(unit), len(unit.in_storage)
    return [
        "// A thread a result: its items' partials (few: _GPU_PARTIALS in gompute/reduce.py) combined in",
        f"// runs of {GPU_FINISH_RUN}, then the runs' results, in registers (a pairwise stack would live in",
        "// local memory); stored through the output's strides. A few results of many partials each (the",
        "// planner's finish_per_block 1) take a block each: its threads stride through the partials, loading",
        f"// {GPU_LOADS} at a time, and the block combines their values (a full sum's 4096 partials: 16 a thread).",
        _gpu_head(unit, entry, structs),
        "  if (layout.finish_per_block == 1) {",
        "    const int64_t count = layout.chunks, step = layout.kept_count;",
        "    for (int64_t m = gompute_block_linear(); m < step; m += (int64_t)gridDim.x * gridDim.y * gridDim.z) {",
        f"      {t} v = ({t}){unit.identity}, s[{GPU_LOADS}];",
        f"      for (int64_t c = threadIdx.x; c < count; c += {GPU_LOADS} * (int64_t)blockDim.x) {{",
        "#pragma unroll",
        f"        for (int j = 0; j < {GPU_LOADS}; ++j)",
        "          if (c + j * blockDim.x < count) s[j] = partials[(c + j * blockDim.x) * step + m];",
        "#pragma unroll",
        f"        for (int j = 0; j < {GPU_LOADS}; ++j)",
        f"          if (c + j * blockDim.x < count) v = {sym}_tcomb(v, s[j]);",
        "      }",
        f"      v = {sym}_block(v);",
        "      if (threadIdx.x == 0) {",
        f"        int64_t at[{n + 1}];",
        f"        gompute_unravel<{n + 1}>(layout.kept_shape, layout.kept, layout.kept_ndim, m, at, nullptr);",
        f"        {store_result(unit, f'out[at[{n}]]', 'v')}",
        "      }",
        "    }",
        "    return;",
        "  }",
        "  for (uint64_t m = gompute_thread_index(); m < (uint64_t)layout.kept_count; m += gompute_thread_count()) {",
        f"    {t} v[1] = {{({t}){unit.identity}}};",
        f"    for (int64_t c0 = 0; c0 < layout.chunks; c0 += {GPU_FINISH_RUN}) {{",
        f"      const int64_t c1 = c0 + {GPU_FINISH_RUN} < layout.chunks ? c0 + {GPU_FINISH_RUN} : layout.chunks;",
        f"      {t} run = partials[c0 * layout.kept_count + m];",
        "      for (int64_t c = c0 + 1; c < c1; ++c)",
        f"        run = {sym}_tcomb(run, partials[c * layout.kept_count + m]);",
        f"      v[0] = {sym}_tcomb(v[0], run);",
        "    }",
        f"    int64_t at[{n + 1}];",
        f"    gompute_unravel<{n + 1}>(layout.kept_shape, layout.kept, layout.kept_ndim, (int64_t)m, at, nullptr);",
        f"    {store_result(unit, f'out[at[{n}]]', 'v[0]')}",
        "  }",
        "}",
    ]
