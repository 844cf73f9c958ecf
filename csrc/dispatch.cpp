// The g.map fast path: a cached call on contiguous host arrays, done in C++.
//
// gompute/kernel.py takes every call the general way first; once a (dtypes, entry) pair
// has launched on the host backend it is remembered here, and later calls of that shape
// cost a few buffer-protocol reads, the params packing and an inline launch, with no
// Python in between. Anything this cache does not handle exactly (other shapes, strides,
// stream=, foreign devices, a value that does not fit) returns None, and the general
// path runs and reports any error properly.
#include "dispatch.h"

#include "dlpack.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace py = pybind11;

namespace gompute {

constexpr uint64_t kKeepGilElements = 16384;

// A contiguous host array read through the buffer protocol or, failing that, DLPack
// (PyTorch CPU tensors); released on scope exit. Not ok() when it is neither, or not
// contiguous, or (writable) read-only.
class View {
 public:
  View() = default;
  // Reads `obj`; ok() says whether it is a view this path takes.
  void open(PyObject* obj, bool writable) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &view_, flags) == 0) {
      has_view_ = true;
      format_ = format_char(view_);
      data_ = view_.buf;
      itemsize_ = view_.itemsize;
      ok_ = format_ != 0 && set_shape(view_.shape, view_.ndim);
      return;
    }
    PyErr_Clear();
    if (std::strcmp(Py_TYPE(obj)->tp_name, "Tensor") == 0 && from_numpy_view(obj, writable)) return;
    if (PyObject_HasAttrString(obj, "__dlpack__")) from_dlpack(obj, writable);
  }
  ~View() {
    if (has_view_) PyBuffer_Release(&view_);
    if (managed_) managed_->deleter(managed_);
  }
  View(const View&) = delete;
  View& operator=(const View&) = delete;

  bool ok() const { return ok_; }
  void* data() const { return data_; }
  char format() const { return format_; }
  size_t itemsize() const { return size_t(itemsize_); }
  bool same_shape(const View& o) const {
    return ndim_ == o.ndim_ && std::equal(shape_, shape_ + ndim_, o.shape_);
  }
  size_t count() const {
    size_t n = 1;
    for (int i = 0; i < ndim_; ++i) n *= size_t(shape_[i]);
    return n;
  }
  size_t nbytes() const { return count() * itemsize(); }

 private:
  static char format_char(const Py_buffer& v);
  static char dlpack_format(const DLDataType& t);
  void from_dlpack(PyObject* obj, bool writable);
  bool from_numpy_view(PyObject* tensor, bool writable);

  Py_buffer view_{};
  bool has_view_ = false;
  py::object holder_;  // a NumPy view of a PyTorch tensor, kept while we read it
  DLManagedTensorVersioned* managed_ = nullptr;
  bool ok_ = false;
  void* data_ = nullptr;
  char format_ = 0;
  Py_ssize_t itemsize_ = 0;
  static constexpr int kMaxDims = 16;  // more: the general path
  int ndim_ = 0;
  Py_ssize_t shape_[kMaxDims];  // the first ndim_ are set
  template <typename Int>  // Py_ssize_t (buffer protocol) or int64_t (DLPack)
  bool set_shape(const Int* shape, int ndim) {
    if (ndim > kMaxDims) return false;
    ndim_ = ndim;
    for (int i = 0; i < ndim; ++i) shape_[i] = Py_ssize_t(shape[i]);
    return true;
  }
};

// The struct-module format of a native scalar as one character ('l' folded into 'q').
char View::format_char(const Py_buffer& v) {
  const char* f = v.format ? v.format : "B";
  if (*f == '=' || *f == '@') ++f;
  if (!f[0] || f[1]) return 0;
  switch (f[0]) {
    case 'l': return v.itemsize == 8 ? 'q' : 'i';
    case 'L': return v.itemsize == 8 ? 'Q' : 'I';
    case '?': case 'b': case 'B': case 'h': case 'H': case 'i': case 'I':
    case 'q': case 'Q': case 'e': case 'f': case 'd': return f[0];
  }
  return 0;
}

