// A fake libcuda: the CUDA driver API entry points csrc/driver_cuda.cpp resolves, over
// host memory, so its adapter can be tested on machines without a GPU
// (GOMPUTE_LIBCUDA=/path/to/this.so). Built by tests/runtime/test_cuda_adapter.py.
//
// What it is: FAKE_CUDA_DEVICES devices (1 unless set, at most 4; "Fake CUDA Device",
// compute capability FAKE_CUDA_CC or 9.0, 1 GiB, 132 SMs each) behind driver 12080, with
// the real error codes and names. Device pointers are host addresses, in one address space
// as under unified addressing (cuPointerGetAttribute tells a pointer's device and
// context, interior pointers too), that the host cannot read or write between driver calls
// (tests/fakes/fake_device_memory.h: a host touch of device memory is a SIGSEGV; pinned memory
// stays addressable, as on a GPU). A module image is a host-ABI shared object
// (gompute/host_launch.h) standing in for a CUBIN: its kernels are the names in its
// exported, NULL-terminated `const char* fake_cuda_kernels[]` (the CUBIN's function
// table), `NAME_gompute_arity` gives a kernel's parameter count and
// `NAME_fake_cuda_max_threads` its launch bound (tests/fakes/cuda_shim.h), and a launch runs
// the whole grid in one call of the entry, with its dynamic shared memory ending at a page it
// cannot touch. A trap is CUDA_ERROR_LAUNCH_FAILED, sticky for the
// rest of the process in that device's context, as on a GPU. Any other image is PTX, which
// the fake cannot JIT: CUDA_ERROR_INVALID_PTX, with a message in the JIT error log.
//
// Streams run behind the host, so that a missing wait or a launch on the wrong stream gives a
// wrong result rather than a pass. Each stream, and each context's default stream (the legacy
// and the per-thread one are the same here), is a worker thread running its work in order,
// each operation after a random delay of half to twice FAKE_CUDA_DELAY_US (100 unless set; 0
// for none); an operation the host waits for (a copy into pageable memory, a synchronous copy
// with pinned memory) has no delay of its own. The legacy stream orders work as the driver
// does: a blocking stream's work waits for the legacy stream's earlier work, and the legacy
// stream's for every blocking stream's; a non-blocking stream waits for neither. A launch
// copies its kernelParams (up to 4 KiB each, as far as readable: the fake has no sizes) and
// returns; a kernel without an exported parameter count reads them in place, so its launch
// returns once it has run. Events complete when the stream reaches them, and their time is
// then; cuEventQuery and cuEventElapsedTime say CUDA_ERROR_NOT_READY before. A synchronous
// copy from pageable memory stages the bytes and returns, and one between two device buffers
// returns at once, as the driver API's "API synchronization behavior" allows: they land when
// the legacy stream reaches them. Synchronizes, frees and unloads wait for the work they must;
// a kernel's fault is returned by the synchronize that waited for it, and every later call.
//
// What it is not: a GPU emulator. No limits beyond memory, 1024 threads per block (or the
// kernel's launch bound) and 48 KiB of dynamic shared memory (static shared memory is not
// counted; no opt-in to more), no kernelParams sizes (cuFuncGetParamInfo reports 8 bytes each),
// no `extra` launch arguments. An overlapping device-to-device copy, undefined on a GPU,
// fills the destination with 0xDB so a caller relying on it sees the damage.
//
// Rules: creating, copying, launching and synchronizing need cuInit, a live current
// context, and no sticky fault in it; releasing (free, destroy, unload) and querying
// (events, modules, functions, a stream's synchronize) need only a valid handle. Each
// device has one primary context, which owns what was created while it was current: a
// stream, event or function of another device's context used in work under this one
// (a launch, an async copy, an event record, a stream wait) is
// CUDA_ERROR_INVALID_HANDLE, as on a GPU. Copies take memory of any device (peer access
// is always on). Releasing a primary context's last reference frees everything it held.
//
// Knobs: FAKE_CUDA_INIT_ERROR=<code> (cuInit's result), FAKE_CUDA_DEVICES=<0..4> (0: no
// device), FAKE_CUDA_DELAY_US=<mean delay of queued work>, FAKE_CUDA_ADDRESSABLE=1 (device
// memory the host can touch, for debugging), and -DFAKE_CUDA_OLD, a library lacking cuLaunchKernel, cuPointerGetAttribute
// and the CUDA 12.x additions.
//
// Faults on demand: any entry point's nth call from now can be made to return a chosen code
// and do nothing else, once: `fake_cuda_fail("cuMemAlloc_v2", nth, code)` through ctypes on
// the loaded library (the exported symbol's name), or FAKE_CUDA_FAIL=name:nth:code[,...] for
// the calls a process makes before a test can reach it (cuInit, cuDriverGetVersion).
// `fake_cuda_armed()` counts the faults not fired yet, and `fake_cuda_live(kind)` what the
// live contexts hold ("allocations", "bytes", "pinned", "streams", "events", "modules",
// "functions"), so a test sees what a failure left behind in the driver.
// tests/runtime/test_fault_matrix.py fails every entry point gompute resolves with them.
#include <dlfcn.h>
#include <sys/uio.h>
#include <elf.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gompute/host_launch.h>

#include "fake_device_memory.h"

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using Clock = std::chrono::steady_clock;

