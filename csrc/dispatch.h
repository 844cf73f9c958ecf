// The g.map fast path for contiguous arrays (see dispatch.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dlpack_exchange.h"
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

// A host launch of at most this many elements runs holding the GIL: releasing it costs more.
constexpr uint64_t kKeepGilElements = 16384;

// A kernel's params as the fast paths (g.map's here, g.reduce's in reduce_dispatch.cpp) pack
// them from a call's keywords, straight into the kernel's params struct.
class ParamsPacker {
 public:
  ParamsPacker(std::vector<ParamField> fields, size_t size, bool has_params);
  size_t size() const { return size_; }
  bool has_params() const { return has_params_; }
  // Room for the packed params: `small` when they fit, else a new block held by `big`.
  char* room(char (&small)[64], std::unique_ptr<char[]>& big) const {
    return size_ > sizeof small ? (big = std::make_unique<char[]>(size_)).get() : small;
  }
  // Packs the params among kwargs (all its keys but `other_keys` of them, the call's own
  // keywords) into `out`; false unless they are exactly the fields, each value exactly
  // representable in its field.
  bool pack(PyObject* kwargs, Py_ssize_t other_keys, char* out) const;

 private:
  std::vector<ParamField> fields_;
  size_t size_;
  bool has_params_;
};

// New arrays made by the allocator of a DLPack exchange table (torch's), in C++: contiguous, of
// one dtype, on one device (on a GPU, from the current stream's pool, as torch.empty's). torch.empty
// from Python takes 1-3 us, most of a small call. Like any tensor torch takes through DLPack, their
// storage cannot grow (resize_ past their size refuses); it can shrink and be shared.
class TableEmpty {
 public:
  // For new arrays of `like`'s type and device, of dtype (code, bits) (DLDataTypeCode); none
  // where `like`'s type carries no table with an allocator, or the table cannot read `like`.
  static std::optional<TableEmpty> like(PyObject* like, uint8_t code, uint8_t bits);
  // A new array of `shape`; null with no Python error set when the allocator fails (out of
  // memory: it says so through set_error, kept in `why` when given).
  pybind11::object make(const int64_t* shape, int ndim, std::string* why = nullptr) const;

 private:
  const DLPackExchangeAPI* table_ = nullptr;
  DLDataType dtype_{};
  DLDevice device_{};
};

// How the general path made a call's new result, by the input format characters and the first
// array's type: `make(shape, *args, **kwargs)`, a new array of that library.
class OutputMakers {
 public:
  void remember(const std::string& inputs, pybind11::object type, pybind11::object make, pybind11::tuple args,
                pybind11::object kwargs);
  // A new array of `shape`, made as the general path made one for these inputs with a first
  // array of `first`'s type; null when it has not made one yet, or making it failed.
  pybind11::object make(PyObject* first, const int64_t* shape, int ndim, const char* signature, size_t size) const;

 private:
  struct Maker {
    std::string inputs;
    pybind11::object type;  // of the first array
    pybind11::object make;
    pybind11::tuple args;     // after the shape
    pybind11::object kwargs;  // a dict, or None
    std::optional<TableEmpty> table;  // when `make` is a TableEmpty: called with no Python
  };
  std::vector<Maker> makers_;  // a handful: a linear scan beats hashing
};

// Whether the inputs and the output are on one device, and so on one stream a launch can go on
// without ordering one stream after another: none on the host, the same one on a GPU.
bool same_place(const ArrayView* inputs, int count, const ArrayView& out);

// Counts a write into a torch tensor as torch's own in-place ops do (kernel.py's _count_write).
void count_write(PyObject* tensor);

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
  const Launch* find(const char* signature, size_t size, const ArrayView& where) const;
  void launch(const Launch& found, const ArrayView* inputs, const ArrayView& out, uint64_t n, bool inplace, const char* params,
              std::string& strides);

  int arity_;
  uint32_t block_size_;
  ParamsPacker params_;
  std::vector<Launch> launches_;  // a handful per g.map: a linear scan beats hashing
  OutputMakers outputs_;
};

// _core.FastMap, its type calling `call`, and _core.TableEmpty.
void bind_fast_map(pybind11::module_& m, ternaryfunc call);

}  // namespace gompute
