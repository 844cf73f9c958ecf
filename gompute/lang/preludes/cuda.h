// gompute CUDA prelude (NVRTC): no headers, so the generated code builds wherever NVRTC runs;
// the fixed-width integers come before it (gpu_ints.h).

#define GOMPUTE_FN static __device__ __forceinline__
#define GOMPUTE_GLOBAL extern "C" __global__

GOMPUTE_FN uint32_t gompute_bits_f32(float x) { return __float_as_uint(x); }
GOMPUTE_FN float gompute_f32_from_bits(uint32_t b) { return __uint_as_float(b); }
GOMPUTE_FN uint64_t gompute_bits_f64(double x) { return (uint64_t)__double_as_longlong(x); }
GOMPUTE_FN double gompute_f64_from_bits(uint64_t b) { return __longlong_as_double((long long)b); }
GOMPUTE_FN float gompute_rsqrt_f32(float x) { return rsqrtf(x); }
GOMPUTE_FN double gompute_rsqrt_f64(double x) { return rsqrt(x); }
#if defined(GOMPUTE_CUDA_ON_CPU)  // built by a host compiler (tests/fakes/cuda_shim.h), which has no PTX
GOMPUTE_FN uint16_t gompute_f16_bits_from_f32(float x) { return __builtin_bit_cast(uint16_t, (_Float16)x); }
GOMPUTE_FN float gompute_f32_from_f16_bits(uint16_t h) { return (float)__builtin_bit_cast(_Float16, h); }
#else
GOMPUTE_FN uint16_t gompute_f16_bits_from_f32(float x) { uint16_t h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x)); return h; }
GOMPUTE_FN float gompute_f32_from_f16_bits(uint16_t h) { float x; asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(h)); return x; }
#endif

// The grid as one line of threads (block index linear, x fastest, as on the host backend).
GOMPUTE_FN uint64_t gompute_thread_index() {
  uint64_t block = blockIdx.x + (uint64_t)gridDim.x * (blockIdx.y + (uint64_t)gridDim.y * blockIdx.z);
  return block * blockDim.x + threadIdx.x;
}
GOMPUTE_FN uint64_t gompute_thread_count() { return (uint64_t)gridDim.x * gridDim.y * gridDim.z * blockDim.x; }

// Vector access (lang/entries.py): a contiguous entry moves its arrays B bytes at a time (B of 2,
// 4, 8 or 16), each chunk one load or store of gompute_rawB at a B-aligned address: a 16-byte
// one is LDG.E.128 / STG.E.128. gompute_vector_load<gompute_rawB>(p) reads the chunk at p; the
// entry bit-casts it to a struct of its elements.
typedef uint16_t gompute_raw2;
typedef uint32_t gompute_raw4;
#if !defined(GOMPUTE_CUDA_ON_CPU)  // on the CPU: the chunk types and alignment check of tests/fakes/cuda_shim.h
typedef uint2 gompute_raw8;
typedef uint4 gompute_raw16;
#define GOMPUTE_VECTOR_CHECK(p, bytes, entry, array)
#endif
template <typename R, typename T> GOMPUTE_FN R gompute_vector_load(const T* p) { return *(const R*)p; }
