// The host driver table: the CPU playing a GPU. Buffers are 64-byte-aligned host
// memory, modules are shared objects following gompute/include/gompute/host_launch.h,
// a launch runs its grid on the worker pool, and streams are ordered task queues.
#include <dlfcn.h>
#include <elf.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "driver.h"
#include "elf_check.h"
#include "gompute/host_launch.h"
#include "host_pool.h"

namespace gompute {
namespace {

constexpr size_t kAlignment = 64;
// Where a launch runs: on the calling thread (or the stream's own) or on the worker pool. A hand-
// off to the pool costs a few microseconds, which a short job does not win back on more threads.
// So a launch runs inline when its function's recorded cost per thread (HostFunction::thread_ns)
// puts it under kInlineNanoseconds, and one of at most kInlineThreads (64 KiB of f32: the small
// arrays, which must not pay a hand-off) does unless it takes more than kPoolNanoseconds, where
// the pool plainly wins. benchmarks/results/ holds the timings these thresholds come from.
constexpr uint64_t kInlineThreads = 16384;
constexpr double kInlineNanoseconds = 6000;
constexpr double kPoolNanoseconds = 25000;
// Launches are timed above kInlineThreads, and one in kTimedEvery from kTimedThreads up (a
// smaller one's time is mostly the call's own, not its threads').
constexpr uint64_t kTimedThreads = 4096;
constexpr uint32_t kTimedEvery = 8;
constexpr int kSpinMicroseconds = 100;
constexpr long kMaxSpinMicroseconds = 10'000'000;  // GOMPUTE_HOST_SPIN_US, at most
constexpr long kMaxThreads = 4096;                // GOMPUTE_HOST_THREADS, at most

// The whole number an environment variable holds (blanks after it aside), if it holds one
// from `least` to `most`; else `fallback`. gompute/runtime/host.py warns about the others.
long env_number(const char* name, long least, long most, long fallback) {
  const char* env = std::getenv(name);
  if (!env) return fallback;
  char* end = nullptr;
  const long value = std::strtol(env, &end, 10);
  while (end && std::isspace(static_cast<unsigned char>(*end))) ++end;
  const bool digits = std::any_of(env, end ? end : env, [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  return digits && end && *end == '\0' && value >= least && value <= most ? value : fallback;
}

// How long pool and stream threads, and the threads waiting for them, spin before they sleep
// (host_pool.h).
std::chrono::microseconds spin_setting() {
  static const std::chrono::microseconds spin(env_number("GOMPUTE_HOST_SPIN_US", 0, kMaxSpinMicroseconds, kSpinMicroseconds));
  return spin;
}

struct Fault {
  std::mutex mu;
  std::string message;  // "" while no fault
};

struct HostStream {
  TaskQueue queue{spin_setting()};
  Fault fault;
};

struct HostEvent {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0;   // records issued
  uint64_t completed = 0;  // records reached by their stream
  std::chrono::steady_clock::time_point when;
};

using EventRef = std::shared_ptr<HostEvent>;

struct HostFunction {
  std::string name;
  gompute_host_kernel entry;
  int arity;  // -1: the module did not export one
  // What one thread of a launch costs on one CPU thread, in nanoseconds, a moving average over
  // the timed launches; < 0 until one has run. Launches it misjudges (a loop whose trip count is
  // a parameter) are timed too, the first at once above kInlineThreads, one in kTimedEvery below.
  std::atomic<float> thread_ns{-1};
  std::atomic<uint32_t> launches{0};  // of kTimedThreads to kInlineThreads threads

  bool runs_inline(uint64_t threads) const {
    const float ns = thread_ns.load(std::memory_order_relaxed);
    const double work = double(ns) * double(threads);
    if (threads <= kInlineThreads) return ns < 0 || work < kPoolNanoseconds;
    return ns >= 0 && work < kInlineNanoseconds;
  }
  // Called once a launch: whether to time this one.
  bool timing(uint64_t threads) {
    if (threads > kInlineThreads) return true;
    return threads >= kTimedThreads && launches.fetch_add(1, std::memory_order_relaxed) % kTimedEvery == 0;
  }
  void timed(uint64_t threads, std::chrono::nanoseconds busy) {
    const float ns = float(busy.count()) / float(threads);
    const float old = thread_ns.load(std::memory_order_relaxed);
    thread_ns.store(old < 0 ? ns : 0.75f * old + 0.25f * ns, std::memory_order_relaxed);
  }
};

struct HostModule {
  void* handle;
  std::vector<std::string> names;
  std::mutex mu;
  std::map<std::string, std::unique_ptr<HostFunction>> functions;
};

// What a trap needs to find: the launch's fault slot and its abort flag.
struct LaunchState {
  Fault* fault;
  const std::string* kernel;
  std::atomic<bool> aborted{false};
};

void trap(const gompute_host_launch* launch, const char* message) {
  auto* state = static_cast<LaunchState*>(launch->runtime);
  state->aborted.store(true);
  std::lock_guard<std::mutex> lock(state->fault->mu);
  if (state->fault->message.empty())
    state->fault->message = "kernel " + *state->kernel + " trapped: " + (message ? message : "(no message)");
}

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  struct utsname u;
  return uname(&u) == 0 ? u.machine : "host CPU";
}

unsigned pool_threads() {
  return unsigned(env_number("GOMPUTE_HOST_THREADS", 1, kMaxThreads, std::max(1u, std::thread::hardware_concurrency())));
}

class HostDriver final : public Driver {
 public:
  HostDriver() : pool_(pool_threads(), spin_setting()), default_stream_(std::make_unique<HostStream>()) {}

  BackendKind kind() const override { return BackendKind::host; }
  void ensure_loaded() override {}
  int driver_version() override { return GOMPUTE_HOST_LAUNCH_VERSION; }
  int device_count() override { return 1; }

  DeviceInfo device_info(int) override {
    DeviceInfo info;
    info.name = cpu_model_name();
    struct utsname u;
    info.arch = uname(&u) == 0 ? u.machine : "unknown";
    info.total_memory = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
    info.multiprocessors = static_cast<int>(pool_.threads());
    return info;
  }

  // The host has no contexts; a non-null token keeps the runtime's bookkeeping uniform.
  ContextHandle retain_primary_context(int) override { return this; }
  void release_primary_context(int) override {}
  void set_current(ContextHandle, int) override {}

  DevicePtr mem_alloc(size_t nbytes) override {
    // Rounded up to whole alignment units, which must not wrap past 2**64 to a small size.
    void* p = nbytes <= SIZE_MAX - kAlignment
                  ? std::aligned_alloc(kAlignment, (nbytes + kAlignment - 1) / kAlignment * kAlignment)
                  : nullptr;
    if (!p) fail(ErrorKind::AllocFailed, "ENOMEM", "out of host memory allocating " + std::to_string(nbytes) + " bytes");
    return reinterpret_cast<DevicePtr>(p);
  }
  void mem_free(DevicePtr ptr) override { std::free(reinterpret_cast<void*>(ptr)); }
  void* host_alloc_pinned(size_t nbytes) override { return reinterpret_cast<void*>(mem_alloc(nbytes)); }
  void host_free_pinned(void* ptr) override { std::free(ptr); }

  // Synchronous copies follow the legacy default stream: they wait for its work.
  void copy_htod(DevicePtr dst, const void* src, size_t n) override {
    default_stream_->queue.drain();
    std::memcpy(addr(dst), src, n);
  }
  void copy_dtoh(void* dst, DevicePtr src, size_t n) override {
    default_stream_->queue.drain();
    std::memcpy(dst, addr(src), n);
  }
  void copy_dtod(DevicePtr dst, DevicePtr src, size_t n) override {
    default_stream_->queue.drain();
    std::memmove(addr(dst), addr(src), n);
  }
  void copy_htod_async(DevicePtr dst, const void* src, size_t n, StreamHandle s, KeepAlive keep) override {
    stream(s).queue.submit([dst, src, n, keep] { std::memcpy(addr(dst), src, n); }, false);
  }
  void copy_dtoh_async(void* dst, DevicePtr src, size_t n, StreamHandle s, KeepAlive keep) override {
    stream(s).queue.submit([dst, src, n, keep] { std::memcpy(dst, addr(src), n); }, false);
  }
  void copy_dtod_async(DevicePtr dst, DevicePtr src, size_t n, StreamHandle s, KeepAlive keep) override {
    stream(s).queue.submit([dst, src, n, keep] { std::memmove(addr(dst), addr(src), n); }, false);
  }

  StreamHandle stream_create() override {
    auto* s = new HostStream();
    std::lock_guard<std::mutex> lock(streams_mu_);
    streams_.insert(s);
    return s;
  }
  void stream_destroy(StreamHandle s) override {
    {
      std::lock_guard<std::mutex> lock(streams_mu_);
      streams_.erase(static_cast<HostStream*>(s));
    }
    delete static_cast<HostStream*>(s);  // drains first
  }
  void stream_synchronize(StreamHandle s) override {
    HostStream& hs = stream(s);
    hs.queue.drain();
    std::string message;
    {
      std::lock_guard<std::mutex> lock(hs.fault.mu);
      message.swap(hs.fault.message);
    }
    if (!message.empty()) fail(ErrorKind::SyncFailed, "HOST_KERNEL_TRAP", message);
  }

  // An event handle owns one reference; work still queued holds others, so destroying
  // an event with a record in flight is safe, as on a GPU.
  EventHandle event_create(bool) override { return new EventRef(std::make_shared<HostEvent>()); }
  void event_destroy(EventHandle e) override { delete static_cast<EventRef*>(e); }
  void event_record(EventHandle e, StreamHandle s) override {
    EventRef ev = event(e);
    uint64_t generation;
    {
      std::lock_guard<std::mutex> lock(ev->mu);
      generation = ++ev->recorded;
    }
    stream(s).queue.submit(
        [ev, generation] {
          std::lock_guard<std::mutex> lock(ev->mu);
          if (generation < ev->completed) return;  // a later record of it has landed: its time stands
          ev->when = std::chrono::steady_clock::now();
          ev->completed = generation;
          ev->cv.notify_all();
        },
        true);
  }
  void stream_wait_event(StreamHandle s, EventHandle e) override {
    EventRef ev = event(e);
    uint64_t target;
    {
      std::lock_guard<std::mutex> lock(ev->mu);
      target = ev->recorded;  // the record most recently issued, as on a GPU
      if (ev->completed >= target) return;
    }
    // Never inline: the wait must hold up the stream, not the caller.
    stream(s).queue.submit([ev, target] { wait_for(ev, target); }, false);
  }
  void event_synchronize(EventHandle e) override {
    EventRef ev = event(e);
    uint64_t target;
    {
      std::lock_guard<std::mutex> lock(ev->mu);
      target = ev->recorded;
    }
    wait_for(ev, target);
  }
  bool event_query(EventHandle e) override {
    EventRef ev = event(e);
    std::lock_guard<std::mutex> lock(ev->mu);
    return ev->completed >= ev->recorded;
  }
  float event_elapsed_ms(EventHandle start, EventHandle end) override {
    HostEvent *a = event(start).get(), *b = event(end).get();
    std::lock_guard<std::mutex> la(a->mu);
    std::unique_lock<std::mutex> lb(b->mu, std::defer_lock);
    if (a != b) lb.lock();
    if (a->recorded == 0 || b->recorded == 0 || a->completed < a->recorded || b->completed < b->recorded)
      fail(ErrorKind::DeviceError, "HOST_EVENT_NOT_READY", "both events must be recorded and complete");
    return std::chrono::duration<float, std::milli>(b->when - a->when).count();
  }

  ModuleHandle module_load(const void* image, size_t nbytes) override {
    std::string bytes(static_cast<const char*>(image), nbytes);
    if (nbytes < 4 || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0)
      fail(ErrorKind::ModuleLoadFailed, "HOST_NOT_ELF",
           "a host module image must be a shared object (ELF); this one starts with something else");
    if (const std::string problem = elf_image_problem(bytes); !problem.empty())
      fail(ErrorKind::ModuleLoadFailed, "HOST_BAD_ELF", "cannot load the host module: " + problem);
    void* handle = open_image(bytes);
    auto* module = new HostModule{handle, elf_function_names(bytes), {}, {}};
    return module;
  }
  void module_unload(ModuleHandle m) override {
    auto* module = static_cast<HostModule*>(m);
    dlclose(module->handle);
    delete module;
  }
  FunctionHandle module_get_function(ModuleHandle m, const std::string& name) override {
    auto* module = static_cast<HostModule*>(m);
    std::lock_guard<std::mutex> lock(module->mu);
    auto& slot = module->functions[name];
    if (!slot) {
      // Only the module's own exported functions: dlsym also finds its data (the arity constants)
      // and, through the module's dependencies, libc's functions, which are not kernels.
      const bool exported = std::find(module->names.begin(), module->names.end(), name) != module->names.end();
      auto entry = exported ? reinterpret_cast<gompute_host_kernel>(dlsym(module->handle, name.c_str())) : nullptr;
      if (!entry) {
        module->functions.erase(name);
        return nullptr;
      }
      auto* arity = static_cast<const uint32_t*>(dlsym(module->handle, (name + "_gompute_arity").c_str()));
      slot.reset(new HostFunction{name, entry, arity ? static_cast<int>(*arity) : -1});
    }
    return slot.get();
  }
  std::vector<std::string> module_function_names(ModuleHandle m) override { return static_cast<HostModule*>(m)->names; }
  int function_arg_count(FunctionHandle fn) override { return static_cast<HostFunction*>(fn)->arity; }

  void launch(FunctionHandle fn, Dim3 grid, Dim3 block, uint32_t shared_bytes, StreamHandle s, void* const* args,
              const size_t* arg_sizes, size_t nargs, KeepAlive keep, bool caller_waits) override {
    auto* f = static_cast<HostFunction*>(fn);
    if (f->arity >= 0 && size_t(f->arity) != nargs)
      fail(ErrorKind::LaunchFailed, "HOST_ARG_COUNT",
           "kernel " + f->name + " takes " + std::to_string(f->arity) + " arguments, the launch passed " +
               std::to_string(nargs));
    HostStream& hs = stream(s);
    uint64_t blocks = 0, threads_checked = 0;
    if (__builtin_mul_overflow(uint64_t(grid.x) * grid.y, uint64_t(grid.z), &blocks) ||
        __builtin_mul_overflow(blocks, uint64_t(block.x) * block.y * block.z, &threads_checked))
      fail(ErrorKind::LaunchFailed, "HOST_GRID_TOO_LARGE",
           "a grid of " + std::to_string(grid.x) + " x " + std::to_string(grid.y) + " x " + std::to_string(grid.z) +
               " blocks of " + std::to_string(uint64_t(block.x) * block.y * block.z) +
               " threads has more than 2**64 threads; launch fewer blocks");
    const uint64_t threads = blocks * block.x * block.y * block.z;
    const bool here = f->runs_inline(threads);
    // An inline launch the caller waits for, on an idle stream: run it here and now, on the
    // caller's argument storage (nothing outlives this call).
    if (caller_waits && here &&
        hs.queue.try_run_inline([&] { run_grid(*f, grid, block, shared_bytes, args, nargs, blocks, true, hs.fault); }))
      return;
    // The argument storage may change once launch returns: copy it, as GPU drivers do.
    std::vector<size_t> offsets(nargs);
    size_t total = 0;
    for (size_t i = 0; i < nargs; ++i) {
      offsets[i] = total;
      total += (arg_sizes[i] + 15) / 16 * 16;
    }
    auto storage = std::make_shared<std::vector<unsigned char>>(total);
    for (size_t i = 0; i < nargs; ++i) std::memcpy(storage->data() + offsets[i], args[i], arg_sizes[i]);
    // Queued, never run on the caller, unless the caller waits for it anyway: otherwise
    // a kernel may wait for something the host does after launch returns, as on a GPU.
    hs.queue.submit(
        [this, f, grid, block, shared_bytes, storage, offsets, blocks, here, &hs, keep] {
          std::vector<void*> pointers(offsets.size());
          for (size_t i = 0; i < offsets.size(); ++i) pointers[i] = storage->data() + offsets[i];
          run_grid(*f, grid, block, shared_bytes, pointers.data(), pointers.size(), blocks, here, hs.fault);
        },
        caller_waits);
  }

  // Waits for every stream; the first fault found is reported, the others are cleared.
  void device_synchronize() override {
    // Held throughout, so no stream is destroyed under us; queued work never takes it.
    std::lock_guard<std::mutex> lock(streams_mu_);
    std::vector<HostStream*> all{default_stream_.get()};
    all.insert(all.end(), streams_.begin(), streams_.end());
    std::string first;
    for (HostStream* s : all) {
      try {
        stream_synchronize(s);
      } catch (const Error& e) {
        if (first.empty()) first = e.what();
      }
    }
    if (!first.empty()) fail(ErrorKind::SyncFailed, "HOST_KERNEL_TRAP", first);
  }

 private:
  static void* addr(DevicePtr p) { return reinterpret_cast<void*>(p); }

  HostStream& stream(StreamHandle s) { return s ? *static_cast<HostStream*>(s) : *default_stream_; }

  static EventRef event(EventHandle e) { return *static_cast<EventRef*>(e); }

  static void wait_for(const EventRef& ev, uint64_t target) {
    std::unique_lock<std::mutex> lock(ev->mu);
    ev->cv.wait(lock, [&] { return ev->completed >= target; });
  }

  void run_grid(HostFunction& f, Dim3 grid, Dim3 block, uint32_t shared_bytes, void* const* args, size_t nargs,
                uint64_t blocks, bool inline_only, Fault& fault) {
    LaunchState state{&fault, &f.name};
    auto chunk = [&](uint64_t begin, uint64_t end) {
      if (state.aborted.load(std::memory_order_relaxed)) return;
      std::vector<unsigned char> shared(shared_bytes);
      gompute_host_launch launch{};
      launch.launch_version = GOMPUTE_HOST_LAUNCH_VERSION;
      launch.arg_count = static_cast<uint32_t>(nargs);
      launch.args = args;
      launch.grid_dim = {grid.x, grid.y, grid.z};
      launch.block_dim = {block.x, block.y, block.z};
      launch.block_begin = begin;
      launch.block_end = end;
      launch.shared = shared.empty() ? nullptr : shared.data();
      launch.shared_bytes = shared_bytes;
      launch.trap = trap;
      launch.runtime = &state;
      f.entry(&launch);
    };
    // Nothing may leave a chunk: on a pool or stream thread an exception ended the process, and
    // on the caller's it left the stream busy for good. A kernel that throws (a raw one's C++),
    // or shared memory that cannot be had, is the launch's fault, as a trap is.
    auto body = [&](uint64_t begin, uint64_t end) {
      gompute_host_launch failed{};
      failed.runtime = &state;
      try {
        chunk(begin, end);
      } catch (const std::bad_alloc&) {
        trap(&failed, ("out of memory (" + std::to_string(shared_bytes) + " bytes of shared memory a chunk)").c_str());
      } catch (const std::exception& e) {
        trap(&failed, (std::string("threw ") + e.what()).c_str());
      } catch (...) {
        trap(&failed, "threw an exception");
      }
    };
    const uint64_t threads = blocks * block.x * block.y * block.z;
    if (!f.timing(threads)) return inline_only ? body(0, blocks) : pool_.run(blocks, body);
    using clock = std::chrono::steady_clock;
    std::atomic<int64_t> busy_ns{0};  // summed over the pool's chunks
    auto timed_body = [&](uint64_t begin, uint64_t end) {
      const auto start = clock::now();
      body(begin, end);
      busy_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - start).count(),
                        std::memory_order_relaxed);
    };
    if (inline_only)
      timed_body(0, blocks);
    else
      pool_.run(blocks, timed_body);
    if (!state.aborted.load()) f.timed(threads, std::chrono::nanoseconds(busy_ns.load()));
  }

  // dlopen needs a file: write the image to a private temporary file, open it, and
  // unlink it at once (the mapping outlives the name).
  void* open_image(const std::string& bytes) {
    const char* tmp = std::getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/gompute-module-XXXXXX";
    int fd = mkstemp(path.data());  // created 0600
    if (fd < 0) fail(ErrorKind::ModuleLoadFailed, "HOST_TMPFILE", "cannot create a temporary file at " + path);
    size_t written = 0;
    while (written < bytes.size()) {
      ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
      if (n <= 0) break;
      written += size_t(n);
    }
    ::close(fd);
    void* handle = written == bytes.size() ? dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
    std::string why = handle ? "" : (written == bytes.size() ? dlerror() : "short write to " + path);
    ::unlink(path.c_str());
    if (!handle) fail(ErrorKind::ModuleLoadFailed, "HOST_DLOPEN", "cannot load the host module: " + why);
    return handle;
  }

  WorkerPool pool_;
  std::unique_ptr<HostStream> default_stream_;
  std::mutex streams_mu_;
  std::set<HostStream*> streams_;
};

}  // namespace

std::unique_ptr<Driver> make_host_driver() { return std::make_unique<HostDriver>(); }

}  // namespace gompute
