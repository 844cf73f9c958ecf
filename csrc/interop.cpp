// Array exchange: Buffers as DLPack capsules, __cuda_array_interface__ and
// __array_interface__ dicts, and foreign arrays (capsules, raw pointers) as Buffers.
#include "interop.h"

#include <pybind11/stl.h>

#include <cstring>

#include "dlpack.h"
#include "pyargs.h"
#include "pyglue.h"

namespace py = pybind11;

namespace gompute {
namespace {

constexpr const char* kLegacyName = "dltensor";
constexpr const char* kVersionedName = "dltensor_versioned";
constexpr const char* kUsedLegacyName = "used_dltensor";
constexpr const char* kUsedVersionedName = "used_dltensor_versioned";
// The most dimensions an array read from DLPack may have: NumPy's own limit.
constexpr int32_t kMaxDims = 64;

// How errors name the array: `what` is any object whose str() does, made only on error.
std::string named(py::handle what) { return py::str(what); }

[[noreturn]] void buffer_error(const std::string& message) {
  PyErr_SetString(PyExc_BufferError, message.c_str());
  throw py::error_already_set();
}

DLDevice dl_device_of(const Context& ctx) {
  switch (ctx.kind()) {
    case BackendKind::cuda: return {kDLCUDA, ctx.ordinal()};
    case BackendKind::hip: return {kDLROCM, ctx.ordinal()};
    case BackendKind::host: return {kDLCPU, 0};
  }
  return {kDLCPU, 0};
}

// The backend that can reach memory on a DLPack device.
std::shared_ptr<Context> context_for(int32_t type, int32_t id, py::handle what) {
  BackendKind kind;
  switch (type) {
    case kDLCPU:
    case kDLCUDAHost:
    case kDLROCMHost: kind = BackendKind::host, id = 0; break;
    case kDLCUDA:
    case kDLCUDAManaged: kind = BackendKind::cuda; break;
    case kDLROCM: kind = BackendKind::hip; break;
    default: raise(ErrorKind::ArgumentError, named(what) + " lives on DLPack device type " + std::to_string(type) +
                                                 ", which gompute cannot reach (it knows CPU, CUDA and ROCm memory)");
  }
  try {
    return Context::get(kind, id);
  } catch (const Error& e) {
    raise(ErrorKind::BackendUnavailable,
          named(what) + " is on " + backend_name(kind) + ":" + std::to_string(id) + ", which gompute cannot use: " +
              e.what());
  }
}

// No allocation is at address 0: an array with elements there is a producer's mistake, and a
// kernel launched on it would fault. An array with no elements reads nothing, so it may.
void check_data(uintptr_t data, const Layout& layout, py::handle what, const char* field) {
  if (data == 0 && layout.size() != 0)
    raise(ErrorKind::ArgumentError, named(what) + ": its " + field + " is NULL (0), but it has " +
                                        std::to_string(layout.size()) +
                                        " elements; an array with elements must give the address of its memory");
}

void check_dtype(uint8_t code, uint8_t bits, uint16_t lanes, py::handle what) {
  const bool whole = bits == 8 || bits == 16 || bits == 32 || bits == 64;
  bool ok = lanes == 1 && ((code == kDLBool && bits == 8) || (code == kDLFloat && bits >= 16 && whole) ||
                           (code == kDLBfloat && bits == 16) || (code == kDLComplex && (bits == 64 || bits == 128)) ||
                           ((code == kDLInt || code == kDLUInt) && whole));
  if (!ok)
    raise(ErrorKind::ArgumentError, named(what) + " has DLPack dtype (code " + std::to_string(code) + ", " +
                                        std::to_string(bits) + " bits, " + std::to_string(lanes) +
                                        " lanes), which gompute has no type for");
}

// A capsule's ndim sizes what is read through its shape and strides pointers: a negative or
// absurd one, or a shape pointer missing, is refused before anything is read through them.
void check_dims(const DLTensor& t, py::handle what) {
  if (t.ndim < 0 || t.ndim > kMaxDims)
    raise(ErrorKind::ArgumentError, named(what) + ": its DLPack ndim is " + std::to_string(t.ndim) +
                                        "; gompute reads arrays of 0 to " + std::to_string(kMaxDims) + " dimensions");
  if (t.ndim > 0 && !t.shape)
    raise(ErrorKind::ArgumentError, named(what) + ": its DLPack shape pointer is NULL, with ndim " +
                                        std::to_string(t.ndim));
}

// ---- export ----------------------------------------------------------------------

struct ExportContext {
  Buffer buffer;  // holds the allocation (and so the exporting memory) alive
  std::vector<int64_t> shape, strides;
};

template <typename Managed>
void delete_managed(Managed* self) {
  // Only C++ state here (a foreign owner is released through with_gil_later), so any
  // thread may call this, with or without the GIL.
  delete static_cast<ExportContext*>(self->manager_ctx);
  delete self;
}

template <typename Managed>
void capsule_destructor(PyObject* capsule) {
  const char* name = std::is_same_v<Managed, DLManagedTensorVersioned> ? kVersionedName : kLegacyName;
  if (!PyCapsule_IsValid(capsule, name)) return;  // renamed "used_...": the consumer owns it
  auto* managed = static_cast<Managed*>(PyCapsule_GetPointer(capsule, name));
  if (managed && managed->deleter) managed->deleter(managed);
}

template <typename Managed>
py::capsule make_capsule(const Buffer& buffer, uint64_t flags) {
  Layout layout = buffer.layout();
  auto ctx = std::make_unique<ExportContext>(ExportContext{buffer, layout.shape, {}});
  for (int64_t stride : layout.strides) {
    if (stride % int64_t(layout.itemsize()) != 0)
      buffer_error("this view's strides are not whole elements, which DLPack cannot describe");
    ctx->strides.push_back(stride / int64_t(layout.itemsize()));
  }
  auto* managed = new Managed{};
  DLTensor& t = managed->dl_tensor;
  t.data = reinterpret_cast<void*>(buffer.data_addr());
  t.device = dl_device_of(*buffer.context());
  t.ndim = int32_t(ctx->shape.size());
  t.dtype = {layout.code, layout.bits, 1};
  t.shape = ctx->shape.data();
  t.strides = ctx->strides.data();
  t.byte_offset = 0;
  managed->manager_ctx = ctx.release();
  managed->deleter = delete_managed<Managed>;
  if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
    managed->version = {DLPACK_MAJOR_VERSION, 0};
    managed->flags = flags;
  }
  const char* name = std::is_same_v<Managed, DLManagedTensorVersioned> ? kVersionedName : kLegacyName;
  PyObject* capsule = PyCapsule_New(managed, name, capsule_destructor<Managed>);
  if (!capsule) {
    managed->deleter(managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

// A copy of the bytes `buffer`'s elements touch, on `ctx` (its own device, or the host),
// read through the same layout.
Buffer copy_to(const Buffer& buffer, const std::shared_ptr<Context>& ctx) {
  Layout layout = buffer.layout();
  auto [lo, hi] = layout.extent();
  Buffer out(ctx, size_t(hi - lo));
  if (hi > lo) {
    py::gil_scoped_release release;
    if (ctx == buffer.context()) {
      out.copy_from(buffer, size_t(int64_t(buffer.layout().origin) + lo), 0, size_t(hi - lo), nullptr);
    } else {
      std::vector<unsigned char> staging(size_t(hi - lo));
      Buffer(buffer).download(staging.data(), staging.size(), size_t(layout.origin + lo), nullptr, nullptr);
      out.upload(staging.data(), staging.size(), 0, nullptr, nullptr);
    }
  }
  layout.origin = -lo;
  return out.view(layout);
}

// Orders the consumer's stream after the buffer's, without blocking the host (CUDA
// and HIP); on the host backend, waits for the buffer's work, as CPU consumers expect.
void order_for_consumer(const Buffer& buffer, py::handle stream) {
  const auto& ctx = buffer.context();
  if (ctx->kind() == BackendKind::host) {
    if (!stream.is_none())  // the array API: a device without streams takes only None
      raise(ErrorKind::ArgumentError, "__dlpack__: a host buffer has no streams; stream= must be None, got " +
                                          std::string(py::repr(stream)));
    py::gil_scoped_release release;
    if (buffer.stream())
      buffer.stream()->synchronize();
    else
      ctx->drv().stream_synchronize(nullptr);
    return;
  }
  // The array API's stream numbers: on CUDA None and 1 are the legacy default stream (the
  // driver's null stream), 2 the per-thread one, 0 is refused as ambiguous; on ROCm None and
  // 0 are the default stream, and 1 and 2 are not used.
  const bool rocm = ctx->kind() == BackendKind::hip;
  const intptr_t legacy = rocm ? 0 : 1;
  intptr_t consumer = legacy;
  if (!stream.is_none()) {
    consumer = intptr_t(int64_arg(stream, "__dlpack__: stream"));
    if (consumer == -1) return;  // the consumer asked for no synchronization
    if (consumer < -1)  // no stream: the driver would take it as a handle and may crash on it
      buffer_error("stream=" + std::to_string(consumer) + " is not a stream in DLPack (-1 is the only negative one: "
                   "no synchronization); pass the consumer's stream handle, or None");
    if (!rocm && consumer == 0) buffer_error("stream=0 is ambiguous in DLPack; pass 1 for the legacy default stream");
    if (rocm && (consumer == 1 || consumer == 2))
      buffer_error("stream=" + std::to_string(consumer) + " is not a ROCm stream in DLPack; pass 0 for the default stream");
  }
  StreamHandle producer = buffer.stream() ? buffer.stream()->handle() : nullptr;
  auto normalized = [legacy](intptr_t h) { return h == 0 ? legacy : h; };  // null is the default stream
  if (normalized(reinterpret_cast<intptr_t>(producer)) == consumer) return;
  py::gil_scoped_release release;
  Event ready(ctx, false);
  Stream producer_stream(ctx, producer), consumer_stream(ctx, reinterpret_cast<StreamHandle>(consumer));
  ready.record(&producer_stream);
  ready.wait(&consumer_stream);
}



// The NumPy typestr of a layout's dtype ("<f4", "|b1", "<c8").
std::string typestr(const Layout& l) {
  // An AttributeError: the interfaces are then absent, and a consumer probing them with
  // hasattr (CuPy, NumPy, gompute itself) goes on to DLPack, which carries bfloat16.
  if (l.code == kDLBfloat) throw py::attribute_error("bfloat16 has no NumPy typestr; exchange it through DLPack");
  const char kind = l.code == kDLInt     ? 'i'
                    : l.code == kDLUInt  ? 'u'
                    : l.code == kDLFloat ? 'f'
                    : l.code == kDLComplex ? 'c'
                                         : 'b';
  return std::string(l.itemsize() == 1 ? "|" : "<") + kind + std::to_string(l.itemsize());
}

// The struct-module format of a layout's dtype, for the buffer protocol.
std::string struct_format(const Layout& l) {
  switch (l.code) {
    case 0: return l.bits == 8 ? "b" : l.bits == 16 ? "h" : l.bits == 32 ? "i" : "q";
    case 1: return l.bits == 8 ? "B" : l.bits == 16 ? "H" : l.bits == 32 ? "I" : "Q";
    case 2: return l.bits == 16 ? "e" : l.bits == 32 ? "f" : "d";
    case 5: return l.bits == 64 ? "Zf" : "Zd";  // PEP 3118's complex, as NumPy spells it
    case 6: return "?";
  }
  raise(ErrorKind::ArgumentError, "bfloat16 has no buffer-protocol format; exchange it through DLPack");
}

py::tuple strides_or_none(const Layout& l, py::object* out) {
  *out = l.c_contiguous() ? py::none() : py::object(py::tuple(py::cast(l.strides)));
  return py::tuple(py::cast(l.shape));
}

py::dict interface_dict(const Buffer& b, int version) {
  Layout l = b.layout();
  py::dict d;
  py::object strides;
  d["shape"] = strides_or_none(l, &strides);
  d["strides"] = strides;
  d["typestr"] = typestr(l);
  py::list descr;
  descr.append(py::make_tuple("", typestr(l)));
  d["descr"] = descr;
  d["data"] = py::make_tuple(l.size() == 0 ? uintptr_t(0) : uintptr_t(b.data_addr()), b.readonly());
  d["version"] = version;
  return d;
}

}  // namespace

py::object dtype_of_layout(const Layout& l) {
  // Looked up once; never released (it lives as long as the interpreter anyway).
  static py::object* from_dlpack = new py::object(py::module_::import("gompute.types").attr("from_dlpack"));
  return (*from_dlpack)(l.code, l.bits);
}

Buffer view(const Buffer& b, py::handle dtype, py::handle shape, py::handle strides, py::handle offset) {
  py::object t = py::module_::import("gompute.types").attr("resolve")(dtype);
  Layout l;
  l.code = t.attr("dlpack_code").cast<uint8_t>();
  l.bits = t.attr("bits").cast<uint8_t>();
  l.shape = ints_arg(shape, "view: shape");
  if (strides.is_none()) {
    l.strides.resize(l.shape.size());
    int64_t running = int64_t(l.itemsize());
    for (size_t i = l.shape.size(); i-- > 0;) {
      l.strides[i] = running;
      running *= l.shape[i];
    }
  } else {
    l.strides = ints_arg(strides, "view: strides");
  }
  l.origin = int64_arg(offset, "view: offset");
  return b.view(std::move(l));
}

// CUDA Array Interface v3, with the stream the data is ordered on (never 0).
py::dict cuda_array_interface(const Buffer& b) {
  if (b.context()->kind() != BackendKind::cuda)
    throw py::attribute_error("__cuda_array_interface__ is only defined for CUDA buffers");
  b.exported_by_pointer();
  py::dict d = interface_dict(b, 3);
  d["mask"] = py::none();
  uintptr_t stream = b.stream() ? reinterpret_cast<uintptr_t>(b.stream()->handle()) : 0;
  d["stream"] = stream ? stream : uintptr_t(1);
  return d;
}

py::dict array_interface(const Buffer& b) {
  if (b.context()->kind() != BackendKind::host)
    throw py::attribute_error("__array_interface__ is only defined for host buffers; copy device data with download");
  b.exported_by_pointer();
  b.context()->drv().stream_synchronize(b.stream() ? b.stream()->handle() : nullptr);
  return interface_dict(b, 3);
}

py::object numpy_array(py::handle self, py::handle dtype, py::handle copy) {
  const Buffer& b = self.cast<const Buffer&>();
  if (b.context()->kind() != BackendKind::host)
    raise(ErrorKind::ArgumentError, "a " + std::string(backend_name(b.context()->kind())) +
                                        " Buffer is device memory, which NumPy cannot view; download it into a NumPy "
                                        "array (buffer.download(array)), or hand it to a GPU library through DLPack");
  if (b.typed() && b.layout().code == kDLBfloat)
    raise(ErrorKind::ArgumentError, "NumPy has no bfloat16: take a bf16 Buffer through DLPack (torch.from_dlpack, "
                                    "jax.dlpack.from_dlpack) or view its bits (buffer.view(g.u16, shape))");
  return py::module_::import("numpy").attr("array")(self, py::arg("dtype") = dtype, py::arg("copy") = copy);
}

py::object refuse_pickle(const Buffer& b) {
  raise(ErrorKind::ArgumentError, "a Buffer is memory of this process's " + b.context()->describe() +
                                      " runtime and does not pickle or copy; send its values instead "
                                      "(np.asarray(buffer) on the host, buffer.download(array) anywhere)");
}

py::buffer_info host_buffer_info(Buffer& b) {
  if (b.context()->kind() != BackendKind::host)
    raise(ErrorKind::ArgumentError, "a " + std::string(backend_name(b.context()->kind())) +
                                        " buffer is device memory; download it into a NumPy array instead");
  b.exported_by_pointer();
  Layout l = b.layout();
  {
    py::gil_scoped_release release;
    b.context()->drv().stream_synchronize(b.stream() ? b.stream()->handle() : nullptr);
  }
  return py::buffer_info(reinterpret_cast<void*>(b.data_addr()), ssize_t(l.itemsize()), struct_format(l),
                         ssize_t(l.shape.size()), std::vector<ssize_t>(l.shape.begin(), l.shape.end()),
                         std::vector<ssize_t>(l.strides.begin(), l.strides.end()), b.readonly());
}


py::tuple dlpack_device(const Buffer& buffer) {
  DLDevice d = dl_device_of(*buffer.context());
  return py::make_tuple(int(d.device_type), d.device_id);
}

py::capsule to_dlpack(const Buffer& buffer, py::handle stream, py::handle max_version, py::handle dl_device,
                      py::handle copy) {
  buffer.allocation();  // raises BufferFreed
  bool versioned = false;
  if (!max_version.is_none()) {
    // Python ints, not bools; any size (a major version past 2**63 is still past 1).
    auto whole = [](py::handle v) { return PyLong_Check(v.ptr()) && !PyBool_Check(v.ptr()); };
    if (!py::isinstance<py::tuple>(max_version) || py::len(max_version) != 2 ||
        !whole(max_version.cast<py::tuple>()[0]) || !whole(max_version.cast<py::tuple>()[1]))
      raise(ErrorKind::ArgumentError, "max_version is a (major, minor) tuple of ints, or None; got " +
                                          py::repr(max_version).cast<std::string>());
    versioned = py::int_(max_version.cast<py::tuple>()[0]) >= py::int_(1);
  }
  if (!copy.is_none() && !PyBool_Check(copy.ptr()))
    raise(ErrorKind::ArgumentError, "__dlpack__: copy= is True, False or None, got " + std::string(py::repr(copy)));
  bool must_copy = copy.ptr() == Py_True;
  const bool may_copy = copy.is_none() || must_copy;
  std::shared_ptr<Context> target = buffer.context();
  if (!dl_device.is_none()) {
    if (!py::isinstance<py::tuple>(dl_device) || py::len(dl_device) != 2)
      raise(ErrorKind::ArgumentError, "__dlpack__: dl_device= is a (device_type, device_id) tuple, as "
                                      "__dlpack_device__() returns, got " + std::string(py::repr(dl_device)));
    auto want = dl_device.cast<py::tuple>();
    const auto type = ranged_arg(want[0], "__dlpack__: dl_device's device_type", INT32_MIN, INT32_MAX);
    const auto id = ranged_arg(want[1], "__dlpack__: dl_device's device_id", INT32_MIN, INT32_MAX);
    DLDevice have = dl_device_of(*buffer.context());
    if (type != have.device_type || id != have.device_id) {
      if (!may_copy) buffer_error("exporting to another device needs a copy, and copy=False was asked");
      if (type != kDLCPU) buffer_error("gompute copies across devices only to the CPU (kDLCPU)");
      target = Context::get(BackendKind::host, 0);
      must_copy = true;
    }
  }
  Buffer source = buffer;
  if (must_copy) {
    order_for_consumer(buffer, py::none());  // the copy runs on the default stream
    source = copy_to(buffer, target);
  }
  order_for_consumer(source, stream);
  bool copied = must_copy;
  // A copy is the consumer's own, so it is writable whatever the original was.
  uint64_t flags = copied ? DLPACK_FLAG_BITMASK_IS_COPIED : (buffer.readonly() ? DLPACK_FLAG_BITMASK_READ_ONLY : 0);
  if (versioned) return make_capsule<DLManagedTensorVersioned>(source, flags);
  if (buffer.readonly() && !copied)
    buffer_error("a read-only buffer can only be exported as DLPack 1.0 (ask with max_version=(1, 0))");
  return make_capsule<DLManagedTensor>(source, 0);
}

Buffer from_dlpack(py::capsule capsule, py::object what, bool readonly) {
  PyObject* cap = capsule.ptr();
  const char* name = PyCapsule_GetName(cap);
  bool versioned = name && std::strcmp(name, kVersionedName) == 0;
  if (!versioned && !(name && std::strcmp(name, kLegacyName) == 0)) {
    bool used = name && (std::strcmp(name, kUsedLegacyName) == 0 || std::strcmp(name, kUsedVersionedName) == 0);
    raise(ErrorKind::ArgumentError, named(what) + (used ? ": this DLPack capsule was already consumed; ask for a new one"
                                                 : ": not a DLPack capsule (named '" + std::string(name ? name : "") + "')"));
  }
  void* managed = PyCapsule_GetPointer(cap, name);
  DLTensor* t;
  if (versioned) {
    auto* mv = static_cast<DLManagedTensorVersioned*>(managed);
    if (mv->version.major != DLPACK_MAJOR_VERSION)
      raise(ErrorKind::ArgumentError, named(what) + ": DLPack version " + std::to_string(mv->version.major) +
                                          " is not supported (gompute reads 1.x)");
    t = &mv->dl_tensor;
    readonly = readonly || (mv->flags & DLPACK_FLAG_BITMASK_READ_ONLY);
  } else {
    t = &static_cast<DLManagedTensor*>(managed)->dl_tensor;
  }
  check_dtype(t->dtype.code, t->dtype.bits, t->dtype.lanes, what);
  check_dims(*t, what);
  auto ctx = context_for(t->device.device_type, t->device.device_id, what);
  Layout layout;
  layout.code = t->dtype.code;
  layout.bits = t->dtype.bits;
  layout.shape.assign(t->shape, t->shape + t->ndim);
  layout.strides.resize(t->ndim);
  // A layout that does not fit is refused with the capsule unconsumed: its destructor returns it.
  int64_t itemsize = int64_t(layout.itemsize()), running = itemsize;
  bool overflows = false;
  for (int i = t->ndim; i-- > 0;) {
    if (t->strides)
      overflows |= __builtin_mul_overflow(t->strides[i], itemsize, &layout.strides[i]);
    else
      layout.strides[i] = running;
    if (layout.shape[i] > 0) overflows |= __builtin_mul_overflow(running, layout.shape[i], &running);
  }
  layout.check_fits(named(what));  // negative extents first, then the byte span
  if (overflows)
    raise(ErrorKind::ArgumentError, named(what) + ": its shape and strides reach past 2**63 elements or bytes");
  check_data(reinterpret_cast<uintptr_t>(t->data), layout, what, "DLPack data pointer");
  DevicePtr data = reinterpret_cast<DevicePtr>(t->data) + t->byte_offset;
  // Consumed: from here on the deleter is ours to call, once.
  PyCapsule_SetName(cap, versioned ? kUsedVersionedName : kUsedLegacyName);
  KeepAlive owner(managed, [versioned](const void* p) {
    with_gil_later([p, versioned] {
      if (versioned) {
        auto* mv = static_cast<DLManagedTensorVersioned*>(const_cast<void*>(p));
        if (mv->deleter) mv->deleter(mv);
      } else {
        auto* m = static_cast<DLManagedTensor*>(const_cast<void*>(p));
        if (m->deleter) m->deleter(m);
      }
    });
  });
  return Buffer::wrap(ctx, data, std::move(layout), std::move(owner), readonly);
}

Buffer wrap_pointer(int kind, int ordinal, uintptr_t ptr, uint8_t code, uint8_t bits, std::vector<int64_t> shape,
                    std::vector<int64_t> strides, bool readonly, py::object owner, py::object what) {
  check_dtype(code, bits, 1, what);
  std::shared_ptr<Context> ctx;
  try {
    ctx = Context::get(BackendKind(kind), ordinal);
  } catch (const Error& e) {
    raise(ErrorKind::BackendUnavailable, named(what) + " is on " + backend_name(BackendKind(kind)) + ":" +
                                             std::to_string(ordinal) + ", which gompute cannot use: " + e.what());
  }
  Layout layout;
  layout.code = code;
  layout.bits = bits;
  layout.shape = std::move(shape);
  layout.strides = std::move(strides);
  if (layout.shape.size() != layout.strides.size())
    raise(ErrorKind::ArgumentError, named(what) + ": shape and strides differ in length");
  layout.check_fits(named(what));
  check_data(ptr, layout, what, "data pointer");
  return Buffer::wrap(ctx, ptr, std::move(layout), keep_python(std::move(owner)), readonly);
}

}  // namespace gompute
