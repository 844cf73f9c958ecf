// Hand-written host kernels for the runtime tests, on the ABI of gompute/host_launch.h.
// Built once per test session into one shared object (tests/runtime/conftest.py).
#include <gompute/host_launch.h>

#include <chrono>
#include <cmath>
#include <cstdint>

namespace {

template <typename T>
T* buffer_arg(const gompute_host_launch* launch, int i) {
  return reinterpret_cast<T*>(*static_cast<const uint64_t*>(launch->args[i]));
}

template <typename T>
T value_arg(const gompute_host_launch* launch, int i) {
  return *static_cast<const T*>(launch->args[i]);
}

uint64_t threads_per_block(const gompute_host_launch* launch) {
  return uint64_t(launch->block_dim.x) * launch->block_dim.y * launch->block_dim.z;
}

// Calls fn(i) for every global linear thread index of the launch's block range (1-D use).
template <typename Fn>
void for_each_thread(const gompute_host_launch* launch, Fn fn) {
  const uint64_t per_block = threads_per_block(launch);
  for (uint64_t b = launch->block_begin; b < launch->block_end; ++b)
    for (uint64_t t = 0; t < per_block; ++t) fn(b * per_block + t);
}

struct ScaleParams {
  float scale;
};

}  // namespace

// The seed's generated map entry point: (data, len, params).
GOMPUTE_HOST_ARITY(scale_relu, 3);
GOMPUTE_HOST_KERNEL(scale_relu) {
  float* data = buffer_arg<float>(launch, 0);
  const uint64_t len = value_arg<uint64_t>(launch, 1);
  const ScaleParams params = value_arg<ScaleParams>(launch, 2);
  for_each_thread(launch, [&](uint64_t i) {
    if (i < len) data[i] = std::fmax(0.0f, data[i] * params.scale);
  });
}

// out[i] = a[i] + b[i]
GOMPUTE_HOST_ARITY(add, 4);
GOMPUTE_HOST_KERNEL(add) {
  float* out = buffer_arg<float>(launch, 0);
  const float* a = buffer_arg<float>(launch, 1);
  const float* b = buffer_arg<float>(launch, 2);
  const uint64_t len = value_arg<uint64_t>(launch, 3);
  for_each_thread(launch, [&](uint64_t i) {
    if (i < len) out[i] = a[i] + b[i];
  });
}

// data[i] = sqrt(data[i]); a negative input is a fault, reported with GOMPUTE_TRAP.
GOMPUTE_HOST_ARITY(checked_sqrt, 2);
GOMPUTE_HOST_KERNEL(checked_sqrt) {
  float* data = buffer_arg<float>(launch, 0);
  const uint64_t len = value_arg<uint64_t>(launch, 1);
  const uint64_t per_block = threads_per_block(launch);
  for (uint64_t b = launch->block_begin; b < launch->block_end; ++b) {
    for (uint64_t t = 0; t < per_block; ++t) {
      const uint64_t i = b * per_block + t;
      if (i >= len) continue;
      if (data[i] < 0) GOMPUTE_TRAP(launch, "negative input to checked_sqrt");
      data[i] = std::sqrt(data[i]);
    }
  }
}

// Block 0 waits until *flag != 0 (set by the test after the launch returned), then
// writes *flag + 1 to *seen. Gives up after `timeout_ms` with a trap, so a runtime that
// runs the launch on the caller's thread fails the test instead of hanging it.
GOMPUTE_HOST_ARITY(gate, 3);
GOMPUTE_HOST_KERNEL(gate) {
  if (launch->block_begin != 0) return;
  const uint32_t* flag = buffer_arg<uint32_t>(launch, 0);
  uint32_t* seen = buffer_arg<uint32_t>(launch, 1);
  const uint64_t timeout_ms = value_arg<uint64_t>(launch, 2);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  uint32_t value;
  while ((value = __atomic_load_n(flag, __ATOMIC_ACQUIRE)) == 0) {
    if (std::chrono::steady_clock::now() > deadline)
      GOMPUTE_TRAP(launch, "gate timed out waiting for its flag");
  }
  *seen = value + 1;
}

// Records how the grid was decomposed. Per linear block L (from gompute_block_index):
// coords[3L..3L+2] = (x, y, z), and block_visits[L] counts how often L was run. Every
// thread of every block bumps thread_visits[L * threads_per_block + t]. Block 0 writes
// grid_dim, block_dim and shared_bytes into meta[0..6]; shared_ok[L] says whether the
// block's shared scratch was there and writable.
GOMPUTE_HOST_ARITY(grid_ids, 5);
GOMPUTE_HOST_KERNEL(grid_ids) {
  uint32_t* coords = buffer_arg<uint32_t>(launch, 0);
  uint32_t* block_visits = buffer_arg<uint32_t>(launch, 1);
  uint32_t* thread_visits = buffer_arg<uint32_t>(launch, 2);
  uint32_t* meta = buffer_arg<uint32_t>(launch, 3);
  uint32_t* shared_ok = buffer_arg<uint32_t>(launch, 4);
  const uint64_t per_block = threads_per_block(launch);
  for (uint64_t L = launch->block_begin; L < launch->block_end; ++L) {
    const gompute_dim3 b = gompute_block_index(launch, L);
    coords[3 * L + 0] = b.x;
    coords[3 * L + 1] = b.y;
    coords[3 * L + 2] = b.z;
    __atomic_fetch_add(&block_visits[L], 1u, __ATOMIC_RELAXED);
    for (uint32_t tz = 0; tz < launch->block_dim.z; ++tz)
      for (uint32_t ty = 0; ty < launch->block_dim.y; ++ty)
        for (uint32_t tx = 0; tx < launch->block_dim.x; ++tx) {
          const uint64_t t = (uint64_t(tz) * launch->block_dim.y + ty) * launch->block_dim.x + tx;
          __atomic_fetch_add(&thread_visits[L * per_block + t], 1u, __ATOMIC_RELAXED);
        }
    bool ok = launch->shared_bytes == 0 || launch->shared != nullptr;
    auto* scratch = static_cast<unsigned char*>(launch->shared);
    for (uint32_t i = 0; ok && i < launch->shared_bytes; ++i) scratch[i] = static_cast<unsigned char>(L + i);
    for (uint32_t i = 0; ok && i < launch->shared_bytes; ++i)
      ok = scratch[i] == static_cast<unsigned char>(L + i);
    shared_ok[L] = ok ? 1 : 0;
    if (L == 0) {
      const uint32_t m[7] = {launch->grid_dim.x, launch->grid_dim.y, launch->grid_dim.z, launch->block_dim.x,
                             launch->block_dim.y, launch->block_dim.z, launch->shared_bytes};
      for (int i = 0; i < 7; ++i) meta[i] = m[i];
    }
  }
}

// data[i] = value, for i < len. Exports no arity: the runtime cannot check its argument count.
GOMPUTE_HOST_KERNEL(fill_u32) {
  uint32_t* data = buffer_arg<uint32_t>(launch, 0);
  const uint64_t len = value_arg<uint64_t>(launch, 1);
  const uint32_t value = value_arg<uint32_t>(launch, 2);
  for_each_thread(launch, [&](uint64_t i) {
    if (i < len) data[i] = value;
  });
}
