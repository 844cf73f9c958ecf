// The CUDA C++ that gompute hands NVRTC (lang/module.py module_source(units, "cuda"), and the
// HIP text for hiprtc), built unchanged by the host C++ compiler into a host-ABI shared object
// (gompute/host_launch.h) that the fake driver and the host runtime launch. tests/fakes/images.py
// puts this header first, then the GPU text, then one launcher per kernel (GOMPUTE_CUDA_ENTRY).
//
// What it gives the GPU text: the execution-space keywords (as nothing, or as inlining hints),
// the built-in variables threadIdx, blockIdx, blockDim and gridDim, `__shared__` memory per
// block, `__syncthreads`, and the device functions the preludes call that C++ lacks (the bit
// casts, rsqrt). GOMPUTE_CUDA_ON_CPU tells preludes/cuda.h to convert f16 without PTX.
//
// How a grid runs: the blocks of the launch's range one after another on the calling thread, and
// each block's threads as fibers (ucontext) on stacks of their own, so that `__syncthreads`
// yields to the next thread of the block and all of them pass the barrier before any goes on.
// Thread 0 of each block runs first on its fiber: a kernel that reaches no barrier in it runs
// the block's other threads one after another on the caller's stack, as the map kernels (which
// have none) do, without a context switch per thread. A barrier that only threads other than
// thread 0 reach is a divergent __syncthreads, undefined on a GPU: the launch traps.
//
// Every built-in variable is thread_local, so launches on several threads (the host runtime's
// worker pool, overlapping fake launches) do not meet; a block's fibers share the variables of
// their thread, which the scheduler sets before it resumes each fiber. `__shared__` variables
// are thread_local statics: one per OS thread, used by one block at a time, as a GPU reuses a
// multiprocessor's shared memory; like it, they hold the previous block's values at a block's
// start. Dynamic shared memory (`extern __shared__`) is not provided.
#ifndef GOMPUTE_CUDA_SHIM_H
#define GOMPUTE_CUDA_SHIM_H

#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <cstddef>
#include <type_traits>
#include <utility>

#include "gompute/host_launch.h"

#define GOMPUTE_CUDA_ON_CPU 1

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static thread_local

struct uint3 { unsigned int x, y, z; };
struct dim3 { unsigned int x, y, z; };

static thread_local uint3 threadIdx, blockIdx;
static thread_local dim3 blockDim, gridDim;

static inline float __int_as_float(int b) { float x; memcpy(&x, &b, 4); return x; }
static inline float __uint_as_float(unsigned int b) { float x; memcpy(&x, &b, 4); return x; }
static inline int __float_as_int(float x) { int b; memcpy(&b, &x, 4); return b; }
static inline unsigned int __float_as_uint(float x) { unsigned int b; memcpy(&b, &x, 4); return b; }
static inline long long __double_as_longlong(double x) { long long b; memcpy(&b, &x, 8); return b; }
static inline double __longlong_as_double(long long b) { double x; memcpy(&x, &b, 8); return x; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }

namespace gompute_cuda {

// A kernel's per-thread stack. CUDA gives a thread 1 KiB of stack by default; host code of the
// same kernel needs more (no registers for its arrays), far less than this.
constexpr size_t kStackBytes = 64 * 1024;

// One launch's blocks, as the running thread's scheduler sees them.
struct Grid {
  const gompute_host_launch* launch;
  void (*thread)(void* kernel);  // runs the kernel once, as the thread threadIdx says
  void* kernel;
  unsigned int threads;          // per block
  unsigned char* stacks = nullptr;
  ucontext_t* fibers = nullptr;  // one per thread of a block
  bool* done = nullptr;
  ucontext_t scheduler{};
  unsigned int running = 0;      // the thread whose fiber runs now
  bool on_fiber = true;          // false while threads run one after another on the caller's stack
};

static thread_local Grid* t_grid;

static inline uint3 thread_index(unsigned int t) {
  return uint3{t % blockDim.x, (t / blockDim.x) % blockDim.y, t / (blockDim.x * blockDim.y)};
}

static void fiber_main() {
  Grid* grid = t_grid;
  grid->thread(grid->kernel);
  grid->done[grid->running] = true;  // returning resumes uc_link, the scheduler
}

// The threads' stacks, contexts and states, in one mapping made once per launch call. Pages are
// only touched by the fibers that run: a block without barriers, thread 0's alone.
static size_t fiber_bytes(unsigned int fibers) {
  return fibers * (kStackBytes + sizeof(ucontext_t) + sizeof(bool));
}

static bool allocate(Grid& grid, unsigned int fibers) {
  void* memory = mmap(nullptr, fiber_bytes(fibers), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
  if (memory == MAP_FAILED) return false;
  grid.stacks = static_cast<unsigned char*>(memory);
  grid.fibers = reinterpret_cast<ucontext_t*>(grid.stacks + fibers * kStackBytes);
  grid.done = reinterpret_cast<bool*>(grid.fibers + fibers);
  return true;
}

static void start(Grid& grid, unsigned int t) {
  ucontext_t& fiber = grid.fibers[t];
  getcontext(&fiber);
  fiber.uc_stack.ss_sp = grid.stacks + t * kStackBytes;
  fiber.uc_stack.ss_size = kStackBytes;
  fiber.uc_link = &grid.scheduler;
  grid.done[t] = false;
  makecontext(&fiber, fiber_main, 0);
}

static void resume(Grid& grid, unsigned int t) {
  grid.running = t;
  threadIdx = thread_index(t);
  swapcontext(&grid.scheduler, &grid.fibers[t]);
}

// The block's threads, each on its fiber, in turns until all have returned: a turn runs a
// thread to its next barrier or its end, so no thread passes a barrier before every thread of
// the block has reached it (or returned). Thread 0 waits at its first barrier already, so the
// first round begins with thread 1.
static void run_fibers(Grid& grid) {
  for (unsigned int t = 1; t < grid.threads; ++t) start(grid, t);
  for (unsigned int first = 1, waiting = 1; waiting; first = 0) {
    waiting = 0;
    for (unsigned int t = first; t < grid.threads; ++t) {
      if (grid.done[t]) continue;
      resume(grid, t);
      waiting |= !grid.done[t];
    }
  }
}

static void run_block(Grid& grid) {
  start(grid, 0);
  resume(grid, 0);
  if (!grid.done[0]) return run_fibers(grid);
  grid.on_fiber = false;
  for (unsigned int t = 1; t < grid.threads; ++t) {
    threadIdx = thread_index(t);
    grid.thread(grid.kernel);
  }
  grid.on_fiber = true;
}

static void run_grid(const gompute_host_launch* launch, void (*thread)(void*), void* kernel) {
  const gompute_dim3 g = launch->grid_dim, b = launch->block_dim;
  gridDim = dim3{g.x, g.y, g.z};
  blockDim = dim3{b.x, b.y, b.z};
  Grid grid{launch, thread, kernel, b.x * b.y * b.z};
  if (!allocate(grid, grid.threads)) GOMPUTE_TRAP(launch, "out of memory for the block's thread stacks");
  Grid* outer = t_grid;
  t_grid = &grid;
  for (uint64_t linear = launch->block_begin; linear < launch->block_end; ++linear) {
    const gompute_dim3 at = gompute_block_index(launch, linear);
    blockIdx = uint3{at.x, at.y, at.z};
    run_block(grid);
  }
  t_grid = outer;
  munmap(grid.stacks, fiber_bytes(grid.threads));
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
// kernelParams, the grid run block by block.
template <typename... A>
void launch(const gompute_host_launch* launch, void (*fn)(A...)) {
  struct Kernel {
    void (*fn)(A...);
    void* const* args;
  } kernel{fn, launch->args};
  run_grid(launch, [](void* k) {
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
  if (!grid->on_fiber) {
    grid->launch->trap(grid->launch, "__syncthreads reached by a block's other threads but not by its thread 0");
    return;
  }
  swapcontext(&grid->fibers[grid->running], &grid->scheduler);
}

// The host-ABI entry NAME of the GPU text's __global__ function NAME, which images.py renames
// gompute_cuda_NAME while the GPU text is compiled.
#define GOMPUTE_CUDA_ENTRY(name)                                                      \
  GOMPUTE_HOST_ARITY(name, gompute_cuda::arity(gompute_cuda_##name));                 \
  GOMPUTE_HOST_KERNEL(name) { gompute_cuda::launch(launch, gompute_cuda_##name); }

// The GPU preludes spell int64_t and uint64_t as long long types, as NVRTC and hiprtc do; this
// machine's C library has declared them as long ones above. The GPU text gets names of its own
// for them, so both its typedefs and its overloads are the ones a GPU compiler sees.
#define int64_t gompute_cuda_int64_t
#define uint64_t gompute_cuda_uint64_t

#endif  // GOMPUTE_CUDA_SHIM_H
