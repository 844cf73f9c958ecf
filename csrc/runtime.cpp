#include "runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace gompute {

Stats& stats() {
  static Stats s;
  return s;
}

namespace {

// A fixed inline buffer for up to 16 elements, else a heap array.
template <typename T>
class SmallVector {
 public:
  explicit SmallVector(size_t n) : n_(n) {
    if (n > 16) heap_ = std::make_unique<T[]>(n);
    data_ = heap_ ? heap_.get() : inline_;
  }
  SmallVector(const SmallVector&) = delete;
  SmallVector& operator=(const SmallVector&) = delete;
  T& operator[](size_t i) { return data_[i]; }
  T* data() { return data_; }
  size_t size() const { return n_; }

 private:
  size_t n_;
  T inline_[16] = {};
  std::unique_ptr<T[]> heap_;
  T* data_ = nullptr;
};

std::mutex g_registry_mu;
std::map<std::pair<int, int>, std::shared_ptr<Context>> g_contexts;
std::atomic<uint64_t> g_next_context_id{1};

// Per thread and backend: the id of the context last made current.
thread_local uint64_t t_current[3] = {0, 0, 0};

// Names the vendor's code too, as the exception would have: a warning is all a user sees of it.
void warn(const std::string& what, const std::exception& e) {
  const auto* error = dynamic_cast<const Error*>(&e);
  const std::string code = error && !error->code().empty() ? " (" + error->code() + ")" : "";
  std::fprintf(stderr, "gompute: warning: %s failed: %s%s\n", what.c_str(), e.what(), code.c_str());
}

template <typename Fn>
void noexcept_call(const std::string& what, Fn&& fn) noexcept {
  try {
    fn();
  } catch (const std::exception& e) {
    warn(what, e);
  }
}

void check_same_context(const Context& a, const Context& b, const char* what) {
  if (&a == &b) return;
  if (!a.alive() || !b.alive())  // "host:0, but ... host:0": one of them is from before a shutdown()
    raise(ErrorKind::InvalidHandle, std::string(what) + " and this operation are from either side of a "
                                                        "g.runtime.shutdown(); make the old one again on the new runtime");
  raise(ErrorKind::ArgumentError,
        std::string(what) + " belongs to " + b.describe() + ", but the operation runs on " + a.describe());
}

StreamHandle stream_handle(Stream* stream, const Context& ctx) {
  if (!stream) return nullptr;
  check_same_context(ctx, *stream->context(), "the stream");
  return stream->handle();
}

}  // namespace

// ---- Context ---------------------------------------------------------------

Context::Context(BackendKind kind, int ordinal)
    : drv_(driver(kind)), kind_(kind), ordinal_(ordinal), id_(g_next_context_id++) {
  handle_ = drv_.retain_primary_context(ordinal);
  stats().contexts_retained++;
}

Context::~Context() = default;

std::shared_ptr<Context> Context::get(BackendKind kind, int ordinal) {
  Driver& drv = driver(kind);
  drv.ensure_loaded();
  std::lock_guard<std::mutex> lock(g_registry_mu);
  if (auto found = g_contexts.find({int(kind), ordinal}); found != g_contexts.end()) return found->second;
  // The registry only ever holds retained contexts: shutdown() walks it, so a failed count
  // or retain must leave no slot behind.
  int count = drv.device_count();
  if (ordinal < 0 || ordinal >= count)
    raise(ErrorKind::ArgumentError, std::string(backend_name(kind)) + " has " + std::to_string(count) +
                                        " device(s); ordinal " + std::to_string(ordinal) + " is out of range");
  auto ctx = std::make_shared<Context>(kind, ordinal);
  g_contexts.emplace(std::make_pair(int(kind), ordinal), ctx);
  return ctx;
}

std::string Context::describe() const { return std::string(backend_name(kind_)) + ":" + std::to_string(ordinal_); }

void Context::enter() {
  if (!alive_.load())
    raise(ErrorKind::InvalidHandle, "this handle belongs to the " + describe() +
                                        " runtime, which was shut down; make a new one with Compute.init");
  uint64_t& current = t_current[int(kind_)];
  if (current != id_) {
    drv_.set_current(handle_, ordinal_);
    current = id_;
  }
}

