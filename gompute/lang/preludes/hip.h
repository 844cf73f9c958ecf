// gompute HIP prelude (hiprtc, clang): bit casts, f16 through _Float16, thread indices, vector
// access. The fixed-width integers come before it (gpu_ints.h).

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

// Vector access (lang/entries.py): a contiguous entry moves its arrays B bytes at a time (B of 2,
// 4, 8 or 16), each chunk one load or store of gompute_rawB at a B-aligned address: a 16-byte one
// is global_load_dwordx4 / global_store_dwordx4. gompute_vector_load<gompute_rawB>(p) reads the
// chunk at p; the entry bit-casts it to a struct of its elements.
typedef uint16_t gompute_raw2;
typedef uint32_t gompute_raw4;
#if defined(GOMPUTE_CUDA_ON_CPU)  // the chunk types and alignment check: tests/fakes/cuda_shim.h
template <typename R, typename T> GOMPUTE_FN R gompute_vector_load(const T* p) { return *(const R*)p; }
#else
typedef uint32_t gompute_raw8 __attribute__((ext_vector_type(2)));
typedef uint32_t gompute_raw16 __attribute__((ext_vector_type(4)));
#define GOMPUTE_VECTOR_CHECK(p, bytes, entry, array)
// The chunk passes through an empty asm in registers, so that it stays one load: clang would
// otherwise split the load into one per element and join back only the elements the kernel uses
// together (pairs, where it calls a function per element). It comes out as lanes of the element's width (the unsigned
// integer of sizeof(T)), so that the struct of elements over it is a vector of the same lanes,
// which stays in registers; a struct of 2-byte elements over 4-byte lanes is kept in scratch.
template <int Bytes> struct gompute_lane;
template <> struct gompute_lane<1> { typedef uint8_t type; };
template <> struct gompute_lane<2> { typedef uint16_t type; };
template <> struct gompute_lane<4> { typedef uint32_t type; };
template <> struct gompute_lane<8> { typedef uint64_t type; };
template <typename R, typename T>
using gompute_lanes = typename gompute_lane<sizeof(T)>::type __attribute__((ext_vector_type(sizeof(R) / sizeof(T))));
template <typename R, typename T> GOMPUTE_FN gompute_lanes<R, T> gompute_vector_load(const T* p) {
  R v = *(const R*)p;
  asm("" : "+v"(v));
  return __builtin_bit_cast(gompute_lanes<R, T>, v);
}
#endif
