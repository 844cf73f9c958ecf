// gompute host prelude: the generated code's base layer on the CPU (see lang/preludes/common.h).
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "gompute/host_launch.h"

// glibc's vector math library (libmvec, complete since 2.35) has SIMD versions of these;
// declaring them lets loops that call them vectorize, at up to 4 ulp where scalar libm is
// within 1. Elsewhere the scalar functions are called per element.
#if defined(__x86_64__) && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define GOMPUTE_VECTOR_MATH(name)                                              \
  __attribute__((simd("notinbranch"))) float name##f(float) __THROW;           \
  __attribute__((simd("notinbranch"))) double name(double) __THROW;
#define GOMPUTE_VECTOR_MATH2(name)                                             \
  __attribute__((simd("notinbranch"))) float name##f(float, float) __THROW;    \
  __attribute__((simd("notinbranch"))) double name(double, double) __THROW;
extern "C" {
GOMPUTE_VECTOR_MATH(exp) GOMPUTE_VECTOR_MATH(exp2) GOMPUTE_VECTOR_MATH(expm1)
GOMPUTE_VECTOR_MATH(log) GOMPUTE_VECTOR_MATH(log2) GOMPUTE_VECTOR_MATH(log10) GOMPUTE_VECTOR_MATH(log1p)
GOMPUTE_VECTOR_MATH(sin) GOMPUTE_VECTOR_MATH(cos) GOMPUTE_VECTOR_MATH(tan)
GOMPUTE_VECTOR_MATH(asin) GOMPUTE_VECTOR_MATH(acos) GOMPUTE_VECTOR_MATH(atan)
GOMPUTE_VECTOR_MATH(sinh) GOMPUTE_VECTOR_MATH(cosh) GOMPUTE_VECTOR_MATH(tanh)
GOMPUTE_VECTOR_MATH(erf) GOMPUTE_VECTOR_MATH(erfc)
GOMPUTE_VECTOR_MATH2(atan2) GOMPUTE_VECTOR_MATH2(pow) GOMPUTE_VECTOR_MATH2(hypot)
}
#undef GOMPUTE_VECTOR_MATH
#undef GOMPUTE_VECTOR_MATH2
#endif

#define GOMPUTE_FN static inline __attribute__((always_inline))
// A kernel over contiguous rows: compiled once, called by every entry point of a specialization.
#define GOMPUTE_ROWS static __attribute__((noinline))
// The twin of a rows loop run where a launch reads far more than the caches hold: built for
// 256-bit vectors on an AVX-512 machine. From DRAM a core takes in a few bytes a cycle, which
// 256-bit loads keep up with on any such machine, and Zen 4 streams them faster than 512-bit
// ones (a C loop on one thread: 7%; g.reduce's sums: 2-25%, benchmarks/results/2026-12-07-reduce.md).
// Elsewhere it is the loop itself.
#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)
#define GOMPUTE_FROM_DRAM GOMPUTE_ROWS __attribute__((target("prefer-vector-width=256")))
#else
#define GOMPUTE_FROM_DRAM GOMPUTE_ROWS
#endif
// Before a rows loop: no iteration depends on another (its output is one of its inputs, element
// for element, or overlaps none). GCC checks aliasing at run time only for an innermost loop; a
// kernel with a loop of its own that is not unrolled vectorizes across it only on this promise.
#if defined(__clang__)
#define GOMPUTE_INDEPENDENT _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define GOMPUTE_INDEPENDENT _Pragma("GCC ivdep")
#else
#define GOMPUTE_INDEPENDENT
#endif

GOMPUTE_FN uint32_t gompute_bits_f32(float x) { uint32_t b; memcpy(&b, &x, 4); return b; }
GOMPUTE_FN float gompute_f32_from_bits(uint32_t b) { float x; memcpy(&x, &b, 4); return x; }
GOMPUTE_FN uint64_t gompute_bits_f64(double x) { uint64_t b; memcpy(&b, &x, 8); return b; }
GOMPUTE_FN double gompute_f64_from_bits(uint64_t b) { double x; memcpy(&x, &b, 8); return x; }
GOMPUTE_FN float gompute_rsqrt_f32(float x) { return 1.0f / sqrtf(x); }
GOMPUTE_FN double gompute_rsqrt_f64(double x) { return 1.0 / sqrt(x); }

