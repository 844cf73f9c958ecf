// The rules of a g.map call (see planner.h).
#include "planner.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

namespace gompute::plan {

namespace {

int64_t magnitude(int64_t stride) { return stride < 0 ? -stride : stride; }

// Array a's stride in bytes along dimension d of an ndim-dimensional broadcast shape: 0
// where it is broadcast (missing or of extent 1).
int64_t broadcast_stride(const Array& a, int d, int ndim) {
  const int k = d - (ndim - a.ndim);
  return k < 0 || a.shape[k] == 1 ? 0 : a.strides[k];
}

}  // namespace

const char* entry_name(Entry e) {
  switch (e) {
    case Entry::inplace: return "inplace";
    case Entry::map: return "map";
    case Entry::strided: return "strided";
  }
  return "?";
}

bool broadcast(const Array* arrays, int count, int& ndim, int64_t* shape) {
  ndim = 0;
  for (int i = 0; i < count; ++i) ndim = std::max(ndim, arrays[i].ndim);
  if (ndim > kMaxDims) return false;
  std::fill(shape, shape + ndim, int64_t(1));
  for (int i = 0; i < count; ++i) {
    const Array& a = arrays[i];
    for (int d = 0, k = ndim - a.ndim; d < a.ndim; ++d, ++k) {
      const int64_t e = a.shape[d];
      if (e == 1) continue;
      if (shape[k] != 1 && shape[k] != e) return false;
      shape[k] = e;
    }
  }
  return true;
}

// NumPy's rule for a ufunc's result: an insertion sort of the dimensions from the innermost
// out, where a dimension moves inside another only when every input that is not broadcast
// along either has the larger stride on the other; dimensions no input tells apart keep
// their C order.
bool result_order(const Array* inputs, int count, int ndim, int* order) {
  int perm[kMaxDims];  // innermost first
  for (int k = 0; k < ndim; ++k) perm[k] = ndim - 1 - k;
  for (int i = 1; i < ndim; ++i) {
    const int outer = perm[i];
    int at = i;
    for (int j = i - 1; j >= 0; --j) {
      bool told = false, all_larger = true;
      for (int k = 0; k < count; ++k) {
        const int64_t inner = magnitude(broadcast_stride(inputs[k], perm[j], ndim));
        const int64_t here = magnitude(broadcast_stride(inputs[k], outer, ndim));
        if (!inner || !here) continue;
        told = true;
        all_larger = all_larger && inner > here;
      }
      if (told && !all_larger) break;
      if (told) at = j;
    }
    for (int k = i; k > at; --k) perm[k] = perm[k - 1];
    perm[at] = outer;
  }
  bool c_order = true;
  for (int k = 0; k < ndim; ++k) {
    order[k] = perm[ndim - 1 - k];
    c_order = c_order && order[k] == k;
  }
  return c_order;
}

size_t strides_nbytes(int count) { return 8 + 8 * size_t(kMaxStridedDims) * (1 + size_t(count)); }

Strides pack_strides(const Array* arrays, int count, const int64_t* shape, int ndim, std::string& packed, int& dims) {
  const Array& out = arrays[count - 1];
  for (int a = 0; a < count; ++a)
    for (int d = 0; d < arrays[a].ndim; ++d)
      if (arrays[a].shape[d] != 1 && arrays[a].strides[d] % arrays[a].itemsize) return Strides::partial_elements;
  // The output's dimensions by decreasing stride, ties in C order: the walk's outermost first.
  int order[kMaxDims];
  for (int d = 0; d < ndim; ++d) order[d] = d;
  std::stable_sort(order, order + ndim, [&](int x, int y) {
    return magnitude(broadcast_stride(out, x, ndim)) > magnitude(broadcast_stride(out, y, ndim));
  });
  // Written straight into the argument: shape at 8, array a's strides at 8 + 64 (1 + a).
  packed.assign(strides_nbytes(count), '\0');
  auto at_slot = [&](int row, int d) { return packed.data() + 8 + 8 * (kMaxStridedDims * row + d); };
  auto get = [&](int row, int d) {
    int64_t v;
    std::memcpy(&v, at_slot(row, d), 8);
    return v;
  };
  auto set = [&](int row, int d, int64_t v) { std::memcpy(at_slot(row, d), &v, 8); };
  auto step = [&](int a, int d) { return broadcast_stride(arrays[a], d, ndim) / arrays[a].itemsize; };
  dims = 0;
  for (int i = 0; i < ndim; ++i) {
    const int d = order[i];
    if (shape[d] == 1) continue;
    // Past the limit the last slot stands for the newest dimension, so the count goes on.
    bool joins = dims > 0;
    const int last = std::min(dims, kMaxStridedDims) - 1;
    for (int a = 0; a < count && joins; ++a) joins = get(1 + a, last) == step(a, d) * shape[d];
    const int at = joins ? last : std::min(++dims, kMaxStridedDims) - 1;
    set(0, at, joins ? get(0, at) * shape[d] : shape[d]);
    for (int a = 0; a < count; ++a) set(1 + a, at, step(a, d));
  }
  if (dims > kMaxStridedDims) return Strides::too_many_dims;
  for (int d = dims; d < kMaxStridedDims; ++d) set(0, d, 1);
  const int32_t header[2] = {dims, 0};
  std::memcpy(packed.data(), header, sizeof header);
  return Strides::ok;
}

// ---- g.reduce ----------------------------------------------------------------------------

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return b ? (a + b - 1) / b : 0; }

