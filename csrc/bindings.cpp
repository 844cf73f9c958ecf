// The one file that knows pybind11: runtime objects as gompute._core, and the one
// place C++ errors become Python exceptions (gompute/errors.py).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <functional>
#include <mutex>

#include "array_view.h"
#include "dispatch.h"
#include "interop.h"
#include "plan_bindings.h"
#include "pyargs.h"
#include "pyglue.h"
#include "reduce_dispatch.h"
#include "runtime.h"

namespace py = pybind11;
using namespace gompute;

namespace {

void translate(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const Error& e) {
    py::object cls = py::module_::import("gompute.errors").attr(error_kind_name(e.kind()));
    py::object code = e.code().empty() ? py::none() : py::object(py::str(e.code()));
    PyErr_SetObject(cls.ptr(), cls(e.what(), code).ptr());
  }
}

// The C++ exception being handled, as the Python error it stands for.
void set_python_error() {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const Error&) {
    translate(std::current_exception());
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
}

// tp_call of FastMap and FastReduce, and so of g.map's AutoKernel and g.reduce's AutoReduce: the
// cached launch, else self._general(*args, **kwargs). A type slot rather than a pybind11 method,
// so a call converts no arguments and pays for no overload resolution.
template <typename Fast>
PyObject* fast_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  try {
    py::object result = py::handle(self).cast<Fast&>().call(args, kwargs);
    if (result) return result.release().ptr();
    static PyObject* const general = PyUnicode_InternFromString("_general");  // kept for the process
    py::object method = py::reinterpret_steal<py::object>(PyObject_GetAttr(self, general));
    return method ? PyObject_Call(method.ptr(), args, kwargs) : nullptr;
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

// pybind11 reports an exception from a buffer function as BufferError("Error getting buffer"),
// with ours as its cause; Buffer's buffer slot raises ours instead (memoryview of a freed
// Buffer is BufferFreed, saying so).
getbufferproc pybind11_getbuffer = nullptr;

py::handle gompute_error() {
  static py::object* const type = new py::object(py::module_::import("gompute.errors").attr("GomputeError"));
  return *type;  // kept for the process
}

int buffer_getbuffer(PyObject* obj, Py_buffer* view, int flags) {
  if (pybind11_getbuffer(obj, view, flags) == 0) return 0;
  py::error_already_set failure;
  py::object cause = py::reinterpret_steal<py::object>(PyException_GetCause(failure.value().ptr()));
  if (cause && PyObject_IsInstance(cause.ptr(), gompute_error().ptr()) == 1) {
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(cause.ptr())), cause.ptr());
  } else {
    failure.restore();
  }
  return -1;
}

// A contiguous view of a host object's memory, through the buffer protocol.
struct HostView {
  Py_buffer view{};
  HostView(py::handle obj, bool writable, const char* role) {
    std::string what = std::string("the ") + role + " (" + type_name(obj) + ")";
    if (py::isinstance<Buffer>(obj) && obj.cast<const Buffer&>().context()->kind() != BackendKind::host)
      raise(ErrorKind::ArgumentError, what + " is device memory; copy between Buffers with copy_from");
    if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) {
      py::error_already_set failure;
      if (failure.matches(gompute_error())) throw failure;
      raise(ErrorKind::ArgumentError,
            what + (PyObject_CheckBuffer(obj.ptr())
                        ? " is not C-contiguous; pass np.ascontiguousarray(x)"
                        : " does not support the buffer protocol; pass a NumPy array, bytearray or memoryview"));
    }
    if (writable && view.readonly) {
      PyBuffer_Release(&view);
      raise(ErrorKind::CopyFailed, what + " is read-only; download into a writable array");
    }
  }
  ~HostView() { PyBuffer_Release(&view); }
  void* data() const { return view.buf; }
  size_t size() const { return size_t(view.len); }
};

// Keeps a HostView alive for asynchronous work; released with the GIL.
KeepAlive keep(std::shared_ptr<HostView> view) {
  release_waiting();
  auto* held = new std::shared_ptr<HostView>(std::move(view));
  return KeepAlive(held, [](const void* p) {
    with_gil_later([p] { delete static_cast<const std::shared_ptr<HostView>*>(p); });
  });
}

