#include "pyargs.h"

namespace py = pybind11;

namespace gompute {

namespace {

// v as a Python int, through __index__, or an ArgumentError.
py::object index_of(py::handle v, const std::string& what) {
  if (!PyIndex_Check(v.ptr())) raise(ErrorKind::ArgumentError, what + " must be an int, got " + type_name(v));
  auto n = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!n) throw py::error_already_set();
  return n;
}

}  // namespace

std::string type_name(py::handle v) { return py::str(py::type::handle_of(v).attr("__name__")); }

uint64_t count_arg(py::handle v, const std::string& what, uint64_t max) {
  py::object n = index_of(v, what);
  unsigned long long value = PyLong_AsUnsignedLongLong(n.ptr());
  if (PyErr_Occurred() || value > max) {
    PyErr_Clear();
    raise(ErrorKind::ArgumentError, what + " must be from 0 to " +
                                        (max == UINT64_MAX ? std::string("2**64 - 1") : std::to_string(max)) +
                                        ", got " + std::string(py::str(n)));
  }
  return value;
}

std::optional<uint64_t> optional_count_arg(py::handle v, const std::string& what) {
  if (v.is_none()) return std::nullopt;
  return count_arg(v, what);
}

int64_t int64_arg(py::handle v, const std::string& what) {
  py::object n = index_of(v, what);
  long long value = PyLong_AsLongLong(n.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    raise(ErrorKind::ArgumentError, what + " must be from -2**63 to 2**63 - 1, got " + std::string(py::str(n)));
  }
  return value;
}

int64_t ranged_arg(py::handle v, const std::string& what, int64_t lo, int64_t hi) {
  py::object n = index_of(v, what);
  int overflow = 0;
  long long value = PyLong_AsLongLongAndOverflow(n.ptr(), &overflow);
  if (overflow || value < lo || value > hi)
    raise(ErrorKind::ArgumentError, what + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                                        ", got " + std::string(py::str(n)));
  return value;
}

std::vector<int64_t> ints_arg(py::handle v, const std::string& what) {
  if (PyIndex_Check(v.ptr())) return {int64_arg(v, what)};
  if (!py::isinstance<py::tuple>(v) && !py::isinstance<py::list>(v))
    raise(ErrorKind::ArgumentError, what + " must be an int or a tuple of ints, got " + type_name(v));
  std::vector<int64_t> out;
  for (py::handle item : v) out.push_back(int64_arg(item, what + " (each entry)"));
  return out;
}

Stream* stream_arg(py::handle v, const std::string& what) {
  if (v.is_none()) return nullptr;
  if (!py::isinstance<Stream>(v))
    raise(ErrorKind::ArgumentError, what + " takes a gompute Stream or None, got " + type_name(v) +
                                        "; a foreign stream handle becomes one with compute.wrap_stream(handle)");
  return v.cast<Stream*>();
}

}  // namespace gompute