// Dimensions as a reduction walks them, outermost first: extents, and `rows` arrays' strides
// in elements (row-major: dimension i's strides at i * rows).
class Walk {
 public:
  explicit Walk(int rows) : rows_(rows), strides_(size_t(kMaxDims) * size_t(rows)) {}
  int size() const { return n_; }
  int rows() const { return rows_; }
  int64_t extent(int i) const { return extent_[i]; }
  int64_t stride(int i, int a) const { return strides_[size_t(i) * rows_ + a]; }
  int64_t count() const {
    int64_t c = 1;
    for (int i = 0; i < n_; ++i) c *= extent_[i];
    return c;
  }
  // Appends a dimension, dropped when of extent 1, merged into the one outside it when every
  // array's stride there is this one's times its extent.
  void push(int64_t extent, const int64_t* strides) {
    if (extent == 1) return;
    bool joins = n_ > 0;
    for (int a = 0; a < rows_ && joins; ++a) joins = stride(n_ - 1, a) == strides[a] * extent;
    const int at = joins ? n_ - 1 : n_++;
    extent_[at] = joins ? extent_[at] * extent : extent;
    std::copy(strides, strides + rows_, strides_.begin() + std::ptrdiff_t(at) * rows_);
  }
  void push_unit(const int64_t* strides) {  // an extent-1 dimension, kept
    extent_[n_] = 1;
    std::copy(strides, strides + rows_, strides_.begin() + std::ptrdiff_t(n_++) * rows_);
  }

 private:
  int rows_;
  int n_ = 0;
  int64_t extent_[kMaxDims];
  std::vector<int64_t> strides_;
};

// How the first launch's items are cut: gompute_reduce_layout's work fields, and the items.
struct Cut {
  int64_t chunk, chunks, width, per_block, finish_per_block, items;
};

Cut host_cut(const ReduceRules& r, bool columns, int64_t cols, int64_t kept_count, int64_t red_count) {
  Cut c{};
  if (columns) {
    c.width = r.column_width;
    // A tile of few results takes whole runs of column_rows rows up to about a block's elements: its
    // per-item work (and the partials the finish combines) would otherwise outweigh its reading.
    c.chunk = r.column_rows * std::max<int64_t>(1, r.block_elements / (r.column_rows * std::min(cols, c.width)));
    c.chunks = ceil_div(red_count, c.chunk);
    c.items = kept_count / cols * ceil_div(cols, c.width) * c.chunks;
    c.per_block = std::max<int64_t>(1, r.block_elements / (std::min(c.width, cols) * std::min(c.chunk, red_count)));
  } else {
    c.width = 1;
    c.chunk = r.row_chunk;
    if (red_count <= c.chunk) {  // one item a result
      c.chunk = std::max<int64_t>(red_count, 1);
      c.chunks = red_count ? 1 : 0;
      c.per_block = std::max<int64_t>(1, r.block_elements / std::max<int64_t>(red_count, 1));
    } else {
      c.chunks = ceil_div(red_count, c.chunk);
      c.per_block = 1;
    }
    c.items = kept_count * c.chunks;
  }
  c.finish_per_block = std::max<int64_t>(1, r.finish_partials / std::max<int64_t>(c.chunks, 1));
  return c;
}

