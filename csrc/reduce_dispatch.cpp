// The g.reduce fast path: a cached call, done in C++.
//
// gompute/reduce.py takes every call the general way first; once a (dtypes, entry, device)
// signature has launched it is remembered here, and a later call of that signature costs
// reading the arrays (array_view.h), the axis and keepdims arguments, the params packing, the
// call's plan (planner.h's plan_reduce, the rule the general path asks too) and its one or two
// launches: inline on the host, queued on the arrays' stream on a GPU, with no Python in
// between. Anything this cache does not handle exactly (stream=, an axis that is not an int or
// a tuple of ints in range, keepdims that is not a bool, an empty reduction with no identity, an
// output that is an input or meets one, arrays on different devices or streams, a value that
// does not fit) is not taken, and the general path runs and reports any error properly.
#include "reduce_dispatch.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <tuple>

#include "array_view.h"

namespace py = pybind11;

namespace gompute {

namespace {

// NumPy's axis argument over `ndim` dimensions as a mask: None (or absent) every axis, an int
// or a tuple of ints, negative from the end. False for anything else, an axis out of range or
// one given twice: the general path says what is wrong (numpy.exceptions.AxisError).
bool read_axes(PyObject* axis, int ndim, bool* reduced) {
  const bool all = !axis || axis == Py_None;
  std::fill(reduced, reduced + ndim, all);
  if (all) return true;
  auto one = [&](PyObject* a) {
    if (!PyLong_CheckExact(a)) return false;  // a bool, a NumPy integer: the general path
    int overflow = 0;
    long long d = PyLong_AsLongLongAndOverflow(a, &overflow);
    if (overflow || d < -ndim || d >= ndim) return false;
    d += d < 0 ? ndim : 0;
    if (reduced[d]) return false;
    return reduced[d] = true;
  };
  if (!PyTuple_CheckExact(axis)) return one(axis);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(axis); ++i)
    if (!one(PyTuple_GET_ITEM(axis, i))) return false;
  return true;
}

// Host partials: a launch waits for its work, so they live on the stack or the heap of the call.
class HostScratch {
 public:
  explicit HostScratch(size_t nbytes) {
    if (nbytes > sizeof local_) heap_.reset(std::aligned_alloc(64, (nbytes + 63) / 64 * 64));
    if (nbytes > sizeof local_ && !heap_) throw std::bad_alloc();
  }
  uint64_t address() const { return reinterpret_cast<uintptr_t>(heap_ ? heap_.get() : local_); }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  alignas(64) char local_[4096];
  std::unique_ptr<void, Free> heap_;
};

}  // namespace

FastReduce::FastReduce(int arity, std::vector<ParamField> fields, size_t params_size, bool has_params,
                       bool has_identity)
    : arity_(arity), params_(std::move(fields), params_size, has_params), has_identity_(has_identity) {}

void FastReduce::remember(const std::string& inputs, char out, const std::string& kind, const Kernel& first,
                          const Kernel& finish, const plan::ReduceRules& rules, size_t partial_size) {
  const Context* ctx = first.context();
  if (!ctx || finish.context() != ctx) return;
  int entry = 0;
  while (entry < plan::kReduceEntries && kind != plan::entry_name(plan::ReduceEntry(entry))) ++entry;
  if (entry == plan::kReduceEntries)
    throw py::value_error("remember: kind is 'rows', 'columns', 'packed_rows' or 'packed_columns', not '" + kind + "'");
  const std::string signature = inputs + out;
  auto same = [&](const Launch& l) {
    return l.signature == signature && l.kind == ctx->kind() && l.ordinal == ctx->ordinal();
  };
  Launch fresh{signature, ctx->kind(), ctx->ordinal(), {}, std::make_shared<Kernel>(finish),
               std::const_pointer_cast<Context>(ctx->shared_from_this()), rules, partial_size};
  auto it = std::find_if(launches_.begin(), launches_.end(), same);
  if (it == launches_.end())
    it = launches_.insert(launches_.end(), std::move(fresh));
  else if (it->context.get() != ctx)  // of a runtime shut down since
    *it = std::move(fresh);
  // A call in flight holds its own references to the kernels it replaces.
  it->first[entry] = std::make_shared<Kernel>(first);
}

void FastReduce::remember_output(const std::string& inputs, py::object type, py::object make, py::tuple args,
                                 py::object kwargs) {
  outputs_.remember(inputs, std::move(type), std::move(make), std::move(args), std::move(kwargs));
}

