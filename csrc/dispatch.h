// The g.map fast path for contiguous host arrays (see dispatch.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime.h"

namespace gompute {

// One params field as the fast path packs it: kind 'i', 'u', 'f', 'b' or 'e' (f16).
struct ParamField {
  std::string name;
  pybind11::object key;  // the name as an interned str, for dict lookups without a conversion
  size_t offset;
  char kind;
  int bits;
};

class View;

class FastMap {
 public:
  FastMap(int arity, uint32_t block_size, std::vector<ParamField> fields, size_t params_size, bool has_params);

  // Remembers the kernel for a call signature: the input format characters, the output's,
  // and 'i' (in place, the single input is the output) or 'm' (inputs then output), and
  // the NumPy dtype a new output of those inputs gets.
  void remember(const std::string& inputs, char out, bool inplace, const Kernel& kernel, pybind11::object dtype);

  // `self(*arrays, out=None, stream=None, **params)`: the cached launch when this cache
  // takes the call, else `self._general(*arrays, **kwargs)` (the Python path).
  pybind11::object dispatch(pybind11::object self, pybind11::args arrays, pybind11::kwargs kwargs);

 private:
  // The call's result, or None when it is not one this cache takes.
  pybind11::object call(pybind11::tuple arrays, pybind11::handle out, PyObject* kwargs, Py_ssize_t other_keys);
  bool pack_params(PyObject* kwargs, Py_ssize_t other_keys, std::string& out) const;
  std::shared_ptr<Kernel> find(const std::string& signature) const;
  void launch(Kernel& kernel, const std::vector<std::unique_ptr<View>>& inputs, const View& out, uint64_t n,
              bool inplace, const std::string& params);

  int arity_;
  uint32_t block_size_;
  std::vector<ParamField> fields_;
  size_t params_size_;
  bool has_params_;
  pybind11::object ndarray_, empty_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Kernel>> launches_;
  std::unordered_map<std::string, pybind11::object> out_dtypes_;  // input signature -> dtype
};

}  // namespace gompute
