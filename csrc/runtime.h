// The runtime objects, written once against the driver table: Context, Buffer,
// PinnedMemory, Stream, Event, Module, Kernel, Arg. No Python in here.
//
// Ownership (see DESIGN.md): every object holds a shared_ptr to its Context; a Kernel
// holds its Module. A Context lives in a process-wide registry from its first use
// until shutdown(); after shutdown every old handle raises InvalidHandle.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "driver.h"

namespace gompute {

struct Stats {
  std::atomic<uint64_t> contexts_retained{0};
  std::atomic<uint64_t> modules_loaded{0};       // images handed to the driver
  std::atomic<uint64_t> module_cache_hits{0};    // load_module answered from the cache
  std::atomic<uint64_t> buffers_allocated{0};
  std::atomic<uint64_t> buffers_live{0};
  std::atomic<uint64_t> bytes_live{0};
  std::atomic<uint64_t> launches{0};
};
Stats& stats();

struct StreamState;
struct ModuleState;

// A device's primary context, shared by every handle on that device.
class Context : public std::enable_shared_from_this<Context> {
 public:
  Context(BackendKind kind, int ordinal);
  ~Context();

  // The context of (kind, ordinal), retained at first use. Throws BackendUnavailable.
  static std::shared_ptr<Context> get(BackendKind kind, int ordinal);

  Driver& drv() const { return drv_; }
  BackendKind kind() const { return kind_; }
  int ordinal() const { return ordinal_; }
  std::string describe() const;  // "cuda:0"
  bool alive() const { return alive_.load(); }
  // SMs or compute units (the host: worker threads), asked of the driver once: a launch sizes
  // its grid by them.
  int multiprocessors() const {
    int n = multiprocessors_.load(std::memory_order_relaxed);
    if (n < 0) multiprocessors_.store(n = drv_.device_info(ordinal_).multiprocessors, std::memory_order_relaxed);
    return n;
  }

  // Checks the context is alive and current on the calling thread.
  void enter();

  std::shared_ptr<ModuleState> load_module(const std::string& image);
  // Frees device memory once no queued work can still use it: at once on the host
  // (whose queued work holds what it uses), after the next device-wide synchronize on
  // a GPU, or sooner when much is waiting.
  void release(DevicePtr ptr, size_t nbytes) noexcept;
  // Synchronizes the device and frees what release() deferred. True if anything was freed.
  bool flush_releases();
  void track(const std::shared_ptr<StreamState>& stream);
  void synchronize();
  // Synchronizes and destroys the streams, unloads the modules, releases the context.
  void shutdown();

 private:
  Driver& drv_;
  BackendKind kind_;
  int ordinal_;
  uint64_t id_;  // unique per process, unlike addresses
  ContextHandle handle_ = nullptr;
  std::atomic<bool> alive_{true};
  mutable std::atomic<int> multiprocessors_{-1};
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<ModuleState>> modules_;  // image bytes -> module
  std::mutex release_mu_;
  std::vector<DevicePtr> deferred_;
  size_t deferred_bytes_ = 0;
  void free_deferred(std::vector<DevicePtr> ptrs) noexcept;
  std::vector<std::weak_ptr<StreamState>> streams_;
};

// Tears down every context of `kind` (all backends when empty).
void shutdown(std::optional<BackendKind> kind);

// Device memory: gompute's own (freed when the last Buffer and in-flight operation
// holding it let go), or someone else's, kept alive through `owner`.
struct Allocation {
  std::shared_ptr<Context> ctx;
  DevicePtr ptr = 0;
  size_t nbytes = 0;
  KeepAlive owner;  // set for foreign memory, which gompute never frees
  ~Allocation();
};

class Stream;

// How a Buffer's bytes read as an array. Strides are in bytes and may be negative or
// zero (broadcast); `origin` is where element 0 sits, counted from the buffer's start.
// A Buffer without one is untyped: uint8 of nbytes.
// Whether no two of an array's elements share memory: its dimensions, by stride, each step past
// all the ones inside it (a stride 0 from expand or broadcast_to fails; so may an exotic
// interleaving). Strides in bytes; an array with no elements has distinct ones.
bool distinct_elements(const int64_t* shape, const int64_t* strides, int ndim, int64_t itemsize);

struct Layout {
  uint8_t code = 1;  // DLPack type code
  uint8_t bits = 8;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int64_t origin = 0;

