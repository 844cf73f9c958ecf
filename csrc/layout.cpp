// Layout (runtime.h): the byte arithmetic of a typed view of memory, its element count, extent
// and contiguity, whether its elements are distinct, and whether it fits 64 bits at all.
#include "runtime.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace gompute {

int64_t Layout::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool Layout::c_contiguous() const {
  int64_t expected = int64_t(itemsize());
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

std::pair<int64_t, int64_t> Layout::extent() const {
  if (size() == 0) return {0, 0};
  int64_t lo = 0, hi = 0;
  for (size_t i = 0; i < shape.size(); ++i) (strides[i] < 0 ? lo : hi) += (shape[i] - 1) * strides[i];
  return {lo, hi + int64_t(itemsize())};
}

bool distinct_elements(const int64_t* shape, const int64_t* strides, int ndim, int64_t itemsize) {
  if (std::find(shape, shape + ndim, 0) != shape + ndim) return true;
  int on_stack[16];  // the fast path's views have at most 16 dimensions: no allocation there
  std::vector<int> on_heap(ndim > 16 ? ndim : 0);
  int* order = ndim > 16 ? on_heap.data() : on_stack;
  int n = 0;
  for (int d = 0; d < ndim; ++d)
    if (shape[d] > 1) order[n++] = d;
  std::sort(order, order + n, [&](int a, int b) { return std::abs(strides[a]) < std::abs(strides[b]); });
  int64_t inside = itemsize;  // the bytes the dimensions so far span
  for (int i = 0; i < n; ++i) {
    if (std::abs(strides[order[i]]) < inside) return false;
    inside += std::abs(strides[order[i]]) * (shape[order[i]] - 1);
  }
  return true;
}

void Layout::check_fits(const std::string& what) const {
  for (int64_t d : shape)
    if (d < 0) raise(ErrorKind::ArgumentError, what + ": a shape cannot be negative (" + std::to_string(d) + ")");
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return;  // no elements
  int64_t n = 1, lo = 0, hi = int64_t(itemsize()), span = 0;
  bool overflows = false;
  for (size_t i = 0; i < shape.size() && !overflows; ++i) {
    const int64_t stride = i < strides.size() ? strides[i] : 0;
    int64_t reach = 0;
    int64_t& side = stride < 0 ? lo : hi;
    overflows = __builtin_mul_overflow(n, shape[i], &n) || __builtin_mul_overflow(shape[i] - 1, stride, &reach) ||
                __builtin_add_overflow(side, reach, &side);
  }
  if (overflows || __builtin_sub_overflow(hi, lo, &span))
    raise(ErrorKind::ArgumentError, what + ": its shape and strides reach past 2**63 elements or bytes");
}

Layout Layout::bytes(size_t nbytes) {
  Layout l;
  l.shape = {int64_t(nbytes)};
  l.strides = {1};
  return l;
}

}  // namespace gompute