// A GPU's: a block an item, its threads striding through it (rows: at least gpu_items elements a
// thread, at most gpu_partials partials over all results; short rows a thread's or a group's each,
// per_block of them a block) or a thread `pack` results of a tile (columns); in the finish pass a
// thread a result, or a block a result where a few results have more partials than a block has threads.
Cut gpu_cut(const ReduceRules& r, bool columns, int64_t pack, int64_t cols, int64_t kept_count, int64_t red_count) {
  Cut c{};
  c.per_block = 1;
  c.finish_per_block = r.block;  // a thread a result
  if (columns) {
    // A tile of fewer results than threads reads as many rows more at once; and, as rows do, a launch
    // makes at most about gpu_partials items (unless its tiles outnumber them): longer runs of rows,
    // so that the finish has fewer partials a result to combine.
    const int64_t width = r.block * pack, tiles = kept_count / cols * ceil_div(cols, width);
    c.chunk = r.column_rows * std::max<int64_t>(1, r.block / ceil_div(std::min(cols, width), pack));
    c.chunks = std::min(ceil_div(red_count, c.chunk),
                        std::max<int64_t>(1, r.gpu_partials / std::max<int64_t>(tiles, 1)));
    if (c.chunks) c.chunk = ceil_div(red_count, c.chunks);
    c.width = width;
    c.items = tiles * c.chunks;
  } else if (red_count <= r.gpu_group_rows) {  // short rows: a thread or a group a result, a block's worth a block
    c.chunks = red_count ? 1 : 0;
    c.chunk = std::max<int64_t>(red_count, 1);
    c.width = 1;
    c.per_block = red_count <= r.gpu_thread_rows ? r.block : r.block / r.gpu_group;
    c.items = kept_count;
  } else {
    c.chunks = std::min(ceil_div(red_count, r.block * r.gpu_items),
                        std::max<int64_t>(1, r.gpu_partials / std::max<int64_t>(kept_count, 1)));
    c.chunk = c.chunks ? std::max<int64_t>(1, ceil_div(red_count, c.chunks)) : 1;
    c.width = 1;
    c.items = kept_count * c.chunks;
  }
  if (kept_count <= r.block && c.chunks >= r.block) c.finish_per_block = 1;
  c.items = std::min(c.items, r.gpu_max_blocks * c.per_block);
  return c;
}

// Whether a GPU's rows may read packs of rules.gpu_pack elements: one reduced dimension, of stride 1
// in every input, each input's elements aligned to their size, and every item's first element at the
// same place in a pack in every input. That holds where the inputs' first elements are and each kept
// stride is the same in every input up to a multiple of the pack: the items' offsets then are too,
// and the chunks between them are the same count of elements in each.
bool packs_rows(const Array* arrays, int count, const Walk& kept, const Walk& red, const ReduceRules& rules) {
  const int64_t v = rules.gpu_pack;
  if (!rules.gpu || v < 2 || red.size() != 1) return false;
  auto phase = [v](int64_t x) { return (x % v + v) % v; };
  auto first = [](const Array& a) { return int64_t(a.address / uint64_t(a.itemsize)); };
  for (int a = 0; a < count; ++a) {
    const Array& in = arrays[a];
    if (red.stride(0, a) != 1 || in.address % uint64_t(in.itemsize) || phase(first(in)) != phase(first(arrays[0])))
      return false;
    for (int i = 0; i < kept.size(); ++i)
      if (phase(kept.stride(i, a)) != phase(kept.stride(i, 0))) return false;
  }
  return true;
}

// Whether a GPU's columns may read packs: one reduced dimension, and in every input each pack of a
// tile's results (the tiles' starts are multiples of the pack) on every row at a multiple of the
// pack's bytes: the first element there, and every stride but the innermost kept one (1) multiples
// of the pack.
bool packs_columns(const Array* arrays, int count, const Walk& kept, const Walk& red, const ReduceRules& rules) {
  const int64_t v = rules.gpu_pack;
  if (!rules.gpu || v < 2 || red.size() != 1) return false;
  for (int a = 0; a < count; ++a) {
    if (arrays[a].address % uint64_t(arrays[a].itemsize * v) || red.stride(0, a) % v) return false;
    for (int i = 0; i + 1 < kept.size(); ++i)
      if (kept.stride(i, a) % v) return false;
  }
  return true;
}

}  // namespace

const char* entry_name(ReduceEntry e) {
  switch (e) {
    case ReduceEntry::columns: return "columns";
    case ReduceEntry::packed_rows: return "packed_rows";
    case ReduceEntry::packed_columns: return "packed_columns";
    default: return "rows";
  }
}

size_t reduce_layout_nbytes(int count) {
  return 8 * (2 + 2 * size_t(kMaxStridedDims) + 2 * size_t(kMaxStridedDims) * (1 + size_t(count)) + 7);
}