char View::dlpack_format(const DLDataType& t) {
  if (t.lanes != 1) return 0;
  const int b = t.bits;
  switch (t.code) {
    case kDLBool: return b == 8 ? '?' : 0;
    case kDLInt: return b == 8 ? 'b' : b == 16 ? 'h' : b == 32 ? 'i' : b == 64 ? 'q' : 0;
    case kDLUInt: return b == 8 ? 'B' : b == 16 ? 'H' : b == 32 ? 'I' : b == 64 ? 'Q' : 0;
    case kDLFloat: return b == 16 ? 'e' : b == 32 ? 'f' : b == 64 ? 'd' : 0;
  }
  return 0;
}

// A PyTorch CPU tensor through its NumPy view (`tensor.numpy()` shares the memory and is
// about three times cheaper than `__dlpack__`); false where torch refuses one (grad, GPU).
bool View::from_numpy_view(PyObject* tensor, bool writable) {
  PyObject* array = PyObject_CallMethod(tensor, "numpy", nullptr);
  if (!array) {
    PyErr_Clear();
    return false;
  }
  holder_ = py::reinterpret_steal<py::object>(array);
  int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(array, &view_, flags) != 0) {
    PyErr_Clear();
    return true;  // a NumPy view that is not contiguous: not ok, and no DLPack retry either
  }
  has_view_ = true;
  format_ = format_char(view_);
  data_ = view_.buf;
  itemsize_ = view_.itemsize;
  ok_ = format_ != 0 && set_shape(view_.shape, view_.ndim);
  return true;
}

// A versioned DLPack capsule of a C-contiguous CPU array; anything else leaves the view
// not ok (an unconsumed capsule frees itself).
void View::from_dlpack(PyObject* obj, bool writable) {
  // Ask where it lives first: a GPU producer would order streams for a capsule we drop.
  PyObject* device = PyObject_CallMethod(obj, "__dlpack_device__", nullptr);
  long type = device && PyTuple_Check(device) && PyTuple_Size(device) == 2 ? PyLong_AsLong(PyTuple_GET_ITEM(device, 0)) : -1;
  Py_XDECREF(device);
  if (type != kDLCPU) {
    PyErr_Clear();
    return;
  }
  static PyObject* kwargs = [] {
    PyObject* d = PyDict_New();
    PyObject* version = Py_BuildValue("(ii)", 1, 0);
    PyDict_SetItemString(d, "max_version", version);
    Py_DECREF(version);
    return d;  // kept for the process
  }();
  py::object method = py::reinterpret_steal<py::object>(PyObject_GetAttrString(obj, "__dlpack__"));
  PyObject* empty = PyTuple_New(0);
  PyObject* capsule = method ? PyObject_Call(method.ptr(), empty, kwargs) : nullptr;
  Py_DECREF(empty);
  if (!capsule || !PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    PyErr_Clear();
    Py_XDECREF(capsule);
    return;
  }
  auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, "dltensor_versioned"));
  const DLTensor& t = m->dl_tensor;
  bool contiguous = true;
  int64_t expected = 1;
  for (int i = t.ndim; i-- > 0;) {
    if (t.strides && t.shape[i] != 1 && t.strides[i] != expected) contiguous = false;
    expected *= t.shape[i];
  }
  format_ = dlpack_format(t.dtype);
  if (t.device.device_type == kDLCPU && contiguous && format_ && !(writable && (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY))) {
    PyCapsule_SetName(capsule, "used_dltensor_versioned");  // ours now: the destructor calls its deleter
    managed_ = m;
    data_ = static_cast<char*>(t.data) + t.byte_offset;
    itemsize_ = t.dtype.bits / 8;
    ok_ = set_shape(t.shape, t.ndim);
  }
  Py_DECREF(capsule);
}

