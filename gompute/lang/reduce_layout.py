"""What every reduction entry shares, host and GPU (reduce_entries.py, reduce_rows.py and
reduce_gpu.py write the entries): how the work is cut (the sizes below, which gompute/reduce.py
hands to the planner), the layout struct the planner packs and the C++ that walks it, and the C++
of the map part, of combining two accumulator values and of storing a result."""

from __future__ import annotations

from ..types import ScalarType
from .codegen import storage_ctype, value_ctype
from .entries import _read, _write
from .typing_rules import concrete, unsigned_c

LAYOUT_ARRAYS = 1  # layout rows beyond the inputs': the output's
LEAF_ROWS = 8  # steps per lane in a leaf
# A sum of f32 (or narrower) values: its leaves are NARROW_LEAF_ROWS steps a lane, and NARROW_GROUP of
# them are merged pairwise in f32 before the f64 tree, so an element passes through at most
# NARROW_LEAF_ROWS + log2(NARROW_GROUP) f32 roundings (NumPy's pairwise sum: 16 in its blocks of 128,
# then one a level, all in f32) and the f64 work, per element, is a sixteenth of the leaves'.
NARROW_LEAF_ROWS = 16
NARROW_GROUP = 4
GROUP_LEAVES = 4  # leaves of any other non-exact combine merged pairwise before the binary counter
COLUMN_BYTES = 16384  # a columns item's results: this many bytes of accumulators, in its partials row
ROW_LEAVES = 512  # a rows item of a long reduction: the elements of this many LEAF_ROWS-step leaves
ROW_STEPS = 4  # a row of at most a leaf takes enough lanes (up to `lanes`) for this many steps a lane
SHORT_ROWS = 16  # rows of up to this many elements, one kept dimension: reduce_rows.host_short_rows
COLUMN_ROWS = 128  # reduced rows in a wide columns item; a narrow tile's takes a multiple (planner.cpp)
COLUMN_GROUP = 16  # input rows a columns item reads at once (half where they lie a multiple of 4 KB apart)
NARROW_COLUMNS = 256  # a columns tile of at most this many results, a whole row: reduce_columns.py's items
NARROW_STREAM = 64  # narrow rows of at most this many elements stream into accumulators in registers
NARROW_STREAM_BYTES = 256  # the streamed rows' accumulators: at most this many bytes a set
NARROW_SETS = 4  # the streamed rows' sets of accumulators, a row a set in turn
NARROW_FOLD = 64  # rows a narrow columns item takes into its accumulators before they join its tree
# Vectors of a period block (reduce_columns._period): at least, at most, at most for a combine of more
# than one instruction (a select holds a temporary and a mask an accumulator: half the 32 registers).
NARROW_PERIOD = (4, 16, 7)
NARROW_BLOCKS = 16  # period blocks a narrow columns item takes into its accumulators before they join its tree
# A rows launch reading at least this many bytes runs GOMPUTE_FROM_DRAM's twin of its loop (preludes/host.h):
# four times a 32 MiB L3, so that most of what it reads comes from DRAM whatever the last call left.
DRAM_BYTES = 128 << 20
GPU_ITEMS = 8  # a GPU rows item: elements per thread (grid-stride steps)
GPU_LOADS = 8  # elements a GPU thread loads at once along one reduced dimension (reduce_gpu.py)
# The GPU packed entry's loads: GPU_PACK_BYTES of the widest input (as many elements of each other)
# a load, GPU_PACK_LOADS of them at once a thread: 64 bytes of it in flight a thread, where the rows
# entry's GPU_LOADS single elements hold 8 bytes of i8, 16 of f16, 32 of f32.
GPU_PACK_BYTES = 16
GPU_PACK_LOADS = 4
# A GPU row of SHORT_ROWS + 1 to GPU_GROUP * GPU_LOADS elements takes a group of GPU_GROUP threads (a
# warp on CUDA, half a wavefront on AMD), which combine their values with shuffles: no block barrier.
GPU_GROUP = 32
GPU_FINISH_RUN = 64  # partials the GPU finish pass combines in a row before combining the rows
# A columns launch's items: per result row (all kept dimensions but the last), its tiles of
# `width` results, each over `chunks` runs of reduced rows.
COLUMN_ITEMS = (
    "layout.kept_count / layout.kept_shape[layout.kept_ndim - 1] * "
    "((layout.kept_shape[layout.kept_ndim - 1] + layout.width - 1) / layout.width) * layout.chunks"
)