size_t transfer_size(const HostView& host, std::optional<size_t> nbytes, const char* what) {
  size_t n = nbytes.value_or(host.size());
  if (n > host.size())
    raise(ErrorKind::CopyFailed, std::string(what) + " of " + std::to_string(n) + " bytes: the host object holds only " +
                                     std::to_string(host.size()) + " bytes");
  return n;
}

// The bytes a transfer from Python addresses in `b`, [base, base + size): a typed view's own
// elements, which must be one run of bytes, else the buffer's. (A view's upload had written from
// the buffer's first byte, wherever the view's elements were.)
struct Span {
  size_t base, size;
};
Span transfer_span(const Buffer& b, const char* what) {
  const Layout* layout = b.typed_layout();
  if (!layout) return {0, b.nbytes()};
  if (!layout->c_contiguous())
    raise(ErrorKind::CopyFailed, std::string(what) +
                                     " through a view whose elements are not one run of bytes (strides or a "
                                     "transpose); copy through a C-contiguous view, or np.asarray(view)");
  return {size_t(layout->origin), size_t(layout->size()) * layout->itemsize()};
}

// The byte `offset` of a transfer of `n` bytes into the span, checked against it.
size_t in_span(const Span& span, size_t offset, size_t n, const char* what) {
  if (offset > span.size || n > span.size - offset) {
    const std::string end = offset + n < offset ? "past 2**64" : std::to_string(offset + n);  // wrapped around
    raise(ErrorKind::CopyFailed, std::string(what) + " of " + std::to_string(n) + " bytes at offset " +
                                     std::to_string(offset) + " overruns the " + std::to_string(span.size) +
                                     "-byte buffer (asked for bytes [" + std::to_string(offset) + ", " + end + "))");
  }
  return span.base + offset;
}

// A transfer runs with the GIL released on a Buffer of its own, copied with the GIL held: another
// thread's free() then drops a handle, not the memory under the copy (the host frees at once).
void upload(Buffer& b, py::handle src, py::handle nbytes, py::handle offset, py::handle stream_obj) {
  const size_t off = count_arg(offset, "upload: offset");
  Stream* stream = stream_arg(stream_obj, "upload: stream");
  const Span span = transfer_span(b, "upload");
  auto view = std::make_shared<HostView>(src, false, "upload source");
  size_t n = transfer_size(*view, optional_count_arg(nbytes, "upload: nbytes"), "upload");
  const size_t at = in_span(span, off, n, "upload");
  KeepAlive held = stream ? keep(view) : nullptr;
  Buffer own(b);  // see above
  py::gil_scoped_release release;
  own.upload(view->data(), n, at, stream, held);
}

void download(Buffer& b, py::handle dst, py::handle nbytes, py::handle offset, py::handle stream_obj) {
  const size_t off = count_arg(offset, "download: offset");
  Stream* stream = stream_arg(stream_obj, "download: stream");
  const Span span = transfer_span(b, "download");
  auto view = std::make_shared<HostView>(dst, true, "download destination");
  size_t n = transfer_size(*view, optional_count_arg(nbytes, "download: nbytes"), "download");
  const size_t at = in_span(span, off, n, "download");
  KeepAlive held = stream ? keep(view) : nullptr;
  Buffer own(b);  // see above
  py::gil_scoped_release release;
  own.download(view->data(), n, at, stream, held);
}

// ---- Conversions -------------------------------------------------------------------

py::object backend_enum(BackendKind kind) {
  return py::module_::import("gompute.backend").attr("Backend")(backend_name(kind));
}

uint32_t dim_value(py::handle v, const char* axis) {
  return uint32_t(ranged_arg(v, std::string("Dim3.") + axis, 1, 0x7fffffff));
}

// A g.Dim3, an int, or a tuple of up to three ints.
Dim3 to_dim3(py::handle obj) {
  Dim3 d;
  if (PyIndex_Check(obj.ptr())) {
    d.x = dim_value(obj, "x");
  } else if (py::hasattr(obj, "x") && py::hasattr(obj, "y") && py::hasattr(obj, "z")) {
    d = {dim_value(obj.attr("x"), "x"), dim_value(obj.attr("y"), "y"), dim_value(obj.attr("z"), "z")};
  } else if ((py::isinstance<py::tuple>(obj) || py::isinstance<py::list>(obj)) && py::len(obj) >= 1 &&
             py::len(obj) <= 3) {
    auto t = py::reinterpret_borrow<py::sequence>(obj);
    uint32_t* axes[] = {&d.x, &d.y, &d.z};
    const char* names[] = {"x", "y", "z"};
    for (size_t i = 0; i < t.size(); ++i) *axes[i] = dim_value(t[i], names[i]);
  } else {
    raise(ErrorKind::ArgumentError, "grid and block must be a g.Dim3, an int, or a tuple of up to three ints");
  }
  return d;
}

