// The rules of a g.map call (see planner.h).
#include "planner.h"

#include <algorithm>
#include <cstring>

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

}  // namespace gompute::plan