std::shared_ptr<ModuleState> Context::load_module(const std::string& image) {
  enter();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = modules_.find(image);
  if (it != modules_.end()) {
    stats().module_cache_hits++;
    return it->second;
  }
  auto state = std::make_shared<ModuleState>();
  state->ctx = shared_from_this();
  state->handle = drv_.module_load(image.data(), image.size());
  state->names = drv_.module_function_names(state->handle);
  stats().modules_loaded++;
  modules_.emplace(image, state);
  return state;
}

// Past these, a release synchronizes the device and frees at once rather than wait.
constexpr size_t kDeferredBytes = size_t(256) << 20;
constexpr size_t kDeferredCount = 1024;

void Context::release(DevicePtr ptr, size_t nbytes) noexcept {
  if (kind_ == BackendKind::host) {
    noexcept_call("free of a host buffer", [&] { drv_.mem_free(ptr); });
    return;
  }
  bool flush;
  {
    std::lock_guard<std::mutex> lock(release_mu_);
    deferred_.push_back(ptr);
    deferred_bytes_ += nbytes;
    flush = deferred_bytes_ > kDeferredBytes || deferred_.size() > kDeferredCount;
  }
  if (flush) noexcept_call("free of " + describe() + " buffers", [&] { flush_releases(); });
}

bool Context::flush_releases() {
  std::vector<DevicePtr> ptrs;
  {
    std::lock_guard<std::mutex> lock(release_mu_);
    ptrs.swap(deferred_);
    deferred_bytes_ = 0;
  }
  if (ptrs.empty()) return false;
  // Only what was released before the synchronize started is known to be idle after it.
  try {
    enter();
    drv_.device_synchronize();
  } catch (...) {
    std::lock_guard<std::mutex> lock(release_mu_);
    deferred_.insert(deferred_.end(), ptrs.begin(), ptrs.end());
    throw;
  }
  free_deferred(std::move(ptrs));
  return true;
}

void Context::free_deferred(std::vector<DevicePtr> ptrs) noexcept {
  for (DevicePtr p : ptrs) noexcept_call("free of a " + describe() + " buffer", [&] { drv_.mem_free(p); });
}

void Context::track(const std::shared_ptr<StreamState>& stream) {
  std::lock_guard<std::mutex> lock(mu_);
  // Forget streams that are gone, so the list stays as long as the live ones.
  std::vector<std::weak_ptr<StreamState>> live;
  for (auto& w : streams_)
    if (!w.expired()) live.push_back(std::move(w));
  live.push_back(stream);
  streams_.swap(live);
}

void Context::synchronize() {
  enter();
  if (!flush_releases()) drv_.device_synchronize();
}

void Context::shutdown() {
  if (!alive_.load()) return;
  noexcept_call("synchronize at shutdown", [&] { synchronize(); });
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& w : streams_)
    if (auto s = w.lock()) s->destroy();
  streams_.clear();
  for (auto& [image, module] : modules_) {
    noexcept_call("module unload", [&, m = module] { drv_.module_unload(m->handle); });
    module->unloaded = true;
  }
  modules_.clear();
  {
    std::lock_guard<std::mutex> release_lock(release_mu_);
    deferred_.clear();  // the context takes its memory with it
  }
  noexcept_call("context release", [&] { drv_.release_primary_context(ordinal_); });
  alive_.store(false);
}