enum : CUresult {
  CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_OUT_OF_MEMORY = 2, CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100, CUDA_ERROR_INVALID_DEVICE = 101, CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201, CUDA_ERROR_INVALID_PTX = 218, CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500, CUDA_ERROR_NOT_READY = 600, CUDA_ERROR_LAUNCH_FAILED = 719, CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_UNKNOWN = 999,
};

struct ErrorText { CUresult code; const char* name; const char* text; };  // worded as the real driver does
constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

constexpr size_t kTotalMemory = size_t(1) << 30;
constexpr int kMultiprocessors = 132;
constexpr int kDriverVersion = 12080;
constexpr uint64_t kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxSharedPerBlock = 48 * 1024;  // without cuFuncSetAttribute's opt-in, which gompute never asks
constexpr unsigned kEventDisableTiming = 0x2;
constexpr int kJitErrorLogBuffer = 5, kJitErrorLogBufferSize = 6;
constexpr int kAttrMultiprocessors = 16, kAttrCcMajor = 75, kAttrCcMinor = 76;
constexpr int kPointerContext = 1, kPointerDeviceOrdinal = 9;  // CU_POINTER_ATTRIBUTE_*
constexpr int kMaxDevices = 4;
// CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name the default streams, as nullptr does.
void* const kStreamLegacy = reinterpret_cast<void*>(0x1);
void* const kStreamPerThread = reinterpret_cast<void*>(0x2);

constexpr unsigned kStreamNonBlocking = 0x1;

// The completion of one queued operation: waited for by the host and by other streams.
struct Done {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Clock::time_point when;  // when it completed: an event's timestamp
  void finish() {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    when = Clock::now();
    cv.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return done; });
  }
  bool ready() {
    std::lock_guard<std::mutex> lock(mu);
    return done;
  }
};
using DonePtr = std::shared_ptr<Done>;

int env_int(const char* name, int fallback);

// A stream's worker: runs the stream's operations in order on a thread of its own, each after
// a delay (FAKE_CUDA_DELAY_US, on average), so that the host and other streams run ahead of it
// as they do of a GPU. An operation the host is waiting for (a copy into host memory) has no
// delay of its own, so that it overtakes work on other streams it was not ordered after, and
// reads what a missing wait would read. Operations never take g_mu, so waiting for one under it
// cannot deadlock.
class Queue {
 public:
  Queue() : rng_(std::random_device{}()), worker_([this] { run(); }) {}
  ~Queue() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();  // runs what is queued first
  }
  // Queues `op` after `deps` complete; returns its completion (g_mu held: last_ is read under it).
  DonePtr push(std::function<void()> op, std::vector<DonePtr> deps = {}, bool awaited = false) {
    auto done = std::make_shared<Done>();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ops_.push_back({[op = std::move(op), deps = std::move(deps), done] {
                        for (const DonePtr& d : deps) d->wait();
                        op();
                        done->finish();
                      },
                      awaited});
    }
    cv_.notify_all();
    return last_ = done;
  }
  DonePtr last() const { return last_; }  // g_mu held

 private:
  void run() {
    const int mean_us = env_int("FAKE_CUDA_DELAY_US", 100);
    for (;;) {
      Op op;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !ops_.empty(); });
        if (ops_.empty()) return;
        op = std::move(ops_.front());
        ops_.pop_front();
      }
      if (mean_us > 0 && !op.awaited)  // half to twice the mean: two streams' work interleaves differently
        std::this_thread::sleep_for(std::chrono::microseconds(
            std::uniform_int_distribution<int>(mean_us / 2, mean_us * 2)(rng_)));
      op.run();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  struct Op {
    std::function<void()> run;
    bool awaited = false;
  };
  std::deque<Op> ops_;
  bool stop_ = false;
  DonePtr last_;
  std::mt19937 rng_;
  std::thread worker_;  // last: starts once the rest is built
};

struct Stream {
  unsigned flags = 0;
  std::unique_ptr<Queue> queue = std::make_unique<Queue>();
};
struct Event { unsigned flags = 0; DonePtr recorded; };  // the completion of its latest record
struct Function {
  std::string name;
  gompute_host_kernel entry = nullptr;
  int arity = -1;  // -1: not exported
  uint64_t max_threads = kMaxThreadsPerBlock;  // a block's, as its __launch_bounds__ says
};
struct Module {
  void* handle = nullptr;
  std::vector<Function*> functions;
  ~Module() { if (handle) dlclose(handle); }
};

// The live objects of one kind, owned by the context; a handle is valid while listed.
template <typename T>
struct Handles {
  std::map<void*, std::unique_ptr<T>> live;
  T* add(std::unique_ptr<T> p) { return live.emplace(p.get(), std::move(p)).first->second.get(); }
  T* find(void* handle) const { auto it = live.find(handle); return it == live.end() ? nullptr : it->second.get(); }
};

// What a device's primary context holds: everything created while it was current.
struct Objects {
  size_t used = 0;
  std::map<CUdeviceptr, size_t> allocations;  // address -> size
  std::map<void*, size_t> pinned;
  Handles<Stream> streams;
  Handles<Event> events;
  Handles<Function> functions;
  Handles<Module> modules;
  std::unique_ptr<Queue> legacy;  // the default streams', made at first use
};

