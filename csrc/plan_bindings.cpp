// The planner (planner.h) for the first call of a signature of g.map (gompute/kernel.py) and
// g.reduce (gompute/reduce.py), over gompute Buffers: the same functions the repeated calls in
// dispatch.cpp and reduce_dispatch.cpp use.
#include "plan_bindings.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <vector>

#include "planner.h"
#include "runtime.h"

namespace py = pybind11;

namespace gompute {

namespace {

// Buffers read as planner arrays; the layouts they point into are kept here.
class Arrays {
 public:
  explicit Arrays(const std::vector<const Buffer*>& buffers) {
    layouts_.reserve(buffers.size());
    for (const Buffer* b : buffers) {
      layouts_.push_back(b->layout());
      const Layout& l = layouts_.back();
      plan::Array a;
      a.ndim = int(l.shape.size());
      a.shape = l.shape.data();
      a.strides = l.strides.data();
      a.itemsize = int64_t(l.itemsize());
      a.address = b->data_addr();
      a.dtype = uint32_t(l.code) << 8 | l.bits;
      arrays_.push_back(a);
    }
  }
  const plan::Array* data() const { return arrays_.data(); }
  int size() const { return int(arrays_.size()); }
  const plan::Array& operator[](int i) const { return arrays_[size_t(i)]; }