void shutdown(std::optional<BackendKind> kind) {
  std::vector<std::shared_ptr<Context>> doomed;
  {
    std::lock_guard<std::mutex> lock(g_registry_mu);
    for (auto it = g_contexts.begin(); it != g_contexts.end();) {
      if (!kind || it->first.first == int(*kind)) {
        doomed.push_back(it->second);
        it = g_contexts.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& ctx : doomed) ctx->shutdown();
}

// ---- Buffers -----------------------------------------------------------------

Allocation::~Allocation() {
  if (owner || !ptr) return;
  stats().buffers_live--;
  stats().bytes_live -= nbytes;
  // After shutdown a GPU context took its memory with it; host memory is still ours.
  if (!ctx->alive() && ctx->kind() != BackendKind::host) return;
  ctx->release(ptr, nbytes);
}

Buffer::Buffer(std::shared_ptr<Context> ctx, size_t nbytes) : ctx_(std::move(ctx)), nbytes_(nbytes) {
  ctx_->enter();
  auto alloc = std::make_shared<Allocation>();
  alloc->ctx = ctx_;
  alloc->nbytes = nbytes;
  if (nbytes > 0) {
    try {
      alloc->ptr = ctx_->drv().mem_alloc(nbytes);
    } catch (const Error& e) {
      // Memory waiting for a synchronize may be what is missing.
      if (e.kind() != ErrorKind::AllocFailed || !ctx_->flush_releases()) throw;
      alloc->ptr = ctx_->drv().mem_alloc(nbytes);
    }
    stats().buffers_live++;
    stats().bytes_live += nbytes;
  }
  stats().buffers_allocated++;
  alloc_ = std::move(alloc);
}

Buffer::Buffer(std::shared_ptr<Allocation> alloc, size_t offset, size_t nbytes)
    : ctx_(alloc->ctx), offset_(offset), nbytes_(nbytes), alloc_(std::move(alloc)) {
  if (offset > alloc_->nbytes || nbytes > alloc_->nbytes - offset)
    raise(ErrorKind::ArgumentError, "a view of " + std::to_string(nbytes) + " bytes at offset " +
                                        std::to_string(offset) + " reaches outside its " +
                                        std::to_string(alloc_->nbytes) + "-byte allocation");
}

// A GPU reads an element only at a multiple of its size (else CUDA_ERROR_MISALIGNED_ADDRESS, which
// ends the context); the host reads any address.
static void check_aligned(const Context& ctx, DevicePtr first, const Layout& layout) {
  if (ctx.kind() == BackendKind::host || layout.size() == 0) return;
  const int64_t size = int64_t(layout.itemsize());
  auto whole = [size](int64_t stride) { return stride % size == 0; };
  if (first % uint64_t(size) == 0 && std::all_of(layout.strides.begin(), layout.strides.end(), whole)) return;
  raise(ErrorKind::ArgumentError, "a " + std::string(backend_name(ctx.kind())) + " device reads a " +
                                      std::to_string(size) + "-byte element only at an address that is a multiple " +
                                      "of its size, and this array's first element or strides are not; copy it to an "
                                      "array of its own first");
}

Buffer Buffer::wrap(std::shared_ptr<Context> ctx, DevicePtr data, Layout layout, KeepAlive owner, bool readonly) {
  check_aligned(*ctx, data, layout);
  auto [lo, hi] = layout.extent();
  auto alloc = std::make_shared<Allocation>();
  alloc->ctx = ctx;
  alloc->ptr = data + lo;  // lo <= 0
  alloc->nbytes = size_t(hi - lo);
  alloc->owner = std::move(owner);
  Buffer b(std::move(alloc), 0, size_t(hi - lo));
  layout.origin = -lo;
  b.layout_ = std::move(layout);
  b.readonly_ = readonly;
  return b;
}

Buffer Buffer::view(Layout layout) const {
  allocation();
  if (layout.shape.size() != layout.strides.size())
    raise(ErrorKind::ArgumentError, "a view needs one stride per dimension");
  layout.check_fits("the view");
  auto [lo, hi] = layout.extent();
  if (layout.size() > 0 && (layout.origin + lo < 0 || layout.origin + hi > int64_t(nbytes_)))
    raise(ErrorKind::ArgumentError, "the view reaches bytes [" + std::to_string(layout.origin + lo) + ", " +
                                        std::to_string(layout.origin + hi) + ") of a " + std::to_string(nbytes_) +
                                        "-byte buffer");
  if (layout.origin < 0 || layout.origin > int64_t(nbytes_))
    raise(ErrorKind::ArgumentError, "a view's offset must lie within the buffer");
  check_aligned(*ctx_, alloc_->ptr + offset_ + uint64_t(layout.origin), layout);
  Buffer b = *this;
  b.layout_ = std::move(layout);
  return b;
}

Buffer Buffer::slice(size_t offset, size_t nbytes) const {
  allocation();
  if (offset > nbytes_ || nbytes > nbytes_ - offset)
    raise(ErrorKind::ArgumentError, "bytes [" + std::to_string(offset) + ", " + std::to_string(offset + nbytes) +
                                        ") reach outside this " + std::to_string(nbytes_) + "-byte buffer");
  Buffer b = *this;
  b.offset_ += offset;
  b.nbytes_ = nbytes;
  b.layout_.reset();
  return b;
}

DevicePtr Buffer::data_addr() const {
  DevicePtr base = device_addr();
  return base ? base + layout().origin : 0;
}

const std::shared_ptr<Allocation>& Buffer::allocation() const {
  if (!alloc_) raise(ErrorKind::BufferFreed, "this Buffer was freed; allocate a new one with compute.alloc");
  ctx_->enter();
  return alloc_;
}

DevicePtr Buffer::device_addr() const {
  const auto& alloc = allocation();
  return alloc->ptr ? alloc->ptr + offset_ : 0;
}

void Buffer::check_range(const char* what, size_t offset, size_t n) const {
  if (offset > nbytes_ || n > nbytes_ - offset)
    raise(ErrorKind::CopyFailed, std::string(what) + " of " + std::to_string(n) + " bytes at offset " +
                                     std::to_string(offset) + " overruns the " + std::to_string(nbytes_) +
                                     "-byte buffer (asked for bytes [" + std::to_string(offset) + ", " +
                                     std::to_string(offset + n) + "))");
}

void Buffer::upload(const void* src, size_t n, size_t offset, Stream* stream, KeepAlive keep) {
  const auto& alloc = allocation();
  if (readonly_) raise(ErrorKind::CopyFailed, "this buffer is read-only; upload into a writable one");
  check_range("upload", offset, n);
  if (n == 0) return;
  DevicePtr dst = alloc->ptr + offset_ + offset;
  if (StreamHandle s = stream_handle(stream, *ctx_); stream)
    ctx_->drv().copy_htod_async(dst, src, n, s, std::make_shared<std::pair<KeepAlive, KeepAlive>>(keep, alloc));
  else
    ctx_->drv().copy_htod(dst, src, n);
}

void Buffer::download(void* dst, size_t n, size_t offset, Stream* stream, KeepAlive keep) {
  const auto& alloc = allocation();
  check_range("download", offset, n);
  if (n == 0) return;
  DevicePtr src = alloc->ptr + offset_ + offset;
  if (StreamHandle s = stream_handle(stream, *ctx_); stream)
    ctx_->drv().copy_dtoh_async(dst, src, n, s, std::make_shared<std::pair<KeepAlive, KeepAlive>>(keep, alloc));
  else
    ctx_->drv().copy_dtoh(dst, src, n);
}

void Buffer::copy_from(const Buffer& src, size_t src_offset, size_t dst_offset, size_t n, Stream* stream) {
  const auto& dst_alloc = allocation();
  const auto& src_alloc = src.allocation();
  if (readonly_) raise(ErrorKind::CopyFailed, "this buffer is read-only; copy into a writable one");
  check_same_context(*ctx_, *src.ctx_, "the source buffer");
  src.check_range("copy_from (source)", src_offset, n);
  check_range("copy_from (destination)", dst_offset, n);
  if (n == 0) return;
  Driver& drv = ctx_->drv();
  DevicePtr to = dst_alloc->ptr + offset_ + dst_offset, from = src_alloc->ptr + src.offset_ + src_offset;
  StreamHandle s = stream_handle(stream, *ctx_);
  KeepAlive keep = std::make_shared<std::pair<KeepAlive, KeepAlive>>(dst_alloc, src_alloc);
  // GPU device-to-device copies of overlapping ranges are undefined: stage them.
  if (from < to + n && to < from + n && drv.kind() != BackendKind::host) {
    Buffer staging(ctx_, n);
    DevicePtr tmp = staging.alloc_->ptr;
    keep = std::make_shared<std::pair<KeepAlive, KeepAlive>>(keep, staging.alloc_);
    if (stream) {
      drv.copy_dtod_async(tmp, from, n, s, keep);
    } else {
      drv.copy_dtod(tmp, from, n);
    }
    from = tmp;
  }
  if (stream)
    drv.copy_dtod_async(to, from, n, s, keep);
  else
    drv.copy_dtod(to, from, n);
}

void Buffer::free() { alloc_.reset(); }

PinnedMemory::PinnedMemory(std::shared_ptr<Context> ctx, size_t nbytes) : ctx_(std::move(ctx)), nbytes_(nbytes) {
  ctx_->enter();
  data_ = ctx_->drv().host_alloc_pinned(nbytes ? nbytes : 1);
}

void* PinnedMemory::data() const {
  // A GPU driver frees page-locked memory with its context.
  if (!ctx_->alive())
    raise(ErrorKind::InvalidHandle, "this pinned memory belongs to the " + ctx_->describe() +
                                        " runtime, which was shut down (with its pinned memory); allocate new "
                                        "pinned memory with alloc_pinned");
  return data_;
}

PinnedMemory::~PinnedMemory() {
  if (!ctx_->alive() && ctx_->kind() != BackendKind::host) return;
  noexcept_call("free of pinned memory", [&] { ctx_->drv().host_free_pinned(data_); });
}

// ---- Streams and events ---------------------------------------------------------

void StreamState::destroy() {
  std::lock_guard<std::mutex> lock(mu);
  if (destroyed) return;
  destroyed = true;
  if (owned && ctx->alive()) {
    noexcept_call("stream destroy", [&] {
      ctx->enter();
      ctx->drv().stream_destroy(handle);
    });
  }
}

Stream::Stream(std::shared_ptr<Context> ctx) : state_(std::make_shared<StreamState>()) {
  ctx->enter();
  state_->ctx = ctx;
  state_->handle = ctx->drv().stream_create();
  state_->owned = true;
  ctx->track(state_);
}

Stream::Stream(std::shared_ptr<Context> ctx, StreamHandle borrowed) : state_(std::make_shared<StreamState>()) {
  state_->ctx = std::move(ctx);
  state_->handle = borrowed;
}

StreamHandle Stream::handle() const {
  state_->ctx->enter();
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->destroyed) raise(ErrorKind::InvalidHandle, "this stream was deinit()ed; create a new one");
  return state_->handle;
}

void Stream::synchronize() { state_->ctx->drv().stream_synchronize(handle()); }

void Stream::deinit() { state_->destroy(); }

Event::Event(std::shared_ptr<Context> ctx, bool timing) : ctx_(std::move(ctx)), timing_(timing) {
  ctx_->enter();
  handle_ = ctx_->drv().event_create(timing);
}

Event::~Event() {
  if (!ctx_->alive() && ctx_->kind() != BackendKind::host) return;
  noexcept_call("event destroy", [&] { ctx_->drv().event_destroy(handle_); });
}

EventHandle Event::handle() const {
  ctx_->enter();
  return handle_;
}

void Event::record(Stream* stream) { ctx_->drv().event_record(handle(), stream_handle(stream, *ctx_)); }
void Event::wait(Stream* stream) { ctx_->drv().stream_wait_event(stream_handle(stream, *ctx_), handle()); }
void Event::synchronize() { ctx_->drv().event_synchronize(handle()); }
bool Event::query() { return ctx_->drv().event_query(handle()); }
float Event::elapsed_ms(const Event& end) const {
  check_same_context(*ctx_, *end.ctx_, "the end event");
  if (!timing_ || !end.timing_)  // CUDA's answer would be a bare CUDA_ERROR_INVALID_HANDLE
    raise(ErrorKind::ArgumentError,
          "an event made with create_event(timing=False) cannot be timed; make both with timing=True");
  return ctx_->drv().event_elapsed_ms(handle(), end.handle());
}

// ---- Modules and launches ---------------------------------------------------------

const ModuleState& Module::state() const {
  if (!state_) raise(ErrorKind::InvalidHandle, "this Module was deinit()ed; load it again with load_module");
  state_->ctx->enter();
  if (state_->unloaded) raise(ErrorKind::InvalidHandle, "this module was unloaded by shutdown()");
  return *state_;
}

Kernel Module::get_kernel(const std::string& name) const {
  const ModuleState& st = state();
  FunctionHandle fn = st.ctx->drv().module_get_function(st.handle, name);
  if (!fn) {
    std::string have;
    for (const auto& n : st.names) have += (have.empty() ? "" : ", ") + n;
    raise(ErrorKind::KernelNotFound,
          "the module has no kernel named '" + name + "'" +
              (have.empty() ? " (this driver cannot list a module's kernels)" : "; it has: " + have));
  }
  return Kernel(state_, fn, name, st.ctx->drv().function_arg_count(fn));
}

Arg::Arg(const Buffer& buffer) : alloc_(buffer.allocation()) {
  DevicePtr addr = buffer.data_addr();  // element 0 of a typed view; the start of an untyped buffer
  bytes_.assign(reinterpret_cast<const char*>(&addr), sizeof addr);
}

void Kernel::launch(Dim3 grid, Dim3 block, uint32_t shared_bytes, const std::vector<const Arg*>& args,
                    Stream* stream, bool wait) {
  if (!module_) raise(ErrorKind::InvalidHandle, "this Kernel was deinit()ed; get it again with module.get_kernel");
  const Context& ctx = *module_->ctx;
  // Inline storage for the usual handful of arguments: no allocation on the launch path.
  SmallVector<void*> pointers(args.size());
  SmallVector<size_t> sizes(args.size());
  std::vector<KeepAlive> allocations;
  for (size_t i = 0; i < args.size(); ++i) {
    pointers[i] = const_cast<char*>(args[i]->bytes().data());
    sizes[i] = args[i]->bytes().size();
    if (const auto& alloc = args[i]->allocation()) {
      if (alloc->ctx.get() != &ctx) {
        if (!ctx.alive() || !alloc->ctx->alive())  // not "host:0, but the kernel runs on host:0"
          raise(ErrorKind::InvalidHandle, "argument " + std::to_string(i) + " of " + name_ +
                                              " and the kernel are from either side of a g.runtime.shutdown(); "
                                              "make the old one again on the new runtime");
        raise(ErrorKind::LaunchFailed, "argument " + std::to_string(i) + " of " + name_ + " is a buffer on " +
                                           alloc->ctx->describe() + ", but the kernel runs on " + ctx.describe());
      }
      allocations.push_back(alloc);
    }
  }
  KeepAlive keep = allocations.empty() ? nullptr : std::make_shared<std::vector<KeepAlive>>(std::move(allocations));
  submit(grid, block, shared_bytes, pointers.data(), sizes.data(), args.size(), stream_handle(stream, ctx),
         std::move(keep), wait);
}

const Context* Kernel::context() const { return module_ ? module_->ctx.get() : nullptr; }

void Kernel::submit(Dim3 grid, Dim3 block, uint32_t shared_bytes, void* const* args, const size_t* sizes,
                    size_t nargs, StreamHandle s, KeepAlive keep, bool wait) {
  if (!module_) raise(ErrorKind::InvalidHandle, "this Kernel was deinit()ed; get it again with module.get_kernel");
  Context& ctx = *module_->ctx;
  ctx.enter();
  if (module_->unloaded) raise(ErrorKind::InvalidHandle, "the module of " + name_ + " was unloaded by shutdown()");
  if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z)
    raise(ErrorKind::LaunchFailed, "launch of " + name_ + ": every grid and block dimension must be at least 1");
  if (arity_ >= 0 && size_t(arity_) != nargs)
    raise(ErrorKind::LaunchFailed, "kernel " + name_ + " takes " + std::to_string(arity_) + " arguments; the launch passed " +
                                       std::to_string(nargs));
  ctx.drv().launch(fn_, grid, block, shared_bytes, s, args, sizes, nargs, std::move(keep), wait);
  stats().launches++;
  if (wait) ctx.drv().stream_synchronize(s);
}

}  // namespace gompute