std::vector<const Arg*> to_args(py::handle args_obj) {
  if (py::isinstance<Arg>(args_obj)) raise(ErrorKind::ArgumentError, "launch: args is a list of arguments; pass [arg]");
  if (!py::isinstance<py::tuple>(args_obj) && !py::isinstance<py::list>(args_obj))
    raise(ErrorKind::ArgumentError, "launch: args must be a list or tuple of kernel arguments (buffer.arg_ptr(), "
                                    "g.interface.arg(g.u64(n)), ...), got " + type_name(args_obj));
  auto args = py::reinterpret_borrow<py::sequence>(args_obj);
  std::vector<const Arg*> out;
  out.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    py::handle a = args[i];
    if (!py::isinstance<Arg>(a)) {
      std::string type = py::str(py::type::handle_of(a).attr("__name__"));
      raise(ErrorKind::ArgumentError, "launch argument " + std::to_string(i) + " is of type " + type +
                                          "; pass buffer.arg_ptr() for buffers and g.interface.arg(g.u64(n)) "
                                          "(or another typed scalar, or packed params) for values");
    }
    out.push_back(a.cast<const Arg*>());
  }
  return out;
}

void launch(Kernel& k, py::handle grid, py::handle block, py::handle shared_bytes_obj, py::handle args,
            py::handle stream_obj, bool wait) {
  Dim3 g = to_dim3(grid), b = to_dim3(block);
  const auto shared_bytes = uint32_t(count_arg(shared_bytes_obj, "launch: shared_bytes", UINT32_MAX));
  Stream* stream = stream_arg(stream_obj, "launch: stream");
  std::vector<const Arg*> list = to_args(args);
  py::gil_scoped_release release;
  k.launch(g, b, shared_bytes, list, stream, wait);
}

void check_stream_device(const Buffer& b, const Stream& s) {
  if (s.context() == b.context()) return;
  if (!s.context()->alive() || !b.context()->alive())
    raise(ErrorKind::InvalidHandle,
          "the stream and the buffer are from either side of a g.runtime.shutdown(); make the old one again");
  raise(ErrorKind::ArgumentError,
        "the stream belongs to " + s.context()->describe() + ", the buffer to " + b.context()->describe());
}

// A device handle as Python sees it: the shared context of one device.
struct Device {
  std::shared_ptr<Context> ctx;
};

py::dict device_info(BackendKind kind, int ordinal) {
  Driver& drv = driver(kind);
  DeviceInfo info;
  {
    py::gil_scoped_release release;
    drv.ensure_loaded();
    info = drv.device_info(ordinal);
  }
  py::dict d;
  d["name"] = info.name;
  d["arch"] = info.arch;
  d["compute_capability"] = py::make_tuple(info.compute_major, info.compute_minor);
  d["total_memory"] = info.total_memory;
  d["multiprocessors"] = info.multiprocessors;
  d["driver_version"] = drv.driver_version();
  return d;
}

// (usable, reason, driver_version, device_count) of a backend.
py::tuple probe(BackendKind kind) {
  Driver& drv = driver(kind);
  try {
    py::gil_scoped_release release;
    drv.ensure_loaded();
  } catch (const Error& e) {
    return py::make_tuple(false, std::string(e.what()), 0, 0);
  }
  return py::make_tuple(true, "", drv.driver_version(), drv.device_count());
}

py::dict stats_dict() {
  Stats& s = stats();
  py::dict d;
  d["contexts_retained"] = s.contexts_retained.load();
  d["modules_loaded"] = s.modules_loaded.load();
  d["module_cache_hits"] = s.module_cache_hits.load();
  d["buffers_allocated"] = s.buffers_allocated.load();
  d["buffers_live"] = s.buffers_live.load();
  d["bytes_live"] = s.bytes_live.load();
  d["launches"] = s.launches.load();
  return d;
}

}  // namespace


