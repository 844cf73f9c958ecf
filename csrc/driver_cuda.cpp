// The CUDA driver table: each call translated 1:1 to libcuda's, which driver_gpu.h opens
// at first use. The entry points themselves are declared in cuda_api.h.
#include "cuda_api.h"
#include "driver_gpu.h"

namespace gompute {
namespace {

using namespace cuda_api;  // this file is their one user

constexpr int kMinDriverVersion = 11040;  // cuLaunchKernel & co. as used here; CUDA 11.4

class CudaDriver final : public GpuDriver {
  static_assert(CUDA_SUCCESS == kSuccess, "GpuDriver::check takes 0 for success");

 public:
  CudaDriver() : GpuDriver("CUDA", "GOMPUTE_LIBCUDA", {"libcuda.so.1", "libcuda.so"}) {}

  BackendKind kind() const override { return BackendKind::cuda; }

  int device_count() override {
    int n = 0;
    check(api_.cuDeviceGetCount(&n), "cuDeviceGetCount");
    return n;
  }

  DeviceInfo device_info(int ordinal) override {
    CUdevice dev = device(ordinal);
    DeviceInfo info;
    char name[256] = {};
    check(api_.cuDeviceGetName(name, sizeof name, dev), "cuDeviceGetName");
    info.name = name;
    check(api_.cuDeviceGetAttribute(&info.compute_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute");
    check(api_.cuDeviceGetAttribute(&info.compute_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute");
    check(api_.cuDeviceGetAttribute(&info.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "cuDeviceGetAttribute");
    size_t mem = 0;
    check(api_.cuDeviceTotalMem(&mem, dev), "cuDeviceTotalMem");
    info.total_memory = mem;
    info.arch = "sm_" + std::to_string(info.compute_major * 10 + info.compute_minor);
    return info;
  }

  ContextHandle retain_primary_context(int ordinal) override {
    CUcontext ctx = nullptr;
    check(api_.cuDevicePrimaryCtxRetain(&ctx, device(ordinal)), "cuDevicePrimaryCtxRetain");
    return ctx;
  }
  void release_primary_context(int ordinal) override {
    check(api_.cuDevicePrimaryCtxRelease(device(ordinal)), "cuDevicePrimaryCtxRelease");
  }
  void set_current(ContextHandle ctx, int) override { check(api_.cuCtxSetCurrent(ctx), "cuCtxSetCurrent"); }

  DevicePtr mem_alloc(size_t nbytes) override {
    CUdeviceptr p = 0;
    check(api_.cuMemAlloc(&p, nbytes), "cuMemAlloc", ErrorKind::AllocFailed);
    return p;
  }
  void mem_free(DevicePtr ptr) override { check(api_.cuMemFree(ptr), "cuMemFree"); }
  void* host_alloc_pinned(size_t nbytes) override {
    void* p = nullptr;
    check(api_.cuMemAllocHost(&p, nbytes), "cuMemAllocHost", ErrorKind::AllocFailed);
    return p;
  }
  void host_free_pinned(void* ptr) override { check(api_.cuMemFreeHost(ptr), "cuMemFreeHost"); }

  // A copy without a stream is done when it returns. The driver's synchronous copies run on
  // the legacy default stream, and two of them return early: one from pageable memory once
  // its bytes are staged, a device-to-device one at once ("API synchronization behavior" in
  // the driver API reference). Work on gompute's streams, which are non-blocking, is not
  // ordered after the legacy stream, so a kernel launched there could read the old bytes:
  // these wait for the legacy stream, which holds nothing older than the copy (a synchronous
  // copy waits for the legacy stream's earlier work before it starts).
  void copy_htod(DevicePtr dst, const void* src, size_t n) override {
    check(api_.cuMemcpyHtoD(dst, src, n), "cuMemcpyHtoD", ErrorKind::CopyFailed);
    check(api_.cuStreamSynchronize(nullptr), "cuStreamSynchronize", ErrorKind::CopyFailed);
  }
  void copy_dtoh(void* dst, DevicePtr src, size_t n) override {
    check(api_.cuMemcpyDtoH(dst, src, n), "cuMemcpyDtoH", ErrorKind::CopyFailed);  // done on return
  }
  void copy_dtod(DevicePtr dst, DevicePtr src, size_t n) override {
    check(api_.cuMemcpyDtoD(dst, src, n), "cuMemcpyDtoD", ErrorKind::CopyFailed);
    check(api_.cuStreamSynchronize(nullptr), "cuStreamSynchronize", ErrorKind::CopyFailed);
  }
  void copy_htod_async(DevicePtr dst, const void* src, size_t n, StreamHandle s, KeepAlive) override {
    check(api_.cuMemcpyHtoDAsync(dst, src, n, s), "cuMemcpyHtoDAsync", ErrorKind::CopyFailed);
  }
  void copy_dtoh_async(void* dst, DevicePtr src, size_t n, StreamHandle s, KeepAlive) override {
    check(api_.cuMemcpyDtoHAsync(dst, src, n, s), "cuMemcpyDtoHAsync", ErrorKind::CopyFailed);
  }
  void copy_dtod_async(DevicePtr dst, DevicePtr src, size_t n, StreamHandle s, KeepAlive) override {
    check(api_.cuMemcpyDtoDAsync(dst, src, n, s), "cuMemcpyDtoDAsync", ErrorKind::CopyFailed);
  }

  StreamHandle stream_create() override {
    CUstream s = nullptr;
    check(api_.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    return s;
  }
  void stream_destroy(StreamHandle s) override { check(api_.cuStreamDestroy(s), "cuStreamDestroy"); }
  void stream_synchronize(StreamHandle s) override {
    check(api_.cuStreamSynchronize(s), "cuStreamSynchronize", ErrorKind::SyncFailed);
  }

  EventHandle event_create(bool timing) override {
    CUevent e = nullptr;
    check(api_.cuEventCreate(&e, timing ? 0 : CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    return e;
  }
  void event_destroy(EventHandle e) override { check(api_.cuEventDestroy(e), "cuEventDestroy"); }
  void event_record(EventHandle e, StreamHandle s) override { check(api_.cuEventRecord(e, s), "cuEventRecord"); }
  void stream_wait_event(StreamHandle s, EventHandle e) override {
    check(api_.cuStreamWaitEvent(s, e, 0), "cuStreamWaitEvent");
  }
  void event_synchronize(EventHandle e) override {
    check(api_.cuEventSynchronize(e), "cuEventSynchronize", ErrorKind::SyncFailed);
  }
  bool event_query(EventHandle e) override {
    CUresult r = api_.cuEventQuery(e);
    if (r == CUDA_ERROR_NOT_READY) return false;
    check(r, "cuEventQuery", ErrorKind::SyncFailed);
    return true;
  }
  float event_elapsed_ms(EventHandle start, EventHandle end) override {
    float ms = 0;
    check(api_.cuEventElapsedTime(&ms, start, end), "cuEventElapsedTime");
    return ms;
  }

  ModuleHandle module_load(const void* image, size_t nbytes) override {
    // PTX must be NUL-terminated; a copy with a terminator serves CUBIN too.
    std::string text(static_cast<const char*>(image), nbytes);
    char log[8192] = {};
    int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(sizeof log)};
    CUmodule m = nullptr;
    CUresult r = api_.cuModuleLoadDataEx(&m, text.c_str(), 2, options, values);
    if (r != CUDA_SUCCESS) {
      std::string detail = log[0] ? std::string("; JIT log: ") + log : "";
      fail(ErrorKind::ModuleLoadFailed, error_name(r), "cuModuleLoadDataEx: " + error_text(r) + detail);
    }
    return m;
  }
  void module_unload(ModuleHandle m) override { check(api_.cuModuleUnload(m), "cuModuleUnload"); }
  FunctionHandle module_get_function(ModuleHandle m, const std::string& name) override {
    CUfunction f = nullptr;
    CUresult r = api_.cuModuleGetFunction(&f, m, name.c_str());
    if (r == CUDA_ERROR_NOT_FOUND) return nullptr;  // absent; anything else is a real failure
    check(r, "cuModuleGetFunction");
    return f;
  }
  std::vector<std::string> module_function_names(ModuleHandle m) override {
    std::vector<std::string> names;
    unsigned count = 0;
    if (!api_.cuModuleGetFunctionCount || !api_.cuModuleEnumerateFunctions || !api_.cuFuncGetName ||
        api_.cuModuleGetFunctionCount(&count, m) != CUDA_SUCCESS)
      return names;
    std::vector<CUfunction> fns(count);
    if (api_.cuModuleEnumerateFunctions(fns.data(), count, m) != CUDA_SUCCESS) return names;
    for (CUfunction f : fns) {
      const char* name = nullptr;
      if (api_.cuFuncGetName(&name, f) == CUDA_SUCCESS && name) names.emplace_back(name);
    }
    return names;
  }
  int function_arg_count(FunctionHandle fn) override {
    if (!api_.cuFuncGetParamInfo) return -1;
    size_t offset = 0, size = 0, i = 0;
    CUresult r;
    while ((r = api_.cuFuncGetParamInfo(fn, i, &offset, &size)) == CUDA_SUCCESS) ++i;
    return r == CUDA_ERROR_INVALID_VALUE ? static_cast<int>(i) : -1;
  }
  int pointer_device(DevicePtr ptr) override {
    int ordinal = -1;
    if (!api_.cuPointerGetAttribute ||
        api_.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr) != CUDA_SUCCESS)
      return -1;
    return ordinal;
  }

  void launch(FunctionHandle fn, Dim3 g, Dim3 b, uint32_t shared, StreamHandle s, void* const* args, const size_t*,
              size_t, KeepAlive, bool) override {
    check(api_.cuLaunchKernel(fn, g.x, g.y, g.z, b.x, b.y, b.z, shared, s, const_cast<void**>(args), nullptr),
          "cuLaunchKernel",
          ErrorKind::LaunchFailed);
  }
  void device_synchronize() override { check(api_.cuCtxSynchronize(), "cuCtxSynchronize", ErrorKind::SyncFailed); }

 private:
  std::string initialize() override {
    CUresult r = api_.cuInit(0);
    if (r != CUDA_SUCCESS)
      return "cuInit failed with " + error_name(r) + " (" + error_text(r) + ") using " + lib_.path();
    if ((r = api_.cuDriverGetVersion(&version_)) != CUDA_SUCCESS)
      return "cuDriverGetVersion failed with " + error_name(r);
    if (version_ < kMinDriverVersion)
      return "driver version " + version_text(version_) + " is too old; gompute needs " +
             version_text(kMinDriverVersion) + " or newer";
    int n = 0;
    if ((r = api_.cuDeviceGetCount(&n)) != CUDA_SUCCESS)
      return "cuDeviceGetCount failed with " + error_name(r) + " (" + error_text(r) + ")";
    if (n == 0) return "no CUDA device (driver " + version_text(version_) + ")";
    return "";
  }

  void resolve() override {
    need(api_.cuInit, "cuInit");
    need(api_.cuDriverGetVersion, "cuDriverGetVersion");
    need(api_.cuGetErrorName, "cuGetErrorName");
    need(api_.cuGetErrorString, "cuGetErrorString");
    need(api_.cuDeviceGetCount, "cuDeviceGetCount");
    need(api_.cuDeviceGet, "cuDeviceGet");
    need(api_.cuDeviceGetName, "cuDeviceGetName");
    need(api_.cuDeviceGetAttribute, "cuDeviceGetAttribute");
    need(api_.cuDeviceTotalMem, "cuDeviceTotalMem_v2");
    need(api_.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    need(api_.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    need(api_.cuCtxSetCurrent, "cuCtxSetCurrent");
    need(api_.cuCtxSynchronize, "cuCtxSynchronize");
    need(api_.cuMemAlloc, "cuMemAlloc_v2");
    need(api_.cuMemFree, "cuMemFree_v2");
    need(api_.cuMemAllocHost, "cuMemAllocHost_v2");
    need(api_.cuMemFreeHost, "cuMemFreeHost");
    need(api_.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    need(api_.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    need(api_.cuMemcpyDtoD, "cuMemcpyDtoD_v2");
    need(api_.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    need(api_.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    need(api_.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    need(api_.cuStreamCreate, "cuStreamCreate");
    need(api_.cuStreamDestroy, "cuStreamDestroy_v2");
    need(api_.cuStreamSynchronize, "cuStreamSynchronize");
    need(api_.cuStreamWaitEvent, "cuStreamWaitEvent");
    need(api_.cuEventCreate, "cuEventCreate");
    need(api_.cuEventDestroy, "cuEventDestroy_v2");
    need(api_.cuEventRecord, "cuEventRecord");
    need(api_.cuEventSynchronize, "cuEventSynchronize");
    need(api_.cuEventQuery, "cuEventQuery");
    // CUDA 12.8 added _v2; older drivers have only the original, same signature.
    api_.cuEventElapsedTime = lib_.symbol<decltype(api_.cuEventElapsedTime)>("cuEventElapsedTime_v2");
    if (!api_.cuEventElapsedTime) need(api_.cuEventElapsedTime, "cuEventElapsedTime");
    need(api_.cuModuleLoadDataEx, "cuModuleLoadDataEx");
    need(api_.cuModuleUnload, "cuModuleUnload");
    need(api_.cuModuleGetFunction, "cuModuleGetFunction");
    need(api_.cuLaunchKernel, "cuLaunchKernel");
    api_.cuModuleGetFunctionCount = lib_.symbol<decltype(api_.cuModuleGetFunctionCount)>("cuModuleGetFunctionCount");
    api_.cuModuleEnumerateFunctions =
        lib_.symbol<decltype(api_.cuModuleEnumerateFunctions)>("cuModuleEnumerateFunctions");
    api_.cuFuncGetName = lib_.symbol<decltype(api_.cuFuncGetName)>("cuFuncGetName");
    api_.cuFuncGetParamInfo = lib_.symbol<decltype(api_.cuFuncGetParamInfo)>("cuFuncGetParamInfo");
    api_.cuPointerGetAttribute = lib_.symbol<decltype(api_.cuPointerGetAttribute)>("cuPointerGetAttribute");
  }

  CUdevice device(int ordinal) {
    CUdevice dev = 0;
    check(api_.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
    return dev;
  }

  std::string error_name(CUresult r) const override {
    const char* s = nullptr;
    if (api_.cuGetErrorName && api_.cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
    return "CUDA_ERROR_" + std::to_string(r);
  }
  std::string error_text(CUresult r) const override {
    const char* s = nullptr;
    if (api_.cuGetErrorString && api_.cuGetErrorString(r, &s) == CUDA_SUCCESS && s) return s;
    return "unknown CUDA error";
  }

  static std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

  Api api_{};
};

}  // namespace

std::unique_ptr<Driver> make_cuda_driver() { return std::make_unique<CudaDriver>(); }

}  // namespace gompute
