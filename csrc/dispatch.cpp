// The g.map fast path: a cached call, done in C++.
//
// gompute/kernel.py takes every call the general way first; once a (dtypes, entry, device)
// triple has launched it is remembered here, and later calls of that shape cost reading
// the arrays (a Buffer in place, the buffer protocol on the host, a torch tensor through
// DLPack's exchange table, the CUDA Array Interface on a GPU), the params packing, the
// call's plan (planner.h, the rules the general path asks too) and the launch: inline on the
// host, queued on the arrays' stream on a GPU (a torch tensor's: torch's current stream), with
// no Python in between. Anything this cache does not handle exactly
// (other shapes, strides, stream=, arrays on different devices or streams, a value that
// does not fit) is not taken, and the general path runs and reports any error properly.
#include "dispatch.h"

#include <pybind11/stl.h>

#include "array_view.h"
#include "planner.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace py = pybind11;

namespace gompute {

namespace {

// A complex field: two floats or doubles, the real part first (cuComplex's layout), from a
// Python complex, float or int as complex() reads it; false for a part past f32's range (the
// general path says whether it rounds or overflows) and for other types.
bool pack_complex(const ParamField& f, PyObject* value, char* dst) {
  Py_complex z{0.0, 0.0};
  if (PyComplex_Check(value))
    z = PyComplex_AsCComplex(value);
  else if (PyFloat_Check(value) || PyLong_Check(value))
    z.real = PyFloat_AsDouble(value);
  else
    return false;
  if (PyErr_Occurred()) return false;
  if (f.bits == 128) {
    const double parts[2] = {z.real, z.imag};
    std::memcpy(dst, parts, sizeof parts);
    return true;
  }
  if (f.bits != 64) return false;
  for (double part : {z.real, z.imag})
    if (std::isfinite(part) && std::fabs(part) > std::numeric_limits<float>::max()) return false;
  const float parts[2] = {float(z.real), float(z.imag)};
  std::memcpy(dst, parts, sizeof parts);
  return true;
}

// Writes `value` as the field's type at `dst`; false if it is not exactly representable.
bool pack_field(const ParamField& f, PyObject* value, char* dst) {
  if (f.kind == 'c') return pack_complex(f, value, dst);
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
    const long long lo = f.bits == 64 ? std::numeric_limits<long long>::min() : -(1LL << (f.bits - 1));
    const long long hi = f.bits == 64 ? std::numeric_limits<long long>::max() : (1LL << (f.bits - 1)) - 1;
    if (v < lo || v > hi) return false;
  } else if (v < 0 || (f.bits < 64 && v > (1LL << f.bits) - 1)) {
    return false;
  }
  std::memcpy(dst, &v, bytes);  // little-endian: the low bytes
  return true;
}

}  // namespace

ParamsPacker::ParamsPacker(std::vector<ParamField> fields, size_t size, bool has_params)
    : fields_(std::move(fields)), size_(size), has_params_(has_params) {
  for (ParamField& f : fields_) f.key = py::reinterpret_steal<py::object>(PyUnicode_InternFromString(f.name.c_str()));
}

bool ParamsPacker::pack(PyObject* kwargs, Py_ssize_t other_keys, char* out) const {
  const Py_ssize_t given = (kwargs ? PyDict_GET_SIZE(kwargs) : 0) - other_keys;
  if (!has_params_) return given == 0;
  if (given != Py_ssize_t(fields_.size())) return false;
  std::memset(out, 0, size_);
  for (const ParamField& f : fields_) {
    PyObject* value = PyDict_GetItem(kwargs, f.key.ptr());  // borrowed
    if (!value || !pack_field(f, value, out + f.offset)) {
      PyErr_Clear();
      return false;
    }
  }
  return true;
}

void OutputMakers::remember(const std::string& inputs, py::object type, py::object make, py::tuple args,
                            py::object kwargs) {
  if (!kwargs.is_none() && !PyDict_Check(kwargs.ptr())) throw py::type_error("remember_output: kwargs is a dict or None");
  std::optional<TableEmpty> table;
  if (py::isinstance<TableEmpty>(make) && PyTuple_GET_SIZE(args.ptr()) == 0 && kwargs.is_none())
    table = make.cast<const TableEmpty&>();
  Maker maker{inputs, std::move(type), std::move(make), std::move(args), std::move(kwargs), table};
  auto same = [&](const Maker& m) { return m.inputs == maker.inputs && m.type.is(maker.type); };
  if (auto it = std::find_if(makers_.begin(), makers_.end(), same); it != makers_.end())
    *it = std::move(maker);
  else
    makers_.push_back(std::move(maker));
}

