// The CUDA C++ that gompute hands NVRTC (lang/module.py module_source(units, "cuda"), and the
// HIP text for hiprtc), built unchanged by the host C++ compiler into a host-ABI shared object
// (gompute/host_launch.h) that the fake driver and the host runtime launch. tests/fakes/images.py
// puts this header first, then the GPU text, then one launcher per kernel (GOMPUTE_CUDA_ENTRY).
//
// What it gives the GPU text: the execution-space keywords (as nothing, or as inlining hints),
// the built-in variables threadIdx, blockIdx, blockDim, gridDim and warpSize, `__shared__`
// memory per block, dynamic shared memory (`extern __shared__ T name[];`, which images.py
// rewrites to a name for the launch's sharedMemBytes), `__syncthreads`, the warp collectives
// (__shfl*_sync, __ballot_sync, __any_sync, __all_sync, __activemask, __syncwarp), the atomics,
// and the device functions the preludes call that C++ lacks (the bit casts, rsqrt).
// GOMPUTE_CUDA_ON_CPU tells preludes/cuda.h to convert f16 without PTX. warpSize is
// GOMPUTE_CUDA_WARP_SIZE, 32 unless the text's launcher set it (64 for AMD's wavefronts).
//
// How a grid runs: the blocks of the launch's range one after another on the calling thread.
// A text that synchronizes its threads (GOMPUTE_CUDA_COOPERATIVE, which images.py sets where
// the text names a barrier or a warp collective) runs each block's threads as fibers (ucontext)
// on stacks of their own, in turns: a turn runs a thread to its next barrier, collective or
// end. Any other text runs each block's threads one after another on the caller's stack, with
// no context switch per thread, as the map kernels need. A barrier or collective reached there
// traps: the text names none that images.py saw.
//
// A GPU promises no order among a block's threads between barriers, nor among a grid's blocks:
// FAKE_CUDA_TURNS sets the order the shim takes them in. `forward` (the default), `reverse` and
// `scattered` give each thread a turn, in rising order of index, falling, or a walk through them
// with a stride of its own each turn; `warps`, `warps-reverse` and `warps-scattered` let one warp
// run until each of its lanes waits at the block's barrier (or has returned) before the next
// warp, in that order, so that a warp runs ahead of the others. A launch's blocks take the same
// order. A text whose results change with it reads memory that another thread of its block
// writes with no barrier between (a race), which a GPU shows as wrong values now and then.
//
// What is undefined on a GPU traps here, with a message: a `__syncthreads` some threads of the
// block return without reaching (a deadlock or worse on a GPU), a warp collective whose mask
// names a lane that has returned, that the block does not have, or that meets another
// collective, and a shuffle that reads a lane outside its mask. After a trap the launch stops.
//
// Every built-in variable is thread_local, so launches on several threads (the host runtime's
// worker pool, overlapping fake launches) do not meet; a block's fibers share the variables of
// their thread, which the scheduler sets before it resumes each fiber. `__shared__` variables
// are thread_local statics: one per OS thread, used by one block at a time, as a GPU reuses a
// multiprocessor's shared memory; like it, they hold the previous block's values at a block's
// start. Blocks of one launch run on several OS threads at once (the host runtime splits a
// grid), so the atomics are the host's atomics, relaxed as CUDA's are.
#ifndef GOMPUTE_CUDA_SHIM_H
#define GOMPUTE_CUDA_SHIM_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <cstddef>
#include <type_traits>
#include <utility>

#include "gompute/host_launch.h"

#define GOMPUTE_CUDA_ON_CPU 1
#ifndef GOMPUTE_CUDA_WARP_SIZE
#define GOMPUTE_CUDA_WARP_SIZE 32
#endif
#ifndef GOMPUTE_CUDA_COOPERATIVE
#define GOMPUTE_CUDA_COOPERATIVE 0
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)  // images.py hands the bound to the kernel's launcher instead
#define __restrict__ __restrict
#define __shared__ static thread_local

struct uint3 { unsigned int x, y, z; };
struct dim3 { unsigned int x, y, z; };

static thread_local uint3 threadIdx, blockIdx;
static thread_local dim3 blockDim, gridDim;
static constexpr int warpSize = GOMPUTE_CUDA_WARP_SIZE;

