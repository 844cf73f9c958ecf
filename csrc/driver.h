// The driver table: the one interface every backend implements.
//
// Each backend (driver_cuda.cpp, driver_hip.cpp, driver_host.cpp) is a thin
// translation of these calls to its vendor API. Everything above this file
// (runtime.h) is written once against it. See DESIGN.md for the ownership and
// error rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "errors.h"

namespace gompute {

enum class BackendKind { cuda = 0, hip = 1, host = 2 };

const char* backend_name(BackendKind kind);

using DevicePtr = uint64_t;
using StreamHandle = void*;  // nullptr: the device's default (legacy) stream
using EventHandle = void*;
using ModuleHandle = void*;
using FunctionHandle = void*;
using ContextHandle = void*;
// Whatever must outlive an asynchronous operation (the buffers and host memory it
// touches). The GPU drivers order frees after in-flight work themselves and drop it
// at once; the host driver holds it until the operation has run.
using KeepAlive = std::shared_ptr<const void>;

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

struct DeviceInfo {
  std::string name;
  std::string arch;  // "sm_90", "gfx90a", or the host CPU's model name
  int compute_major = 0;
  int compute_minor = 0;
  uint64_t total_memory = 0;
  int multiprocessors = 0;  // SMs, CUs, or host worker threads
};

class Driver {
 public:
  virtual ~Driver() = default;

  virtual BackendKind kind() const = 0;
  // Throws BackendUnavailable with the reason (library not found at which names,
  // no device, driver too old) when the backend can't be used on this machine.
  virtual void ensure_loaded() = 0;
  virtual int driver_version() = 0;
  virtual int device_count() = 0;
  virtual DeviceInfo device_info(int ordinal) = 0;

  // The primary context of a device; retained once per device per process.
  virtual ContextHandle retain_primary_context(int ordinal) = 0;
  virtual void release_primary_context(int ordinal) = 0;
  // Makes `ctx` current on the calling thread.
  virtual void set_current(ContextHandle ctx, int ordinal) = 0;

  virtual DevicePtr mem_alloc(size_t nbytes) = 0;
  virtual void mem_free(DevicePtr ptr) = 0;
  virtual void* host_alloc_pinned(size_t nbytes) = 0;
  virtual void host_free_pinned(void* ptr) = 0;

  // Synchronous copies (legacy default stream semantics).
  virtual void copy_htod(DevicePtr dst, const void* src, size_t n) = 0;
  virtual void copy_dtoh(void* dst, DevicePtr src, size_t n) = 0;
  virtual void copy_dtod(DevicePtr dst, DevicePtr src, size_t n) = 0;
  // Asynchronous copies, ordered on `stream`.
  virtual void copy_htod_async(DevicePtr dst, const void* src, size_t n, StreamHandle stream, KeepAlive keep) = 0;
  virtual void copy_dtoh_async(void* dst, DevicePtr src, size_t n, StreamHandle stream, KeepAlive keep) = 0;
  virtual void copy_dtod_async(DevicePtr dst, DevicePtr src, size_t n, StreamHandle stream, KeepAlive keep) = 0;

  virtual StreamHandle stream_create() = 0;
  virtual void stream_destroy(StreamHandle stream) = 0;
  virtual void stream_synchronize(StreamHandle stream) = 0;

  // `timing`: the event can be used with event_elapsed_ms (slower to record).
  virtual EventHandle event_create(bool timing) = 0;
  virtual void event_destroy(EventHandle event) = 0;
  virtual void event_record(EventHandle event, StreamHandle stream) = 0;
  virtual void stream_wait_event(StreamHandle stream, EventHandle event) = 0;
  virtual void event_synchronize(EventHandle event) = 0;
  virtual bool event_query(EventHandle event) = 0;  // true once the event has completed
  virtual float event_elapsed_ms(EventHandle start, EventHandle end) = 0;

  virtual ModuleHandle module_load(const void* image, size_t nbytes) = 0;
  virtual void module_unload(ModuleHandle module) = 0;
  // Returns nullptr when the module has no such function.
  virtual FunctionHandle module_get_function(ModuleHandle module, const std::string& name) = 0;
  // The names of the module's kernels, where the driver can list them (else empty).
  virtual std::vector<std::string> module_function_names(ModuleHandle module) = 0;
  // The function's parameter count, where the driver can tell (else -1).
  virtual int function_arg_count(FunctionHandle fn) { return -1; }
  // The device whose memory `ptr` points into (allocated or registered there), or -1
  // where the driver cannot tell: memory it does not know, or no such query.
  virtual int pointer_device(DevicePtr ptr) { return -1; }

  // args[i] points at argument i's storage, arg_sizes[i] bytes; the storage may be
  // reused as soon as launch returns (the GPU drivers copy it, so must the host).
  // `caller_waits`: the caller synchronizes the stream right after, so the launch may
  // run on the calling thread if that is quicker.
  virtual void launch(FunctionHandle fn, Dim3 grid, Dim3 block, uint32_t shared_bytes, StreamHandle stream,
                      void* const* args, const size_t* arg_sizes, size_t nargs, KeepAlive keep,
                      bool caller_waits) = 0;
  virtual void device_synchronize() = 0;

  // The text of the most recent failure on the calling thread, or "".
  const std::string& last_error() const;

 protected:
  // Records `message` as the last error and throws it.
  [[noreturn]] void fail(ErrorKind kind, const std::string& code, const std::string& message) const;
};

// The process-wide driver of each backend, created on first use.
Driver& driver(BackendKind kind);

// The device `ptr` points into on `kind`'s driver, or -1 where it cannot tell (the
// backend unavailable, memory it does not know).
int pointer_device(BackendKind kind, DevicePtr ptr);

std::unique_ptr<Driver> make_cuda_driver();
std::unique_ptr<Driver> make_hip_driver();
std::unique_ptr<Driver> make_host_driver();

}  // namespace gompute