// A device's primary context.
struct Context {
  int refs = 0;
  Objects objects;
  std::atomic<CUresult> sticky{CUDA_SUCCESS};  // a kernel fault, for good
};

std::mutex g_mu;  // guards everything below but the contexts' sticky faults and t_current
std::atomic<bool> g_initialized{false};
fake_device::Memory g_device_memory;  // before the contexts: their queues' last work uses it
Context g_contexts[kMaxDevices];
thread_local Context* t_current = nullptr;
using Lock = std::lock_guard<std::mutex>;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}
int device_count() { return std::clamp(env_int("FAKE_CUDA_DEVICES", 1), 0, kMaxDevices); }

// Injected faults: entry point name -> (calls left before the failing one, its result). A
// fault fires once, before the call does anything, so the call has no effect but its result.
std::mutex g_fault_mu;  // guards g_faults
std::map<std::string, std::pair<int, CUresult>> g_faults;

void arm_fault(const std::string& name, int nth, CUresult code) {
  std::lock_guard<std::mutex> lock(g_fault_mu);
  if (nth > 0 && code != CUDA_SUCCESS)
    g_faults[name] = {nth, code};
  else
    g_faults.erase(name);
}
// FAKE_CUDA_FAIL=name:nth:code[,name:nth:code...], read at the first driver call, so that
// calls made while a process starts (cuInit, cuDriverGetVersion) can fail too.
void arm_faults_from_env() {
  const char* spec = std::getenv("FAKE_CUDA_FAIL");
  for (const char* p = spec; p && *p;) {
    const char* end = std::strchr(p, ',');
    std::string item(p, end ? size_t(end - p) : std::strlen(p));
    char name[128] = {};
    int nth = 0, code = 0;
    if (std::sscanf(item.c_str(), "%127[^:]:%d:%d", name, &nth, &code) == 3) arm_fault(name, nth, code);
    p = end ? end + 1 : nullptr;
  }
}
CUresult injected(const char* name) {
  static std::once_flag from_env;
  std::call_once(from_env, arm_faults_from_env);
  std::lock_guard<std::mutex> lock(g_fault_mu);
  auto it = g_faults.find(name);
  if (it == g_faults.end() || --it->second.first > 0) return CUDA_SUCCESS;
  CUresult code = it->second.second;
  g_faults.erase(it);
  return code;
}
#define FAKE_INJECT() \
  if (CUresult injected_fault = injected(__func__)) return injected_fault

// The check every creating, copying, launching or synchronizing call starts with (g_mu
// held); on success t_current is the context the call works in.
CUresult in_context() {
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!t_current || t_current->refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  return t_current->sticky.load();
}
Objects& current() { return t_current->objects; }
CUresult check_device(CUdevice dev) {
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  return dev >= 0 && dev < device_count() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
bool default_stream(void* s) { return s == nullptr || s == kStreamLegacy || s == kStreamPerThread; }
// Whether `s` is a default stream or one of the current context's (g_mu held).
bool known_stream(void* s) { return default_stream(s) || current().streams.find(s); }

// The live contexts' objects, and the one whose `Handles` member lists `handle` (g_mu held).
template <typename Visit>
void for_each_context(Visit visit) {
  for (Context& ctx : g_contexts)
    if (ctx.refs > 0) visit(ctx);
}
template <typename T>
std::pair<Context*, T*> owner(void* handle, Handles<T> Objects::*kind) {
  Context* found = nullptr;
  T* object = nullptr;
  for_each_context([&](Context& ctx) {
    if (T* o = (ctx.objects.*kind).find(handle)) found = &ctx, object = o;
  });
  return {found, object};
}
uintptr_t address(CUdeviceptr p) { return uintptr_t(p); }
uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }
// The context whose allocation (or pinned block) holds [p, p + n), if any (g_mu held).
template <typename Address>
Context* holder(Address p, size_t n, std::map<Address, size_t> Objects::*kind) {
  Context* found = nullptr;
  for_each_context([&](Context& ctx) {
    const auto& blocks = ctx.objects.*kind;
    auto it = blocks.upper_bound(p);
    if (it == blocks.begin()) return;
    --it;
    size_t at = size_t(address(p) - address(it->first));
    if (at <= it->second && n <= it->second - at) found = &ctx;
  });
  return found;
}
bool on_device(CUdeviceptr p, size_t n) { return holder(p, n, &Objects::allocations); }
bool in_pinned(const void* p, size_t n) { return holder(const_cast<void*>(p), n, &Objects::pinned); }