const FastReduce::Launch* FastReduce::find(const char* signature, size_t size, const ArrayView& where) const {
  for (const Launch& l : launches_)
    if (l.kind == where.kind() && l.ordinal == where.ordinal() && l.signature.size() == size &&
        std::memcmp(l.signature.data(), signature, size) == 0)
      return &l;
  return nullptr;
}

py::object FastReduce::call(PyObject* args, PyObject* kwargs) {
  static PyObject* const keys[] = {PyUnicode_InternFromString("out"), PyUnicode_InternFromString("stream"),
                                   PyUnicode_InternFromString("axis"),
                                   PyUnicode_InternFromString("keepdims")};  // kept for the process
  if (PyTuple_GET_SIZE(args) != arity_ || arity_ == 0 || arity_ > kMaxArity) return py::object();
  PyObject* given[4];  // borrowed, or null when absent
  Py_ssize_t own_keys = 0;
  for (int k = 0; k < 4; ++k) own_keys += (given[k] = kwargs ? PyDict_GetItem(kwargs, keys[k]) : nullptr) != nullptr;
  auto [out, stream, axis, keepdims_arg] = std::tuple{given[0], given[1], given[2], given[3]};
  if (out == Py_None) out = nullptr;
  if ((stream && stream != Py_None) || (keepdims_arg && keepdims_arg != Py_True && keepdims_arg != Py_False))
    return py::object();
  const bool keepdims = keepdims_arg == Py_True;
  char small_params[64];
  std::unique_ptr<char[]> big_params;
  char* params = params_.room(small_params, big_params);
  if (!params_.pack(kwargs, own_keys, params)) return py::object();

  ArrayView inputs[kMaxArity];
  plan::Array arrays[kMaxArity + 1];  // the inputs, then the output
  char signature[kMaxArity + 1];
  for (int i = 0; i < arity_; ++i) {
    PyObject* array = PyTuple_GET_ITEM(args, i);
    if (array == out) return py::object();  // an input as the output: the general path
    inputs[i].open(array, false);
    if (!inputs[i].ok()) return py::object();
    arrays[i] = inputs[i].planned();
    signature[i] = inputs[i].format();
  }
  int ndim;
  int64_t shape[plan::kMaxDims], out_shape[plan::kMaxDims];
  bool reduced[plan::kMaxDims];
  if (!plan::broadcast(arrays, arity_, ndim, shape) || !read_axes(axis, ndim, reduced)) return py::object();
  int out_ndim = 0;
  int64_t red_count = 1;
  for (int d = 0; d < ndim; ++d) {
    if (reduced[d]) red_count *= shape[d];
    if (!reduced[d] || keepdims) out_shape[out_ndim++] = reduced[d] ? 1 : shape[d];
  }
  if (red_count == 0 && !has_identity_) return py::object();  // the general path raises
  // The output: given (writable, of the result's shape, apart from every input), or new and of
  // the first array's library. A new one that lands elsewhere fails the checks below like any other.
  py::object result = out ? py::reinterpret_borrow<py::object>(out)
                          : outputs_.make(PyTuple_GET_ITEM(args, 0), out_shape, out_ndim, signature, size_t(arity_));
  if (!result) return py::object();  // the general path has not made one for these inputs yet
  ArrayView o;
  o.open(result.ptr(), true);
  if (!o.ok() || o.ndim() != out_ndim || !std::equal(out_shape, out_shape + out_ndim, o.shape()) ||
      !o.distinct_elements() || !same_place(inputs, arity_, o))
    return py::object();
  arrays[arity_] = o.planned();
  for (int i = 0; i < arity_; ++i)  // even its very view: a result reads other results' elements
    if (plan::ranges_meet(arrays[i], arrays[arity_])) return py::object();
  signature[arity_] = o.format();
  const Launch* found = find(signature, size_t(arity_) + 1, o);
  if (!found || !found->context->alive()) return py::object();  // shut down since: the general path binds again
  for (int i = 0; i < arity_; ++i)  // a Buffer of an earlier runtime: the general path
    if (inputs[i].context() && inputs[i].context() != found->context.get()) return py::object();
  if (o.context() && o.context() != found->context.get()) return py::object();
  if (o.count() == 0) return result;
  plan::ReducePlan plan;
  if (plan::plan_reduce(arrays, arity_, shape, ndim, reduced, keepdims, found->rules, plan) != plan::ReduceStatus::ok ||
      !found->first[int(plan.entry)] || plan.first_blocks > 0x7fffffff || plan.finish_blocks > 0x7fffffff)
    return py::object();
  launch(*found, inputs, o, plan, params);
  if (o.torch_tensor() && out) count_write(out);
  return result;
}