std::optional<TableEmpty> TableEmpty::like(PyObject* like, uint8_t code, uint8_t bits) {
  const DLPackExchangeAPI* table = exchange_api(Py_TYPE(like));
  if (!table || !table->managed_tensor_allocator || !table->managed_tensor_to_py_object_no_sync) return std::nullopt;
  DLTensor t;
  if (table->dltensor_from_py_object_no_sync(like, &t) != 0) {
    PyErr_Clear();
    return std::nullopt;
  }
  TableEmpty e;
  e.table_ = table;
  e.dtype_ = DLDataType{code, bits, 1};
  e.device_ = t.device;
  return e;
}

py::object TableEmpty::make(const int64_t* shape, int ndim, std::string* why) const {
  DLTensor prototype{};  // the allocator reads its dtype, ndim, shape and device
  prototype.device = device_;
  prototype.dtype = dtype_;
  prototype.ndim = ndim;
  prototype.shape = const_cast<int64_t*>(shape);
  DLManagedTensorVersioned* tensor = nullptr;
  auto keep = [](void* ctx, const char* kind, const char* message) {  // its first line: torch's goes on with a trace
    const std::string text = message ? message : "";
    if (ctx) *static_cast<std::string*>(ctx) = std::string(kind ? kind : "") + ": " + text.substr(0, text.find('\n'));
  };
  if (table_->managed_tensor_allocator(&prototype, &tensor, why, keep) != 0 || !tensor) {
    PyErr_Clear();
    return py::object();
  }
  void* made = nullptr;
  if (table_->managed_tensor_to_py_object_no_sync(tensor, &made) != 0 || !made) {
    // The table was given the tensor: deleting it here could free it twice, so a failure leaks it.
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "the DLPack exchange table made no array of its tensor");
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(static_cast<PyObject*>(made));
}

py::object OutputMakers::make(PyObject* first, const int64_t* shape, int ndim, const char* signature,
                              size_t size) const {
  for (const Maker& m : makers_) {
    if (m.type.ptr() != reinterpret_cast<PyObject*>(Py_TYPE(first)) || m.inputs.size() != size ||
        std::memcmp(m.inputs.data(), signature, size) != 0)
      continue;
    if (m.table) return m.table->make(shape, ndim);  // failed: the general path says why
    py::tuple extents(ndim);
    for (int d = 0; d < ndim; ++d) extents[d] = py::int_(shape[d]);
    const Py_ssize_t extra = PyTuple_GET_SIZE(m.args.ptr());
    py::tuple call_args(1 + extra);
    call_args[0] = std::move(extents);
    for (Py_ssize_t i = 0; i < extra; ++i) call_args[i + 1] = m.args[i];
    // Our own references: the call runs Python, which may remember() over this entry.
    const py::object make = m.make, kwargs = m.kwargs;
    PyObject* made = PyObject_Call(make.ptr(), call_args.ptr(), kwargs.is_none() ? nullptr : kwargs.ptr());
    if (!made && PyErr_ExceptionMatches(PyExc_Exception)) {  // e.g. a Compute shut down since: the
      PyErr_Clear();                                          // general path makes one, or says why not
      return py::object();
    }
    if (!made) throw py::error_already_set();
    py::object result = py::reinterpret_steal<py::object>(made);
    // A Buffer made for a Buffer goes on its stream, where the general path leaves its result
    // (kernel.py sets out.stream after the launch): same_place then takes the call.
    if (Py_TYPE(first) == ArrayView::buffer_type() && Py_TYPE(made) == ArrayView::buffer_type()) {
      const Buffer& in = py::handle(first).cast<const Buffer&>();
      Buffer& out = result.cast<Buffer&>();
      if (in.stream() && in.context() == out.context()) out.set_stream(in.stream());
    }
    return result;
  }
  return py::object();
}

