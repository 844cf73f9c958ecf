// The g.map fast path: a cached call, done in C++.
//
// gompute/kernel.py takes every call the general way first; once a (dtypes, entry, device)
// triple has launched it is remembered here, and later calls of that shape cost reading
// the arrays (a Buffer in place, the buffer protocol on the host, the CUDA Array Interface
// on a GPU), the params packing and the launch: inline on the host, queued on the arrays'
// stream on a GPU, with no Python in between. Anything this cache does not handle exactly
// (other shapes, strides, stream=, arrays on different devices or streams, a value that
// does not fit) is not taken, and the general path runs and reports any error properly.
#include "dispatch.h"

#include "dlpack.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace py = pybind11;

namespace gompute {

constexpr uint64_t kKeepGilElements = 16384;

// An array the fast path can launch on, released on scope exit: a gompute Buffer (any
// backend), a host array through the buffer protocol (or PyTorch's NumPy view, or a
// versioned DLPack capsule), or a CUDA array through its __cuda_array_interface__
// (version 3, with the stream its data is ordered on). Not ok() when it is none of
// those, or (writable) read-only, or its strides are not whole elements.
class View {
 public:
  static constexpr int kMaxDims = 16;  // more: the general path

  View() = default;
  // Reads `obj`; ok() says whether it is a view this path takes.
  void open(PyObject* obj, bool writable) {
    if (Py_TYPE(obj) == buffer_type()) return from_buffer(obj, writable);
    if (PyObject_CheckBuffer(obj)) {
      read_buffer_protocol(obj, writable);
      return;
    }
    if (std::strcmp(Py_TYPE(obj)->tp_name, "Tensor") == 0) {
      from_tensor(obj, writable);
      return;
    }
    if (from_cuda_array_interface(obj, writable)) return;
    if (PyObject_HasAttrString(obj, "__dlpack__")) from_dlpack(obj, writable);
  }
  ~View() {
    if (has_view_) PyBuffer_Release(&view_);
    if (managed_) managed_->deleter(managed_);
  }
  View(const View&) = delete;
  View& operator=(const View&) = delete;

  bool ok() const { return ok_; }
  const void* data() const { return reinterpret_cast<const void*>(data_); }
  uint64_t address() const { return data_; }
  char format() const { return format_; }
  size_t itemsize() const { return size_t(itemsize_); }
  bool same_shape(const View& o) const {
    return ndim_ == o.ndim_ && std::equal(shape_, shape_ + ndim_, o.shape_);
  }
  int ndim() const { return ndim_; }
  const int64_t* shape() const { return shape_; }
  int64_t extent(int d) const { return shape_[d]; }
  int64_t stride(int d) const { return strides_[d]; }  // in bytes
  bool contiguous() const { return contiguous_; }    // C order, extent-1 dimensions aside
  // The bytes the elements touch, [lo, hi); both 0 when empty.
  std::pair<uint64_t, uint64_t> byte_range() const {
    if (count() == 0) return {0, 0};
    int64_t lo = 0, hi = 0;
    for (int d = 0; d < ndim_; ++d) (strides_[d] < 0 ? lo : hi) += (shape_[d] - 1) * strides_[d];
    return {data_ + lo, data_ + hi + itemsize_};
  }
  bool same_view(const View& o) const {
    return data_ == o.data_ && itemsize_ == o.itemsize_ && same_shape(o) &&
           std::equal(strides_, strides_ + ndim_, o.strides_);
  }
  size_t count() const {
    size_t n = 1;
    for (int i = 0; i < ndim_; ++i) n *= size_t(shape_[i]);
    return n;
  }
  size_t nbytes() const { return count() * itemsize(); }
  // Where the memory is: the backend and device, the context when the array is a gompute
  // Buffer, and the stream its data is ordered on (a host array has none).
  BackendKind kind() const { return kind_; }
  int ordinal() const { return ordinal_; }
  const Context* context() const { return ctx_; }
  bool has_stream() const { return has_stream_; }
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
  void read_buffer_protocol(PyObject* obj, bool writable);
  void from_buffer(PyObject* obj, bool writable);
  void from_tensor(PyObject* tensor, bool writable);
  bool from_cuda_array_interface(PyObject* obj, bool writable);
  void from_dlpack(PyObject* obj, bool writable);

