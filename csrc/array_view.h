// An array as the g.map fast path reads it (dispatch.cpp): where its elements are, their
// format, shape and strides, and the device and stream they live on.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <utility>

#include "dlpack.h"
#include "dlpack_exchange.h"
#include "planner.h"
#include "runtime.h"

namespace gompute {

// An array the fast path can launch on, released on scope exit: a gompute Buffer (any
// backend), a host array through the buffer protocol (or a versioned DLPack capsule), a
// PyTorch tensor on the CPU or a GPU through DLPack's exchange table (on torch's current
// stream), or a CUDA array through its __cuda_array_interface__ (version 3, with the stream
// its data is ordered on). Not ok() when it is none of
// those, or (writable) read-only, or its strides are not whole elements, or it has
// elements at a NULL address.
class ArrayView {
 public:
  static constexpr int kMaxDims = 16;  // more: the general path

  ArrayView() = default;
  // Reads `obj`; ok() says whether it is a view this path takes.
  void open(PyObject* obj, bool writable);
  ~ArrayView() {
    if (has_view_) PyBuffer_Release(&view_);
    if (managed_) managed_->deleter(managed_);
  }
  ArrayView(const ArrayView&) = delete;
  ArrayView& operator=(const ArrayView&) = delete;

  bool ok() const { return ok_; }
  // The array as the planner reads it (valid while this view lives).
  plan::Array planned() const {
    plan::Array a;
    a.ndim = ndim_;
    a.shape = shape_;
    a.strides = strides_;
    a.itemsize = int64_t(itemsize_);
    a.address = data_;
    a.dtype = uint32_t(uint8_t(format_));
    return a;
  }
  uint64_t address() const { return data_; }
  char format() const { return format_; }
  size_t itemsize() const { return size_t(itemsize_); }
  int ndim() const { return ndim_; }
  const int64_t* shape() const { return shape_; }
  int64_t extent(int d) const { return shape_[d]; }
  int64_t stride(int d) const { return strides_[d]; }  // in bytes
  bool contiguous() const { return contiguous_; }    // C order, extent-1 dimensions aside
  // Whether no two elements share memory (runtime.h); a contiguous view's are, at no cost.
  bool distinct_elements() const {
    return contiguous_ || gompute::distinct_elements(shape_, strides_, ndim_, itemsize_);
  }
  size_t count() const {
    size_t n = 1;
    for (int i = 0; i < ndim_; ++i) n *= size_t(shape_[i]);
    return n;
  }
  // Where the memory is: the backend and device, the context when the array is a gompute
  // Buffer, and the stream its data is ordered on (a host array has none).
  BackendKind kind() const { return kind_; }
  int ordinal() const { return ordinal_; }
  const Context* context() const { return ctx_; }
  bool has_stream() const { return has_stream_; }
  bool torch_tensor() const { return torch_tensor_; }  // read through from_tensor: writes count for autograd
  StreamHandle stream() const { return stream_; }

  // _core.Buffer, set once at module import (bindings.cpp).
  static PyTypeObject*& buffer_type() {
    static PyTypeObject* type = nullptr;
    return type;
  }

 private:
  static char format_char(const Py_buffer& v);
  static char dlpack_format(const DLDataType& t);
  static char typestr_format(const char* typestr);
  static Py_ssize_t format_size(char format);
  void read(PyObject* obj, bool writable);
  void read_buffer_protocol(PyObject* obj, bool writable);
  void from_buffer(PyObject* obj, bool writable);
  void from_tensor(PyObject* tensor, bool writable);
  void from_tensor_numpy(PyObject* tensor, bool writable);
  bool from_cuda_array_interface(PyObject* obj, bool writable);
  void from_dlpack(PyObject* obj, bool writable);

  Py_buffer view_{};
  bool has_view_ = false;
  pybind11::object holder_;  // a NumPy view of a PyTorch tensor (a torch without the exchange table)
  bool torch_tensor_ = false;
  // A Buffer's memory, held through the launch: a host launch releases the GIL, and another
  // thread's free() must not release the memory under it.
  std::shared_ptr<Allocation> allocation_;
  DLManagedTensorVersioned* managed_ = nullptr;
  bool ok_ = false;
  uint64_t data_ = 0;  // a host or device address
  char format_ = 0;
  Py_ssize_t itemsize_ = 0;
  BackendKind kind_ = BackendKind::host;
  int ordinal_ = 0;
  const Context* ctx_ = nullptr;
  bool has_stream_ = false;
  StreamHandle stream_ = nullptr;
  int ndim_ = 0;
  int64_t shape_[kMaxDims];    // the first ndim_ are set
  int64_t strides_[kMaxDims];  // in bytes
  bool contiguous_ = false;
  // The shape, and the strides in units of `unit` bytes (none: C-contiguous); false when
  // there are too many dimensions or a stride is not whole elements.
  // Also false for a negative extent, or extents and strides that reach past 2**63 bytes
  // (a foreign array can say anything; the general path says what is wrong).
  template <typename Int, typename Stride>  // Py_ssize_t (buffer protocol) or int64_t
  bool set_layout(const Int* shape, const Stride* strides, int64_t unit, int ndim) {
    if (ndim < 0 || ndim > kMaxDims || itemsize_ <= 0) return false;
    ndim_ = ndim;
    int64_t expected = itemsize_, reach = itemsize_;
    contiguous_ = true;
    for (int i = ndim; i-- > 0;) {
      shape_[i] = int64_t(shape[i]);
      if (shape_[i] < 0) return false;
      if (!strides) {
        strides_[i] = expected;
      } else if (__builtin_mul_overflow(int64_t(strides[i]), unit, &strides_[i])) {
        return false;
      }
      if (strides_[i] % itemsize_) return false;
      if (shape_[i] != 1 && strides_[i] != expected) contiguous_ = false;
      int64_t span;
      if (__builtin_mul_overflow(shape_[i], itemsize_, &span) || __builtin_mul_overflow(expected, shape_[i], &expected) ||
          (shape_[i] > 1 && (strides_[i] == INT64_MIN || __builtin_mul_overflow(shape_[i] - 1, std::abs(strides_[i]), &span) ||
                             __builtin_add_overflow(reach, span, &reach))))
        return false;
    }
    return true;
  }
  void set_data(const void* p) { data_ = reinterpret_cast<uintptr_t>(p); }
};

// The DLPack exchange table `type` carries (dlpack_exchange.h), or null when it has none, or one
// of another major version, or one without the two functions ArrayView reads.
const DLPackExchangeAPI* exchange_api(PyTypeObject* type);

// The current stream of `obj`'s framework on obj's device, asked as the fast path asks it for a
// tensor it reads (a handle; 0 for the default stream), or None when obj's type carries no
// DLPack exchange table this reads or the table does not answer: the general path then asks
// the framework's own API, and launches where the fast path would.
pybind11::object current_work_stream(PyObject* obj);

// Tells the fast path which Python type is _core.Buffer (bindings.cpp, at import), so it
// reads Buffers in place rather than through a protocol.
void set_fast_path_buffer_type(PyTypeObject* type);

}  // namespace gompute