  size_t itemsize() const { return (bits + 7) / 8; }
  int64_t size() const;
  bool c_contiguous() const;
  // The bytes the elements touch, relative to element 0: [lo, hi). Both 0 when empty.
  std::pair<int64_t, int64_t> extent() const;
  // Raises ArgumentError, naming `what`, unless no extent is negative and the element count
  // and the bytes spanned fit in 64 bits (extent() and size() may be used after it).
  void check_fits(const std::string& what) const;
  bool distinct_elements() const {
    return gompute::distinct_elements(shape.data(), strides.data(), int(shape.size()), int64_t(itemsize()));
  }
  static Layout bytes(size_t nbytes);
};

class Buffer {
 public:
  // New device memory.
  Buffer(std::shared_ptr<Context> ctx, size_t nbytes);
  // `nbytes` of an existing allocation from `offset` (a view, or foreign memory).
  Buffer(std::shared_ptr<Allocation> alloc, size_t offset, size_t nbytes);
  // Someone else's array at `data` (element 0), kept alive through `owner`.
  static Buffer wrap(std::shared_ptr<Context> ctx, DevicePtr data, Layout layout, KeepAlive owner, bool readonly);

  // The same bytes read through `layout`; refused if an element falls outside them.
  Buffer view(Layout layout) const;
  // `nbytes` of these bytes from `offset`, untyped.
  Buffer slice(size_t offset, size_t nbytes) const;
  Layout layout() const { return layout_ ? *layout_ : Layout::bytes(nbytes_); }
  bool typed() const { return layout_.has_value(); }
  const Layout* typed_layout() const { return layout_ ? &*layout_ : nullptr; }  // no copy; null untyped
  // Where element 0 is: device_addr() + layout().origin.
  DevicePtr data_addr() const;
  bool readonly() const { return readonly_; }
  void set_readonly(bool readonly) { readonly_ = readonly; }
  // The stream the data is ordered on (nullptr: the default stream).
  const std::shared_ptr<Stream>& stream() const { return stream_; }
  void set_stream(std::shared_ptr<Stream> stream) { stream_ = std::move(stream); }

  size_t nbytes() const { return nbytes_; }
  size_t offset() const { return offset_; }
  const std::shared_ptr<Context>& context() const { return ctx_; }
  bool freed() const { return !alloc_; }
  DevicePtr device_addr() const;
  // The allocation, checked live; what launches and async copies keep alive.
  const std::shared_ptr<Allocation>& allocation() const;

  void upload(const void* src, size_t n, size_t offset, Stream* stream, KeepAlive keep);
  void download(void* dst, size_t n, size_t offset, Stream* stream, KeepAlive keep);
  void copy_from(const Buffer& src, size_t src_offset, size_t dst_offset, size_t n, Stream* stream);
  // Drops this Buffer's hold on its memory: freed once nothing else holds it (views, queued
  // work, DLPack capsules, and an export by pointer: see exported_by_pointer).
  void free();
  // For the exports that hand out a raw pointer and keep only this Buffer object alive (the
  // buffer protocol, __array_interface__, __cuda_array_interface__): the memory then lives
  // as long as the Buffer object, free() or not, so a consumer never reads freed memory.
  void exported_by_pointer() const { exported_ = allocation(); }

 private:
  void check_range(const char* what, size_t offset, size_t n) const;
  std::shared_ptr<Context> ctx_;
  size_t offset_ = 0;
  size_t nbytes_;
  std::shared_ptr<Allocation> alloc_;
  mutable std::shared_ptr<Allocation> exported_;  // set by exported_by_pointer
  std::optional<Layout> layout_;
  bool readonly_ = false;
  std::shared_ptr<Stream> stream_;
};

// Page-locked host memory, for asynchronous copies that overlap with work.
class PinnedMemory {
 public:
  PinnedMemory(std::shared_ptr<Context> ctx, size_t nbytes);
  ~PinnedMemory();
  void* data() const;  // InvalidHandle once its runtime is shut down
  size_t nbytes() const { return nbytes_; }

 private:
  std::shared_ptr<Context> ctx_;
  void* data_ = nullptr;
  size_t nbytes_;
};

struct StreamState {
  std::shared_ptr<Context> ctx;
  StreamHandle handle = nullptr;
  bool owned = false;   // false: a foreign handle gompute must not destroy
  bool destroyed = false;
  std::mutex mu;
  void destroy();       // idempotent
  // The last handle gone: a stream dropped without deinit() releases its driver stream (on
  // the host, a thread), which nothing else could reach to release it later.
  ~StreamState() { destroy(); }
};

class Stream {
 public:
  // A new stream on `ctx`.
  explicit Stream(std::shared_ptr<Context> ctx);
  // A handle someone else owns (the default stream, a framework's stream).
  Stream(std::shared_ptr<Context> ctx, StreamHandle borrowed);