  Py_buffer view_{};
  bool has_view_ = false;
  py::object holder_;  // a NumPy view of a PyTorch tensor, kept while we read it
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
  template <typename Int, typename Stride>  // Py_ssize_t (buffer protocol) or int64_t
  bool set_layout(const Int* shape, const Stride* strides, int64_t unit, int ndim) {
    if (ndim > kMaxDims || itemsize_ <= 0) return false;
    ndim_ = ndim;
    int64_t expected = itemsize_;
    contiguous_ = true;
    for (int i = ndim; i-- > 0;) {
      shape_[i] = int64_t(shape[i]);
      strides_[i] = strides ? int64_t(strides[i]) * unit : expected;
      if (strides_[i] % itemsize_) return false;
      if (shape_[i] != 1 && strides_[i] != expected) contiguous_ = false;
      expected *= shape_[i];
    }
    return true;
  }
  void set_data(const void* p) { data_ = reinterpret_cast<uintptr_t>(p); }
};

void View::read_buffer_protocol(PyObject* obj, bool writable) {
  int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj, &view_, flags) != 0) {
    PyErr_Clear();
    return;
  }
  has_view_ = true;
  format_ = format_char(view_);
  set_data(view_.buf);
  itemsize_ = view_.itemsize;
  ok_ = format_ != 0 && set_layout(view_.shape, view_.strides, 1, view_.ndim);
}

// A gompute Buffer, read in place: typed and not freed.
void View::from_buffer(PyObject* obj, bool writable) {
  const Buffer& b = py::handle(obj).cast<const Buffer&>();
  const Layout* layout = b.typed_layout();
  if (b.freed() || !layout || (writable && b.readonly())) return;
  format_ = dlpack_format(DLDataType{layout->code, layout->bits, 1});
  data_ = b.data_addr();
  itemsize_ = Py_ssize_t(layout->itemsize());
  kind_ = b.context()->kind();
  ordinal_ = b.context()->ordinal();
  ctx_ = b.context().get();
  has_stream_ = true;
  stream_ = b.stream() ? b.stream()->handle() : nullptr;
  ok_ = format_ != 0 && layout->strides.size() == layout->shape.size() &&
        set_layout(layout->shape.data(), layout->strides.data(), 1, int(layout->shape.size()));
}

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

// The format character of a CAI / array-interface typestr ("<f4", "|b1"), native byte
// order only; 0 for anything else.
char View::typestr_format(const char* t) {
  if (!t || !(t[0] == '<' || t[0] == '|' || t[0] == '=') || !t[1]) return 0;
  const char kind = t[1];
  const int size = std::atoi(t + 2);
  switch (kind) {
    case 'b': return size == 1 ? '?' : 0;
    case 'i': return size == 1 ? 'b' : size == 2 ? 'h' : size == 4 ? 'i' : size == 8 ? 'q' : 0;
    case 'u': return size == 1 ? 'B' : size == 2 ? 'H' : size == 4 ? 'I' : size == 8 ? 'Q' : 0;
    case 'f': return size == 2 ? 'e' : size == 4 ? 'f' : size == 8 ? 'd' : 0;
  }
  return 0;
}

// A PyTorch CPU tensor through its NumPy view (`tensor.numpy()` shares the memory and is
// about three times cheaper than `__dlpack__`). A CUDA tensor is not taken: its
// __cuda_array_interface__ names no stream, and asking torch for its current one is a
// Python call the general path makes anyway.
void View::from_tensor(PyObject* tensor, bool writable) {
  static PyObject* const is_cuda = PyUnicode_InternFromString("is_cuda");  // kept for the process
  PyObject* cuda = PyObject_GetAttr(tensor, is_cuda);
  const bool on_cuda = cuda == nullptr || cuda == Py_True;
  Py_XDECREF(cuda);
  PyErr_Clear();
  if (on_cuda) return;
  PyObject* array = PyObject_CallMethod(tensor, "numpy", nullptr);
  if (!array) {  // requires grad, or another device: the general path says what to do
    PyErr_Clear();
    return;
  }
  holder_ = py::reinterpret_steal<py::object>(array);
  read_buffer_protocol(array, writable);
}