static inline float __int_as_float(int b) { float x; memcpy(&x, &b, 4); return x; }
static inline float __uint_as_float(unsigned int b) { float x; memcpy(&x, &b, 4); return x; }
static inline int __float_as_int(float x) { int b; memcpy(&b, &x, 4); return b; }
static inline unsigned int __float_as_uint(float x) { unsigned int b; memcpy(&b, &x, 4); return b; }
static inline long long __double_as_longlong(double x) { long long b; memcpy(&b, &x, 8); return b; }
static inline double __longlong_as_double(long long b) { double x; memcpy(&x, &b, 8); return x; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }

namespace gompute_cuda {

static_assert(GOMPUTE_CUDA_WARP_SIZE == 32 || GOMPUTE_CUDA_WARP_SIZE == 64, "a warp is 32 or 64 lanes");
constexpr unsigned kWarp = GOMPUTE_CUDA_WARP_SIZE;
// A set of a warp's lanes, as __ballot_sync returns it: 32 bits on NVIDIA GPUs, 64 on AMD's.
using lane_mask = std::conditional_t<kWarp == 32, unsigned int, unsigned long long>;
constexpr unsigned long long kAllLanes = kWarp == 64 ? ~0ull : 0xffffffffull;

// A kernel's per-thread stack. CUDA gives a thread 1 KiB of stack by default; host code of the
// same kernel needs more (no registers for its arrays), far less than this.
constexpr size_t kStackBytes = 64 * 1024;

enum class Collective : unsigned char { shuffle, ballot, sync };

enum class Order : unsigned char { forward, reverse, scattered, unknown };

// FAKE_CUDA_TURNS: the order threads take turns in, and whether a warp runs ahead (see the top).
struct Turns {
  Order order = Order::forward;
  bool by_warp = false;
};

static Turns turns_asked() {
  const char* v = getenv("FAKE_CUDA_TURNS");
  Turns turns;
  if (!v || !*v) return turns;
  if (!strncmp(v, "warps", 5) && (v[5] == '-' || !v[5])) {
    turns.by_warp = true;
    if (!v[5]) return turns;
    v += 6;
  }
  turns.order = !strcmp(v, "forward")  ? Order::forward
              : !strcmp(v, "reverse")  ? Order::reverse
              : !strcmp(v, "scattered") ? Order::scattered
                                        : Order::unknown;
  return turns;
}

// The order of n things (threads or blocks) on one pass over them: (first + i * step) mod n for
// i = 0 .. n - 1, with step prime to n so that each comes once. `pass` picks a scattered walk.
struct Walk {
  unsigned long long first, step, n;
  unsigned long long at(unsigned long long i) const {
    return step == 1 && first == 0 ? i : (unsigned long long)((first + (unsigned __int128)i * step) % n);
  }
};

static unsigned long long gcd(unsigned long long a, unsigned long long b) {
  while (b) a = std::exchange(b, a % b);
  return a;
}

static Walk walk(Order order, unsigned long long n, unsigned long long pass) {
  if (order == Order::reverse) return Walk{n - 1, n - 1, n};  // (n - 1)(i + 1) mod n = n - 1 - i
  if (order != Order::scattered || n < 3) return Walk{0, 1, n};
  unsigned long long h = (pass + 1) * 0x9e3779b97f4a7c15ull;
  h ^= h >> 31;
  unsigned long long step = 1 + (h >> 7) % (n - 1);
  while (gcd(step, n) != 1) ++step;  // by n - 1 at the latest
  return Walk{h % n, step, n};
}

// A thread's part in the warp collective it waits at.
struct Lane {
  unsigned long long value;  // what it offers: a shuffle's bytes, a ballot's predicate
  unsigned source;           // the lane a shuffle reads
  unsigned long long mask;
  Collective kind;
  bool waiting;              // until the collective completes
  unsigned long long result;
};

// One launch's blocks, as the running thread's scheduler sees them.
struct Grid {
  const gompute_host_launch* launch;
  void (*thread)(void* kernel);  // runs the kernel once, as the thread threadIdx says
  void* kernel;
  unsigned int threads;          // per block
  Turns turns;
  unsigned char* stacks = nullptr;
  ucontext_t* fibers = nullptr;  // one per thread of a block
  Lane* lanes = nullptr;
  bool* done = nullptr;
  ucontext_t scheduler{};
  unsigned int running = 0;      // the thread whose fiber runs now
  bool on_fiber = false;
  bool trapped = false;
  unsigned long long progress = 0;  // arrivals at barriers and collectives, their completions, returns
  unsigned int arrived = 0;         // at the block's barrier
  unsigned long long barrier = 0;   // the block's barriers completed
};

static thread_local Grid* t_grid;
static thread_local unsigned char* t_dynamic_shared;

static inline uint3 thread_index(unsigned int t) {
  return uint3{t % blockDim.x, (t / blockDim.x) % blockDim.y, t / (blockDim.x * blockDim.y)};
}

static void trap(Grid* grid, const char* message) {
  if (!grid->trapped) grid->launch->trap(grid->launch, message);
  grid->trapped = true;
}

// Traps; a thread on a fiber is then never resumed, and its block ends. A thread on the caller's
// stack goes on with whatever value it gets, as after any trap.
static void fail(Grid* grid, const char* message) {
  trap(grid, message);
  if (!grid->on_fiber) return;
  grid->done[grid->running] = true;
  swapcontext(&grid->fibers[grid->running], &grid->scheduler);
}

// The running thread gives the next one its turn, until the scheduler resumes it again.
static void yield(Grid* grid) { swapcontext(&grid->fibers[grid->running], &grid->scheduler); }

static void fiber_main() {
  Grid* grid = t_grid;
  grid->thread(grid->kernel);
  grid->done[grid->running] = true;  // returning resumes uc_link, the scheduler
}

// The threads' stacks, contexts and states, in one mapping made once per launch call; pages are
// only touched by the fibers that run.
static size_t fiber_bytes(unsigned int fibers) {
  return fibers * (kStackBytes + sizeof(ucontext_t) + sizeof(Lane) + sizeof(bool));
}

static bool allocate(Grid& grid, unsigned int fibers) {
  void* memory = mmap(nullptr, fiber_bytes(fibers), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
  if (memory == MAP_FAILED) return false;
  grid.stacks = static_cast<unsigned char*>(memory);
  grid.fibers = reinterpret_cast<ucontext_t*>(grid.stacks + fibers * kStackBytes);
  grid.lanes = reinterpret_cast<Lane*>(grid.fibers + fibers);
  grid.done = reinterpret_cast<bool*>(grid.lanes + fibers);
  return true;
}

static void start(Grid& grid, unsigned int t) {
  ucontext_t& fiber = grid.fibers[t];
  getcontext(&fiber);
  fiber.uc_stack.ss_sp = grid.stacks + t * kStackBytes;
  fiber.uc_stack.ss_size = kStackBytes;
  fiber.uc_link = &grid.scheduler;
  grid.done[t] = false;
  grid.lanes[t].waiting = false;
  makecontext(&fiber, fiber_main, 0);
}

static void resume(Grid& grid, unsigned int t) {
  grid.running = t;
  threadIdx = thread_index(t);
  swapcontext(&grid.scheduler, &grid.fibers[t]);
}

static const char* collective_name(Collective kind) {
  return kind == Collective::shuffle ? "__shfl_sync" : kind == Collective::ballot ? "__ballot_sync" : "__syncwarp";
}

// Why no thread of a block can go on: a thread that returned while others wait for it at the
// block's barrier or in a collective, else threads waiting at different ones.
static void deadlock(Grid& grid) {
  static thread_local char message[160];
  snprintf(message, sizeof message, "threads of a block wait at different barriers or collectives");
  for (unsigned int t = 0; t < grid.threads; ++t) {
    if (!grid.done[t]) continue;
    const uint3 at = thread_index(t);
    if (grid.arrived) {
      snprintf(message, sizeof message, "__syncthreads not reached by thread (%u, %u, %u), which returned", at.x, at.y,
               at.z);
      break;
    }
    const unsigned int base = t - t % kWarp;
    for (unsigned int l = base; l < base + kWarp && l < grid.threads; ++l) {
      const Lane& lane = grid.lanes[l];
      if (!grid.done[l] && lane.waiting && (lane.mask >> (t - base) & 1))
        snprintf(message, sizeof message, "%s waits for lane %u of its warp, which returned",
                 collective_name(lane.kind), t - base);
    }
  }
  trap(&grid, message);
}

// The block's threads, each on its fiber, in turns until all have returned: each thread a turn
// in the walk's order, or with FAKE_CUDA_TURNS=warps..., each warp's lanes turns until none of
// them goes on, warps in the walk's order. A pass that leaves the block as it was (no thread
// arrived anywhere, completed anything or returned) would repeat forever: the block deadlocks,
// as it would on a GPU.
static void run_fibers(Grid& grid) {
  grid.arrived = 0;
  for (unsigned int t = 0; t < grid.threads; ++t) start(grid, t);
  const unsigned int group = grid.turns.by_warp ? kWarp : grid.threads;
  const unsigned int groups = (grid.threads + group - 1) / group;
  for (unsigned long long pass = 0, live = grid.threads; live && !grid.trapped; ++pass) {
    const unsigned long long before = grid.progress;
    const Walk order = walk(grid.turns.order, groups, pass);
    for (unsigned int g = 0; g < groups && !grid.trapped; ++g) {
      const unsigned int first = unsigned(order.at(g)) * group;
      const unsigned int count = grid.threads - first < group ? grid.threads - first : group;
      const Walk threads = walk(grid.turns.order, count, pass);
      for (unsigned long long at = ~0ull; at != grid.progress && !grid.trapped;) {  // one turn, or until the warp stops
        at = grid.progress;
        for (unsigned int i = 0; i < count && !grid.trapped; ++i) {
          const unsigned int t = first + unsigned(threads.at(i));
          if (grid.done[t]) continue;
          resume(grid, t);
          if (grid.done[t]) --live, ++grid.progress;
        }
        if (!grid.turns.by_warp) break;
      }
    }
    if (live && !grid.trapped && grid.progress == before) deadlock(grid);
  }
}

static void run_block(Grid& grid) {
  if (grid.on_fiber) return run_fibers(grid);
  const Walk threads = walk(grid.turns.order, grid.threads, 0);
  for (unsigned int i = 0; i < grid.threads; ++i) {
    threadIdx = thread_index(unsigned(threads.at(i)));
    grid.thread(grid.kernel);
  }
}

template <bool cooperative>
void run_grid(const gompute_host_launch* launch, void (*thread)(void*), void* kernel) {
  const gompute_dim3 g = launch->grid_dim, b = launch->block_dim;
  gridDim = dim3{g.x, g.y, g.z};
  blockDim = dim3{b.x, b.y, b.z};
  t_dynamic_shared = static_cast<unsigned char*>(launch->shared);
  Grid grid{launch, thread, kernel, b.x * b.y * b.z, turns_asked()};
  if (grid.turns.order == Order::unknown)
    GOMPUTE_TRAP(launch, "FAKE_CUDA_TURNS is forward, reverse or scattered, each alone or after warps-");
  grid.on_fiber = cooperative;
  if (cooperative && !allocate(grid, grid.threads))
    GOMPUTE_TRAP(launch, "out of memory for the block's thread stacks");
  Grid* outer = t_grid;
  t_grid = &grid;
  const uint64_t first = launch->block_begin, count = launch->block_end - first;
  const Walk blocks = walk(grid.turns.order, count, first);
  for (uint64_t i = 0; i < count && !grid.trapped; ++i) {
    const gompute_dim3 at = gompute_block_index(launch, first + blocks.at(i));
    blockIdx = uint3{at.x, at.y, at.z};
    run_block(grid);
  }
  t_grid = outer;
  if (cooperative) munmap(grid.stacks, fiber_bytes(grid.threads));
}

// Whether every lane of `mask` in the warp at `base` waits at the same collective (trapping if
// one waits at another), so that it completes.
static bool arrived(Grid* grid, unsigned int base, unsigned int lanes, unsigned long long mask, Collective kind) {
  for (unsigned int l = 0; l < lanes; ++l) {
    const Lane& other = grid->lanes[base + l];
    if (!(mask >> l & 1)) continue;
    if (grid->done[base + l] || !other.waiting) return false;
    if (other.mask != mask || other.kind != kind)
      return fail(grid, "lanes of a warp meet at different collectives, or with different masks"), false;
  }
  return true;
}

// Every lane of `mask` gets its result and goes on.
static void complete(Grid* grid, unsigned int base, unsigned int lanes, unsigned long long mask, Collective kind) {
  unsigned long long ballot = 0;
  for (unsigned int l = 0; l < lanes; ++l)
    if (mask >> l & 1) ballot |= (grid->lanes[base + l].value != 0 ? 1ull : 0ull) << l;
  for (unsigned int l = 0; l < lanes; ++l) {
    if (!(mask >> l & 1)) continue;
    Lane& lane = grid->lanes[base + l];
    if (kind == Collective::shuffle && !(mask >> lane.source & 1))
      return fail(grid, "a shuffle reads a lane outside its mask");
    lane.result = kind == Collective::shuffle ? grid->lanes[base + lane.source].value : ballot;
  }
  for (unsigned int l = 0; l < lanes; ++l)
    if (mask >> l & 1) grid->lanes[base + l].waiting = false;
  ++grid->progress;
}

// The running thread arrives at a warp collective of the lanes `mask`, offering `value` (and
// reading lane `source`, for a shuffle); returns what the collective gives it once every lane
// of the mask has arrived. The lane that arrives last completes it for all.
static unsigned long long collective(Collective kind, unsigned long long mask, unsigned long long value,
                                     unsigned int source) {
  Grid* grid = t_grid;
  if (!grid->on_fiber) return fail(grid, "a warp collective in a text images.py saw none in"), value;
  const unsigned int t = grid->running, lane = t % kWarp, base = t - lane;
  const unsigned int lanes = grid->threads - base < kWarp ? grid->threads - base : kWarp;
  mask &= kAllLanes;
  if (!(mask >> lane & 1)) fail(grid, "a warp collective's mask leaves out the lane that calls it");
  if (lanes < kWarp && mask >> lanes) fail(grid, "a warp collective's mask names lanes past the block's last thread");
  grid->lanes[t] = Lane{value, source, mask, kind, true, 0};
  ++grid->progress;
  if (arrived(grid, base, lanes, mask, kind)) complete(grid, base, lanes, mask, kind);
  while (grid->lanes[t].waiting) yield(grid);
  return grid->lanes[t].result;
}

// The lanes of the running thread's warp that have not returned.
static unsigned long long live_lanes() {
  Grid* grid = t_grid;
  const unsigned int t = grid->on_fiber ? grid->running : 0, base = t - t % kWarp;
  unsigned long long mask = 0;
  for (unsigned int l = 0; l < kWarp && base + l < grid->threads; ++l)
    if (!grid->on_fiber || !grid->done[base + l]) mask |= 1ull << l;
  return mask;
}

template <typename T>
unsigned long long bits_of(T value) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "a shuffle moves 1 to 8 bytes");
  unsigned long long bits = 0;
  memcpy(&bits, &value, sizeof value);
  return bits;
}

