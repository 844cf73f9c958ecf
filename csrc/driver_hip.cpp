// The HIP driver table: each call translated 1:1 to HIP's module (driver-style) API in
// libamdhip64, which driver_gpu.h opens at first use.
//
// The entry points are declared here, not taken from hip_runtime_api.h, so gompute
// builds without ROCm. Signatures checked against ROCm/clr
// hipamd/include/hip/amd_detail/hip_api_trace.hpp (ROCm 7.x) and the ROCm 5 and 6
// hip_runtime_api.h; every symbol used is exported since hip_4.2 (hip_hcc.map.in)
// except hipGetDevicePropertiesR0600 (hip_6.0).
#include <cstring>

#include "driver_gpu.h"

namespace gompute {
namespace {

using hipError_t = int;
using hipDevice_t = int;
using hipDeviceptr_t = void*;
using hipCtx_t = void*;
using hipStream_t = void*;
using hipEvent_t = void*;
using hipModule_t = void*;
using hipFunction_t = void*;

constexpr hipError_t hipSuccess = 0;
constexpr hipError_t hipErrorNotFound = 500;
constexpr hipError_t hipErrorNotReady = 600;
constexpr unsigned hipStreamNonBlocking = 0x1;
constexpr unsigned hipEventDisableTiming = 0x2;
// hipDeviceAttribute_t: the same in ROCm 5.x, 6.x and 7.x (ROCm 6 only renamed
// unsupported entries to hipDeviceAttributeUnusedN, keeping every value).
constexpr int hipDeviceAttributeComputeCapabilityMajor = 23;
constexpr int hipDeviceAttributeComputeCapabilityMinor = 61;
constexpr int hipDeviceAttributeMultiprocessorCount = 63;
// The arch name ("gfx90a:sramecc+:xnack-") exists only as hipDeviceProp_t::gcnArchName;
// the struct is read into an oversized buffer at the field's offset in each ABI.
constexpr size_t kGcnArchNameOffsetR0600 = 1160;  // hipDeviceProp_tR0600, ROCm 6.0+
constexpr size_t kGcnArchNameOffsetR0000 = 396;   // hipDeviceProp_t, ROCm 5.x
constexpr size_t kDevicePropBytes = 8192;         // sizeof is 1472 (R0600), 792 (R0000)
constexpr size_t kGcnArchNameBytes = 256;
// HIP_VERSION: major * 10000000 + minor * 100000 + patch. ROCm 5.0 is the oldest release
// whose hipDeviceAttribute_t numbering and hipDeviceProp_t layout were checked.
constexpr int kMinDriverVersion = 50000000;

struct Api {
  hipError_t (*hipInit)(unsigned);
  hipError_t (*hipDriverGetVersion)(int*);
  const char* (*hipGetErrorName)(hipError_t);
  const char* (*hipGetErrorString)(hipError_t);
  hipError_t (*hipGetDeviceCount)(int*);
  hipError_t (*hipDeviceGet)(hipDevice_t*, int);
  hipError_t (*hipDeviceGetName)(char*, int, hipDevice_t);
  hipError_t (*hipDeviceGetAttribute)(int*, int, int);
  hipError_t (*hipDeviceTotalMem)(size_t*, hipDevice_t);
  hipError_t (*hipGetDeviceProperties)(void*, int);  // R0600 or R0000 layout; see resolve()
  hipError_t (*hipDevicePrimaryCtxRetain)(hipCtx_t*, hipDevice_t);
  hipError_t (*hipDevicePrimaryCtxRelease)(hipDevice_t);
  hipError_t (*hipSetDevice)(int);
  hipError_t (*hipDeviceSynchronize)();
  hipError_t (*hipMalloc)(void**, size_t);
  hipError_t (*hipFree)(void*);
  hipError_t (*hipHostMalloc)(void**, size_t, unsigned);
  hipError_t (*hipHostFree)(void*);
  hipError_t (*hipMemcpyHtoD)(hipDeviceptr_t, const void*, size_t);
  hipError_t (*hipMemcpyDtoH)(void*, hipDeviceptr_t, size_t);
  hipError_t (*hipMemcpyDtoD)(hipDeviceptr_t, hipDeviceptr_t, size_t);
  hipError_t (*hipMemcpyHtoDAsync)(hipDeviceptr_t, const void*, size_t, hipStream_t);
  hipError_t (*hipMemcpyDtoHAsync)(void*, hipDeviceptr_t, size_t, hipStream_t);
  hipError_t (*hipMemcpyDtoDAsync)(hipDeviceptr_t, hipDeviceptr_t, size_t, hipStream_t);
  hipError_t (*hipStreamCreateWithFlags)(hipStream_t*, unsigned);
  hipError_t (*hipStreamDestroy)(hipStream_t);
  hipError_t (*hipStreamSynchronize)(hipStream_t);
  hipError_t (*hipStreamWaitEvent)(hipStream_t, hipEvent_t, unsigned);
  hipError_t (*hipEventCreateWithFlags)(hipEvent_t*, unsigned);
  hipError_t (*hipEventDestroy)(hipEvent_t);
  hipError_t (*hipEventRecord)(hipEvent_t, hipStream_t);
  hipError_t (*hipEventSynchronize)(hipEvent_t);
  hipError_t (*hipEventQuery)(hipEvent_t);
  hipError_t (*hipEventElapsedTime)(float*, hipEvent_t, hipEvent_t);
  hipError_t (*hipModuleLoadData)(hipModule_t*, const void*);
  hipError_t (*hipModuleUnload)(hipModule_t);
  hipError_t (*hipModuleGetFunction)(hipFunction_t*, hipModule_t, const char*);
  hipError_t (*hipModuleLaunchKernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, hipStream_t, void**, void**);
};

void* as_ptr(DevicePtr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

class HipDriver final : public GpuDriver {
  static_assert(hipSuccess == kSuccess, "GpuDriver::check takes 0 for success");

 public:
  HipDriver()
      : GpuDriver("HIP", "GOMPUTE_LIBHIP", {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"}) {}

  BackendKind kind() const override { return BackendKind::hip; }

  int device_count() override {
    int n = 0;
    check(api_.hipGetDeviceCount(&n), "hipGetDeviceCount");
    return n;
  }

  DeviceInfo device_info(int ordinal) override {
    hipDevice_t dev = device(ordinal);
    DeviceInfo info;
    char name[256] = {};
    check(api_.hipDeviceGetName(name, sizeof name, dev), "hipDeviceGetName");
    info.name = name;
    info.compute_major = attribute(hipDeviceAttributeComputeCapabilityMajor, dev);
    info.compute_minor = attribute(hipDeviceAttributeComputeCapabilityMinor, dev);
    info.multiprocessors = attribute(hipDeviceAttributeMultiprocessorCount, dev);
    size_t mem = 0;
    check(api_.hipDeviceTotalMem(&mem, dev), "hipDeviceTotalMem");
    info.total_memory = mem;
    info.arch = arch_name(dev);
    return info;
  }

  ContextHandle retain_primary_context(int ordinal) override {
    hipCtx_t ctx = nullptr;
    check(api_.hipDevicePrimaryCtxRetain(&ctx, device(ordinal)), "hipDevicePrimaryCtxRetain");
    return ctx;
  }
  void release_primary_context(int ordinal) override {
    check(api_.hipDevicePrimaryCtxRelease(device(ordinal)), "hipDevicePrimaryCtxRelease");
  }
  // HIP's per-thread current context is the current device.
  void set_current(ContextHandle, int ordinal) override { check(api_.hipSetDevice(ordinal), "hipSetDevice"); }

  DevicePtr mem_alloc(size_t nbytes) override {
    void* p = nullptr;
    check(api_.hipMalloc(&p, nbytes), "hipMalloc", ErrorKind::AllocFailed);
    return reinterpret_cast<uintptr_t>(p);
  }
  void mem_free(DevicePtr ptr) override { check(api_.hipFree(as_ptr(ptr)), "hipFree"); }
  void* host_alloc_pinned(size_t nbytes) override {
    void* p = nullptr;
    check(api_.hipHostMalloc(&p, nbytes, 0), "hipHostMalloc", ErrorKind::AllocFailed);
    return p;
  }
  void host_free_pinned(void* ptr) override { check(api_.hipHostFree(ptr), "hipHostFree"); }

  void copy_htod(DevicePtr dst, const void* src, size_t n) override {
    check(api_.hipMemcpyHtoD(as_ptr(dst), src, n), "hipMemcpyHtoD", ErrorKind::CopyFailed);
  }
  void copy_dtoh(void* dst, DevicePtr src, size_t n) override {
    check(api_.hipMemcpyDtoH(dst, as_ptr(src), n), "hipMemcpyDtoH", ErrorKind::CopyFailed);
  }
  void copy_dtod(DevicePtr dst, DevicePtr src, size_t n) override {
    check(api_.hipMemcpyDtoD(as_ptr(dst), as_ptr(src), n), "hipMemcpyDtoD", ErrorKind::CopyFailed);
  }
  void copy_htod_async(DevicePtr dst, const void* src, size_t n, StreamHandle s, KeepAlive) override {
    check(api_.hipMemcpyHtoDAsync(as_ptr(dst), src, n, s), "hipMemcpyHtoDAsync", ErrorKind::CopyFailed);
  }
  void copy_dtoh_async(void* dst, DevicePtr src, size_t n, StreamHandle s, KeepAlive) override {
    check(api_.hipMemcpyDtoHAsync(dst, as_ptr(src), n, s), "hipMemcpyDtoHAsync", ErrorKind::CopyFailed);
  }
  void copy_dtod_async(DevicePtr dst, DevicePtr src, size_t n, StreamHandle s, KeepAlive) override {
    check(api_.hipMemcpyDtoDAsync(as_ptr(dst), as_ptr(src), n, s), "hipMemcpyDtoDAsync", ErrorKind::CopyFailed);
  }

  StreamHandle stream_create() override {
    hipStream_t s = nullptr;
    check(api_.hipStreamCreateWithFlags(&s, hipStreamNonBlocking), "hipStreamCreateWithFlags");
    return s;
  }
  void stream_destroy(StreamHandle s) override { check(api_.hipStreamDestroy(s), "hipStreamDestroy"); }
  void stream_synchronize(StreamHandle s) override {
    check(api_.hipStreamSynchronize(s), "hipStreamSynchronize", ErrorKind::SyncFailed);
  }

  EventHandle event_create(bool timing) override {
    hipEvent_t e = nullptr;
    check(api_.hipEventCreateWithFlags(&e, timing ? 0 : hipEventDisableTiming), "hipEventCreateWithFlags");
    return e;
  }
  void event_destroy(EventHandle e) override { check(api_.hipEventDestroy(e), "hipEventDestroy"); }
  void event_record(EventHandle e, StreamHandle s) override { check(api_.hipEventRecord(e, s), "hipEventRecord"); }
  void stream_wait_event(StreamHandle s, EventHandle e) override {
    check(api_.hipStreamWaitEvent(s, e, 0), "hipStreamWaitEvent");
  }
  void event_synchronize(EventHandle e) override {
    check(api_.hipEventSynchronize(e), "hipEventSynchronize", ErrorKind::SyncFailed);
  }
  bool event_query(EventHandle e) override {
    hipError_t r = api_.hipEventQuery(e);
    if (r == hipErrorNotReady) return false;
    check(r, "hipEventQuery", ErrorKind::SyncFailed);
    return true;
  }
  float event_elapsed_ms(EventHandle start, EventHandle end) override {
    float ms = 0;
    check(api_.hipEventElapsedTime(&ms, start, end), "hipEventElapsedTime");
    return ms;
  }

  // `image` is a code object (ELF or offload bundle); HIP finds its size from the headers.
  ModuleHandle module_load(const void* image, size_t) override {
    hipModule_t m = nullptr;
    check(api_.hipModuleLoadData(&m, image), "hipModuleLoadData", ErrorKind::ModuleLoadFailed);
    return m;
  }
  void module_unload(ModuleHandle m) override { check(api_.hipModuleUnload(m), "hipModuleUnload"); }
  FunctionHandle module_get_function(ModuleHandle m, const std::string& name) override {
    hipFunction_t f = nullptr;
    hipError_t r = api_.hipModuleGetFunction(&f, m, name.c_str());
    if (r == hipErrorNotFound) return nullptr;  // absent; anything else is a real failure
    check(r, "hipModuleGetFunction");
    return f;
  }
  std::vector<std::string> module_function_names(ModuleHandle) override { return {}; }

  void launch(FunctionHandle fn, Dim3 g, Dim3 b, uint32_t shared, StreamHandle s, void* const* args, const size_t*,
              size_t, KeepAlive, bool) override {
    check(api_.hipModuleLaunchKernel(fn, g.x, g.y, g.z, b.x, b.y, b.z, shared, s, const_cast<void**>(args), nullptr),
          "hipModuleLaunchKernel",
          ErrorKind::LaunchFailed);
  }
  void device_synchronize() override {
    check(api_.hipDeviceSynchronize(), "hipDeviceSynchronize", ErrorKind::SyncFailed);
  }

 private:
  std::string initialize() override {
    hipError_t r = api_.hipInit(0);
    if (r != hipSuccess)
      return "hipInit failed with " + described(r) + " using " + lib_.path();
    api_.hipDriverGetVersion(&version_);
    if (version_ < kMinDriverVersion)
      return "HIP runtime version " + version_text(version_) + " is too old; gompute needs ROCm " +
             version_text(kMinDriverVersion) + " or newer";
    int n = 0;
    if (api_.hipGetDeviceCount(&n) != hipSuccess || n == 0)
      return "no HIP device (ROCm " + version_text(version_) + ")";
    return "";
  }

  void resolve() override {
    need(api_.hipInit, "hipInit");
    need(api_.hipDriverGetVersion, "hipDriverGetVersion");
    need(api_.hipGetErrorName, "hipGetErrorName");
    need(api_.hipGetErrorString, "hipGetErrorString");
    need(api_.hipGetDeviceCount, "hipGetDeviceCount");
    need(api_.hipDeviceGet, "hipDeviceGet");
    need(api_.hipDeviceGetName, "hipDeviceGetName");
    need(api_.hipDeviceGetAttribute, "hipDeviceGetAttribute");
    need(api_.hipDeviceTotalMem, "hipDeviceTotalMem");
    // ROCm 6 changed hipDeviceProp_t and exports it as ...R0600; the plain name keeps
    // the ROCm 5 layout, so the arch name's offset goes with the symbol found.
    api_.hipGetDeviceProperties = lib_.symbol<decltype(api_.hipGetDeviceProperties)>("hipGetDevicePropertiesR0600");
    arch_offset_ = kGcnArchNameOffsetR0600;
    if (!api_.hipGetDeviceProperties) {
      need(api_.hipGetDeviceProperties, "hipGetDeviceProperties");
      arch_offset_ = kGcnArchNameOffsetR0000;
    }
    need(api_.hipDevicePrimaryCtxRetain, "hipDevicePrimaryCtxRetain");
    need(api_.hipDevicePrimaryCtxRelease, "hipDevicePrimaryCtxRelease");
    need(api_.hipSetDevice, "hipSetDevice");
    need(api_.hipDeviceSynchronize, "hipDeviceSynchronize");
    need(api_.hipMalloc, "hipMalloc");
    need(api_.hipFree, "hipFree");
    need(api_.hipHostMalloc, "hipHostMalloc");
    need(api_.hipHostFree, "hipHostFree");
    need(api_.hipMemcpyHtoD, "hipMemcpyHtoD");
    need(api_.hipMemcpyDtoH, "hipMemcpyDtoH");
    need(api_.hipMemcpyDtoD, "hipMemcpyDtoD");
    need(api_.hipMemcpyHtoDAsync, "hipMemcpyHtoDAsync");
    need(api_.hipMemcpyDtoHAsync, "hipMemcpyDtoHAsync");
    need(api_.hipMemcpyDtoDAsync, "hipMemcpyDtoDAsync");
    need(api_.hipStreamCreateWithFlags, "hipStreamCreateWithFlags");
    need(api_.hipStreamDestroy, "hipStreamDestroy");
    need(api_.hipStreamSynchronize, "hipStreamSynchronize");
    need(api_.hipStreamWaitEvent, "hipStreamWaitEvent");
    need(api_.hipEventCreateWithFlags, "hipEventCreateWithFlags");
    need(api_.hipEventDestroy, "hipEventDestroy");
    need(api_.hipEventRecord, "hipEventRecord");
    need(api_.hipEventSynchronize, "hipEventSynchronize");
    need(api_.hipEventQuery, "hipEventQuery");
    need(api_.hipEventElapsedTime, "hipEventElapsedTime");
    need(api_.hipModuleLoadData, "hipModuleLoadData");
    need(api_.hipModuleUnload, "hipModuleUnload");
    need(api_.hipModuleGetFunction, "hipModuleGetFunction");
    need(api_.hipModuleLaunchKernel, "hipModuleLaunchKernel");
  }

  hipDevice_t device(int ordinal) {
    hipDevice_t dev = 0;
    check(api_.hipDeviceGet(&dev, ordinal), "hipDeviceGet");
    return dev;
  }

  int attribute(int attr, hipDevice_t dev) {
    int value = 0;
    check(api_.hipDeviceGetAttribute(&value, attr, dev), "hipDeviceGetAttribute");
    return value;
  }

  // "gfx90a" from gcnArchName "gfx90a:sramecc+:xnack-". A name that doesn't start with
  // "gfx" means the struct layout isn't the one assumed; say so rather than guess.
  std::string arch_name(hipDevice_t dev) {
    alignas(8) char props[kDevicePropBytes] = {};
    check(api_.hipGetDeviceProperties(props, dev), "hipGetDeviceProperties");
    const char* field = props + arch_offset_;
    std::string full(field, strnlen(field, kGcnArchNameBytes));
    if (full.rfind("gfx", 0) != 0)
      fail(ErrorKind::DeviceError, "", "hipGetDeviceProperties: no gfx architecture name where this ROCm's "
                                       "hipDeviceProp_t should hold it; gompute does not know this layout");
    return full.substr(0, full.find(':'));
  }

  std::string error_name(hipError_t r) const override {
    const char* s = api_.hipGetErrorName ? api_.hipGetErrorName(r) : nullptr;
    return s ? s : "hipError_" + std::to_string(r);
  }
  std::string error_text(hipError_t r) const override {
    const char* s = api_.hipGetErrorString ? api_.hipGetErrorString(r) : nullptr;
    return s ? s : "unknown HIP error";
  }

  // The error's name, then its description where that says more: ROCm 5's hipGetErrorString
  // returns the name itself.
  std::string described(hipError_t r) const {
    const std::string name = error_name(r), text = error_text(r);
    return text == name ? name : name + " (" + text + ")";
  }

  static std::string version_text(int v) {
    return std::to_string(v / 10000000) + "." + std::to_string(v / 100000 % 100);
  }

  Api api_{};
  size_t arch_offset_ = 0;
};

}  // namespace

std::unique_ptr<Driver> make_hip_driver() { return std::make_unique<HipDriver>(); }

}  // namespace gompute
