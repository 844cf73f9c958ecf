// A fake libcuda: the CUDA driver API entry points csrc/driver_cuda.cpp resolves, over
// host memory, so its adapter can be tested on machines without a GPU
// (GOMPUTE_LIBCUDA=/path/to/this.so). Built by tests/runtime/test_cuda_adapter.py.
//
// What it is: FAKE_CUDA_DEVICES devices (1 unless set, at most 4; "Fake CUDA Device",
// compute capability FAKE_CUDA_CC or 9.0, 1 GiB, 132 SMs each) behind driver 12080, with
// the real error codes and names. Device pointers are host pointers, in one address space
// as under unified addressing (cuPointerGetAttribute tells a pointer's device and
// context, interior pointers too); every stream runs its work at enqueue, so events record
// the time of their enqueue. A module image is a host-ABI shared object
// (gompute/host_launch.h) standing in for a CUBIN: its kernels are the names in its
// exported, NULL-terminated `const char* fake_cuda_kernels[]` (the CUBIN's function
// table), `NAME_gompute_arity` gives a kernel's parameter count, and a launch runs the
// whole grid in one call of the entry. A trap is CUDA_ERROR_LAUNCH_FAILED, sticky for
// the rest of the process in that device's context, as on a GPU. Any other image is PTX, which the fake cannot
// JIT: CUDA_ERROR_INVALID_PTX, with a message in the JIT error log.
//
// The one asynchrony it has is the legacy default stream's: a synchronous copy from pageable
// host memory, or between two device buffers, returns before its bytes land, as the driver
// API's "API synchronization behavior" allows. They land when the legacy stream next moves:
// work on it or on a stream that synchronizes with it (a blocking stream, the per-thread
// default stream), a synchronize of one of those, a context synchronize, or a free. Work on a
// non-blocking stream does not wait for them and sees the old bytes.
//
// What it is not: a GPU emulator. No other asynchrony, no limits beyond memory and 1024
// threads per block, no kernelParams sizes (cuFuncGetParamInfo reports 8 bytes each),
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
// device), and -DFAKE_CUDA_OLD, a library lacking cuLaunchKernel, cuPointerGetAttribute
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
#include <mutex>
#include <string>
#include <vector>

#include <gompute/host_launch.h>

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
  CUDA_ERROR_NOT_FOUND = 500, CUDA_ERROR_LAUNCH_FAILED = 719, CUDA_ERROR_NOT_SUPPORTED = 801,
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
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

constexpr size_t kTotalMemory = size_t(1) << 30;
constexpr size_t kAlignment = 256;  // what cuMemAlloc guarantees
constexpr int kMultiprocessors = 132;
constexpr int kDriverVersion = 12080;
constexpr uint64_t kMaxThreadsPerBlock = 1024;
constexpr unsigned kEventDisableTiming = 0x2;
constexpr int kJitErrorLogBuffer = 5, kJitErrorLogBufferSize = 6;
constexpr int kAttrMultiprocessors = 16, kAttrCcMajor = 75, kAttrCcMinor = 76;
constexpr int kPointerContext = 1, kPointerDeviceOrdinal = 9;  // CU_POINTER_ATTRIBUTE_*
constexpr int kMaxDevices = 4;
// CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name the default streams, as nullptr does.
void* const kStreamLegacy = reinterpret_cast<void*>(0x1);
void* const kStreamPerThread = reinterpret_cast<void*>(0x2);

constexpr unsigned kStreamNonBlocking = 0x1;

struct Stream { unsigned flags = 0; };
struct Event { unsigned flags = 0; bool recorded = false; Clock::time_point when; };
struct Function { std::string name; gompute_host_kernel entry = nullptr; int arity = -1; };  // -1: not exported
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
  std::vector<std::function<void()>> legacy_tail;  // synchronous copies not landed yet, oldest first
};

// A device's primary context.
struct Context {
  int refs = 0;
  Objects objects;
  std::atomic<CUresult> sticky{CUDA_SUCCESS};  // a kernel fault, for good
};

std::mutex g_mu;  // guards everything below but the contexts' sticky faults and t_current
std::atomic<bool> g_initialized{false};
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
// Lands the legacy stream's early-returned copies (g_mu held).
void finish_legacy_tail(Objects& objects) {
  for (auto& land : objects.legacy_tail) land();
  objects.legacy_tail.clear();
}

void move_bytes(CUdeviceptr dst, CUdeviceptr src, size_t n, bool device_to_device) {
  if (device_to_device && dst < src + n && src < dst + n)
    std::memset(reinterpret_cast<void*>(dst), 0xDB, n);  // undefined on a GPU; see the header
  else
    std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
}

