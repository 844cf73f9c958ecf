// Reading arrays for the g.map fast path: a gompute Buffer in place, the buffer protocol,
// PyTorch tensors through DLPack's exchange table, __cuda_array_interface__ v3, and versioned
// DLPack (see array_view.h).
#include "array_view.h"

#include "dlpack_exchange.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <tuple>

namespace py = pybind11;

namespace gompute {

namespace {

// The type `module.name` once `module` has been imported (null before: nothing is imported
// here), found once and kept for the process.
PyTypeObject* imported_type(PyObject* module, const char* name, PyTypeObject*& found) {
  if (found) return found;
  PyObject* m = PyImport_GetModule(module);
  PyObject* type = m ? PyObject_GetAttrString(m, name) : nullptr;
  Py_XDECREF(m);
  if (type && PyType_Check(type))
    found = reinterpret_cast<PyTypeObject*>(type);  // the reference is kept
  else
    Py_XDECREF(type);
  PyErr_Clear();
  return found;
}

bool is_instance(PyObject* obj, PyObject* module, const char* name, PyTypeObject*& found) {
  PyTypeObject* type = imported_type(module, name, found);
  return type && PyObject_TypeCheck(obj, type);
}

}  // namespace

// An array whose memory is at NULL with elements to read is declined whatever its protocol:
// nothing is there, and the general path says which array and why.
void ArrayView::open(PyObject* obj, bool writable) {
  read(obj, writable);
  if (ok_ && data_ == 0 && count() != 0) ok_ = false;
}

// The protocols in order of cost: a Buffer's own fields, the buffer protocol, a torch
// tensor's exchange table, CAI, DLPack. A NumPy masked array (its mask would be ignored) is
// left to the general path, which refuses it, and so is a torch tensor torch would not export.
void ArrayView::read(PyObject* obj, bool writable) {
  static PyObject* const numpy_ma = PyUnicode_InternFromString("numpy.ma");  // kept for the process
  static PyObject* const torch = PyUnicode_InternFromString("torch");
  static PyTypeObject *masked = nullptr, *tensor = nullptr;
  if (Py_TYPE(obj) == buffer_type()) return from_buffer(obj, writable);
  if (PyObject_CheckBuffer(obj)) {  // a masked array has the buffer protocol too; an exact ndarray is none
    if (std::strcmp(Py_TYPE(obj)->tp_name, "numpy.ndarray") == 0 || !is_instance(obj, numpy_ma, "MaskedArray", masked))
      read_buffer_protocol(obj, writable);
    return;
  }
  if (is_instance(obj, torch, "Tensor", tensor)) return from_tensor(obj, writable);
  if (from_cuda_array_interface(obj, writable)) return;
  if (PyObject_HasAttrString(obj, "__dlpack__")) from_dlpack(obj, writable);
}

void ArrayView::read_buffer_protocol(PyObject* obj, bool writable) {
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
void ArrayView::from_buffer(PyObject* obj, bool writable) {
  const Buffer& b = py::handle(obj).cast<const Buffer&>();
  const Layout* layout = b.typed_layout();
  if (b.freed() || !layout || (writable && b.readonly())) return;
  format_ = dlpack_format(DLDataType{layout->code, layout->bits, 1});
  allocation_ = b.allocation();
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

// The struct-module format of a native scalar as one character ('l' folded into 'q'; complex
// 'Zf' and 'Zd' as NumPy's type characters 'F' and 'D').
char ArrayView::format_char(const Py_buffer& v) {
  const char* f = v.format ? v.format : "B";
  if (*f == '=' || *f == '@') ++f;
  if (f[0] == 'Z' && (f[1] == 'f' || f[1] == 'd') && !f[2]) return f[1] == 'f' ? 'F' : 'D';
  if (!f[0] || f[1]) return 0;
  switch (f[0]) {
    case 'l': return v.itemsize == 8 ? 'q' : 'i';
    case 'L': return v.itemsize == 8 ? 'Q' : 'I';
    case '?': case 'b': case 'B': case 'h': case 'H': case 'i': case 'I':
    case 'q': case 'Q': case 'e': case 'f': case 'd': return f[0];
  }
  return 0;
}

char ArrayView::dlpack_format(const DLDataType& t) {
  if (t.lanes != 1) return 0;
  const int b = t.bits;
  switch (t.code) {
    case kDLBool: return b == 8 ? '?' : 0;
    case kDLInt: return b == 8 ? 'b' : b == 16 ? 'h' : b == 32 ? 'i' : b == 64 ? 'q' : 0;
    case kDLUInt: return b == 8 ? 'B' : b == 16 ? 'H' : b == 32 ? 'I' : b == 64 ? 'Q' : 0;
    case kDLFloat: return b == 16 ? 'e' : b == 32 ? 'f' : b == 64 ? 'd' : 0;
    case kDLComplex: return b == 64 ? 'F' : b == 128 ? 'D' : 0;
  }
  return 0;
}

// The format character of a CAI / array-interface typestr ("<f4", "|b1"), native byte
// order only; 0 for anything else.
char ArrayView::typestr_format(const char* t) {
  if (!t || !(t[0] == '<' || t[0] == '|' || t[0] == '=') || !t[1]) return 0;
  const char kind = t[1];
  const int size = std::atoi(t + 2);
  switch (kind) {
    case 'b': return size == 1 ? '?' : 0;
    case 'i': return size == 1 ? 'b' : size == 2 ? 'h' : size == 4 ? 'i' : size == 8 ? 'q' : 0;
    case 'u': return size == 1 ? 'B' : size == 2 ? 'H' : size == 4 ? 'I' : size == 8 ? 'Q' : 0;
    case 'f': return size == 2 ? 'e' : size == 4 ? 'f' : size == 8 ? 'd' : 0;
    case 'c': return size == 8 ? 'F' : size == 16 ? 'D' : 0;
  }
  return 0;
}

// The bytes of an element of format `f` (a format this file gives).
Py_ssize_t ArrayView::format_size(char f) {
  switch (f) {
    case '?': case 'b': case 'B': return 1;
    case 'e': case 'h': case 'H': return 2;
    case 'i': case 'I': case 'f': return 4;
    case 'd': case 'q': case 'Q': case 'F': return 8;
    case 'D': return 16;
  }
  return 0;
}

const DLPackExchangeAPI* exchange_api(PyTypeObject* type) {
  static PyObject* const name = PyUnicode_InternFromString("__dlpack_c_exchange_api__");  // kept for the process
  PyObject* capsule = PyObject_GetAttr(reinterpret_cast<PyObject*>(type), name);
  const void* table = capsule && PyCapsule_CheckExact(capsule) ? PyCapsule_GetPointer(capsule, "dlpack_exchange_api") : nullptr;
  Py_XDECREF(capsule);  // the table outlives it: it lives as long as the process
  PyErr_Clear();
  const auto* api = static_cast<const DLPackExchangeAPI*>(table);
  if (!api || api->header.version.major != DLPACK_MAJOR_VERSION || !api->dltensor_from_py_object_no_sync ||
      !api->current_work_stream)
    return nullptr;
  return api;
}

namespace {

// `tensor.name()` is False (the call succeeds and says so).
bool says_no(PyObject* tensor, PyObject* name) {
  PyObject* answer = PyObject_CallMethodNoArgs(tensor, name);
  const bool no = answer == Py_False;
  Py_XDECREF(answer);
  return no;
}

// Whether torch would export `tensor` through __dlpack__ (whose refusal the general path
// reports): it does not require grad (a write would escape autograd), and its memory holds
// the values it shows (no lazy negation, no lazy conjugation of a complex tensor). The
// exchange table's view skips these checks, as a NumPy view does not.
bool exportable(PyObject* tensor, bool complex) {
  static PyObject* const requires_grad = PyUnicode_InternFromString("requires_grad");  // kept for the process
  static PyObject* const is_neg = PyUnicode_InternFromString("is_neg");
  static PyObject* const is_conj = PyUnicode_InternFromString("is_conj");
  PyObject* grad = PyObject_GetAttr(tensor, requires_grad);
  bool ok = grad == Py_False;
  Py_XDECREF(grad);
  ok = ok && says_no(tensor, is_neg) && (!complex || says_no(tensor, is_conj));
  PyErr_Clear();
  return ok;
}

// The stream a launch on `t` goes on: the table's current stream on t's device (null: the
// default stream); false, with the Python error cleared, when the table fails.
bool work_stream(const DLPackExchangeAPI* api, const DLTensor& t, void*& stream) {
  stream = nullptr;
  if (api->current_work_stream(t.device.device_type, t.device.device_id, &stream) == 0) return true;
  PyErr_Clear();
  return false;
}

}  // namespace

py::object current_work_stream(PyObject* obj) {
  const DLPackExchangeAPI* api = exchange_api(Py_TYPE(obj));
  DLTensor t;
  void* stream = nullptr;
  if (!api || api->dltensor_from_py_object_no_sync(obj, &t) != 0 || !work_stream(api, t, stream)) {
    PyErr_Clear();
    return py::none();
  }
  return py::int_(reinterpret_cast<uintptr_t>(stream));
}

// A PyTorch tensor, on the CPU or a GPU, through the DLPack exchange table its type carries:
// one C call fills a DLTensor in place and another gives torch's current stream on the
// tensor's device, the stream torch's own ops would use next; no Python runs in between.
// torch has no read-only tensors; an output that is an inference tensor (which torch lets no one
// write outside torch.inference_mode()) goes to the general path, which refuses it or not.
// A torch without the table: a CPU tensor through its NumPy view, a GPU one to the general path.
void ArrayView::from_tensor(PyObject* tensor, bool writable) {
  static PyObject* const is_inference = PyUnicode_InternFromString("is_inference");  // kept for the process
  if (writable && !says_no(tensor, is_inference)) {
    PyErr_Clear();
    return;
  }
  const DLPackExchangeAPI* api = exchange_api(Py_TYPE(tensor));
  if (!api) return from_tensor_numpy(tensor, writable);
  DLTensor t;
  if (api->dltensor_from_py_object_no_sync(tensor, &t) != 0) {  // e.g. a sparse or meta tensor
    PyErr_Clear();
    return;
  }
  if (!exportable(tensor, t.dtype.code == kDLComplex)) return;
  const DLDeviceType device = t.device.device_type;
  if (device == kDLCUDA || device == kDLROCM) {
    void* stream;
    if (!work_stream(api, t, stream)) return;
    kind_ = device == kDLCUDA ? BackendKind::cuda : BackendKind::hip;
    ordinal_ = t.device.device_id;
    has_stream_ = true;
    stream_ = stream;
  } else if (device != kDLCPU) {
    return;
  }
  torch_tensor_ = true;
  format_ = dlpack_format(t.dtype);
  itemsize_ = t.dtype.bits / 8;
  set_data(t.data ? static_cast<char*>(t.data) + t.byte_offset : nullptr);  // NULL stays NULL: declined
  ok_ = format_ != 0 && set_layout(t.shape, t.strides, itemsize_, t.ndim);  // DLPack strides count elements
}

// A CPU tensor through its NumPy view (`tensor.numpy()` shares the memory, and refuses what
// torch would not export).
void ArrayView::from_tensor_numpy(PyObject* tensor, bool writable) {
  static PyObject* const is_cuda = PyUnicode_InternFromString("is_cuda");  // kept for the process
  PyObject* cuda = PyObject_GetAttr(tensor, is_cuda);
  const bool on_cpu = cuda == Py_False;
  Py_XDECREF(cuda);
  PyErr_Clear();
  if (!on_cpu) return;
  PyObject* array = PyObject_CallMethod(tensor, "numpy", nullptr);
  if (!array) {  // requires grad, or another device: the general path says what to do
    PyErr_Clear();
    return;
  }
  holder_ = py::reinterpret_steal<py::object>(array);
  torch_tensor_ = true;
  read_buffer_protocol(array, writable);
}

// A CUDA array through __cuda_array_interface__. False when `obj` has none (the caller
// then tries DLPack); true otherwise, ok() only for an unmasked version-3 array (a later
// version may mean other things) that names its stream. A stream of None leaves the choice
// of stream to the general path, which asks the array's framework.
bool ArrayView::from_cuda_array_interface(PyObject* obj, bool writable) {
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
  if (!version || !PyLong_Check(version) || PyLong_AsLong(version) != 3 || !stream || !PyLong_Check(stream) ||
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
  itemsize_ = format_size(format_);
  int64_t extents[kMaxDims], steps[kMaxDims];
  for (Py_ssize_t i = 0; i < ndim; ++i) extents[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
  const bool strided = strides && strides != Py_None;
  if (strided) {
    if (!PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != ndim) return true;
    for (Py_ssize_t i = 0; i < ndim; ++i) steps[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(strides, i));
  }
  // The device: the framework's `device.id` (CuPy) or `device.index` (torch), else the
  // driver's word on the pointer, else 0, as the general path reads it.
  int ordinal = -1;
  if (PyObject* device = PyObject_GetAttrString(obj, "device")) {
    PyObject* id = PyObject_GetAttrString(device, "id");
    if (!id) {
      PyErr_Clear();
      id = PyObject_GetAttrString(device, "index");
    }
    if (id && PyLong_Check(id)) ordinal = int(PyLong_AsLong(id));
    Py_XDECREF(id);
    Py_DECREF(device);
  } else if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
    PyErr_Clear();  // no `device`: the driver tells
  }
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return true;
  }
  if (ordinal < 0) ordinal = std::max(pointer_device(BackendKind::cuda, address), 0);
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
void ArrayView::from_dlpack(PyObject* obj, bool writable) {
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
  if (m->version.major == DLPACK_MAJOR_VERSION && t.device.device_type == kDLCPU && format_ &&
      (t.shape || t.ndim == 0) && !(writable && (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY))) {
    PyCapsule_SetName(capsule, "used_dltensor_versioned");  // ours now: the destructor calls its deleter
    managed_ = m;
    set_data(t.data ? static_cast<char*>(t.data) + t.byte_offset : nullptr);  // NULL stays NULL: declined
    itemsize_ = t.dtype.bits / 8;
    ok_ = set_layout(t.shape, t.strides, itemsize_, t.ndim);  // DLPack strides count elements
  }
  Py_DECREF(capsule);
}

void set_fast_path_buffer_type(PyTypeObject* type) { ArrayView::buffer_type() = type; }

}  // namespace gompute