bool same_place(const ArrayView* inputs, int count, const ArrayView& out) {
  for (int i = 0; i < count; ++i) {
    const ArrayView& v = inputs[i];
    if (v.kind() != out.kind() || v.ordinal() != out.ordinal() || v.stream() != out.stream()) return false;
  }
  // A host Buffer's stream, if any, is the general path's to wait for.
  if (out.kind() == BackendKind::host) return out.stream() == nullptr;
  for (int i = 0; i < count; ++i)
    if (!inputs[i].has_stream()) return false;
  return out.has_stream();
}

// Autograd then refuses a backward that needs the old values (through a detach()ed alias too)
// rather than computing wrong gradients.
void count_write(PyObject* tensor) {
  static PyObject* const increment = [] {
    py::object graph = py::module_::import("torch.autograd.graph");
    return py::object(graph.attr("increment_version")).release().ptr();  // kept for the process
  }();
  PyObject* done = PyObject_CallOneArg(increment, tensor);
  if (!done) throw py::error_already_set();
  Py_DECREF(done);
}

FastMap::FastMap(int arity, uint32_t block_size, std::vector<ParamField> fields, size_t params_size,
                 bool has_params)
    : arity_(arity), block_size_(block_size), params_(std::move(fields), params_size, has_params) {}

void FastMap::remember(const std::string& inputs, char out, const std::string& kind, const Kernel& kernel,
                       uint32_t vector) {
  const Context* ctx = kernel.context();
  if (!ctx) return;
  char code = 0;
  for (plan::Entry e : {plan::Entry::inplace, plan::Entry::map, plan::Entry::strided})
    if (kind == plan::entry_name(e)) code = char(e);
  if (!code) throw py::value_error("remember: kind is 'inplace', 'map' or 'strided', not '" + kind + "'");
  const plan::GridRule grid =
      plan::grid_rule(ctx->kind() != BackendKind::host, plan::Entry(code), vector, ctx->multiprocessors(), block_size_);
  Launch entry{inputs + out + code, ctx->kind(), ctx->ordinal(), std::make_shared<Kernel>(kernel), grid};
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
  outputs_.remember(inputs, std::move(type), std::move(make), std::move(args), std::move(kwargs));
}

const FastMap::Launch* FastMap::find(const char* signature, size_t size, const ArrayView& where) const {
  for (const Launch& l : launches_)
    if (l.kind == where.kind() && l.ordinal == where.ordinal() && l.signature.size() == size &&
        std::memcmp(l.signature.data(), signature, size) == 0)
      return &l;
  return nullptr;
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
  char* params = params_.room(small_params, big_params);
  if (!params_.pack(kwargs, (out != nullptr) + (stream != nullptr), params)) return py::object();

  int out_index = -1;  // the input that is the output too (in place): read once, writable
  for (int i = 0; i < arity_ && out; ++i)
    if (PyTuple_GET_ITEM(args, i) == out) {
      out_index = i;
      break;
    }
  ArrayView inputs[kMaxArity];
  plan::Array arrays[kMaxArity + 1];  // the inputs, then the output
  char signature[kMaxArity + 2];
  for (int i = 0; i < arity_; ++i) {
    inputs[i].open(PyTuple_GET_ITEM(args, i), i == out_index);
    if (!inputs[i].ok()) return py::object();
    arrays[i] = inputs[i].planned();
    signature[i] = inputs[i].format();
  }
  int ndim;
  int64_t shape[plan::kMaxDims];
  if (!plan::broadcast(arrays, arity_, ndim, shape)) return py::object();  // the general path says why
  // The output: given (writable, of the broadcast shape, not partly over an input), or new
  // and of the first array's library. A new one that lands elsewhere (CuPy's current device
  // is not the arrays') fails the checks below like any other output.
  py::object result;
  if (!out || out == Py_None) {
    int order[plan::kMaxDims];
    if (!plan::result_order(arrays, arity_, ndim, order)) return py::object();  // not C order: the general path
    result = outputs_.make(PyTuple_GET_ITEM(args, 0), shape, ndim, signature, size_t(arity_));
    if (!result) return py::object();  // the general path has not made one for these yet
  } else {
    result = py::reinterpret_borrow<py::object>(out);
  }
  ArrayView own;
  if (out_index < 0) own.open(result.ptr(), true);
  const ArrayView& o = out_index < 0 ? own : inputs[out_index];
  if (!o.ok() || o.ndim() != ndim || !std::equal(shape, shape + ndim, o.shape())) return py::object();
  if (!o.distinct_elements()) return py::object();  // the general path refuses such an output
  arrays[arity_] = o.planned();
  const plan::Entry kind = plan::entry_kind(arrays, arity_, arrays[arity_]);
  for (int i = 0; i < arity_; ++i)  // an output over an input must be that very view
    if (plan::overlaps(arrays[i], arrays[arity_])) return py::object();
  if (!same_place(inputs, arity_, o)) return py::object();
  signature[arity_] = o.format();
  signature[arity_ + 1] = char(kind);
  const Launch* found = find(signature, size_t(arity_) + 2, o);
  if (!found || !found->kernel->context()->alive()) return py::object();  // shut down since: the general
                                                                           // path binds it again
  for (int i = 0; i < arity_; ++i)  // a Buffer of an earlier runtime (shut down since): the general path
    if (inputs[i].context() && inputs[i].context() != found->kernel->context()) return py::object();
  if (o.context() && o.context() != found->kernel->context()) return py::object();
  const uint64_t n = o.count();
  if (n == 0) return result;
  std::string strides;
  int dims;
  if (kind == plan::Entry::strided &&
      plan::pack_strides(arrays, arity_ + 1, shape, ndim, strides, dims) != plan::Strides::ok)
    return py::object();
  launch(*found, inputs, o, n, kind == plan::Entry::inplace, params, strides);
  if (o.torch_tensor() && out && out != Py_None) count_write(out);
  return result;
}

