// The g.map fast path: a cached call on contiguous host arrays, done in C++.
//
// gompute/kernel.py takes every call the general way first; once a (dtypes, entry) pair
// has launched on the host backend it is remembered here, and later calls of that shape
// cost a few buffer-protocol reads, the params packing and an inline launch, with no
// Python in between. Anything this cache does not handle exactly (other shapes, strides,
// stream=, foreign devices, a value that does not fit) returns None, and the general
// path runs and reports any error properly.
#include "dispatch.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace py = pybind11;

namespace gompute {

// A buffer-protocol view, released on scope exit. Empty when the object has none.
class View {
 public:
  View(PyObject* obj, bool writable) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    ok_ = PyObject_GetBuffer(obj, &view_, flags) == 0;
    if (!ok_) PyErr_Clear();
  }
  ~View() {
    if (ok_) PyBuffer_Release(&view_);
  }
  View(const View&) = delete;
  View& operator=(const View&) = delete;
  bool ok() const { return ok_; }
  const Py_buffer& get() const { return view_; }

 private:
  Py_buffer view_{};
  bool ok_;
};

namespace {

// The struct-module format of a native scalar as one character ('l' folded into 'q').
char format_char(const Py_buffer& v) {
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

bool same_shape(const Py_buffer& a, const Py_buffer& b) {
  if (a.ndim != b.ndim) return false;
  for (int i = 0; i < a.ndim; ++i)
    if (a.shape[i] != b.shape[i]) return false;
  return true;
}

bool overlap(const Py_buffer& a, const Py_buffer& b) {
  auto lo = [](const Py_buffer& v) { return reinterpret_cast<uintptr_t>(v.buf); };
  return lo(a) < lo(b) + size_t(b.len) && lo(b) < lo(a) + size_t(a.len);
}

// Writes `value` as the field's type at `dst`; false if it is not exactly representable.
bool pack_field(const ParamField& f, PyObject* value, char* dst) {
  if (f.kind == 'f') {
    if (f.bits != 32 && f.bits != 64) return false;  // f16/bf16 fields: the general path packs them
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
  py::module_ np = py::module_::import("numpy");
  ndarray_ = np.attr("ndarray");
  empty_ = np.attr("empty");
}

void FastMap::remember(const std::string& inputs, char out, bool inplace, const Kernel& kernel, py::object dtype) {
  std::lock_guard<std::mutex> lock(mu_);
  launches_.insert_or_assign(inputs + out + (inplace ? 'i' : 'm'), std::make_shared<Kernel>(kernel));
  out_dtypes_.insert_or_assign(inputs, std::move(dtype));
}

bool FastMap::pack_params(PyObject* kwargs, std::string& out) const {
  const Py_ssize_t given = kwargs ? PyDict_Size(kwargs) : 0;
  if (!has_params_) return given == 0;
  if (given != Py_ssize_t(fields_.size())) return false;
  out.assign(params_size_, '\0');
  for (const ParamField& f : fields_) {
    PyObject* value = PyDict_GetItemString(kwargs, f.name.c_str());  // borrowed
    if (!value || !pack_field(f, value, out.data() + f.offset)) {
      PyErr_Clear();
      return false;
    }
  }
  return true;
}

std::shared_ptr<Kernel> FastMap::find(const std::string& signature) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = launches_.find(signature);
  return it == launches_.end() ? nullptr : it->second;
}

py::object FastMap::call(py::tuple arrays, py::handle out, py::handle kwargs) {
  if (Py_ssize_t(arrays.size()) != arity_ || arity_ == 0) return py::none();
  std::string params;
  if (!pack_params(kwargs.is_none() ? nullptr : kwargs.ptr(), params)) return py::none();
  std::vector<std::unique_ptr<View>> inputs;
  std::string signature;
  for (py::handle a : arrays) {
    inputs.push_back(std::make_unique<View>(a.ptr(), false));
    const View& v = *inputs.back();
    char c = v.ok() ? format_char(v.get()) : 0;
    if (!c || !same_shape(v.get(), inputs.front()->get())) return py::none();
    signature += c;
  }
  // The output: given (writable, same shape, not partly over an input), or a new NumPy array.
  py::object result;
  if (out.is_none()) {
    if (!PyObject_TypeCheck(arrays[0].ptr(), reinterpret_cast<PyTypeObject*>(ndarray_.ptr()))) return py::none();
    py::object dtype;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = out_dtypes_.find(signature);
      if (it == out_dtypes_.end()) return py::none();  // the general path learns the result dtype first
      dtype = it->second;
    }
    result = empty_(py::reinterpret_borrow<py::object>(arrays[0]).attr("shape"), dtype);
  } else {
    result = py::reinterpret_borrow<py::object>(out);
  }
  View o(result.ptr(), true);
  char oc = o.ok() ? format_char(o.get()) : 0;
  if (!oc || !same_shape(o.get(), inputs.front()->get())) return py::none();
  bool inplace = arity_ == 1 && o.get().buf == inputs[0]->get().buf && oc == signature[0];
  for (const auto& v : inputs)
    if (v->get().buf != o.get().buf && overlap(v->get(), o.get())) return py::none();
  signature += oc;
  signature += inplace ? 'i' : 'm';
  std::shared_ptr<Kernel> kernel = find(signature);
  if (!kernel) return py::none();
  const uint64_t n = uint64_t(o.get().len / o.get().itemsize);
  if (n == 0) return result;
  launch(*kernel, inputs, o, n, inplace, params);
  return result;
}

void FastMap::launch(Kernel& kernel, const std::vector<std::unique_ptr<View>>& inputs, const View& out, uint64_t n,
                     bool inplace, const std::string& params) {
  auto address = [](const void* p) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    return Arg(std::string(reinterpret_cast<const char*>(&a), sizeof a));
  };
  std::vector<Arg> args;
  args.reserve(inputs.size() + 3);
  if (!inplace)
    for (const auto& v : inputs) args.push_back(address(v->get().buf));
  args.push_back(address(out.get().buf));
  args.emplace_back(std::string(reinterpret_cast<const char*>(&n), sizeof n));
  if (has_params_) args.emplace_back(params);
  std::vector<const Arg*> pointers;
  for (const Arg& a : args) pointers.push_back(&a);
  Dim3 grid{uint32_t(std::min<uint64_t>((n + block_size_ - 1) / block_size_, 0x7fffffff)), 1, 1};
  Dim3 block{block_size_, 1, 1};
  py::gil_scoped_release release;
  kernel.launch(grid, block, 0, pointers, nullptr, /*wait=*/true);
}

}  // namespace gompute