void FastReduce::launch(const Launch& found, const ArrayView* inputs, const ArrayView& out,
                        const plan::ReducePlan& plan, const char* params) const {
  const bool host = out.kind() == BackendKind::host;
  const size_t nbytes = size_t(plan.partials) * found.partial_size;
  std::optional<HostScratch> scratch;
  std::optional<Buffer> device;  // freed once the device's queued work is done (Context::release)
  uint64_t addresses[kMaxArity + 2];  // the inputs', the partials' (null where there are none), the output's
  uint64_t& partials = addresses[arity_];
  partials = 0;
  if (nbytes && host) {
    scratch.emplace(nbytes);
    partials = scratch->address();
  } else if (nbytes) {
    device.emplace(found.context, nbytes);
    partials = device->device_addr();
  }
  for (int i = 0; i < arity_; ++i) addresses[i] = inputs[i].address();
  addresses[arity_ + 1] = out.address();
  // (inputs..., partials, out, layout[, params]) and (partials, out, layout).
  void* first_args[kMaxArity + 4];
  size_t first_sizes[kMaxArity + 4];
  size_t count = 0;
  for (int i = 0; i <= arity_ + 1; ++i, ++count) {
    first_args[count] = &addresses[i];
    first_sizes[count] = sizeof(uint64_t);
  }
  void* layout = const_cast<char*>(plan.layout.data());
  first_args[count] = layout;
  first_sizes[count++] = plan.layout.size();
  if (params_.has_params()) {
    first_args[count] = const_cast<char*>(params);
    first_sizes[count++] = params_.size();
  }
  void* finish_args[3] = {&addresses[arity_], &addresses[arity_ + 1], layout};
  const size_t finish_sizes[3] = {sizeof(uint64_t), sizeof(uint64_t), plan.layout.size()};
  const Dim3 block{uint32_t(found.rules.block), 1, 1};
  const Dim3 first_grid{uint32_t(plan.first_blocks), 1, 1}, finish_grid{uint32_t(plan.finish_blocks), 1, 1};
  // Own references: a big host launch lets other threads run, and remember() may replace the entry.
  const std::shared_ptr<Kernel> first = found.first[int(plan.entry)], finish = found.finish;
  auto run = [&] {
    if (plan.first_blocks) first->launch(first_grid, block, 0, first_args, first_sizes, count, out.stream(), host);
    if (plan.finish_blocks) finish->launch(finish_grid, block, 0, finish_args, finish_sizes, 3, out.stream(), host);
  };
  uint64_t elements = 1;
  for (int i = 0; i < arity_; ++i) elements = std::max<uint64_t>(elements, inputs[i].count());
  if (!host || elements <= kKeepGilElements) return run();  // releasing the GIL costs more than a small one
  py::gil_scoped_release release;
  run();
}

void bind_fast_reduce(py::module_& m, ternaryfunc call) {
  py::class_<FastReduce>(m, "FastReduce", py::custom_type_setup([call](PyHeapTypeObject* type) { type->ht_type.tp_call = call; }),
                         "g.reduce's cache of launches (see reduce_dispatch.cpp). Calling it, (*arrays, axis=None, "
                         "keepdims=False, out=None, stream=None, **params), launches from the cache when it takes the "
                         "call, else returns self._general(*arrays, **kwargs).")
      .def(py::init([](int arity, const std::vector<std::tuple<std::string, size_t, char, int>>& fields,
                       size_t params_size, bool has_params, bool has_identity) {
             std::vector<ParamField> table;
             for (const auto& [name, offset, kind, bits] : fields) table.push_back({name, py::none(), offset, kind, bits});
             return std::make_unique<FastReduce>(arity, std::move(table), params_size, has_params, has_identity);
           }),
           py::arg("arity"), py::arg("fields"), py::arg("params_size"), py::arg("has_params"), py::arg("has_identity"))
      .def("remember", &FastReduce::remember, py::arg("inputs"), py::arg("out"), py::arg("kind"), py::arg("first"),
           py::arg("finish"), py::arg("rules"), py::arg("partial_size"))
      .def("remember_output", &FastReduce::remember_output, py::arg("inputs"), py::arg("type"), py::arg("make"),
           py::arg("args"), py::arg("kwargs"));
}

}  // namespace gompute
