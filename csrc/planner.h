// The rules of a g.map call, in one place: the shape the arrays broadcast to, the layout of
// a new result, the entry point, the strides argument of a strided entry, whether the
// output overlaps an input, and the grid; and of a g.reduce call: its dimensions, entry and
// launches. The first call of a signature (gompute/kernel.py, gompute/reduce.py, through the
// bindings in plan_bindings.cpp) and every repeated one (dispatch.cpp, reduce_dispatch.cpp)
// ask these functions, so the two paths cannot disagree. No Python here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

namespace gompute::plan {

constexpr int kMaxDims = 64;         // the most dimensions an array may have
constexpr int kMaxStridedDims = 8;   // GOMPUTE_MAX_NDIM: the strided entry's struct holds 8

// One array as the planner reads it. Strides are in bytes and may be negative or 0.
struct Array {
  int ndim = 0;
  const int64_t* shape = nullptr;
  const int64_t* strides = nullptr;
  int64_t itemsize = 1;
  uint64_t address = 0;  // of element 0
  uint32_t dtype = 0;    // equal for arrays of the same element type

  int64_t count() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= shape[d];
    return n;
  }
  bool c_contiguous() const {  // extent-1 dimensions aside
    int64_t expected = itemsize;
    for (int d = ndim; d-- > 0;) {
      if (shape[d] != 1 && strides[d] != expected) return false;
      expected *= shape[d];
    }
    return true;
  }
  bool same_view(const Array& o) const {
    return address == o.address && itemsize == o.itemsize && ndim == o.ndim &&
           std::equal(shape, shape + ndim, o.shape) && std::equal(strides, strides + ndim, o.strides);
  }
  // The bytes its elements touch, [lo, hi); both 0 when it has none.
  void byte_range(uint64_t& lo, uint64_t& hi) const {
    lo = hi = 0;
    if (count() == 0) return;
    int64_t below = 0, above = 0;
    for (int d = 0; d < ndim; ++d) (strides[d] < 0 ? below : above) += (shape[d] - 1) * strides[d];
    lo = address + below;
    hi = address + above + itemsize;
  }
};

// The entry points of a map kernel's module (gompute/lang/module.py names them).
enum class Entry : char {
  inplace = 'i',  // (data, len[, params]): one input that is the output
  map = 'm',      // (in..., out, len[, params]): every array contiguous, none broadcast
  strided = 's',  // (in..., out, len, strides[, params])
};
const char* entry_name(Entry e);

// NumPy's broadcasting: the shape (ndim dims into `shape`, room for kMaxDims) the arrays
// broadcast to; false when they do not.
bool broadcast(const Array* arrays, int count, int& ndim, int64_t* shape);

// The order of dimensions a new result of `ndim` dimensions is laid out in, outermost first,
// so that a map over x.T is laid out like x.T, as NumPy's ufuncs (order 'K'), CuPy and PyTorch
// lay theirs out. Returns whether that is C order.
bool result_order(const Array* inputs, int count, int ndim, int* order);

// The entry point for inputs broadcast to `out`'s shape. Inline, as the checks below: the
// fast path asks them on every call.
inline Entry entry_kind(const Array* inputs, int count, const Array& out) {
  bool contiguous = out.c_contiguous();
  for (int i = 0; i < count && contiguous; ++i)
    contiguous = inputs[i].c_contiguous() && inputs[i].ndim == out.ndim &&
                 std::equal(out.shape, out.shape + out.ndim, inputs[i].shape);
  if (!contiguous) return Entry::strided;
  if (count == 1 && inputs[0].same_view(out) && inputs[0].dtype == out.dtype) return Entry::inplace;
  return Entry::map;
}

// Whether two arrays' byte ranges meet (they may still interleave without a common byte).
inline bool ranges_meet(const Array& a, const Array& b) {
  uint64_t lo, hi, b_lo, b_hi;
  a.byte_range(lo, hi);
  b.byte_range(b_lo, b_hi);
  return lo < b_hi && b_lo < hi;
}

// Whether input i's bytes meet the output's without it being the output's very view: the
// result would then depend on the order elements are computed in. Ranges that meet may
// still interleave without a common byte (x[::2], x[1::2]); an exact answer is the caller's.
inline bool overlaps(const Array& input, const Array& out) { return ranges_meet(input, out) && !input.same_view(out); }

// How the strided entry walks the arrays (inputs, then the output last, of `shape`): the
// dimensions in the output's memory order, extent-1 ones dropped, neighbours merged wherever
// every array allows. `packed` gets the entry's strides argument (preludes/common.h's
// gompute_strides<count>): int32 ndim, int32 pad, int64 shape[8], int64 strides[count][8] in
// elements, broadcast dimensions 0.
enum class Strides { ok, too_many_dims, partial_elements };
Strides pack_strides(const Array* arrays, int count, const int64_t* shape, int ndim, std::string& packed,
                     int& dims);
size_t strides_nbytes(int count);

