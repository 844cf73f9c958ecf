// The g.map fast path for contiguous arrays (see dispatch.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "planner.h"
#include "runtime.h"

namespace gompute {

// One params field as the fast path packs it: kind 'i', 'u', 'f', 'c', 'b' or 'e' (f16).
struct ParamField {
  std::string name;
  pybind11::object key;  // the name as an interned str, for dict lookups without a conversion
  size_t offset;
  char kind;
  int bits;
};

class ArrayView;

// Every method runs with the GIL held (the module does not declare itself free-threaded),
// which is what orders remember() against call().
class FastMap {
 public:
  static constexpr int kMaxArity = 8;  // more inputs: the general path

  FastMap(int arity, uint32_t block_size, std::vector<ParamField> fields, size_t params_size, bool has_params);

  // Remembers the kernel for a call signature on the kernel's device: the input format
  // characters, the output's, and the entry kind ("inplace": the single input is the
  // output; "map": inputs then output; "strided"), whose threads take `vector` elements a
  // pass when it is a contiguous GPU entry.
  void remember(const std::string& inputs, char out, const std::string& kind, const Kernel& kernel, uint32_t vector);
  // Remembers how a call of these inputs with no `out=`, its first array of `type`, makes
  // its result: `make(shape, *args, **kwargs)`, a new array of that library.
  void remember_output(const std::string& inputs, pybind11::object type, pybind11::object make,
                       pybind11::tuple args, pybind11::object kwargs);

  // `self(*args, out=None, stream=None, **params)` when this cache takes the call: its
  // result. A null object when it does not (the caller then takes the general path).
  pybind11::object call(PyObject* args, PyObject* kwargs);

 private:
  struct Launch {
    std::string signature;
    BackendKind kind;  // the kernel's device
    int ordinal;
    std::shared_ptr<Kernel> kernel;
    plan::GridRule grid;
  };
  struct Maker {
    std::string inputs;
    pybind11::object type;  // of the first array
    pybind11::object make;
    pybind11::tuple args;     // after the shape
    pybind11::object kwargs;  // a dict, or None
  };

  bool pack_params(PyObject* kwargs, Py_ssize_t other_keys, char* out) const;
  const Launch* find(const char* signature, size_t size, const ArrayView& where) const;
  bool same_place(const ArrayView* inputs, const ArrayView& out) const;
  pybind11::object new_output(PyObject* first, const int64_t* shape, int ndim, const char* signature,
                              size_t size) const;
  void launch(const Launch& found, const ArrayView* inputs, const ArrayView& out, uint64_t n, bool inplace, const char* params,
              std::string& strides);

  int arity_;
  uint32_t block_size_;
  std::vector<ParamField> fields_;
  size_t params_size_;
  bool has_params_;
  std::vector<Launch> launches_;  // a handful per g.map: a linear scan beats hashing
  std::vector<Maker> makers_;
};

}  // namespace gompute