// f16 <-> f32 in integer and float operations of 32-bit lanes, not _Float16 casts: GCC 12 does not
// vectorize a loop with a _Float16 conversion in it (not even with F16C or AVX512-FP16), and a
// kernel that rounds to f16 after every operation went one element at a time, at a tenth of the
// memory bandwidth. Both functions give the F16C instructions' bits for every input (checked
// exhaustively: all 2^32 floats, all 65536 halves): round to nearest even, overflow to infinity,
// NaNs quieted with the top of their payload kept. The cases are merged with masks, not `?:`:
// with a select GCC threads what it knows of the value (y > 0 ? y : 0 is 0 on one side) into
// the conversion's cases, and the branches it makes stop the loop from vectorizing.
GOMPUTE_FN uint32_t gompute_pick(bool c, uint32_t yes, uint32_t no) {
  const uint32_t m = 0u - (uint32_t)c;
  return (yes & m) | (no & ~m);
}
GOMPUTE_FN uint16_t gompute_f16_bits_from_f32(float x) {
  const uint32_t b = gompute_bits_f32(x), sign = (b >> 16) & 0x8000u, a = b & 0x7fffffffu;
  // |x| >= 2^-14: rebias the exponent and round away the 13 low mantissa bits to even (the carry
  // may run into the exponent, up to infinity).
  const uint32_t normal = (a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13;
  // |x| < 2^-14, a subnormal half: adding 0.5 rounds |x| to a multiple of 2^-24 (0.5's ulp), to
  // even, and leaves that multiple in the low mantissa bits.
  const uint32_t subnormal = gompute_bits_f32(gompute_f32_from_bits(a) + 0.5f) - 0x3f000000u;
  const uint32_t special = 0x7c00u | gompute_pick(a > 0x7f800000u, 0x200u | ((a >> 13) & 0x3ffu), 0u);
  const uint32_t h = gompute_pick(a >= 0x47800000u, special, gompute_pick(a < 0x38800000u, subnormal, normal));
  return (uint16_t)(h | sign);
}
GOMPUTE_FN float gompute_f32_from_f16_bits(uint16_t b) {
  const uint32_t em = (uint32_t)(b & 0x7fffu) << 13, sign = (uint32_t)(b & 0x8000u) << 16;
  const uint32_t exponent = em & 0x0f800000u;
  const uint32_t normal = em + 0x38000000u;
  const uint32_t special = (em + 0x70000000u) | gompute_pick(em > 0x0f800000u, 0x00400000u, 0u);
  // A subnormal half m * 2^-24: (1 + m / 1024) * 2^-14 made from the bits, less 2^-14, exactly.
  const uint32_t subnormal =
      gompute_bits_f32(gompute_f32_from_bits(em + 0x38800000u) - gompute_f32_from_bits(0x38800000u));
  const uint32_t bits = gompute_pick(exponent == 0x0f800000u, special, gompute_pick(exponent == 0, subnormal, normal));
  return gompute_f32_from_bits(bits | sign);
}
// Rounding a float to the nearest half, in float bits: the same results as the round trip
// through 16 bits above (all 2^32 floats checked) in under half its operations, which counts in
// an f16 kernel, rounded after every operation.
#define GOMPUTE_HAS_ROUND_F16 1
GOMPUTE_FN float gompute_round_f16(float x) {
  const uint32_t b = gompute_bits_f32(x), sign = b & 0x80000000u, a = b & 0x7fffffffu;
  const uint32_t normal = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;
  const uint32_t subnormal = gompute_bits_f32((gompute_f32_from_bits(a) + 0.5f) - 0.5f);
  // From 65520 (halfway to 2^16, which rounds to even: up) the half is infinite.
  const uint32_t special = gompute_pick(a > 0x7f800000u, (a | 0x00400000u) & 0xffffe000u, 0x7f800000u);
  return gompute_f32_from_bits(
      gompute_pick(a >= 0x477ff000u, special, gompute_pick(a < 0x38800000u, subnormal, normal)) | sign);
}