// Whether work on `s` waits for the legacy default stream's (a known stream; g_mu held).
bool syncs_with_legacy(Objects& objects, void* s) {
  Stream* stream = default_stream(s) ? nullptr : objects.streams.find(s);
  return !stream || !(stream->flags & kStreamNonBlocking);
}
Queue& legacy(Objects& objects) {
  if (!objects.legacy) objects.legacy = std::make_unique<Queue>();
  return *objects.legacy;
}
// Queues `op` on the known stream `s` of `objects`, ordered as the legacy default stream
// orders work: after the legacy stream's earlier work on a blocking stream, after every
// blocking stream's earlier work on the legacy one (g_mu held).
DonePtr enqueue(Objects& objects, void* s, std::function<void()> op, bool awaited = false) {
  std::vector<DonePtr> deps;
  if (default_stream(s)) {
    for (auto& [handle, stream] : objects.streams.live)
      if (!(stream->flags & kStreamNonBlocking) && stream->queue->last()) deps.push_back(stream->queue->last());
    return legacy(objects).push(std::move(op), std::move(deps), awaited);
  }
  if (syncs_with_legacy(objects, s) && objects.legacy && objects.legacy->last()) deps.push_back(objects.legacy->last());
  return objects.streams.find(s)->queue->push(std::move(op), std::move(deps), awaited);
}
// The latest operation of `s` (a known stream), or of every stream of `objects` (g_mu held).
std::vector<DonePtr> work_of(Objects& objects, void* s) {
  Queue* q = default_stream(s) ? objects.legacy.get() : objects.streams.find(s)->queue.get();
  return q && q->last() ? std::vector<DonePtr>{q->last()} : std::vector<DonePtr>{};
}
std::vector<DonePtr> all_work(Objects& objects) {
  std::vector<DonePtr> work = work_of(objects, nullptr);
  for (auto& [handle, stream] : objects.streams.live)
    if (stream->queue->last()) work.push_back(stream->queue->last());
  return work;
}
// Waits for `work` with g_mu released, so that other threads' calls go on meanwhile.
void wait_unlocked(std::unique_lock<std::mutex>& lock, const std::vector<DonePtr>& work) {
  lock.unlock();
  for (const DonePtr& d : work) d->wait();
  lock.lock();
}

void move_bytes(CUdeviceptr dst, CUdeviceptr src, size_t n, bool device_to_device) {
  fake_device::Memory::Work work(g_device_memory);
  if (device_to_device && dst < src + n && src < dst + n)
    std::memset(reinterpret_cast<void*>(dst), 0xDB, n);  // undefined on a GPU; see the header
  else
    std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
}

// A copy checks its ranges and is queued on its stream (the legacy one for the synchronous,
// not ...Async, ones). Pageable host memory is staged at the call, which then returns, as the
// driver's does; a copy into pageable memory, and a synchronous one with pinned memory, returns
// when its bytes have landed. A synchronous device-to-device copy returns at once.
CUresult copy(CUdeviceptr dst, CUdeviceptr src, size_t n, bool dst_device, bool src_device, void* stream,
              bool synchronous = false) {
  DonePtr done;
  {
    Lock lock(g_mu);
    if (CUresult r = in_context()) return r;
    if (!known_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
    if ((dst_device && !on_device(dst, n)) || (src_device && !on_device(src, n))) return CUDA_ERROR_INVALID_VALUE;
    const void* host_src = reinterpret_cast<const void*>(src);
    if (!src_device && !in_pinned(host_src, n)) {
      auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(host_src),
                                                        static_cast<const char*>(host_src) + n);
      enqueue(current(), stream, [=] {
        fake_device::Memory::Work work(g_device_memory);
        std::memcpy(reinterpret_cast<void*>(dst), staged->data(), n);
      });
      return CUDA_SUCCESS;
    }
    bool into_pageable = !dst_device && !in_pinned(reinterpret_cast<const void*>(dst), n);
    bool awaited = into_pageable || (synchronous && !(dst_device && src_device));
    done = enqueue(current(), stream, [=] { move_bytes(dst, src, n, dst_device && src_device); }, awaited);
    if (!awaited) return CUDA_SUCCESS;
  }
  done->wait();
  return CUDA_SUCCESS;
}

void write_jit_log(unsigned n, const int* options, void* const* values, const char* message) {
  char* buffer = nullptr;
  size_t size = 0;
  for (unsigned i = 0; options && values && i < n; ++i) {
    if (options[i] == kJitErrorLogBuffer) buffer = static_cast<char*>(values[i]);
    if (options[i] == kJitErrorLogBufferSize) size = reinterpret_cast<uintptr_t>(values[i]);
  }
  if (buffer && size) std::snprintf(buffer, size, "%s", message);
}

// cuModuleLoadDataEx gets no size: like a CUBIN, an ELF image says where it ends.
size_t elf_size(const char* image) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, image, sizeof eh);
  size_t end = std::max<size_t>(sizeof eh, eh.e_shoff + size_t(eh.e_shnum) * eh.e_shentsize);
  for (size_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, image + eh.e_phoff + i * eh.e_phentsize, sizeof ph);
    end = std::max<size_t>(end, ph.p_offset + ph.p_filesz);
  }
  return end;
}

// dlopen needs a file: a private temporary one, unlinked once mapped.
void* open_image(const std::string& elf) {
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/fake-cubin-XXXXXX";
  int fd = mkstemp(path.data());
  if (fd < 0) return nullptr;
  bool written = ::write(fd, elf.data(), elf.size()) == ssize_t(elf.size());
  ::close(fd);
  void* handle = written ? dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
  ::unlink(path.c_str());
  return handle;
}

CUresult event_elapsed(float* ms, void* start, void* end) {
  Lock lock(g_mu);
  Event* a = owner(start, &Objects::events).second;
  Event* b = owner(end, &Objects::events).second;
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  if (!a || !b || !a->recorded || !b->recorded || ((a->flags | b->flags) & kEventDisableTiming))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!a->recorded->ready() || !b->recorded->ready()) return CUDA_ERROR_NOT_READY;
  *ms = std::chrono::duration<float, std::milli>(b->recorded->when - a->recorded->when).count();
  return CUDA_SUCCESS;
}

}  // namespace