ReduceStatus plan_reduce(const Array* arrays, int count, const int64_t* shape, int ndim, const bool* reduced,
                         bool keepdims, const ReduceRules& rules, ReducePlan& plan) {
  const int rows = count + 1;  // the inputs, then the output
  for (int a = 0; a < rows; ++a)
    for (int d = 0; d < arrays[a].ndim; ++d)
      if (arrays[a].shape[d] != 1 && arrays[a].strides[d] % arrays[a].itemsize) return ReduceStatus::partial_elements;
  auto step = [&](int a, int d) { return broadcast_stride(arrays[a], d, ndim) / arrays[a].itemsize; };
  const Array& out = arrays[count];
  Walk kept(rows), red(count);
  std::vector<int64_t> steps(static_cast<size_t>(rows));
  int order[kMaxDims], nred = 0;
  int64_t weight[kMaxDims];
  for (int d = 0, o = 0; d < ndim; ++d) {
    if (reduced[d]) {
      order[nred++] = d;
      weight[d] = 0;
      for (int a = 0; a < count; ++a) weight[d] += magnitude(step(a, d));
      o += keepdims;  // out's extent-1 dimension
      continue;
    }
    for (int a = 0; a < count; ++a) steps[a] = step(a, d);
    steps[count] = out.strides[o++] / out.itemsize;
    kept.push(shape[d], steps.data());
  }
  // The reduced dimensions by the inputs' strides, the largest outermost; ties in axis order.
  std::stable_sort(order, order + nred, [&](int x, int y) { return weight[x] > weight[y]; });
  for (int i = 0; i < nred; ++i) {
    for (int a = 0; a < count; ++a) steps[a] = step(a, order[i]);
    red.push(shape[order[i]], steps.data());
  }
  if (red.size() == 0) {  // every reduced extent is 1: one step, in place
    std::fill(steps.begin(), steps.end(), int64_t(0));
    red.push_unit(steps.data());
  }
  plan.kept_dims = kept.size();
  plan.reduced_dims = red.size();
  if (kept.size() > kMaxStridedDims || red.size() > kMaxStridedDims) return ReduceStatus::too_many_dims;
  const int64_t kept_count = kept.count(), red_count = red.count();
  const int64_t cols = kept.size() ? kept.extent(kept.size() - 1) : 0;
  bool inner_kept = kept.size() > 0 && red_count > 0 && cols > 0, inner_red = true;
  for (int a = 0; a < count; ++a) {
    inner_kept = inner_kept && kept.stride(kept.size() - 1, a) == 1;
    inner_red = inner_red && red.stride(red.size() - 1, a) == 1;
  }
  const bool columns = inner_kept && !inner_red;
  const bool packed = columns ? packs_columns(arrays, count, kept, red, rules) : packs_rows(arrays, count, kept, red, rules);
  const Cut cut = rules.gpu ? gpu_cut(rules, columns, packed && columns ? rules.gpu_pack : 1, cols, kept_count, red_count)
                            : host_cut(rules, columns, cols, kept_count, red_count);
  if (columns)
    plan.entry = packed ? ReduceEntry::packed_columns : ReduceEntry::columns;
  else  // short rows take the rows entry's threads and groups
    plan.entry = packed && cut.per_block == 1 ? ReduceEntry::packed_rows : ReduceEntry::rows;
  plan.first_blocks = ceil_div(cut.items, cut.per_block);
  // One item a result: the first launch stores the results (the entries read chunks == 1 from the
  // layout), with no partials and no finish after it.
  const bool finished = cut.chunks == 1;
  plan.finish_blocks = finished ? 0 : ceil_div(kept_count, cut.finish_per_block);
  if (rules.gpu) plan.finish_blocks = std::min(plan.finish_blocks, rules.gpu_max_blocks);
  plan.partials = finished ? 0 : kept_count * cut.chunks;
  // gompute_reduce_layout<rows> (lang/reduce_entries.py): counts, shapes (1 past the dimensions),
  // the stride tables (0 past them; the output's row of the reduced table 0), the work.
  plan.layout.assign(reduce_layout_nbytes(count), '\0');
  size_t at = 0;
  auto put = [&](int64_t v) {
    std::memcpy(&plan.layout[at], &v, 8);
    at += 8;
  };
  put(kept.size());
  put(red.size());
  for (const Walk* w : {&kept, &red})
    for (int i = 0; i < kMaxStridedDims; ++i) put(i < w->size() ? w->extent(i) : 1);
  for (const Walk* w : {&kept, &red})
    for (int a = 0; a < rows; ++a)
      for (int i = 0; i < kMaxStridedDims; ++i) put(i < w->size() && a < w->rows() ? w->stride(i, a) : 0);
  for (int64_t v : {kept_count, red_count, cut.chunk, cut.chunks, cut.width, cut.per_block, cut.finish_per_block})
    put(v);
  return ReduceStatus::ok;
}

}  // namespace gompute::plan