  StreamHandle handle() const;  // checked live
  const std::shared_ptr<Context>& context() const { return state_->ctx; }
  bool owned() const { return state_->owned; }
  void synchronize();
  void deinit();

 private:
  std::shared_ptr<StreamState> state_;
};

class Event {
 public:
  Event(std::shared_ptr<Context> ctx, bool timing);
  ~Event();
  void record(Stream* stream);
  void wait(Stream* stream);  // `stream` waits for this event, without blocking the host
  void synchronize();
  bool query();
  float elapsed_ms(const Event& end) const;

 private:
  EventHandle handle() const;
  std::shared_ptr<Context> ctx_;
  EventHandle handle_;
  bool timing_;
};

struct ModuleState {
  std::shared_ptr<Context> ctx;
  ModuleHandle handle = nullptr;
  std::vector<std::string> names;
  bool unloaded = false;
};

class Kernel;

// A handle on a loaded module. deinit() releases the handle; the module stays loaded
// (for other handles and kernels) until shutdown.
class Module {
 public:
  explicit Module(std::shared_ptr<ModuleState> state) : state_(std::move(state)) {}
  Kernel get_kernel(const std::string& name) const;
  std::vector<std::string> function_names() const { return state().names; }
  const ModuleState* id() const { return &state(); }
  void deinit() { state_.reset(); }

 private:
  const ModuleState& state() const;
  std::shared_ptr<ModuleState> state_;
};

// One launch argument: its bytes, and the allocation it refers to (if a buffer).
class Arg {
 public:
  explicit Arg(std::string bytes) : bytes_(std::move(bytes)) {}
  explicit Arg(const Buffer& buffer);
  const std::string& bytes() const { return bytes_; }
  const std::shared_ptr<Allocation>& allocation() const { return alloc_; }

 private:
  std::string bytes_;
  std::shared_ptr<Allocation> alloc_;
};

class Kernel {
 public:
  Kernel(std::shared_ptr<ModuleState> module, FunctionHandle fn, std::string name, int arity)
      : module_(std::move(module)), fn_(fn), name_(std::move(name)), arity_(arity) {}
  const std::string& name() const { return name_; }
  int arity() const { return arity_; }  // -1: unknown
  void deinit() { module_.reset(); }
  // Queues the launch on `stream` (nullptr: the default stream); with `wait`, returns
  // once it has run (a fault then raises SyncFailed here).
  void launch(Dim3 grid, Dim3 block, uint32_t shared_bytes, const std::vector<const Arg*>& args, Stream* stream,
              bool wait = false);
  // The same from raw argument bytes (`args[i]` points at `sizes[i]` bytes) on a raw
  // stream handle of this kernel's device, keeping no allocation alive: for callers whose
  // arguments are addresses of memory they hold themselves (g.map's fast path). The function
  // is the module's own, so an invalid handle is the stream's: one the arrays named (a
  // __cuda_array_interface__ 'stream') that the driver does not know, which the error names.
  void launch(Dim3 grid, Dim3 block, uint32_t shared_bytes, void* const* args, const size_t* sizes, size_t nargs,
              StreamHandle stream, bool wait = false) {
    try {
      submit(grid, block, shared_bytes, args, sizes, nargs, stream, nullptr, wait);
    } catch (const Error& e) {
      if (!stream || (e.code() != "CUDA_ERROR_INVALID_HANDLE" && e.code() != "hipErrorInvalidHandle")) throw;
      const std::string handle = std::to_string(reinterpret_cast<uintptr_t>(stream));
      throw Error(e.kind(),
                  std::string(e.what()) + ": the arrays' stream " + handle +
                      " (a __cuda_array_interface__ 'stream', a Buffer's, or torch's current one) is no stream of " +
                      context()->describe(),
                  e.code());
    }
  }
  // The context the kernel runs in (null once deinit()ed).
  const Context* context() const;

 private:
  void submit(Dim3 grid, Dim3 block, uint32_t shared_bytes, void* const* args, const size_t* sizes, size_t nargs,
              StreamHandle stream, KeepAlive keep, bool wait);

  std::shared_ptr<ModuleState> module_;
  FunctionHandle fn_;
  std::string name_;
  int arity_;
};

}  // namespace gompute