PYBIND11_MODULE(_core, m) {
  m.doc() = "gompute's C++ core: the driver table and the runtime objects over it.";
  py::register_exception_translator(translate);
  // The Python class each C++ error kind is raised as; tests/test_facts.py checks gompute/errors.py.
  std::vector<std::string> error_kinds(std::begin(kErrorKindNames), std::end(kErrorKindNames));
  m.attr("ERROR_KINDS") = py::tuple(py::cast(error_kinds));

  m.def("probe", [](int kind) { return probe(BackendKind(kind)); }, py::arg("kind"),
        "(usable, reason, driver_version, device_count) for backend kind 0 cuda, 1 hip, 2 host.");
  m.def("device_info", [](int kind, int ordinal) { return device_info(BackendKind(kind), ordinal); });
  m.def("pointer_device", [](int kind, uint64_t ptr) { return pointer_device(BackendKind(kind), ptr); },
        py::arg("kind"), py::arg("ptr"),
        "The device `ptr` points into, as the driver tells (cuPointerGetAttribute), or -1 where it cannot.");
  m.def("from_dlpack", from_dlpack, py::arg("capsule"), py::arg("what"), py::arg("readonly") = false,
        "The array in a DLPack capsule as a Buffer (the capsule is consumed); `readonly` where the "
        "producer's arrays are immutable whatever the capsule's flags say.");
  m.def("wrap_pointer", wrap_pointer, py::arg("kind"), py::arg("ordinal"), py::arg("ptr"), py::arg("code"),
        py::arg("bits"), py::arg("shape"), py::arg("strides"), py::arg("readonly"), py::arg("owner"), py::arg("what"),
        "Someone else's array as a Buffer; `owner` is kept alive with it.");
  bind_fast_map(m, fast_call<FastMap>);
  bind_planner(m);
  bind_fast_reduce(m, fast_call<FastReduce>);
  m.def("stats", &stats_dict, "Counters of contexts, module loads and cache hits, buffers and launches.");
  m.def(
      "shutdown",
      [](std::optional<int> kind) {
        py::gil_scoped_release release;
        shutdown(kind ? std::optional<BackendKind>(BackendKind(*kind)) : std::nullopt);
      },
      py::arg("kind") = py::none());
  m.def("run_deferred_releases", [] { run_deferred_releases(); },
        "Releases host memory that finished asynchronous work let go of (normally automatic).");

  py::class_<Arg>(m, "Arg", "One kernel argument: the bytes of its storage.")
      .def(py::init([](py::bytes data) { return Arg(std::string(data)); }), py::arg("data"))
      .def_property_readonly("nbytes", [](const Arg& a) { return a.bytes().size(); })
      .def_property_readonly("data", [](const Arg& a) { return py::bytes(a.bytes()); })
      .def_property_readonly("is_buffer", [](const Arg& a) { return bool(a.allocation()); })
      .def("__repr__", [](const Arg& a) {
        return std::string(a.allocation() ? "<Arg buffer " : "<Arg ") + std::to_string(a.bytes().size()) + " bytes>";
      });

  py::class_<Buffer>(m, "Buffer", py::buffer_protocol(),
                     "Device memory: bytes, optionally read as a typed array (see view()).")
      .def_buffer(host_buffer_info)
      .def_property_readonly("nbytes", &Buffer::nbytes)
      .def_property_readonly("offset", &Buffer::offset, "Where this buffer starts in its allocation.")
      .def_property_readonly("freed", &Buffer::freed)
      .def_property_readonly("backend", [](const Buffer& b) { return backend_enum(b.context()->kind()); })
      .def_property_readonly("device", [](const Buffer& b) { return b.context()->ordinal(); })
      .def("device_addr", &Buffer::device_addr, "The raw device pointer, for kernels that take it as a scalar.")
      .def("arg_ptr", [](const Buffer& b) { return Arg(b); }, "The buffer as a kernel argument.")
      .def("_device", [](const Buffer& b) { return Device{b.context()}; })
      .def(
          "view_bytes",
          [](const Buffer& b, py::handle offset, py::handle nbytes) {
            return b.slice(count_arg(offset, "view_bytes: offset"), count_arg(nbytes, "view_bytes: nbytes"));
          },
          py::arg("offset"), py::arg("nbytes"),
           "nbytes of this buffer from offset, untyped, sharing its memory (and its read-only flag and stream).")
      .def("upload", upload, py::arg("src"), py::arg("nbytes") = py::none(), py::arg("offset") = 0,
           py::arg("stream") = py::none(), "Host -> device: nbytes (default: all of src) at offset.")
      .def(
          "upload_at",
          [](Buffer& b, py::handle src, py::handle offset, py::handle nbytes, py::handle stream) {
            upload(b, src, nbytes, offset, stream);
          },
          py::arg("src"), py::arg("offset"), py::arg("nbytes") = py::none(), py::arg("stream") = py::none())
      .def("download", download, py::arg("dst"), py::arg("nbytes") = py::none(), py::arg("offset") = 0,
           py::arg("stream") = py::none(), "Device -> host: nbytes (default: all of dst) from offset.")
      .def(
          "download_at",
          [](Buffer& b, py::handle dst, py::handle offset, py::handle nbytes, py::handle stream) {
            download(b, dst, nbytes, offset, stream);
          },
          py::arg("dst"), py::arg("offset"), py::arg("nbytes") = py::none(), py::arg("stream") = py::none())
      .def(
          "copy_from",
          [](Buffer& b, py::handle src_obj, py::handle src_offset_obj, py::handle dst_offset_obj,
             py::handle nbytes_obj, py::handle stream_obj) {
            if (!py::isinstance<Buffer>(src_obj))
              raise(ErrorKind::ArgumentError, "copy_from copies from another gompute Buffer, got " + type_name(src_obj) +
                                                  "; for host memory use upload");
            const Buffer& src = src_obj.cast<const Buffer&>();
            const size_t src_offset = count_arg(src_offset_obj, "copy_from: src_offset");
            const size_t dst_offset = count_arg(dst_offset_obj, "copy_from: dst_offset");
            const std::optional<size_t> nbytes = optional_count_arg(nbytes_obj, "copy_from: nbytes");
            Stream* stream = stream_arg(stream_obj, "copy_from: stream");
            const Span from = transfer_span(src, "copy_from (source)"), to = transfer_span(b, "copy_from");
            size_t n = nbytes.value_or(src_offset <= from.size ? from.size - src_offset : 0);
            const size_t src_at = in_span(from, src_offset, n, "copy_from (source)");
            const size_t dst_at = in_span(to, dst_offset, n, "copy_from (destination)");
            Buffer to_own(b), from_own(src);  // as upload's: the memory held, with the GIL
            py::gil_scoped_release release;
            to_own.copy_from(from_own, src_at, dst_at, n, stream);
          },
          py::arg("src"), py::arg("src_offset") = 0, py::arg("dst_offset") = 0, py::arg("nbytes") = py::none(),
          py::arg("stream") = py::none())
      .def("view", view, py::arg("dtype"), py::arg("shape"), py::arg("strides") = py::none(), py::arg("offset") = 0,
           "The same memory as a typed array: strides in bytes (default C-contiguous), offset of element 0.")
      .def_property_readonly("typed", &Buffer::typed)
      .def_property_readonly("dtype", [](const Buffer& b) { return dtype_of_layout(b.layout()); }, "A g.types scalar type.")
      .def_property_readonly("shape", [](const Buffer& b) { return py::tuple(py::cast(b.layout().shape)); })
      .def_property_readonly("strides", [](const Buffer& b) { return py::tuple(py::cast(b.layout().strides)); },
                             "In bytes.")
      .def_property_readonly("size", [](const Buffer& b) { return b.layout().size(); }, "Elements.")
      .def_property_readonly("c_contiguous", [](const Buffer& b) { return b.layout().c_contiguous(); })
      .def_property_readonly("readonly", &Buffer::readonly)
      .def_property_readonly("distinct_elements", [](const Buffer& b) { return b.layout().distinct_elements(); },
                             "Whether no two elements share memory (not so for a stride of 0).")
      .def("data_addr", &Buffer::data_addr, "The device address of element 0.")
      .def_property(
          "stream", [](const Buffer& b) { return b.stream() ? py::cast(*b.stream()) : py::none(); },
          [](Buffer& b, py::handle stream) {
            Stream* s = stream_arg(stream, "Buffer.stream");
            if (s) check_stream_device(b, *s);
            b.set_stream(s ? std::make_shared<Stream>(*s) : nullptr);
          },
          "The stream this buffer's data is ordered on (None: the default stream).")
      .def("__dlpack__", to_dlpack, py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
           py::arg("dl_device") = py::none(), py::arg("copy") = py::none())
      .def("__dlpack_device__", dlpack_device)
      .def_property_readonly("__cuda_array_interface__", cuda_array_interface)
      .def_property_readonly("__array_interface__", array_interface)
      .def("__array__", numpy_array, py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("free", &Buffer::free, "Releases the memory; idempotent. Later use raises BufferFreed.")
      .def("__reduce__", refuse_pickle)
      .def("__enter__", [](Buffer& b) -> Buffer& { return b; }, py::return_value_policy::reference)
      .def("__exit__", [](Buffer& b, py::args) { b.free(); })
      .def("__repr__", [](const Buffer& b) {
        return "<Buffer " + std::to_string(b.nbytes()) + " bytes on " + b.context()->describe() +
               (b.freed() ? ", freed>" : ">");
      });
  auto* buffer_type = reinterpret_cast<PyTypeObject*>(m.attr("Buffer").ptr());  // the module keeps it
  set_fast_path_buffer_type(buffer_type);
  m.def("current_work_stream", [](py::handle obj) { return current_work_stream(obj.ptr()); }, py::arg("obj"),
        "The stream g.map's C++ path launches on for a tensor read through its type's DLPack exchange table "
        "(torch's current stream; 0 for the default one), or None where the type carries no such table.");
  pybind11_getbuffer = buffer_type->tp_as_buffer->bf_getbuffer;
  buffer_type->tp_as_buffer->bf_getbuffer = buffer_getbuffer;

  py::class_<PinnedMemory>(m, "PinnedMemory", py::buffer_protocol(), "Page-locked host memory.")
      .def_property_readonly("nbytes", &PinnedMemory::nbytes)
      .def_buffer([](PinnedMemory& p) {
        return py::buffer_info(p.data(), 1, py::format_descriptor<uint8_t>::format(), 1, {p.nbytes()}, {1});
      });
  reinterpret_cast<PyTypeObject*>(m.attr("PinnedMemory").ptr())->tp_as_buffer->bf_getbuffer = buffer_getbuffer;

  py::class_<Stream>(m, "Stream", "An ordered queue of work on one device.")
      .def_property_readonly("handle", [](const Stream& s) { return reinterpret_cast<uintptr_t>(s.handle()); })
      .def_property_readonly("backend", [](const Stream& s) { return backend_enum(s.context()->kind()); })
      .def_property_readonly("device", [](const Stream& s) { return s.context()->ordinal(); })
      .def_property_readonly("owned", &Stream::owned)
      .def("_device", [](const Stream& s) { return Device{s.context()}; })
      .def("__repr__", [](const Stream& s) {
        return std::string(s.owned() ? "<Stream on " : "<borrowed Stream on ") + s.context()->describe() + ">";
      })
      .def("synchronize", &Stream::synchronize, py::call_guard<py::gil_scoped_release>())
      .def("deinit", &Stream::deinit, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly(
          "__cuda_stream__",
          [](const Stream& s) -> py::object {
            if (s.context()->kind() != BackendKind::cuda)
              throw py::attribute_error("__cuda_stream__ is only defined for CUDA streams");
            uintptr_t h = reinterpret_cast<uintptr_t>(s.handle());
            return py::cpp_function([h] { return py::make_tuple(0, h); });
          },
          "The CUDA stream protocol: a callable returning (0, handle).")
      .def("__enter__", [](Stream& s) -> Stream& { return s; }, py::return_value_policy::reference)
      .def("__exit__", [](Stream& s, py::args) {
        py::gil_scoped_release release;
        s.deinit();
      });

  py::class_<Event>(m, "Event", "A marker in a stream, for ordering and timing.")
      .def(
          "record",
          [](Event& e, py::handle stream) {
            Stream* s = stream_arg(stream, "Event.record: stream");
            py::gil_scoped_release release;
            e.record(s);
          },
          py::arg("stream") = py::none())
      .def(
          "wait",
          [](Event& e, py::handle stream) {
            Stream* s = stream_arg(stream, "Event.wait: stream");
            py::gil_scoped_release release;
            e.wait(s);
          },
          py::arg("stream") = py::none(), "Makes `stream` wait for this event without blocking the host.")
      .def("synchronize", &Event::synchronize, py::call_guard<py::gil_scoped_release>())
      .def("query", &Event::query)
      .def(
          "elapsed_ms",
          [](const Event& start, py::handle end) {
            if (!py::isinstance<Event>(end))
              raise(ErrorKind::ArgumentError, "elapsed_ms(end) takes the Event recorded after this one, got " +
                                                  type_name(end));
            return start.elapsed_ms(end.cast<const Event&>());
          },
          py::arg("end"));

  py::class_<Module>(m, "Module", "A loaded image; shared by every handle that loaded the same bytes.")
      .def("get_kernel", &Module::get_kernel, py::arg("symbol"))
      .def("deinit", &Module::deinit, "Releases this handle; the module stays loaded until shutdown.")
      .def("__enter__", [](Module& mod) -> Module& { return mod; }, py::return_value_policy::reference)
      .def("__exit__", [](Module& mod, py::args) { mod.deinit(); })
      .def_property_readonly("function_names", &Module::function_names)
      .def_property_readonly("id", [](const Module& mod) { return reinterpret_cast<uintptr_t>(mod.id()); },
                             "Identifies the underlying loaded module.");

  py::class_<Kernel>(m, "Kernel", "A function in a loaded module.")
      .def_property_readonly("name", &Kernel::name)
      .def("deinit", &Kernel::deinit, "Releases this handle.")
      .def("__repr__", [](const Kernel& k) { return "<Kernel " + k.name() + ">"; })
      .def_property_readonly("arity", [](const Kernel& k) -> py::object {
        return k.arity() < 0 ? py::none() : py::object(py::int_(k.arity()));
      })
      .def("launch", launch, py::arg("grid"), py::arg("block"), py::arg("shared_bytes"), py::arg("args"),
           py::arg("stream") = py::none(), py::arg("wait") = false,
           "Queues a launch (on the default stream unless `stream` is given). With wait=True it returns once\n"
           "the kernel has run, raising SyncFailed for a fault.")
      .def(
          "launch_on_stream",
          [](Kernel& k, py::handle grid, py::handle block, py::handle shared_bytes, py::handle args, py::handle stream) {
            if (stream.is_none())
              raise(ErrorKind::ArgumentError, "launch_on_stream needs a Stream; for the default stream use launch");
            launch(k, grid, block, shared_bytes, args, stream, false);
          },
          py::arg("grid"), py::arg("block"), py::arg("shared_bytes"), py::arg("args"), py::arg("stream"));
  py::class_<Device>(m, "Device")
      .def(py::init([](int kind, int ordinal) {
             py::gil_scoped_release release;
             return Device{Context::get(BackendKind(kind), ordinal)};
           }),
           py::arg("kind"), py::arg("ordinal"))
      .def_property_readonly("kind", [](const Device& d) { return int(d.ctx->kind()); })
      .def_property_readonly("ordinal", [](const Device& d) { return d.ctx->ordinal(); })
      .def_property_readonly("alive", [](const Device& d) { return d.ctx->alive(); })
      .def("describe", [](const Device& d) { return d.ctx->describe(); })
      .def("same_context", [](const Device& a, const Device& b) { return a.ctx == b.ctx; })
      .def("alloc",
           [](const Device& d, py::handle nbytes_obj) {
             const size_t nbytes = count_arg(nbytes_obj, "alloc: nbytes");
             py::gil_scoped_release release;
             return Buffer(d.ctx, nbytes);
           })
      .def("alloc_pinned",
           [](const Device& d, py::handle nbytes_obj) {
             const size_t nbytes = count_arg(nbytes_obj, "alloc_pinned: nbytes");
             py::gil_scoped_release release;
             return std::make_unique<PinnedMemory>(d.ctx, nbytes);
           })
      .def("load_module",
           [](const Device& d, py::bytes image) {
             std::string bytes(image);
             py::gil_scoped_release release;
             return Module(d.ctx->load_module(bytes));
           })
      .def("create_stream",
           [](const Device& d) {
             py::gil_scoped_release release;
             return Stream(d.ctx);
           })
      .def("default_stream", [](const Device& d) { return Stream(d.ctx, nullptr); })
      .def("wrap_stream",
           [](const Device& d, uintptr_t handle) {
             if (d.ctx->kind() == BackendKind::host && handle != 0)
               raise(ErrorKind::ArgumentError, "the host backend has no foreign streams; pass a gompute Stream");
             return Stream(d.ctx, reinterpret_cast<StreamHandle>(handle));
           })
      .def(
          "create_event",
          [](const Device& d, bool timing) {
            py::gil_scoped_release release;
            return std::make_unique<Event>(d.ctx, timing);
          },
          py::arg("timing") = true)
      .def("synchronize", [](const Device& d) { d.ctx->synchronize(); }, py::call_guard<py::gil_scoped_release>());
}