namespace {

bool overlap(const View& a, const View& b) {
  auto lo = [](const View& v) { return reinterpret_cast<uintptr_t>(v.data()); };
  return lo(a) < lo(b) + b.nbytes() && lo(b) < lo(a) + a.nbytes();
}

// Writes `value` as the field's type at `dst`; false if it is not exactly representable.
bool pack_field(const ParamField& f, PyObject* value, char* dst) {
  if (f.kind == 'e') {  // f16, rounded once from the double as NumPy does
    double d = PyFloat_AsDouble(value);
    if ((d == -1.0 && PyErr_Occurred()) || (std::isfinite(d) && std::fabs(d) > 65504.0)) return false;
    _Float16 h = static_cast<_Float16>(d);
    std::memcpy(dst, &h, 2);
    return true;
  }
  if (f.kind == 'f') {
    if (f.bits != 32 && f.bits != 64) return false;  // bf16 fields: the general path packs them
    double d = PyFloat_AsDouble(value);
    if (d == -1.0 && PyErr_Occurred()) return false;
    if (f.bits == 32) {
      if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max()) return false;
      float x = float(d);
      std::memcpy(dst, &x, 4);
    } else {
      std::memcpy(dst, &d, 8);
    }
    return true;
  }
  if (f.kind == 'b') {
    if (!PyBool_Check(value)) return false;
    *dst = value == Py_True;
    return true;
  }
  if (!PyLong_Check(value) || PyBool_Check(value)) return false;
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow || (v == -1 && PyErr_Occurred())) return false;  // u64 above 2**63: the general path
  const int bytes = f.bits / 8;
  if (f.kind == 'i') {
    long long lo = -(1LL << (f.bits - 1)), hi = f.bits == 64 ? std::numeric_limits<long long>::max() : (1LL << (f.bits - 1)) - 1;
    if (v < lo || v > hi) return false;
  } else if (v < 0 || (f.bits < 64 && v > (1LL << f.bits) - 1)) {
    return false;
  }
  std::memcpy(dst, &v, bytes);  // little-endian: the low bytes
  return true;
}

}  // namespace

FastMap::FastMap(int arity, uint32_t block_size, std::vector<ParamField> fields, size_t params_size,
                 bool has_params)
    : arity_(arity), block_size_(block_size), fields_(std::move(fields)), params_size_(params_size),
      has_params_(has_params) {
  for (ParamField& f : fields_) f.key = py::reinterpret_steal<py::object>(PyUnicode_InternFromString(f.name.c_str()));
  py::module_ np = py::module_::import("numpy");
  ndarray_ = np.attr("ndarray");
  empty_ = np.attr("empty");
}

void FastMap::remember(const std::string& inputs, char out, bool inplace, const Kernel& kernel, py::object dtype) {
  const std::string signature = inputs + out + (inplace ? 'i' : 'm');
  auto kept = std::make_shared<Kernel>(kernel);
  auto same = [&](const Launch& l) { return l.signature == signature; };
  if (auto it = std::find_if(launches_.begin(), launches_.end(), same); it != launches_.end())
    it->kernel = std::move(kept);  // a call in flight holds its own reference
  else
    launches_.push_back({signature, std::move(kept)});
  auto found = std::find_if(out_types_.begin(), out_types_.end(), [&](const OutType& o) { return o.inputs == inputs; });
  if (found != out_types_.end())
    found->dtype = std::move(dtype);
  else
    out_types_.push_back({inputs, std::move(dtype)});
}

bool FastMap::pack_params(PyObject* kwargs, Py_ssize_t other_keys, char* out) const {
  const Py_ssize_t given = (kwargs ? PyDict_GET_SIZE(kwargs) : 0) - other_keys;
  if (!has_params_) return given == 0;
  if (given != Py_ssize_t(fields_.size())) return false;
  std::memset(out, 0, params_size_);
  for (const ParamField& f : fields_) {
    PyObject* value = PyDict_GetItem(kwargs, f.key.ptr());  // borrowed
    if (!value || !pack_field(f, value, out + f.offset)) {
      PyErr_Clear();
      return false;
    }
  }
  return true;
}

const FastMap::Launch* FastMap::find(const char* signature, size_t size) const {
  for (const Launch& l : launches_)
    if (l.signature.size() == size && std::memcmp(l.signature.data(), signature, size) == 0) return &l;
  return nullptr;
}

// A new NumPy array shaped like `like` (a NumPy array) with the dtype the general path
// chose for these inputs; null when it has not seen them yet.
py::object FastMap::new_output(PyObject* like, const char* signature, size_t size) const {
  for (const OutType& o : out_types_) {
    if (o.inputs.size() != size || std::memcmp(o.inputs.data(), signature, size) != 0) continue;
    py::object shape = py::reinterpret_steal<py::object>(PyObject_GetAttrString(like, "shape"));
    if (!shape) throw py::error_already_set();
    return empty_(shape, o.dtype);
  }
  return py::object();
}

