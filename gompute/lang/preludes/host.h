// gompute host prelude: the generated code's base layer on the CPU (see lang/preludes/common.h).
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "gompute/host_abi.h"

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

GOMPUTE_FN uint32_t gompute_bits_f32(float x) { uint32_t b; memcpy(&b, &x, 4); return b; }
GOMPUTE_FN float gompute_f32_from_bits(uint32_t b) { float x; memcpy(&x, &b, 4); return x; }
GOMPUTE_FN uint64_t gompute_bits_f64(double x) { uint64_t b; memcpy(&b, &x, 8); return b; }
GOMPUTE_FN double gompute_f64_from_bits(uint64_t b) { double x; memcpy(&x, &b, 8); return x; }
GOMPUTE_FN float gompute_rsqrt_f32(float x) { return 1.0f / sqrtf(x); }
GOMPUTE_FN double gompute_rsqrt_f64(double x) { return 1.0 / sqrt(x); }

#if defined(__FLT16_MANT_DIG__)
// _Float16 conversions compile to the CPU's half-precision instructions where it has them (F16C).
GOMPUTE_FN uint16_t gompute_f16_bits_from_f32(float x) { _Float16 h = (_Float16)x; uint16_t b; memcpy(&b, &h, 2); return b; }
GOMPUTE_FN float gompute_f32_from_f16_bits(uint16_t b) { _Float16 h; memcpy(&h, &b, 2); return (float)h; }
#elif defined(GOMPUTE_NEEDS_F16)
#error "gompute: this C++ compiler has no _Float16, which f16 kernels need (GCC >= 12 or Clang >= 15 have it)"
#endif