LAYOUT_SOURCE = r"""
#ifndef GOMPUTE_REDUCE_LAYOUT
#define GOMPUTE_REDUCE_LAYOUT
// A reduction's layout (gompute/reduce.py packs it, all int64): the result's dimensions ("kept")
// and the reduced ones, each array's strides over them in elements (the inputs', then the
// output's; broadcast dimensions 0), and how the work is cut into items and blocks.
template <int N> struct gompute_reduce_layout {
  int64_t kept_ndim, red_ndim;
  int64_t kept_shape[GOMPUTE_MAX_NDIM], red_shape[GOMPUTE_MAX_NDIM];
  int64_t kept[N][GOMPUTE_MAX_NDIM], red[N][GOMPUTE_MAX_NDIM];
  int64_t kept_count, red_count;  // result elements, reduced elements of each
  int64_t chunk;    // rows: reduced elements an item covers; columns: reduced rows
  int64_t chunks;   // items per result element (1: the first launch stores the results, no partials)
  int64_t width;    // columns: result elements an item covers; rows: 1
  int64_t per_block, finish_per_block;  // items of the first launch, results of the second, a block
};
// The offset in each array of element i of dimensions (shape, strides), and its index where idx is
// not null. The loop's trip count is fixed, so that a GPU keeps `at` in registers, not local memory.
// AMD's compiler keeps it a loop: unrolled, every dimension's shape and strides are scalar registers
// at once, and a hundred of them spill (to vector registers' lanes).
#if defined(__HIP__)
#define GOMPUTE_DIMENSIONS_LOOP _Pragma("unroll 1")
#else
#define GOMPUTE_DIMENSIONS_LOOP
#endif
template <int N> GOMPUTE_FN void gompute_unravel(const int64_t* shape, const int64_t (*strides)[GOMPUTE_MAX_NDIM],
                                                 int64_t ndim, int64_t i, int64_t* at, int64_t* idx) {
  for (int a = 0; a < N; ++a) at[a] = 0;
  GOMPUTE_DIMENSIONS_LOOP
  for (int d = GOMPUTE_MAX_NDIM - 1; d >= 0; --d) {
    if (d >= ndim) continue;
    const int64_t k = i % shape[d];
    i /= shape[d];
    if (idx) idx[d] = k;
    for (int a = 0; a < N; ++a) at[a] += k * strides[a][d];
  }
}
// Where item i's partial goes when a result has several (chunks > 1): partials are result-major per
// chunk, [chunk][result], so that a columns item accumulates its results' partials in place, contiguous.
template <int N> GOMPUTE_FN int64_t gompute_partial(const gompute_reduce_layout<N>& lay, int64_t i) {
  return i % lay.chunks * lay.kept_count + i / lay.chunks;
}
// Moves the kept index, and each array's offset, one result element on.
template <int N> GOMPUTE_FN void gompute_next_kept(const gompute_reduce_layout<N>& lay, int64_t* idx, int64_t* at) {
  for (int64_t d = lay.kept_ndim - 1; d >= 0; --d) {
    for (int a = 0; a < N; ++a) at[a] += lay.kept[a][d];
    if (++idx[d] < lay.kept_shape[d]) return;
    for (int a = 0; a < N; ++a) at[a] -= idx[d] * lay.kept[a][d];
    idx[d] = 0;
  }
}
// Moves the reduced index n elements on, n no more than what is left of the innermost dimension.
template <int N> GOMPUTE_FN void gompute_advance(const gompute_reduce_layout<N>& lay, int64_t* idx, int64_t* off,
                                                 int64_t n) {
  int64_t d = lay.red_ndim - 1;
  for (int a = 0; a < N; ++a) off[a] += n * lay.red[a][d];
  idx[d] += n;
  while (d > 0 && idx[d] == lay.red_shape[d]) {
    for (int a = 0; a < N; ++a) off[a] += lay.red[a][d - 1] - idx[d] * lay.red[a][d];
    idx[d] = 0;
    ++idx[--d];
  }
}
#endif
"""