py::object FastMap::call(PyObject* args, PyObject* kwargs) {
  static PyObject* const out_key = PyUnicode_InternFromString("out");  // kept for the process
  static PyObject* const stream_key = PyUnicode_InternFromString("stream");
  if (PyTuple_GET_SIZE(args) != arity_ || arity_ == 0 || arity_ > kMaxArity) return py::object();
  PyObject* out = kwargs ? PyDict_GetItem(kwargs, out_key) : nullptr;        // borrowed, or null
  PyObject* stream = kwargs ? PyDict_GetItem(kwargs, stream_key) : nullptr;  // a stream: the general path
  if (stream && stream != Py_None) return py::object();
  char small_params[64];
  std::unique_ptr<char[]> big_params;
  char* params = small_params;
  if (params_size_ > sizeof small_params) params = (big_params = std::make_unique<char[]>(params_size_)).get();
  if (!pack_params(kwargs, (out != nullptr) + (stream != nullptr), params)) return py::object();

  View inputs[kMaxArity];
  char signature[kMaxArity + 2];
  for (int i = 0; i < arity_; ++i) {
    inputs[i].open(PyTuple_GET_ITEM(args, i), false);
    if (!inputs[i].ok() || !inputs[i].same_shape(inputs[0])) return py::object();
    signature[i] = inputs[i].format();
  }
  // The output: given (writable, same shape, not partly over an input), or a new NumPy array.
  py::object result;
  if (!out || out == Py_None) {
    PyObject* first = PyTuple_GET_ITEM(args, 0);
    if (!PyObject_TypeCheck(first, reinterpret_cast<PyTypeObject*>(ndarray_.ptr()))) return py::object();
    result = new_output(first, signature, size_t(arity_));  // null until the general path has seen them
    if (!result) return py::object();
  } else {
    result = py::reinterpret_borrow<py::object>(out);
  }
  View o;
  o.open(result.ptr(), true);
  if (!o.ok() || !o.same_shape(inputs[0])) return py::object();
  const bool inplace = arity_ == 1 && o.data() == inputs[0].data() && o.format() == signature[0];
  for (int i = 0; i < arity_; ++i)
    if (inputs[i].data() != o.data() && overlap(inputs[i], o)) return py::object();
  signature[arity_] = o.format();
  signature[arity_ + 1] = inplace ? 'i' : 'm';
  const Launch* found = find(signature, size_t(arity_) + 2);
  if (!found) return py::object();
  const uint64_t n = o.count();
  if (n) launch(*found, inputs, o, n, inplace, params);
  return result;
}

void FastMap::launch(const Launch& found, const View* inputs, const View& out, uint64_t n, bool inplace,
                     const char* params) {
  // The kernel's arguments: the input addresses (none in place), the output's, n, params.
  uintptr_t addresses[kMaxArity + 1];
  void* args[kMaxArity + 3];
  size_t sizes[kMaxArity + 3];
  size_t count = 0;
  auto pass = [&](void* p, size_t size) {
    args[count] = p;
    sizes[count++] = size;
  };
  if (!inplace)
    for (int i = 0; i < arity_; ++i) addresses[i] = reinterpret_cast<uintptr_t>(inputs[i].data());
  const int outputs_at = inplace ? 0 : arity_;
  addresses[outputs_at] = reinterpret_cast<uintptr_t>(out.data());
  for (int i = 0; i <= outputs_at; ++i) pass(&addresses[i], sizeof(uintptr_t));
  pass(&n, sizeof n);
  if (has_params_) pass(const_cast<char*>(params), params_size_);
  const Dim3 grid{uint32_t(std::min<uint64_t>((n + block_size_ - 1) / block_size_, 0x7fffffff)), 1, 1};
  const Dim3 block{block_size_, 1, 1};
  if (n <= kKeepGilElements) {  // releasing the GIL costs more than a small kernel
    found.kernel->launch(grid, block, 0, args, sizes, count, nullptr, /*wait=*/true);
    return;
  }
  // A big one lets other threads run; remember() may replace the entry meanwhile.
  std::shared_ptr<Kernel> kernel = found.kernel;
  py::gil_scoped_release release;
  kernel->launch(grid, block, 0, args, sizes, count, nullptr, /*wait=*/true);
}

}  // namespace gompute