void FastMap::launch(const Launch& found, const ArrayView* inputs, const ArrayView& out, uint64_t n, bool inplace,
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
  if (params_.has_params()) pass(const_cast<char*>(params), params_.size());
  const Dim3 grid{found.grid.blocks(n, block_size_), 1, 1};
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

void bind_fast_map(py::module_& m, ternaryfunc call) {
  py::class_<FastMap>(m, "FastMap", py::custom_type_setup([call](PyHeapTypeObject* type) { type->ht_type.tp_call = call; }),
                      "g.map's cache of launches (see dispatch.cpp). Calling it, "
                      "(*arrays, out=None, stream=None, **params), launches from the cache when it takes the call, "
                      "else returns self._general(*arrays, **kwargs).")
      .def(py::init([](int arity, uint32_t block_size, const std::vector<std::tuple<std::string, size_t, char, int>>& fields,
                       size_t params_size, bool has_params) {
             std::vector<ParamField> table;
             for (const auto& [name, offset, kind, bits] : fields) table.push_back({name, py::none(), offset, kind, bits});
             return std::make_unique<FastMap>(arity, block_size, std::move(table), params_size, has_params);
           }),
           py::arg("arity"), py::arg("block_size"), py::arg("fields"), py::arg("params_size"), py::arg("has_params"))
      .def("remember", &FastMap::remember, py::arg("inputs"), py::arg("out"), py::arg("kind"), py::arg("kernel"),
           py::arg("vector"))
      .def("remember_output", &FastMap::remember_output, py::arg("inputs"), py::arg("type"), py::arg("make"),
           py::arg("args"), py::arg("kwargs"));
  py::class_<TableEmpty>(m, "TableEmpty",
                         "New arrays made by a DLPack exchange table's allocator (torch's), in C++ (dispatch.h).")
      .def_static(
          "like",
          [](py::handle like, uint8_t code, uint8_t bits) -> py::object {
            auto e = TableEmpty::like(like.ptr(), code, bits);
            return e ? py::cast(*e) : py::none();
          },
          py::arg("like"), py::arg("code"), py::arg("bits"),
          "For new arrays of like's type and device and of DLPack dtype (code, bits); None where like's type "
          "carries no exchange table with an allocator.")
      .def(
          "__call__",
          [](const TableEmpty& e, const std::vector<int64_t>& shape) {
            std::string why;
            py::object made = e.make(shape.data(), int(shape.size()), &why);
            if (!made) {  // MemoryError: what NumPy and CuPy raise, which kernel.py's _Maker reports
              PyErr_SetString(PyExc_MemoryError, why.empty() ? "the allocator failed" : why.c_str());
              throw py::error_already_set();
            }
            return made;
          },
          py::arg("shape"));
}

}  // namespace gompute