// Blocks of `block` threads for `n` elements, each thread taking `per_thread` of them a pass of
// the entry's grid-stride loop (a GPU contiguous entry's vector width, lang/entries.py; else 1):
// enough for a single pass, but at most `most` blocks (0: no bound; on a GPU, the blocks its SMs
// hold at once times a few waves, docs/gpu_launch.md) and CUDA's 2**31 - 1. The loops cover
// whatever one pass of the grid leaves.
inline uint32_t grid_blocks(uint64_t n, uint32_t block, uint32_t per_thread = 1, uint64_t most = 0) {
  const uint64_t threads = n / per_thread + (n % per_thread != 0);
  const uint64_t blocks = threads / block + (threads % block != 0);
  return uint32_t(std::min<uint64_t>(most != 0 ? std::min(blocks, most) : blocks, 0x7fffffff));
}

// The threads of a contiguous entry one SM holds at once: 48 warps, by the registers on sm_80
// and sm_90 and by the warp limit on sm_86, sm_89 and sm_12x (docs/gpu_launch.md), and the
// rounds of them a grid is bounded to.
constexpr uint32_t kResidentThreads = 1536;
constexpr uint64_t kResidentRounds = 4;

// How a launch's grid is sized on one device; both of g.map's paths ask grid_rule, once per
// signature.
struct GridRule {
  uint32_t per_thread = 1;
  uint64_t most = 0;
  uint32_t blocks(uint64_t n, uint32_t block) const { return grid_blocks(n, block, per_thread, most); }
};

// On a GPU, a contiguous entry's `vector` elements a thread (a strided entry's 1) and at most
// kResidentRounds rounds of the blocks `sms` SMs hold (no bound when the count is unknown, 0);
// on the host, one element a thread and no bound: its grid is how its pool splits the work.
inline GridRule grid_rule(bool gpu, Entry kind, uint32_t vector, int sms, uint32_t block) {
  if (!gpu) return {};
  const uint64_t resident = std::max<uint32_t>(kResidentThreads / std::max<uint32_t>(block, 1), 1);
  const uint32_t per_thread = kind == Entry::strided ? 1u : std::max<uint32_t>(vector, 1);
  return {per_thread, uint64_t(std::max(sms, 0)) * resident * kResidentRounds};
}

// ---- g.reduce ----------------------------------------------------------------------------

// How a reduction's work is cut into items and blocks: the tuning constants of gompute/reduce.py
// and of the entries it launches (lang/reduce_entries.py), for one accumulator type and device.
struct ReduceRules {
  bool gpu = false;
  int64_t block = 256;         // threads of a block
  int64_t row_chunk = 1;       // host rows: reduced elements an item of a long reduction takes
  int64_t column_rows = 1;     // columns: reduced rows an item takes
  int64_t column_width = 1;    // host columns: results an item takes (a GPU's: one a thread)
  int64_t block_elements = 1;  // host: elements a block of the first launch reads, about
  int64_t finish_partials = 1; // host: partials a block of the second launch combines, about
  int64_t gpu_items = 1;       // GPU rows: elements a thread takes, at least
  int64_t gpu_partials = 1;    // GPU rows: items (partials) over all results, at most, unless results outnumber them
  int64_t gpu_max_blocks = 1;  // GPU: a launch's blocks, at most; its loops stride past them
  int64_t gpu_thread_rows = 1; // GPU rows of at most this many elements take a thread each, not a block
  int64_t gpu_group_rows = 1;  // and rows of at most this many a group of gpu_group threads each
  int64_t gpu_group = 1;       // threads of such a group (a divisor of `block` and of the warp's size)
  int64_t gpu_pack = 1;        // GPU: elements of each input a packed load moves (1: no packed entries)
};

// A reduction's first entry. On a GPU the packed ones read 16-byte packs of elements (planner.cpp's
// packs_rows, packs_columns say where): `packed_rows` is `rows` where every input is contiguous
// along the one reduced dimension, `packed_columns` is `columns` where each input's packs of results
// lie on pack boundaries in every row.
enum class ReduceEntry { rows, columns, packed_rows, packed_columns };
constexpr int kReduceEntries = 4;
const char* entry_name(ReduceEntry e);

// A reduction's launches: the first's entry and blocks (0: no first launch, the finish writes the
// identity), the finish's blocks (0: none, the first launch stores the results, one item each), the
// partials passed between them, and the layout argument both take.
struct ReducePlan {
  ReduceEntry entry = ReduceEntry::rows;
  int64_t first_blocks = 0, finish_blocks = 0, partials = 0;
  int kept_dims = 0, reduced_dims = 0;  // after merging; each at most kMaxStridedDims when planned
  std::string layout;                   // gompute_reduce_layout<inputs + 1>, all int64
};

// Plans reducing inputs (arrays[0..count-1], broadcast to `shape`) into out (arrays[count]) over
// the dimensions where reduced[d]; out has the kept dimensions, and extent 1 at the reduced ones
// when keepdims. The kept dimensions go outermost in C order, the reduced ones innermost in the
// inputs' memory order (the largest strides outermost), each group with extent-1 dimensions
// dropped and neighbours merged wherever every array allows. `columns` runs across results where
// the innermost kept dimension is contiguous in every input and the innermost reduced one is not.
enum class ReduceStatus { ok, too_many_dims, partial_elements };
ReduceStatus plan_reduce(const Array* arrays, int count, const int64_t* shape, int ndim, const bool* reduced,
                         bool keepdims, const ReduceRules& rules, ReducePlan& plan);
size_t reduce_layout_nbytes(int count);

}  // namespace gompute::plan