template <typename T>
T shuffle(unsigned long long mask, T value, unsigned int source) {
  const unsigned long long bits = collective(Collective::shuffle, mask, bits_of(value), source);
  T out;
  memcpy(&out, &bits, sizeof out);
  return out;
}

static unsigned int lane_id() { return t_grid->running % kWarp; }

// CUDA's atomics: a read-modify-write of one word, relaxed.
template <typename T, typename F>
T update(T* address, F f) {
  T old, desired;
  __atomic_load(address, &old, __ATOMIC_RELAXED);
  do desired = f(old);
  while (!__atomic_compare_exchange(address, &old, &desired, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return old;
}

// Integers wrap, as on a GPU; floating-point sums round once per addition.
template <typename T>
T add(T* address, T v) {
  if constexpr (std::is_integral_v<T>)
    return __atomic_fetch_add(address, v, __ATOMIC_RELAXED);
  else
    return update(address, [v](T x) { return x + v; });
}

// `extern __shared__ T name[]`, as images.py rewrites it: the launch's dynamic shared memory.
template <typename T>
T (*dynamic_shared())[] {
  return reinterpret_cast<T(*)[]>(t_dynamic_shared);
}

template <typename T>
T argument(const void* storage) {
  std::remove_cv_t<T> value;
  memcpy(&value, storage, sizeof value);
  return value;
}

template <typename... A, size_t... I>
void call(void (*fn)(A...), void* const* args, std::index_sequence<I...>) {
  fn(argument<A>(args[I])...);
}

// The launch of a __global__ function: its arguments read from launch->args as a GPU reads
// kernelParams, the grid run block by block. A block larger than the kernel's launch bound
// traps: no driver refused the launch (the host runtime reads no bounds).
template <bool cooperative, typename... A>
void launch(const gompute_host_launch* launch, void (*fn)(A...), uint32_t max_threads) {
  const gompute_dim3 b = launch->block_dim;
  if (uint64_t(b.x) * b.y * b.z > max_threads)
    GOMPUTE_TRAP(launch, "more threads a block than the kernel's __launch_bounds__");
  struct Kernel {
    void (*fn)(A...);
    void* const* args;
  } kernel{fn, launch->args};
  run_grid<cooperative>(launch, [](void* k) {
    auto* self = static_cast<Kernel*>(k);
    call(self->fn, self->args, std::index_sequence_for<A...>{});
  }, &kernel);
}

template <typename... A>
constexpr uint32_t arity(void (*)(A...)) {
  return sizeof...(A);
}

}  // namespace gompute_cuda

// A thread waits here until every thread of its block has reached the barrier.
static inline void __syncthreads() {
  gompute_cuda::Grid* grid = gompute_cuda::t_grid;
  if (!grid->on_fiber) return gompute_cuda::fail(grid, "__syncthreads in a text images.py saw none in");
  const unsigned long long barrier = grid->barrier;
  ++grid->progress;
  if (++grid->arrived == grid->threads) {
    grid->arrived = 0;
    ++grid->barrier;
    return;
  }
  while (grid->barrier == barrier) gompute_cuda::yield(grid);
}

// The warp collectives. A lane's source or destination outside its `width`-lane segment is
// itself, as the PTX shfl.sync instruction defines it; `width` is a power of 2 up to warpSize.
template <typename T>
static inline T __shfl_sync(unsigned long long mask, T var, int srcLane, int width = warpSize) {
  const unsigned int lane = gompute_cuda::lane_id(), first = lane & ~unsigned(width - 1);
  return gompute_cuda::shuffle(mask, var, first | (unsigned(srcLane) & unsigned(width - 1)));
}
template <typename T>
static inline T __shfl_up_sync(unsigned long long mask, T var, unsigned int delta, int width = warpSize) {
  const unsigned int lane = gompute_cuda::lane_id(), first = lane & ~unsigned(width - 1);
  return gompute_cuda::shuffle(mask, var, lane - first >= delta ? lane - delta : lane);
}
template <typename T>
static inline T __shfl_down_sync(unsigned long long mask, T var, unsigned int delta, int width = warpSize) {
  const unsigned int lane = gompute_cuda::lane_id(), last = lane | unsigned(width - 1);
  return gompute_cuda::shuffle(mask, var, lane + delta <= last ? lane + delta : lane);
}
template <typename T>
static inline T __shfl_xor_sync(unsigned long long mask, T var, int laneMask, int width = warpSize) {
  const unsigned int lane = gompute_cuda::lane_id(), last = lane | unsigned(width - 1), other = lane ^ unsigned(laneMask);
  return gompute_cuda::shuffle(mask, var, other <= last ? other : lane);  // earlier segments may be read, later not
}
static inline gompute_cuda::lane_mask __ballot_sync(unsigned long long mask, int predicate) {
  return gompute_cuda::lane_mask(gompute_cuda::collective(gompute_cuda::Collective::ballot, mask, predicate != 0, 0));
}
static inline int __any_sync(unsigned long long mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
static inline int __all_sync(unsigned long long mask, int predicate) {
  return __ballot_sync(mask, predicate) == (mask & gompute_cuda::kAllLanes);
}
static inline void __syncwarp(unsigned long long mask = gompute_cuda::kAllLanes) {
  gompute_cuda::collective(gompute_cuda::Collective::sync, mask, 0, 0);
}
// The lanes of the warp that have not returned: the shim cannot tell which of them a branch
// left out, as a GPU's __activemask does.
static inline gompute_cuda::lane_mask __activemask() { return gompute_cuda::lane_mask(gompute_cuda::live_lanes()); }

static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// The atomics, each returning the value it replaced.
#define GOMPUTE_CUDA_ATOMICS(T)                                                                          \
  static inline T atomicMax(T* a, T v) { return gompute_cuda::update(a, [v](T x) { return x < v ? v : x; }); } \
  static inline T atomicMin(T* a, T v) { return gompute_cuda::update(a, [v](T x) { return v < x ? v : x; }); }
GOMPUTE_CUDA_ATOMICS(int)
GOMPUTE_CUDA_ATOMICS(unsigned int)
GOMPUTE_CUDA_ATOMICS(long long)
GOMPUTE_CUDA_ATOMICS(unsigned long long)
#undef GOMPUTE_CUDA_ATOMICS
#define GOMPUTE_CUDA_ATOMICS(T)                                                                                 \
  static inline T atomicAdd(T* a, T v) { return gompute_cuda::add(a, v); }                                        \
  static inline T atomicExch(T* a, T v) { T old; __atomic_exchange(a, &v, &old, __ATOMIC_RELAXED); return old; }
GOMPUTE_CUDA_ATOMICS(int)
GOMPUTE_CUDA_ATOMICS(unsigned int)
GOMPUTE_CUDA_ATOMICS(unsigned long long)
GOMPUTE_CUDA_ATOMICS(float)
#undef GOMPUTE_CUDA_ATOMICS
static inline double atomicAdd(double* a, double v) { return gompute_cuda::add(a, v); }
#define GOMPUTE_CUDA_ATOMICS(T)                                                                  \
  static inline T atomicCAS(T* a, T compare, T v) {                                              \
    __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);      \
    return compare;                                                                              \
  }
GOMPUTE_CUDA_ATOMICS(int)
GOMPUTE_CUDA_ATOMICS(unsigned int)
GOMPUTE_CUDA_ATOMICS(unsigned long long)
#undef GOMPUTE_CUDA_ATOMICS

// The host-ABI entry NAME of the GPU text's __global__ function NAME (which images.py renames
// gompute_cuda_NAME while the GPU text is compiled), whose launches may have up to
// `max_threads` threads a block: its __launch_bounds__, else the device's limit. The fake
// driver reads the bound as NAME_fake_cuda_max_threads and refuses a launch past it at
// cuLaunchKernel, as the real one does.
#define GOMPUTE_CUDA_ENTRY(name, max_threads)                                                                \
  GOMPUTE_HOST_ARITY(name, gompute_cuda::arity(gompute_cuda_##name));                                        \
  GOMPUTE_EXTERN_C __attribute__((visibility("default"))) const uint32_t name##_fake_cuda_max_threads = (max_threads); \
  GOMPUTE_HOST_KERNEL(name) {                                                                                \
    gompute_cuda::launch<GOMPUTE_CUDA_COOPERATIVE>(launch, gompute_cuda_##name, name##_fake_cuda_max_threads); \
  }

// The 8- and 16-byte chunks of the preludes' vector access (preludes/cuda.h, hip.h), and its
// alignment check: a GPU faults on a misaligned vector access (or, worse, the address is silently
// rounded down); on the CPU it would pass unseen, so each one is checked and traps, naming the array.
struct alignas(8) gompute_raw8 { uint32_t x, y; };
struct alignas(16) gompute_raw16 { uint32_t x, y, z, w; };
static inline void gompute_misaligned(const void* p, int bytes, const char* entry, const char* array) {
  char message[192], digits[] = "0x0000000000000000";
  for (int k = 0; k < 16; ++k) digits[2 + k] = "0123456789abcdef"[((uint64_t)p >> (60 - 4 * k)) & 15];
  char* at = stpcpy(stpcpy(stpcpy(message, entry), ": misaligned "), bytes >= 10 ? "1" : "");
  *at++ = (char)('0' + bytes % 10);
  stpcpy(stpcpy(stpcpy(stpcpy(at, "-byte vector access to "), array), " at "), digits);
  gompute_cuda::t_grid->launch->trap(gompute_cuda::t_grid->launch, message);
}
#define GOMPUTE_VECTOR_CHECK(p, bytes, entry, array)                                    \
  if ((uint64_t)(p) % (bytes) != 0) return gompute_misaligned((p), (bytes), (entry), (array))

// The GPU preludes spell int64_t and uint64_t as long long types, as NVRTC and hiprtc do; this
// machine's C library has declared them as long ones above. The GPU text gets names of its own
// for them, so both its typedefs and its overloads are the ones a GPU compiler sees.
#define int64_t gompute_cuda_int64_t
#define uint64_t gompute_cuda_uint64_t

#endif  // GOMPUTE_CUDA_SHIM_H
