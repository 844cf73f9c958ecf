// The g.reduce fast path (see reduce_dispatch.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "dispatch.h"
#include "planner.h"
#include "runtime.h"

namespace gompute {

// Every method runs with the GIL held (the module does not declare itself free-threaded),
// which is what orders remember() against call().
class FastReduce {
 public:
  static constexpr int kMaxArity = 8;  // more inputs: the general path

  FastReduce(int arity, std::vector<ParamField> fields, size_t params_size, bool has_params, bool has_identity);

  // Remembers the launches of a call signature on the kernels' device: the input format
  // characters, the output's, the first launch's entry kind (plan::entry_name's) and its
  // kernel, the finish kernel, how the planner cuts the work, and the bytes of a partial.
  void remember(const std::string& inputs, char out, const std::string& kind, const Kernel& first,
                const Kernel& finish, const plan::ReduceRules& rules, size_t partial_size);
  // Remembers how a call of these inputs with no `out=`, its first array of `type`, makes its
  // result (dispatch.h's OutputMakers).
  void remember_output(const std::string& inputs, pybind11::object type, pybind11::object make,
                       pybind11::tuple args, pybind11::object kwargs);

  // `self(*args, axis=None, keepdims=False, out=None, stream=None, **params)` when this cache
  // takes the call: its result. A null object when it does not (the general path runs).
  pybind11::object call(PyObject* args, PyObject* kwargs);

 private:
  struct Launch {
    std::string signature;  // input formats, then the output's
    BackendKind kind;       // the kernels' device
    int ordinal;
    std::shared_ptr<Kernel> first[plan::kReduceEntries];  // by ReduceEntry: null until the general path ran it
    std::shared_ptr<Kernel> finish;
    std::shared_ptr<Context> context;  // where GPU partials are allocated
    plan::ReduceRules rules;
    size_t partial_size;
  };
  const Launch* find(const char* signature, size_t size, const ArrayView& where) const;
  void launch(const Launch& found, const ArrayView* inputs, const ArrayView& out, const plan::ReducePlan& plan,
              const char* params) const;

  int arity_;
  ParamsPacker params_;
  bool has_identity_;
  std::vector<Launch> launches_;  // a handful per g.reduce: a linear scan beats hashing
  OutputMakers outputs_;
};

// Registers FastReduce as _core.FastReduce, its calls going through `call` (bindings.cpp's
// tp_call, which translates errors as every other C++ call's are).
void bind_fast_reduce(pybind11::module_& m, ternaryfunc call);

}  // namespace gompute