// ---- Test controls (not driver API) ---------------------------------------------------

// Makes the `nth` call from now of the entry point `name` (its exported symbol, cuMemAlloc_v2)
// return `code` without doing anything; nth 0 or code 0 disarms it.
FAKE_API void fake_cuda_fail(const char* name, int nth, int code) { arm_fault(name, nth, code); }
// How many faults are armed and not fired yet.
FAKE_API int fake_cuda_armed() {
  std::lock_guard<std::mutex> lock(g_fault_mu);
  return int(g_faults.size());
}
// What the live contexts hold: "allocations", "bytes", "pinned", "streams", "events",
// "modules" or "functions"; -1 for another name.
FAKE_API long long fake_cuda_live(const char* kind) {
  Lock lock(g_mu);
  const std::string k = kind ? kind : "";
  long long n = 0;
  for_each_context([&](Context& ctx) {
    const Objects& o = ctx.objects;
    n += k == "allocations" ? o.allocations.size() : k == "bytes" ? o.used : k == "pinned" ? o.pinned.size()
       : k == "streams" ? o.streams.live.size() : k == "events" ? o.events.live.size()
       : k == "modules" ? o.modules.live.size() : k == "functions" ? o.functions.live.size() : 0;
  });
  static const char* const kinds[] = {"allocations", "bytes", "pinned", "streams", "events", "modules", "functions"};
  return std::find(std::begin(kinds), std::end(kinds), k) == std::end(kinds) ? -1 : n;
}

// ---- Initialization, errors, devices -------------------------------------------------