// A copy checks its ranges, then runs at once, but for the synchronous (not ...Async) ones
// the driver lets return early (see the header): those land with the legacy stream's tail.
CUresult copy(CUdeviceptr dst, CUdeviceptr src, size_t n, bool dst_device, bool src_device, void* stream,
              bool synchronous = false) {
  {
    Lock lock(g_mu);
    if (CUresult r = in_context()) return r;
    if (!known_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
    if ((dst_device && !on_device(dst, n)) || (src_device && !on_device(src, n))) return CUDA_ERROR_INVALID_VALUE;
    if (syncs_with_legacy(current(), stream)) finish_legacy_tail(current());
    if (synchronous && dst_device && src_device) {
      current().legacy_tail.push_back([=] { move_bytes(dst, src, n, true); });
      return CUDA_SUCCESS;
    }
    if (synchronous && dst_device && !in_pinned(reinterpret_cast<const void*>(src), n)) {
      auto staged = std::make_shared<std::vector<char>>(reinterpret_cast<const char*>(src),
                                                        reinterpret_cast<const char*>(src) + n);
      current().legacy_tail.push_back([=] { std::memcpy(reinterpret_cast<void*>(dst), staged->data(), n); });
      return CUDA_SUCCESS;
    }
  }
  move_bytes(dst, src, n, dst_device && src_device);
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
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
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
  Lock lock(g_mu);
  if (CUresult r = check_device(dev)) return r;
  Context& ctx = g_contexts[dev];
  if (ctx.refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--ctx.refs > 0) return CUDA_SUCCESS;
  finish_legacy_tail(ctx.objects);
  for (auto& [ptr, size] : ctx.objects.allocations) std::free(reinterpret_cast<void*>(ptr));
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
  Lock lock(g_mu);
  if (CUresult r = in_context()) return r;
  finish_legacy_tail(current());
  return CUDA_SUCCESS;
}

// ---- Memory ----------------------------------------------------------------------------

FAKE_API CUresult cuMemAlloc_v2(CUdeviceptr* ptr, size_t n) {
  FAKE_INJECT();
  Lock lock(g_mu);
  if (CUresult r = in_context()) return r;
  if (!ptr || n == 0) return CUDA_ERROR_INVALID_VALUE;
  if (n > kTotalMemory - current().used) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = std::aligned_alloc(kAlignment, (n + kAlignment - 1) / kAlignment * kAlignment);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = CUdeviceptr(p);
  current().allocations[*ptr] = n;
  current().used += n;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuMemFree_v2(CUdeviceptr ptr) {
  FAKE_INJECT();
  Lock lock(g_mu);
  Context* ctx = holder(ptr, 0, &Objects::allocations);
  if (!ctx || !ctx->objects.allocations.count(ptr)) return CUDA_ERROR_INVALID_VALUE;  // not an allocation's start
  Objects& objects = ctx->objects;
  finish_legacy_tail(objects);  // cuMemFree waits for the device
  std::free(reinterpret_cast<void*>(ptr));
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
  Lock lock(g_mu);
  Context* ctx = owner(stream, &Objects::streams).first;
  return ctx && ctx->objects.streams.live.erase(stream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
FAKE_API CUresult cuStreamSynchronize(void* stream) {
  FAKE_INJECT();
  Lock lock(g_mu);
  if (CUresult r = in_context()) return r;
  Objects* objects = default_stream(stream) ? &current() : nullptr;  // a created stream: its own context's
  if (!objects)
    if (Context* ctx = owner(stream, &Objects::streams).first) objects = &ctx->objects;
  if (!objects) return CUDA_ERROR_INVALID_HANDLE;
  if (syncs_with_legacy(*objects, stream)) finish_legacy_tail(*objects);
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuStreamWaitEvent(void* stream, void* event, unsigned) {
  FAKE_INJECT();
  Lock lock(g_mu);
  if (CUresult r = in_context()) return r;
  // The event may be another device's: the driver allows a wait across devices.
  return known_stream(stream) && owner(event, &Objects::events).second ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
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
  if (syncs_with_legacy(current(), stream)) finish_legacy_tail(current());
  e->recorded = true;
  e->when = Clock::now();
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuEventSynchronize(void* event) {
  FAKE_INJECT();
  Lock lock(g_mu);
  if (CUresult r = in_context()) return r;
  return owner(event, &Objects::events).second ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
FAKE_API CUresult cuEventQuery(void* event) {
  FAKE_INJECT();
  Lock lock(g_mu);
  if (CUresult r = in_context()) return r;
  return owner(event, &Objects::events).second ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;  // all work is done
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
  Lock lock(g_mu);
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
  Function fn;
  Context* ctx = nullptr;
  {
    Lock lock(g_mu);
    if (CUresult r = in_context()) return r;
    Function* f = current().functions.find(function);  // another context's: an invalid handle here
    if (!f || !known_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
    if (extra) return CUDA_ERROR_NOT_SUPPORTED;
    if (syncs_with_legacy(current(), stream)) finish_legacy_tail(current());
    if (!gx || !gy || !gz || !bx || !by || !bz || uint64_t(bx) * by * bz > kMaxThreadsPerBlock ||
        (f->arity > 0 && !params))
      return CUDA_ERROR_INVALID_VALUE;
    fn = *f;  // the kernel runs without the lock, so launches from several threads overlap
    ctx = t_current;
  }
  std::vector<unsigned char> shared(shared_bytes);
  LaunchFault fault{&fn.name};
  gompute_host_launch launch{};
  launch.launch_version = GOMPUTE_HOST_LAUNCH_VERSION;
  launch.arg_count = fn.arity > 0 ? uint32_t(fn.arity) : 0;
  launch.args = params;
  launch.grid_dim = {gx, gy, gz};
  launch.block_dim = {bx, by, bz};
  launch.block_end = uint64_t(gx) * gy * gz;
  launch.shared = shared_bytes ? shared.data() : nullptr;
  launch.shared_bytes = shared_bytes;
  launch.trap = trap;
  launch.runtime = &fault;
  fn.entry(&launch);
  if (fault.trapped) {
    CUresult none = CUDA_SUCCESS;
    ctx->sticky.compare_exchange_strong(none, CUDA_ERROR_LAUNCH_FAILED);
  }
  return CUDA_SUCCESS;  // a fault surfaces at the next synchronize, as on a GPU
}
#endif