// A CUDA array through __cuda_array_interface__. False when `obj` has none (the caller
// then tries DLPack); true otherwise, ok() only for an unmasked version-3 array that
// names its stream. A stream of None leaves the choice of stream to the general
// path, which asks the array's framework.
bool View::from_cuda_array_interface(PyObject* obj, bool writable) {
  static PyObject* const name = PyUnicode_InternFromString("__cuda_array_interface__");  // kept for the process
  static PyObject* const keys[] = {PyUnicode_InternFromString("version"), PyUnicode_InternFromString("stream"),
                                   PyUnicode_InternFromString("mask"),    PyUnicode_InternFromString("shape"),
                                   PyUnicode_InternFromString("typestr"), PyUnicode_InternFromString("data"),
                                   PyUnicode_InternFromString("strides")};
  py::object cai = py::reinterpret_steal<py::object>(PyObject_GetAttr(obj, name));
  if (!cai) {
    PyErr_Clear();
    return false;
  }
  if (!PyDict_Check(cai.ptr())) return true;
  PyObject* item[7];  // borrowed, or null when absent
  for (int i = 0; i < 7; ++i) item[i] = PyDict_GetItem(cai.ptr(), keys[i]);
  auto [version, stream, mask, shape, typestr, data, strides] =
      std::tuple{item[0], item[1], item[2], item[3], item[4], item[5], item[6]};
  if (!version || !PyLong_Check(version) || PyLong_AsLong(version) < 3 || !stream || !PyLong_Check(stream) ||
      (mask && mask != Py_None) || !shape || !PyTuple_Check(shape) || !typestr || !PyUnicode_Check(typestr) ||
      !data || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2)
    return true;
  const uint64_t stream_value = PyLong_AsUnsignedLongLong(stream);
  const uint64_t address = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(data, 0));
  const int readonly = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
  format_ = typestr_format(PyUnicode_AsUTF8(typestr));
  const Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
  if (PyErr_Occurred() || stream_value == 0 || readonly < 0 || (writable && readonly) || !format_ || ndim > kMaxDims) {
    PyErr_Clear();  // stream 0 is against the protocol: the general path says so
    return true;
  }
  itemsize_ = format_ == '?' || format_ == 'b' || format_ == 'B' ? 1
              : format_ == 'e' || format_ == 'h' || format_ == 'H' ? 2
              : format_ == 'd' || format_ == 'q' || format_ == 'Q' ? 8
                                                                   : 4;
  int64_t extents[kMaxDims], steps[kMaxDims];
  for (Py_ssize_t i = 0; i < ndim; ++i) extents[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
  const bool strided = strides && strides != Py_None;
  if (strided) {
    if (!PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != ndim) return true;
    for (Py_ssize_t i = 0; i < ndim; ++i) steps[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(strides, i));
  }
  // The device: the framework's `device.id` (CuPy) or `device.index` (torch), else 0, as
  // the general path reads it.
  int ordinal = 0;
  if (PyObject* device = PyObject_GetAttrString(obj, "device")) {
    PyObject* id = PyObject_GetAttrString(device, "id");
    if (!id) {
      PyErr_Clear();
      id = PyObject_GetAttrString(device, "index");
    }
    if (id && PyLong_Check(id)) ordinal = int(PyLong_AsLong(id));
    Py_XDECREF(id);
    Py_DECREF(device);
  }
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return true;
  }
  data_ = address;
  kind_ = BackendKind::cuda;
  ordinal_ = ordinal;
  has_stream_ = true;
  stream_ = reinterpret_cast<StreamHandle>(uintptr_t(stream_value));
  ok_ = set_layout(extents, strided ? steps : nullptr, 1, int(ndim));
  return true;
}