FAKE_API CUresult cuInit(unsigned flags) {
  FAKE_INJECT();
  if (int code = env_int("FAKE_CUDA_INIT_ERROR", 0)) return code;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Lock lock(g_mu);
  g_initialized = true;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuDriverGetVersion(int* version) {
  FAKE_INJECT();
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = kDriverVersion;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuGetErrorName(CUresult code, const char** name) {
  FAKE_INJECT();
  for (const auto& e : kErrors)
    if (e.code == code) return *name = e.name, CUDA_SUCCESS;
  *name = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}
FAKE_API CUresult cuGetErrorString(CUresult code, const char** text) {
  FAKE_INJECT();
  for (const auto& e : kErrors)
    if (e.code == code) return *text = e.text, CUDA_SUCCESS;
  *text = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}
FAKE_API CUresult cuDeviceGetCount(int* count) {
  FAKE_INJECT();
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *count = device_count();
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuDeviceGet(CUdevice* dev, int ordinal) {
  FAKE_INJECT();
  if (CUresult r = check_device(ordinal)) return r;
  *dev = ordinal;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  FAKE_INJECT();
  if (CUresult r = check_device(dev)) return r;
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, size_t(len), "Fake CUDA Device");
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice dev) {
  FAKE_INJECT();
  if (CUresult r = check_device(dev)) return r;
  int major = 9, minor = 0;
  if (const char* cc = std::getenv("FAKE_CUDA_CC")) std::sscanf(cc, "%d.%d", &major, &minor);
  switch (attribute) {
    case kAttrCcMajor: return *value = major, CUDA_SUCCESS;
    case kAttrCcMinor: return *value = minor, CUDA_SUCCESS;
    case kAttrMultiprocessors: return *value = kMultiprocessors, CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}
FAKE_API CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  FAKE_INJECT();
  if (CUresult r = check_device(dev)) return r;
  *bytes = kTotalMemory;
  return CUDA_SUCCESS;
}

// ---- The primary context --------------------------------------------------------------

FAKE_API CUresult cuDevicePrimaryCtxRetain(void** ctx, CUdevice dev) {
  FAKE_INJECT();
  Lock lock(g_mu);
  if (CUresult r = check_device(dev)) return r;
  g_contexts[dev].refs++;
  *ctx = &g_contexts[dev];
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  FAKE_INJECT();
  std::unique_lock<std::mutex> lock(g_mu);
  if (CUresult r = check_device(dev)) return r;
  Context& ctx = g_contexts[dev];
  if (ctx.refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--ctx.refs > 0) return CUDA_SUCCESS;
  wait_unlocked(lock, all_work(ctx.objects));
  for (auto& [ptr, size] : ctx.objects.allocations) g_device_memory.release(reinterpret_cast<void*>(ptr));
  for (auto& [ptr, size] : ctx.objects.pinned) std::free(ptr);
  ctx.objects = Objects{};  // unloads the modules too
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuCtxSetCurrent(void* ctx) {
  FAKE_INJECT();
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* c = static_cast<Context*>(ctx);
  if (c && !(c >= g_contexts && c < g_contexts + device_count())) return CUDA_ERROR_INVALID_CONTEXT;
  t_current = c;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuCtxSynchronize() {
  FAKE_INJECT();
  std::unique_lock<std::mutex> lock(g_mu);
  if (CUresult r = in_context()) return r;
  Context* ctx = t_current;
  wait_unlocked(lock, all_work(current()));
  return ctx->sticky.load();  // a fault in the work waited for
}

// ---- Memory ----------------------------------------------------------------------------

FAKE_API CUresult cuMemAlloc_v2(CUdeviceptr* ptr, size_t n) {
  FAKE_INJECT();
  Lock lock(g_mu);
  if (CUresult r = in_context()) return r;
  if (!ptr || n == 0) return CUDA_ERROR_INVALID_VALUE;
  if (n > kTotalMemory - current().used) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = g_device_memory.allocate(n);  // page-aligned: past the 256 bytes cuMemAlloc promises
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = CUdeviceptr(p);
  current().allocations[*ptr] = n;
  current().used += n;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuMemFree_v2(CUdeviceptr ptr) {
  FAKE_INJECT();
  std::unique_lock<std::mutex> lock(g_mu);
  Context* ctx = holder(ptr, 0, &Objects::allocations);
  if (!ctx || !ctx->objects.allocations.count(ptr)) return CUDA_ERROR_INVALID_VALUE;  // not an allocation's start
  wait_unlocked(lock, all_work(ctx->objects));  // cuMemFree waits for the device
  Objects& objects = ctx->objects;
  if (!objects.allocations.count(ptr)) return CUDA_ERROR_INVALID_VALUE;  // freed by another thread meanwhile
  g_device_memory.release(reinterpret_cast<void*>(ptr));
  objects.used -= objects.allocations[ptr];
  objects.allocations.erase(ptr);
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuMemAllocHost_v2(void** ptr, size_t n) {
  FAKE_INJECT();
  Lock lock(g_mu);
  if (CUresult r = in_context()) return r;
  if (!ptr || n == 0) return CUDA_ERROR_INVALID_VALUE;
  if (!(*ptr = std::malloc(n))) return CUDA_ERROR_OUT_OF_MEMORY;
  current().pinned[*ptr] = n;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuMemFreeHost(void* ptr) {
  FAKE_INJECT();
  Lock lock(g_mu);
  Context* ctx = holder(ptr, 0, &Objects::pinned);
  if (!ctx || !ctx->objects.pinned.erase(ptr)) return CUDA_ERROR_INVALID_VALUE;
  std::free(ptr);
  return CUDA_SUCCESS;
}
#ifndef FAKE_CUDA_OLD
FAKE_API CUresult cuPointerGetAttribute(void* data, int attribute, CUdeviceptr ptr) {
  FAKE_INJECT();
  Lock lock(g_mu);
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = holder(ptr, 0, &Objects::allocations);
  if (!ctx) ctx = holder(reinterpret_cast<void*>(ptr), 0, &Objects::pinned);
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;  // not memory the driver knows
  switch (attribute) {
    case kPointerContext: return *static_cast<void**>(data) = ctx, CUDA_SUCCESS;
    case kPointerDeviceOrdinal: return *static_cast<int*>(data) = int(ctx - g_contexts), CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}
#endif
FAKE_API CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void* s, size_t n) {
  FAKE_INJECT();
  return copy(d, CUdeviceptr(s), n, true, false, nullptr, true);
}
FAKE_API CUresult cuMemcpyDtoH_v2(void* d, CUdeviceptr s, size_t n) {
  FAKE_INJECT();
  return copy(CUdeviceptr(d), s, n, false, true, nullptr, true);
}
FAKE_API CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  FAKE_INJECT();
  return copy(d, s, n, true, true, nullptr, true);
}
FAKE_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void* s, size_t n, void* stream) {
  FAKE_INJECT();
  return copy(d, CUdeviceptr(s), n, true, false, stream);
}
FAKE_API CUresult cuMemcpyDtoHAsync_v2(void* d, CUdeviceptr s, size_t n, void* stream) {
  FAKE_INJECT();
  return copy(CUdeviceptr(d), s, n, false, true, stream);
}
FAKE_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void* stream) {
  FAKE_INJECT();
  return copy(d, s, n, true, true, stream);
}

// ---- Streams and events -------------------------------------------------------------------

FAKE_API CUresult cuStreamCreate(void** stream, unsigned flags) {
  FAKE_INJECT();
  Lock lock(g_mu);
  if (CUresult r = in_context()) return r;
  *stream = current().streams.add(std::make_unique<Stream>(Stream{flags}));
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuStreamDestroy_v2(void* stream) {
  FAKE_INJECT();
  std::unique_ptr<Stream> doomed;  // its queue runs what it holds when destroyed, without g_mu
  {
    Lock lock(g_mu);
    Context* ctx = owner(stream, &Objects::streams).first;
    if (!ctx) return CUDA_ERROR_INVALID_HANDLE;
    auto it = ctx->objects.streams.live.find(stream);
    doomed = std::move(it->second);
    ctx->objects.streams.live.erase(it);
  }
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuStreamSynchronize(void* stream) {
  FAKE_INJECT();
  std::unique_lock<std::mutex> lock(g_mu);
  if (CUresult r = in_context()) return r;
  Context* ctx = default_stream(stream) ? t_current : owner(stream, &Objects::streams).first;  // a created stream: its own context's
  if (!ctx) return CUDA_ERROR_INVALID_HANDLE;
  wait_unlocked(lock, work_of(ctx->objects, stream));
  return ctx->sticky.load();
}
FAKE_API CUresult cuStreamWaitEvent(void* stream, void* event, unsigned) {
  FAKE_INJECT();
  Lock lock(g_mu);
  if (CUresult r = in_context()) return r;
  // The event may be another device's: the driver allows a wait across devices.
  Event* e = owner(event, &Objects::events).second;
  if (!known_stream(stream) || !e) return CUDA_ERROR_INVALID_HANDLE;
  if (DonePtr recorded = e->recorded) enqueue(current(), stream, [recorded] { recorded->wait(); });
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuEventCreate(void** event, unsigned flags) {
  FAKE_INJECT();
  Lock lock(g_mu);
  if (CUresult r = in_context()) return r;
  auto e = std::make_unique<Event>();
  e->flags = flags;
  *event = current().events.add(std::move(e));
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuEventDestroy_v2(void* event) {
  FAKE_INJECT();
  Lock lock(g_mu);
  Context* ctx = owner(event, &Objects::events).first;
  return ctx && ctx->objects.events.live.erase(event) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
FAKE_API CUresult cuEventRecord(void* event, void* stream) {
  FAKE_INJECT();
  Lock lock(g_mu);
  if (CUresult r = in_context()) return r;
  Event* e = current().events.find(event);
  if (!e || !known_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  e->recorded = enqueue(current(), stream, [] {});  // its completion's time is the event's
  return CUDA_SUCCESS;
}
// An event never recorded has nothing to wait for, as on a GPU.
FAKE_API CUresult cuEventSynchronize(void* event) {
  FAKE_INJECT();
  std::unique_lock<std::mutex> lock(g_mu);
  if (CUresult r = in_context()) return r;
  auto [ctx, e] = owner(event, &Objects::events);
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  if (DonePtr recorded = e->recorded) wait_unlocked(lock, {recorded});
  return ctx->sticky.load();
}
FAKE_API CUresult cuEventQuery(void* event) {
  FAKE_INJECT();
  Lock lock(g_mu);
  if (CUresult r = in_context()) return r;
  Event* e = owner(event, &Objects::events).second;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  return !e->recorded || e->recorded->ready() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
FAKE_API CUresult cuEventElapsedTime(float* ms, void* start, void* end) {
  FAKE_INJECT();
  return event_elapsed(ms, start, end);
}
#ifndef FAKE_CUDA_OLD
FAKE_API CUresult cuEventElapsedTime_v2(float* ms, void* start, void* end) {
  FAKE_INJECT();
  return event_elapsed(ms, start, end);
}
#endif

// ---- Modules and launches ----------------------------------------------------------------

FAKE_API CUresult cuModuleLoadDataEx(void** module, const void* image, unsigned n, int* options, void** values) {
  FAKE_INJECT();
  Lock lock(g_mu);
  if (CUresult r = in_context()) return r;
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  const char* bytes = static_cast<const char*>(image);
  if (std::memcmp(bytes, ELFMAG, SELFMAG) != 0) {
    write_jit_log(n, options, values,
                  "ptxas fatal   : the fake CUDA driver cannot compile PTX; "
                  "load a host-ABI shared object instead");
    return CUDA_ERROR_INVALID_PTX;
  }
  if (bytes[EI_CLASS] != ELFCLASS64) return CUDA_ERROR_INVALID_IMAGE;
  auto m = std::make_unique<Module>();
  if (!(m->handle = open_image(std::string(bytes, elf_size(bytes))))) return CUDA_ERROR_INVALID_IMAGE;
  auto* names = static_cast<const char* const*>(dlsym(m->handle, "fake_cuda_kernels"));
  std::vector<std::unique_ptr<Function>> functions;
  for (; names && *names; ++names) {
    auto f = std::make_unique<Function>();
    f->name = *names;
    f->entry = reinterpret_cast<gompute_host_kernel>(dlsym(m->handle, *names));
    auto* arity = static_cast<const uint32_t*>(dlsym(m->handle, (f->name + "_gompute_arity").c_str()));
    f->arity = arity ? int(*arity) : -1;
    auto* bound = static_cast<const uint32_t*>(dlsym(m->handle, (f->name + "_fake_cuda_max_threads").c_str()));
    if (bound) f->max_threads = std::min<uint64_t>(*bound, kMaxThreadsPerBlock);
    if (!f->entry) return CUDA_ERROR_INVALID_IMAGE;
    functions.push_back(std::move(f));
  }
  if (!names) return CUDA_ERROR_INVALID_IMAGE;
  for (auto& f : functions) m->functions.push_back(current().functions.add(std::move(f)));
  *module = current().modules.add(std::move(m));
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuModuleUnload(void* module) {
  FAKE_INJECT();
  std::unique_lock<std::mutex> lock(g_mu);
  Context* holder = owner(module, &Objects::modules).first;
  if (!holder) return CUDA_ERROR_INVALID_HANDLE;
  wait_unlocked(lock, all_work(holder->objects));  // queued launches run its code
  auto [ctx, m] = owner(module, &Objects::modules);
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  for (Function* f : m->functions) ctx->objects.functions.live.erase(f);
  ctx->objects.modules.live.erase(module);
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuModuleGetFunction(void** function, void* module, const char* name) {
  FAKE_INJECT();
  Lock lock(g_mu);
  Module* m = owner(module, &Objects::modules).second;
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  for (Function* f : m->functions)
    if (f->name == name) return *function = f, CUDA_SUCCESS;
  return CUDA_ERROR_NOT_FOUND;
}

#ifndef FAKE_CUDA_OLD
FAKE_API CUresult cuModuleGetFunctionCount(unsigned* count, void* module) {
  FAKE_INJECT();
  Lock lock(g_mu);
  Module* m = owner(module, &Objects::modules).second;
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  *count = unsigned(m->functions.size());
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuModuleEnumerateFunctions(void** functions, unsigned n, void* module) {
  FAKE_INJECT();
  Lock lock(g_mu);
  Module* m = owner(module, &Objects::modules).second;
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  if (!functions && n) return CUDA_ERROR_INVALID_VALUE;
  std::copy_n(m->functions.begin(), std::min<size_t>(n, m->functions.size()), functions);
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuFuncGetName(const char** name, void* function) {
  FAKE_INJECT();
  Lock lock(g_mu);
  Function* f = owner(function, &Objects::functions).second;
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  *name = f->name.c_str();
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuFuncGetParamInfo(void* function, size_t index, size_t* offset, size_t* size) {
  FAKE_INJECT();
  Lock lock(g_mu);
  Function* f = owner(function, &Objects::functions).second;
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  if (f->arity < 0) return CUDA_ERROR_NOT_SUPPORTED;
  if (index >= size_t(f->arity) || !offset) return CUDA_ERROR_INVALID_VALUE;
  *offset = 8 * index;
  if (size) *size = 8;
  return CUDA_SUCCESS;
}

namespace {
// A launch's copy of its kernelParams. The fake knows a kernel's parameter count but not their
// sizes, so it copies up to kMaxParamBytes of each (the driver's limit for all of them), as much
// as is readable: the bytes past a parameter are never read by the kernel. Where the copy cannot
// be made (no parameter count, process_vm_readv refused) the launch reads them in place and
// cuLaunchKernel returns once it has run.
constexpr size_t kMaxParamBytes = 4096;
struct KernelArgs {
  std::vector<std::vector<unsigned char>> bytes;
  std::vector<void*> copies;
  void** in_place;
  bool copied = false;
  KernelArgs(void** params, int arity) : in_place(params) {
    copied = arity >= 0 && std::all_of(params, params + arity, [this](void* p) { return copy(p); });
    for (auto& b : bytes) copies.push_back(b.data());
  }
  void* const* pointers() { return copied ? copies.data() : in_place; }

 private:
  bool copy(void* p) {
    std::vector<unsigned char> into(kMaxParamBytes);
    iovec local{into.data(), into.size()}, remote{p, into.size()};
    ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (n <= 0) return false;
    bytes.push_back(std::move(into));
    return true;
  }
};

struct LaunchFault {
  const std::string* kernel;
  bool trapped = false;
};
void trap(const gompute_host_launch* launch, const char* message) {
  auto* fault = static_cast<LaunchFault*>(launch->runtime);
  if (!fault->trapped)
    std::fprintf(stderr, "fake libcuda: kernel %s trapped: %s\n", fault->kernel->c_str(), message ? message : "?");
  fault->trapped = true;
}
}  // namespace

FAKE_API CUresult cuLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shared_bytes, void* stream, void** params, void** extra) {
  FAKE_INJECT();
  DonePtr done;
  {
    Lock lock(g_mu);
    if (CUresult r = in_context()) return r;
    Function* f = current().functions.find(function);  // another context's: an invalid handle here
    if (!f || !known_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
    if (extra) return CUDA_ERROR_NOT_SUPPORTED;
    // A block past the kernel's launch bound, or asking more shared memory than a block may have,
    // is refused as the driver refuses it.
    if (!gx || !gy || !gz || !bx || !by || !bz || uint64_t(bx) * by * bz > f->max_threads ||
        shared_bytes > kMaxSharedPerBlock || (f->arity > 0 && !params))
      return CUDA_ERROR_INVALID_VALUE;
    // The driver copies kernelParams at the launch; the caller's storage may be gone when it runs.
    auto args = std::make_shared<KernelArgs>(params, f->arity);
    gompute_host_launch launch{};
    launch.launch_version = GOMPUTE_HOST_LAUNCH_VERSION;
    launch.arg_count = f->arity > 0 ? uint32_t(f->arity) : 0;
    launch.grid_dim = {gx, gy, gz};
    launch.block_dim = {bx, by, bz};
    launch.block_end = uint64_t(gx) * gy * gz;
    launch.shared_bytes = shared_bytes;
    launch.trap = trap;
    Context* ctx = t_current;
    done = enqueue(current(), stream, [fn = *f, ctx, args, launch]() mutable {
      fake_device::SharedScratch shared(launch.shared_bytes);
      LaunchFault fault{&fn.name};
      launch.args = args->pointers();
      launch.shared = shared.data();
      launch.runtime = &fault;
      if (shared.failed(launch.shared_bytes)) {
        trap(&launch, "out of memory for the launch's shared memory");
      } else {
        fake_device::Memory::Work work(g_device_memory);
        fn.entry(&launch);
      }
      if (fault.trapped) {
        CUresult none = CUDA_SUCCESS;
        ctx->sticky.compare_exchange_strong(none, CUDA_ERROR_LAUNCH_FAILED);
      }
    });
    if (args->copied) return CUDA_SUCCESS;  // a fault surfaces at the next synchronize, as on a GPU
  }
  done->wait();  // the caller's arguments are read in place: they live until this returns
  return CUDA_SUCCESS;
}
#endif