 private:
  std::vector<Layout> layouts_;
  std::vector<plan::Array> arrays_;
};

py::tuple ints(const int64_t* values, int n) {
  py::tuple t(n);
  for (int i = 0; i < n; ++i) t[i] = py::int_(values[i]);
  return t;
}

void check_dims(const Arrays& arrays) {
  for (int i = 0; i < arrays.size(); ++i)
    if (arrays[i].ndim > plan::kMaxDims)
      raise(ErrorKind::ArgumentError, "an array of " + std::to_string(arrays[i].ndim) +
                                          " dimensions: g.map takes at most " + std::to_string(plan::kMaxDims));
}

// (kind, grid blocks, strides argument or None) for `out` and the inputs broadcast to it, by
// blocks of `block` threads that take `vector` elements a pass in a contiguous GPU entry.
py::tuple plan_launch(const std::vector<const Buffer*>& inputs, const Buffer& out, uint32_t block, uint32_t vector) {
  std::vector<const Buffer*> all(inputs);
  all.push_back(&out);
  const Arrays arrays(all);
  check_dims(arrays);
  const int count = arrays.size();
  const plan::Array& o = arrays[count - 1];
  const plan::Entry kind = plan::entry_kind(arrays.data(), count - 1, o);
  py::object strides = py::none();
  if (kind == plan::Entry::strided) {
    std::string packed;
    int dims = 0;
    switch (plan::pack_strides(arrays.data(), count, o.shape, o.ndim, packed, dims)) {
      case plan::Strides::ok: strides = py::bytes(packed); break;
      case plan::Strides::too_many_dims:
        raise(ErrorKind::ArgumentError, "these arrays need " + std::to_string(dims) +
                                            " dimensions even merged; kernels take at most " +
                                            std::to_string(plan::kMaxStridedDims));
      case plan::Strides::partial_elements:
        raise(ErrorKind::ArgumentError, "an array's strides are not whole elements of its type");
    }
  }
  const Context& ctx = *out.context();
  const plan::GridRule grid =
      plan::grid_rule(ctx.kind() != BackendKind::host, kind, vector, ctx.multiprocessors(), block);
  return py::make_tuple(plan::entry_name(kind), grid.blocks(uint64_t(o.count()), block), strides);
}

// (entry kind, first launch's blocks, finish's blocks, partials, layout argument) of reducing the
// inputs into `out` over `axes` (sorted, non-negative, of the broadcast shape); planner.h's
// ReducePlan says what a 0 means.
py::tuple plan_reduce(const std::vector<const Buffer*>& inputs, const Buffer& out, const std::vector<int>& axes,
                      bool keepdims, const plan::ReduceRules& rules) {
  std::vector<const Buffer*> all(inputs);
  all.push_back(&out);
  const Arrays arrays(all);
  check_dims(arrays);
  const int count = arrays.size() - 1;
  int ndim = 0;
  int64_t shape[plan::kMaxDims];
  if (!plan::broadcast(arrays.data(), count, ndim, shape))
    raise(ErrorKind::ArgumentError, "plan_reduce: the inputs do not broadcast together");
  bool reduced[plan::kMaxDims] = {};
  for (int d : axes) {
    if (d < 0 || d >= ndim) raise(ErrorKind::ArgumentError, "plan_reduce: an axis is out of range");
    reduced[d] = true;
  }
  const int out_ndim = keepdims ? ndim : ndim - int(std::count(reduced, reduced + ndim, true));
  if (arrays[count].ndim != out_ndim)
    raise(ErrorKind::ArgumentError, "plan_reduce: out has " + std::to_string(arrays[count].ndim) +
                                        " dimensions, the reduction's result " + std::to_string(out_ndim));
  plan::ReducePlan p;
  switch (plan::plan_reduce(arrays.data(), count, shape, ndim, reduced, keepdims, rules, p)) {
    case plan::ReduceStatus::ok: break;
    case plan::ReduceStatus::too_many_dims:
      raise(ErrorKind::ArgumentError, "these arrays need " + std::to_string(p.kept_dims) + " kept and " +
                                          std::to_string(p.reduced_dims) +
                                          " reduced dimensions even merged; a reduction takes at most " +
                                          std::to_string(plan::kMaxStridedDims) + " of each");
    case plan::ReduceStatus::partial_elements:
      raise(ErrorKind::ArgumentError, "an array's strides are not whole elements of its type");
  }
  return py::make_tuple(plan::entry_name(p.entry), p.first_blocks, p.finish_blocks, p.partials,
                        py::bytes(p.layout));
}

}  // namespace

void bind_planner(py::module_& m) {
  m.attr("MAX_DIMS") = plan::kMaxDims;
  m.attr("MAX_STRIDED_DIMS") = plan::kMaxStridedDims;
  m.def(
      "broadcast_shape",
      [](const std::vector<const Buffer*>& buffers) -> py::object {
        const Arrays arrays(buffers);
        check_dims(arrays);
        int ndim = 0;
        int64_t shape[plan::kMaxDims];
        if (!plan::broadcast(arrays.data(), arrays.size(), ndim, shape)) return py::none();
        return ints(shape, ndim);
      },
      py::arg("arrays"), "The shape the arrays broadcast to, by NumPy's rules; None when they do not.");
  m.def(
      "result_order",
      [](const std::vector<const Buffer*>& inputs, int ndim) -> py::object {
        const Arrays arrays(inputs);
        check_dims(arrays);
        if (ndim < 0 || ndim > plan::kMaxDims) raise(ErrorKind::ArgumentError, "result_order: ndim out of range");
        int64_t order[plan::kMaxDims];
        int perm[plan::kMaxDims];
        if (plan::result_order(arrays.data(), arrays.size(), ndim, perm)) return py::none();
        std::copy(perm, perm + ndim, order);
        return ints(order, ndim);
      },
      py::arg("inputs"), py::arg("ndim"),
      "The order of dimensions, outermost first, a new result of the inputs is laid out in (NumPy's order "
      "'K'); None for C order.");
  m.def(
      "overlapping_inputs",
      [](const std::vector<const Buffer*>& inputs, const Buffer& out) {
        std::vector<const Buffer*> all(inputs);
        all.push_back(&out);
        const Arrays arrays(all);
        py::list found;
        for (int i = 0; i + 1 < arrays.size(); ++i)
          if (plan::overlaps(arrays[i], arrays[arrays.size() - 1])) found.append(i);
        return found;
      },
      py::arg("inputs"), py::arg("out"),
      "The inputs whose bytes meet out's without being its very view (they may still interleave).");
  m.def("plan_launch", plan_launch, py::arg("inputs"), py::arg("out"), py::arg("block_size"), py::arg("vector") = 1,
        "(entry kind, grid blocks, the strided entry's strides argument or None) for a launch into out, whose "
        "contiguous entries take `vector` elements a thread a pass on a GPU.");
  py::class_<plan::ReduceRules>(m, "ReduceRules",
                                "How a reduction's work is cut into items and blocks on one device (planner.h).")
      .def(py::init([](bool gpu, int64_t block, int64_t row_chunk, int64_t column_rows, int64_t column_width,
                       int64_t block_elements, int64_t finish_partials, int64_t gpu_items, int64_t gpu_partials,
                       int64_t gpu_max_blocks, int64_t gpu_thread_rows, int64_t gpu_group_rows, int64_t gpu_group,
                       int64_t gpu_pack) {
             for (int64_t v : {block, row_chunk, column_rows, column_width, block_elements, finish_partials, gpu_items,
                               gpu_partials, gpu_max_blocks, gpu_thread_rows, gpu_group_rows, gpu_group, gpu_pack})
               if (v < 1) raise(ErrorKind::ArgumentError, "ReduceRules: every count is at least 1");
             if (block % gpu_group) raise(ErrorKind::ArgumentError, "ReduceRules: gpu_group must divide block");
             return plan::ReduceRules{gpu,           block,     row_chunk,    column_rows,    column_width,
                                      block_elements, finish_partials, gpu_items, gpu_partials, gpu_max_blocks,
                                      gpu_thread_rows, gpu_group_rows, gpu_group, gpu_pack};
           }),
           py::kw_only(), py::arg("gpu"), py::arg("block"), py::arg("row_chunk"), py::arg("column_rows"),
           py::arg("column_width"), py::arg("block_elements"), py::arg("finish_partials"), py::arg("gpu_items"),
           py::arg("gpu_partials"), py::arg("gpu_max_blocks"), py::arg("gpu_thread_rows"), py::arg("gpu_group_rows"),
           py::arg("gpu_group"), py::arg("gpu_pack"))
      .def_readonly("gpu", &plan::ReduceRules::gpu)
      .def_readonly("block", &plan::ReduceRules::block);
  m.def("plan_reduce", plan_reduce, py::arg("inputs"), py::arg("out"), py::arg("axes"), py::arg("keepdims"),
        py::arg("rules"),
        "(entry kind 'rows', 'columns', 'packed_rows' or 'packed_columns', first launch's blocks (0: none), finish's blocks, partials, layout "
        "argument) of reducing the inputs into out over the sorted non-negative axes of their broadcast shape.");
}

}  // namespace gompute