// A versioned DLPack capsule of a CPU array; anything else leaves the view
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
  format_ = dlpack_format(t.dtype);
  if (t.device.device_type == kDLCPU && format_ && !(writable && (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY))) {
    PyCapsule_SetName(capsule, "used_dltensor_versioned");  // ours now: the destructor calls its deleter
    managed_ = m;
    set_data(static_cast<char*>(t.data) + t.byte_offset);
    itemsize_ = t.dtype.bits / 8;
    ok_ = set_layout(t.shape, t.strides, itemsize_, t.ndim);  // DLPack strides count elements
  }
  Py_DECREF(capsule);
}

void set_fast_path_buffer_type(PyTypeObject* type) { View::buffer_type() = type; }

namespace {

bool overlap(const View& a, const View& b) {
  return a.address() < b.address() + b.nbytes() && b.address() < a.address() + a.nbytes();
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
}

void FastMap::remember(const std::string& inputs, char out, const std::string& kind, const Kernel& kernel) {
  const Context* ctx = kernel.context();
  if (!ctx) return;
  if (kind != "inplace" && kind != "map" && kind != "strided")
    throw py::value_error("remember: kind is 'inplace', 'map' or 'strided', not '" + kind + "'");
  Launch entry{inputs + out + kind[0], ctx->kind(), ctx->ordinal(), std::make_shared<Kernel>(kernel)};
  auto same = [&](const Launch& l) {
    return l.signature == entry.signature && l.kind == entry.kind && l.ordinal == entry.ordinal;
  };
  if (auto it = std::find_if(launches_.begin(), launches_.end(), same); it != launches_.end())
    *it = std::move(entry);  // a call in flight holds its own reference to the old kernel
  else
    launches_.push_back(std::move(entry));
}

void FastMap::remember_output(const std::string& inputs, py::object type, py::object make, py::tuple args,
                              py::object kwargs) {
  if (!kwargs.is_none() && !PyDict_Check(kwargs.ptr())) throw py::type_error("remember_output: kwargs is a dict or None");
  Maker maker{inputs, std::move(type), std::move(make), std::move(args), std::move(kwargs)};
  auto same = [&](const Maker& m) { return m.inputs == maker.inputs && m.type.is(maker.type); };
  if (auto it = std::find_if(makers_.begin(), makers_.end(), same); it != makers_.end())
    *it = std::move(maker);
  else
    makers_.push_back(std::move(maker));
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

const FastMap::Launch* FastMap::find(const char* signature, size_t size, const View& where) const {
  for (const Launch& l : launches_)
    if (l.kind == where.kind() && l.ordinal == where.ordinal() && l.signature.size() == size &&
        std::memcmp(l.signature.data(), signature, size) == 0)
      return &l;
  return nullptr;
}

// A new array of `shape` made as the general path made one for these inputs, with a first
// array of `first`'s type; null when it has not made one yet.
py::object FastMap::new_output(PyObject* first, const int64_t* shape, int ndim, const char* signature,
                               size_t size) const {
  for (const Maker& m : makers_) {
    if (m.type.ptr() != reinterpret_cast<PyObject*>(Py_TYPE(first)) || m.inputs.size() != size ||
        std::memcmp(m.inputs.data(), signature, size) != 0)
      continue;
    py::tuple extents(ndim);
    for (int d = 0; d < ndim; ++d) extents[d] = py::int_(shape[d]);
    const Py_ssize_t extra = PyTuple_GET_SIZE(m.args.ptr());
    py::tuple call_args(1 + extra);
    call_args[0] = std::move(extents);
    for (Py_ssize_t i = 0; i < extra; ++i) call_args[i + 1] = m.args[i];
    // Our own references: the call runs Python, which may remember_output() over this entry.
    const py::object make = m.make, kwargs = m.kwargs;
    PyObject* made = PyObject_Call(make.ptr(), call_args.ptr(), kwargs.is_none() ? nullptr : kwargs.ptr());
    if (!made) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(made);
  }
  return py::object();
}

namespace {

// The shape `count` views broadcast to, by NumPy's rules; false when they do not.
bool broadcast(const View* views, int count, int& ndim, int64_t* shape) {
  ndim = 0;
  for (int i = 0; i < count; ++i) ndim = std::max(ndim, views[i].ndim());
  std::fill(shape, shape + ndim, int64_t(1));
  for (int i = 0; i < count; ++i) {
    const View& v = views[i];
    for (int d = 0, k = ndim - v.ndim(); d < v.ndim(); ++d, ++k) {
      const int64_t e = v.extent(d);
      if (e == 1) continue;
      if (shape[k] != 1 && shape[k] != e) return false;
      shape[k] = e;
    }
  }
  return true;
}

}  // namespace

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

  int out_index = -1;  // the input that is the output too (in place): read once, writable
  for (int i = 0; i < arity_ && out; ++i)
    if (PyTuple_GET_ITEM(args, i) == out) {
      out_index = i;
      break;
    }
  View inputs[kMaxArity];
  char signature[kMaxArity + 2];
  for (int i = 0; i < arity_; ++i) {
    inputs[i].open(PyTuple_GET_ITEM(args, i), i == out_index);
    if (!inputs[i].ok()) return py::object();
    signature[i] = inputs[i].format();
  }
  int ndim;
  int64_t shape[View::kMaxDims];
  if (!broadcast(inputs, arity_, ndim, shape)) return py::object();  // the general path says why
  // The output: given (writable, of the broadcast shape, not partly over an input), or new
  // and of the first array's library. A new one that lands elsewhere (CuPy's current device
  // is not the arrays') fails the checks below like any other output.
  py::object result;
  if (!out || out == Py_None) {
    result = new_output(PyTuple_GET_ITEM(args, 0), shape, ndim, signature, size_t(arity_));
    if (!result) return py::object();  // the general path has not made one for these yet
  } else {
    result = py::reinterpret_borrow<py::object>(out);
  }
  View own;
  if (out_index < 0) own.open(result.ptr(), true);
  const View& o = out_index < 0 ? own : inputs[out_index];
  if (!o.ok() || o.ndim() != ndim || !std::equal(shape, shape + ndim, o.shape())) return py::object();
  // The entry point, as kernel.py's _entry_kind chooses it.
  bool contiguous = o.contiguous();
  for (int i = 0; i < arity_; ++i) contiguous = contiguous && inputs[i].contiguous() && inputs[i].same_shape(o);
  const char kind = !contiguous ? 's' : arity_ == 1 && inputs[0].same_view(o) && o.format() == signature[0] ? 'i' : 'm';
  const auto [out_lo, out_hi] = o.byte_range();
  for (int i = 0; i < arity_; ++i) {  // an output over an input must be that very view
    const auto [lo, hi] = inputs[i].byte_range();
    if (lo < out_hi && out_lo < hi && !inputs[i].same_view(o)) return py::object();
  }
  if (!same_place(inputs, o)) return py::object();
  signature[arity_] = o.format();
  signature[arity_ + 1] = kind;
  const Launch* found = find(signature, size_t(arity_) + 2, o);
  if (!found || !found->kernel->context()->alive()) return py::object();  // shut down since: the general
                                                                           // path binds it again
  for (int i = 0; i < arity_; ++i)  // a Buffer of an earlier runtime (shut down since): the general path
    if (inputs[i].context() && inputs[i].context() != found->kernel->context()) return py::object();
  if (o.context() && o.context() != found->kernel->context()) return py::object();
  const uint64_t n = o.count();
  if (n == 0) return result;
  std::string strides;
  if (kind == 's' && !pack_strides(inputs, o, shape, ndim, strides)) return py::object();
  launch(*found, inputs, o, n, kind == 'i', params, strides);
  return result;
}

// The `strides` argument of a strided entry, as gompute/lang/module.py's pack_strides lays
// it out, for the dimensions kernel.py's _collapsed leaves: broadcast dimensions stride 0,
// extent-1 ones dropped, neighbours merged where every array allows. False past the
// entry's dimension limit (the general path says so).
bool FastMap::pack_strides(const View* inputs, const View& out, const int64_t* shape, int ndim,
                           std::string& packed) const {
  constexpr int kMaxNdim = 8;  // GOMPUTE_MAX_NDIM
  const int arrays = arity_ + 1;
  auto element_stride = [&](int a, int d) -> int64_t {  // array a's stride along dimension d of `shape`
    const View& v = a < arity_ ? inputs[a] : out;
    const int k = d - (ndim - v.ndim());
    return k < 0 || v.extent(k) == 1 ? 0 : v.stride(k) / int64_t(v.itemsize());
  };
  int merged = 0;
  int64_t extents[kMaxNdim];
  int64_t steps[kMaxArity + 1][kMaxNdim];
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] == 1) continue;
    bool joins = merged > 0;
    for (int a = 0; a < arrays && joins; ++a) joins = steps[a][merged - 1] == element_stride(a, d) * shape[d];
    if (joins) {
      extents[merged - 1] *= shape[d];
      for (int a = 0; a < arrays; ++a) steps[a][merged - 1] = element_stride(a, d);
      continue;
    }
    if (merged == kMaxNdim) return false;
    extents[merged] = shape[d];
    for (int a = 0; a < arrays; ++a) steps[a][merged] = element_stride(a, d);
    ++merged;
  }
  packed.assign(8 + 8 * kMaxNdim * (1 + arrays), '\0');
  char* at = packed.data();
  const int32_t header[2] = {merged, 0};
  std::memcpy(at, header, sizeof header);
  at += sizeof header;
  for (int d = 0; d < kMaxNdim; ++d, at += 8) {
    const int64_t e = d < merged ? extents[d] : 1;
    std::memcpy(at, &e, 8);
  }
  for (int a = 0; a < arrays; ++a)
    for (int d = 0; d < kMaxNdim; ++d, at += 8) {
      const int64_t step = d < merged ? steps[a][d] : 0;
      std::memcpy(at, &step, 8);
    }
  return true;
}

