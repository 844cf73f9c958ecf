/* How the host backend calls a kernel: its launch convention.
 *
 * A host module is a shared object. Each kernel in it is one exported C function
 *
 *     void NAME(const gompute_host_launch* launch);
 *
 * that runs the blocks [block_begin, block_end) of the grid (linear block indices,
 * x fastest), every thread of each block. The runtime splits a grid into such
 * ranges and hands them to its worker pool, so a kernel may be called concurrently
 * from several threads with disjoint ranges. Arguments arrive exactly as on a GPU:
 * `args[i]` points at the storage holding argument i (a buffer argument's storage is
 * its device address, a uint64).
 *
 * A kernel reports a fault with GOMPUTE_TRAP: the launch stops handing out blocks and
 * the fault surfaces as SyncFailed at the stream's next synchronize, as on a GPU.
 *
 * A kernel may also export `uint32_t NAME_gompute_arity`, its argument count; the
 * runtime then refuses a launch with another count before running anything.
 *
 * Both the generated code and hand-written host modules include this header, so it
 * is plain C and depends on nothing.
 */
#ifndef GOMPUTE_HOST_LAUNCH_H
#define GOMPUTE_HOST_LAUNCH_H

#include <stdint.h>

#define GOMPUTE_HOST_LAUNCH_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gompute_dim3 {
  uint32_t x, y, z;
} gompute_dim3;

typedef struct gompute_host_launch gompute_host_launch;

struct gompute_host_launch {
  uint32_t launch_version;          /* GOMPUTE_HOST_LAUNCH_VERSION */
  uint32_t arg_count;            /* entries in args */
  void* const* args;             /* args[i] points at argument i's storage */
  gompute_dim3 grid_dim;
  gompute_dim3 block_dim;
  uint64_t block_begin;          /* first linear block index to run */
  uint64_t block_end;            /* one past the last */
  void* shared;                  /* shared_bytes of scratch, private to this call */
  uint32_t shared_bytes;
  /* Records a fault; the kernel should return right after (GOMPUTE_TRAP does). */
  void (*trap)(const gompute_host_launch* launch, const char* message);
  void* runtime;                 /* opaque to kernels */
};

typedef void (*gompute_host_kernel)(const gompute_host_launch* launch);

/* Block (x, y, z) of linear block index `linear`. */
static inline gompute_dim3 gompute_block_index(const gompute_host_launch* launch, uint64_t linear) {
  gompute_dim3 b;
  b.x = (uint32_t)(linear % launch->grid_dim.x);
  b.y = (uint32_t)((linear / launch->grid_dim.x) % launch->grid_dim.y);
  b.z = (uint32_t)(linear / ((uint64_t)launch->grid_dim.x * launch->grid_dim.y));
  return b;
}

#ifdef __cplusplus
}
#define GOMPUTE_EXTERN_C extern "C"
#else
#define GOMPUTE_EXTERN_C
#endif

#define GOMPUTE_HOST_KERNEL(name) \
  GOMPUTE_EXTERN_C __attribute__((visibility("default"))) void name(const gompute_host_launch* launch)

#define GOMPUTE_HOST_ARITY(name, count) \
  GOMPUTE_EXTERN_C __attribute__((visibility("default"))) const uint32_t name##_gompute_arity = (count)

#define GOMPUTE_TRAP(launch, message) \
  do {                                \
    (launch)->trap((launch), (message)); \
    return;                           \
  } while (0)

#endif /* GOMPUTE_HOST_LAUNCH_H */