def lanes(acc: ScalarType) -> int:
    """Independent accumulators of a rows item: 256 bytes of them (four vectors of the widest
    registers, so that four chains of combines run at once), 8 to 128."""
    return max(8, min(128, 256 // value_bytes(acc)))


def narrow_sum(unit) -> bool:
    """Whether `unit` is a float sum whose accumulator is narrower than its tree's f64."""
    return unit.combine == "+" and unit.acc.is_float and unit.acc.bits < 64


def leaf_rows(unit) -> int:
    """Steps per lane in a leaf of `unit`'s rows items."""
    return NARROW_LEAF_ROWS if narrow_sum(unit) else LEAF_ROWS


def group_leaves(unit) -> int:
    """Whole leaves merged pairwise (in the accumulator's type for a narrow sum, else the tree's) and
    pushed to the binary counter as one."""
    return NARROW_GROUP if narrow_sum(unit) else GROUP_LEAVES


def column_width(acc: ScalarType) -> int:
    """Result elements of a columns item (its lanes)."""
    return COLUMN_BYTES // value_bytes(acc)


def value_bytes(acc: ScalarType) -> int:
    return 4 if acc.is_float and acc.bits < 32 else max(1, acc.bits // 8)


def combine_code(unit, a: str, b: str, combine_name: str | None) -> str:
    """The C++ of combining accumulator values `a` and `b`."""
    acc, ctype = unit.acc, value_ctype(unit.acc)
    op = unit.combine
    if op == "func":
        return f"(({ctype}){combine_name}({a}, {b}))"
    if op in ("min", "max"):
        return f"gompute_{op}({a}, {b})"
    if acc.kind == "b":
        return {"+": f"({a} || {b})", "*": f"({a} && {b})"}.get(op, f"((bool)({a} {op} {b}))")
    if acc.is_float or op not in ("+", "*"):
        return f"(({ctype})({a} {op} {b}))"
    u = unsigned_c(acc)  # integers wrap, as NumPy's do, without C++'s signed overflow
    return f"(({ctype})(({u}){a} {op} ({u}){b}))"


def declarations(unit, structs) -> tuple[list[str], str, str]:
    """(input parameter declarations, the params declaration or "", the params argument or "")."""
    ins = [f"const {storage_ctype(t)}* in{k}" for k, t in enumerate(unit.in_storage)]
    if unit.params_class is None:
        return ins, "", ""
    return ins, f", const {structs[unit.params_class]}& params", ", params"


def mapped(unit, call_name: str, refs: list[str]) -> str:
    """The map part on one element of each input, as an accumulator value."""
    args = [_read(s, t, r) for s, t, r in zip(unit.in_storage, unit.in_types, refs)]
    if unit.params_class is not None:
        args.append("params")
    return f"(({value_ctype(unit.acc)}){call_name}({', '.join(args)}))"


def pack_elements(unit) -> int:
    """Elements of each input a GPU packed load moves: GPU_PACK_BYTES of the widest input's (1:
    the unit has no packed entry)."""
    return max(1, GPU_PACK_BYTES // max(concrete(t).itemsize for t in unit.in_storage))


def tree_type(unit) -> str:
    """The C++ type leaves are merged and partials held in (ReduceSpecialization.partial_type)."""
    return storage_ctype(unit.partial_type)


def layout_type(unit) -> str:
    return f"gompute_reduce_layout<{len(unit.in_storage) + LAYOUT_ARRAYS}>"


def store_result(unit, target: str, value: str) -> str:
    """Store the accumulator `value` as the result into the output element `target` (a float sum's
    added to its zero identity: ReduceSpecialization.adds_identity)."""
    r = value_ctype(unit.result)
    result = f"(({r}){value} + ({r}){unit.identity})" if unit.adds_identity else f"(({r}){value})"
    return _write(unit.out_storage, unit.result, target, result)