// Whether the inputs and the output are on one device, and so on one stream the launch can
// go on without ordering one stream after another: none on the host (a host Buffer's
// stream, if any, is the general path's to wait for), the same one on a GPU.
bool FastMap::same_place(const View* inputs, const View& out) const {
  for (int i = 0; i < arity_; ++i) {
    const View& v = inputs[i];
    if (v.kind() != out.kind() || v.ordinal() != out.ordinal() || v.stream() != out.stream()) return false;
  }
  if (out.kind() == BackendKind::host) return out.stream() == nullptr;
  for (int i = 0; i < arity_; ++i)
    if (!inputs[i].has_stream()) return false;
  return out.has_stream();
}

void FastMap::launch(const Launch& found, const View* inputs, const View& out, uint64_t n, bool inplace,
                     const char* params, std::string& strides) {
  // The kernel's arguments: the input addresses (none in place), the output's, n, the
  // strides (strided entries), params.
  uint64_t addresses[kMaxArity + 1];
  void* args[kMaxArity + 4];
  size_t sizes[kMaxArity + 4];
  size_t count = 0;
  auto pass = [&](void* p, size_t size) {
    args[count] = p;
    sizes[count++] = size;
  };
  if (!inplace)
    for (int i = 0; i < arity_; ++i) addresses[i] = inputs[i].address();
  const int outputs_at = inplace ? 0 : arity_;
  addresses[outputs_at] = out.address();
  for (int i = 0; i <= outputs_at; ++i) pass(&addresses[i], sizeof(uint64_t));
  pass(&n, sizeof n);
  if (!strides.empty()) pass(strides.data(), strides.size());
  if (has_params_) pass(const_cast<char*>(params), params_size_);
  const Dim3 grid{uint32_t(std::min<uint64_t>((n + block_size_ - 1) / block_size_, 0x7fffffff)), 1, 1};
  const Dim3 block{block_size_, 1, 1};
  // A GPU launch is queued on the arrays' stream and returns; the host runs it now.
  const bool host = out.kind() == BackendKind::host;
  if (!host || n <= kKeepGilElements) {  // releasing the GIL costs more than a small kernel
    found.kernel->launch(grid, block, 0, args, sizes, count, out.stream(), /*wait=*/host);
    return;
  }
  // A big one lets other threads run; remember() may replace the entry meanwhile.
  std::shared_ptr<Kernel> kernel = found.kernel;
  py::gil_scoped_release release;
  kernel->launch(grid, block, 0, args, sizes, count, nullptr, /*wait=*/true);
}

}  // namespace gompute
