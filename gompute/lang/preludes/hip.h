// gompute HIP prelude (hiprtc, clang): the compiler's own fixed-width types and _Float16.
typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;

#define GOMPUTE_FN static __device__ __forceinline__
#define GOMPUTE_GLOBAL extern "C" __global__

GOMPUTE_FN uint32_t gompute_bits_f32(float x) { return __builtin_bit_cast(uint32_t, x); }
GOMPUTE_FN float gompute_f32_from_bits(uint32_t b) { return __builtin_bit_cast(float, b); }
GOMPUTE_FN uint64_t gompute_bits_f64(double x) { return __builtin_bit_cast(uint64_t, x); }
GOMPUTE_FN double gompute_f64_from_bits(uint64_t b) { return __builtin_bit_cast(double, b); }
GOMPUTE_FN float gompute_rsqrt_f32(float x) { return rsqrtf(x); }
GOMPUTE_FN double gompute_rsqrt_f64(double x) { return rsqrt(x); }
GOMPUTE_FN uint16_t gompute_f16_bits_from_f32(float x) { return __builtin_bit_cast(uint16_t, (_Float16)x); }
GOMPUTE_FN float gompute_f32_from_f16_bits(uint16_t b) { return (float)__builtin_bit_cast(_Float16, b); }

GOMPUTE_FN uint64_t gompute_thread_index() {
  uint64_t block = blockIdx.x + (uint64_t)gridDim.x * (blockIdx.y + (uint64_t)gridDim.y * blockIdx.z);
  return block * blockDim.x + threadIdx.x;
}
GOMPUTE_FN uint64_t gompute_thread_count() { return (uint64_t)gridDim.x * gridDim.y * gridDim.z * blockDim.x; }
