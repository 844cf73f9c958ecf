// gompute common prelude: what the generated code needs on every backend, written once against
// the backend prelude's primitives (GOMPUTE_FN, the bit casts, the f16 conversions).
//
// f16 and bf16 values live in float registers, rounded to their 16-bit format after every
// operation, which gives exactly NumPy's results; they are 16 bits only in memory.

struct gompute_f16 { uint16_t bits; };
struct gompute_bf16 { uint16_t bits; };

GOMPUTE_FN float gompute_inf_f32() { return gompute_f32_from_bits(0x7f800000u); }

// The next value of a range's variable after `it`, or `stop` where the step would reach or pass
// it: the variable never steps past its type's end (range(120, 127, 10) over i8 wrapped to -126
// and never ended). A range whose step is known only at run time counts with it.
template <typename T>
GOMPUTE_FN T gompute_range_next(T it, T stop, T step) {
  const uint64_t left = step > 0 ? (uint64_t)stop - (uint64_t)it : (uint64_t)it - (uint64_t)stop;
  const uint64_t stride = step > 0 ? (uint64_t)step : (uint64_t)0 - (uint64_t)step;
  return left > stride ? (T)(it + step) : stop;
}
GOMPUTE_FN float gompute_nan_f32() { return gompute_f32_from_bits(0x7fc00000u); }
GOMPUTE_FN double gompute_inf_f64() { return gompute_f64_from_bits(0x7ff0000000000000ull); }
GOMPUTE_FN double gompute_nan_f64() { return gompute_f64_from_bits(0x7ff8000000000000ull); }

// double -> float rounding to odd: a second rounding to 16 bits is then as if done once.
GOMPUTE_FN float gompute_f32_round_odd(double x) {
  float f = (float)x;
  uint32_t b = gompute_bits_f32(f);
  if ((double)f != x && x == x && !(b & 1u)) b += (fabs((double)f) < fabs(x)) ? 1 : -1;
  return gompute_f32_from_bits(b);
}

// 64-bit integer -> double rounding to odd (exact below 2**53; above it, the bits past the 53 kept
// are jammed into the last one), so that rounding the double to bf16 after rounds only once.
GOMPUTE_FN double gompute_f64_round_odd_u64(uint64_t m) {
  uint64_t kept = m;
  int shift = 0;
  while (kept >= (1ull << 53)) {
    kept >>= 1;
    ++shift;
  }
  kept |= (uint64_t)((m & ((1ull << shift) - 1)) != 0);
  return (double)kept * (double)(1ull << shift);
}
GOMPUTE_FN double gompute_f64_round_odd_i64(int64_t x) {
  const double magnitude = gompute_f64_round_odd_u64(x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x);
  return x < 0 ? -magnitude : magnitude;
}

GOMPUTE_FN uint16_t gompute_bf16_bits_from_f32(float x) {
  uint32_t b = gompute_bits_f32(x);
  if (x != x) return (uint16_t)((b >> 16) | 0x40u);
  return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
GOMPUTE_FN float gompute_f32_from_bf16_bits(uint16_t b) { return gompute_f32_from_bits((uint32_t)b << 16); }

#if defined(GOMPUTE_NEEDS_F16)
#if !defined(GOMPUTE_HAS_ROUND_F16)  // a backend prelude may round in a way of its own
GOMPUTE_FN float gompute_round_f16(float x) { return gompute_f32_from_f16_bits(gompute_f16_bits_from_f32(x)); }
#endif
GOMPUTE_FN float gompute_round_f16_f64(double x) { return gompute_round_f16(gompute_f32_round_odd(x)); }
GOMPUTE_FN float gompute_load_f16(gompute_f16 h) { return gompute_f32_from_f16_bits(h.bits); }
GOMPUTE_FN gompute_f16 gompute_store_f16(float x) { gompute_f16 h = {gompute_f16_bits_from_f32(x)}; return h; }
#endif
GOMPUTE_FN float gompute_round_bf16(float x) { return gompute_f32_from_bf16_bits(gompute_bf16_bits_from_f32(x)); }
GOMPUTE_FN float gompute_round_bf16_f64(double x) { return gompute_round_bf16(gompute_f32_round_odd(x)); }
GOMPUTE_FN float gompute_load_bf16(gompute_bf16 h) { return gompute_f32_from_bf16_bits(h.bits); }
GOMPUTE_FN gompute_bf16 gompute_store_bf16(float x) { gompute_bf16 h = {gompute_bf16_bits_from_f32(x)}; return h; }

// NaN-propagating, like np.minimum / np.maximum.
// NumPy's minimum/maximum: a NaN in either wins, ties give b. Written as selects, not
// `||`, so loops over them vectorize.
template <typename T> GOMPUTE_FN T gompute_min(T a, T b) {
  const T m = a < b ? a : b;
  return a != a ? a : m;
}
template <typename T> GOMPUTE_FN T gompute_max(T a, T b) {
  const T m = a > b ? a : b;
  return a != a ? a : m;
}

// An integer converted to a float: +0.0 for 0, as C++ defines it. GCC (with -fno-trapping-math) turns
// (float)(int)x into trunc(x), which is -0.0 for x in (-1, 0]; the select keeps the +0.0 (a compare
// and a masked move a vector, where that happens).
template <typename F> GOMPUTE_FN F gompute_plus_zero(F r) { return r == 0 ? (F)0 : r; }

// Integer operations with NumPy's results: wrapping, floor semantics, x/0 == 0, no traps.
// U is the unsigned type (>= 32 bits) the arithmetic wraps in.
template <typename T, typename U> GOMPUTE_FN T gompute_iabs(T a) { return a < 0 ? (T)((U)0 - (U)a) : a; }

template <typename T, typename U> GOMPUTE_FN T gompute_ifloordiv(T a, T b) {
  if (b == 0) return 0;
  if ((T)-1 < (T)0 && b == (T)-1) return (T)((U)0 - (U)a);
  T q = (T)(a / b);
  T r = (T)(a % b);
  return (r != 0 && ((r < 0) != (b < 0))) ? (T)(q - 1) : q;
}

template <typename T> GOMPUTE_FN T gompute_imod(T a, T b) {
  if (b == 0 || ((T)-1 < (T)0 && b == (T)-1)) return 0;
  T r = (T)(a % b);
  return (r != 0 && ((r < 0) != (b < 0))) ? (T)(r + b) : r;
}

// int64 against uint64, exactly (their common type, f64, would round): the sign of a - b.
GOMPUTE_FN int gompute_cmp_iu(int64_t a, uint64_t b) { return a < 0 || (uint64_t)a < b ? -1 : (uint64_t)a > b; }
GOMPUTE_FN int gompute_cmp_iu(uint64_t a, int64_t b) { return -gompute_cmp_iu(b, a); }

// Integer ** with a negative exponent is 1 / base**-e truncated (NumPy raises instead).
template <typename T, typename U> GOMPUTE_FN T gompute_ipow(T base, T e) {
  if (e < 0) return base == 1 ? (T)1 : ((T)-1 < (T)0 && base == (T)-1) ? (T)((e & 1) ? -1 : 1) : (T)0;
  U r = 1, b = (U)base;
  for (uint64_t n = (uint64_t)e; n; n >>= 1) {
    if (n & 1) r *= b;
    b *= b;
  }
  return (T)r;
}

template <typename T, typename U> GOMPUTE_FN T gompute_shl(T a, T n) {
  return (n < 0 || (uint64_t)n >= sizeof(T) * 8) ? (T)0 : (T)((U)a << n);
}
template <typename T> GOMPUTE_FN T gompute_shr(T a, T n) {
  return (n < 0 || (uint64_t)n >= sizeof(T) * 8) ? (T)(a < 0 ? -1 : 0) : (T)(a >> n);
}

// Float // and % as NumPy computes them (npy_divmod), so 1.0 // 0.1 == 9.0.
#define GOMPUTE_FLOAT_DIVMOD(W, T, S)                                             \
  GOMPUTE_FN T gompute_floordiv_##W(T a, T b) {                                  \
    if (b == 0) return a / b;                                                    \
    T mod = fmod##S(a, b);                                                       \
    T div = (a - mod) / b;                                                       \
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;                            \
    if (div == 0) return copysign##S((T)0, a / b);                               \
    T fd = floor##S(div);                                                        \
    return (div - fd > (T)0.5) ? fd + 1 : fd;                                    \
  }                                                                              \
  GOMPUTE_FN T gompute_mod_##W(T a, T b) {                                       \
    T mod = fmod##S(a, b);                                                       \
    if (b == 0) return mod;                                                      \
    if (mod != 0) return ((b < 0) != (mod < 0)) ? mod + b : mod;                 \
    return copysign##S((T)0, b);                                                 \
  }
GOMPUTE_FLOAT_DIVMOD(f32, float, f)
GOMPUTE_FLOAT_DIVMOD(f64, double, )

// NumPy's ufuncs that C lacks or spells otherwise (lang/builtins.py), each as NumPy computes it.
// Integer ones wrap in U, the unsigned type (>= 32 bits) of T's width, and never trap.
template <typename T> GOMPUTE_FN T gompute_sign(T x) { return x > 0 ? (T)1 : x < 0 ? (T)-1 : x == 0 ? (T)0 : x; }
// np.fmax / np.fmin: a NaN loses to a number; of two equal values, a.
template <typename T> GOMPUTE_FN T gompute_fmax(T a, T b) { return (a >= b || b != b) ? a : b; }
template <typename T> GOMPUTE_FN T gompute_fmin(T a, T b) { return (a <= b || b != b) ? a : b; }
template <typename T> GOMPUTE_FN T gompute_heaviside(T x, T h0) {
  return x != x ? x : x == 0 ? h0 : x < 0 ? (T)0 : (T)1;
}
// C's % (the sign of a); by 0, and MIN by -1, 0 as NumPy gives.
template <typename T> GOMPUTE_FN T gompute_ifmod(T a, T b) {
  return (b == 0 || ((T)-1 < (T)0 && b == (T)-1)) ? (T)0 : (T)(a % b);
}
// 1 / x truncated; NumPy's 1 / 0 is a float overflowing an integer, unspecified, here 0.
template <typename T> GOMPUTE_FN T gompute_ireciprocal(T a) { return a == 0 ? (T)0 : (T)(1 / a); }
template <typename T, typename U> GOMPUTE_FN U gompute_magnitude(T a) { return a < 0 ? (U)0 - (U)a : (U)a; }
template <typename U> GOMPUTE_FN U gompute_ugcd(U a, U b) {
  while (a != 0) {
    const U r = b % a;
    b = a;
    a = r;
  }
  return b;
}
// gcd and lcm of the magnitudes, in U: gcd(MIN, 0) wraps to MIN, and lcm wraps, as in NumPy.
template <typename T, typename U> GOMPUTE_FN T gompute_gcd(T a, T b) {
  return (T)gompute_ugcd<U>(gompute_magnitude<T, U>(a), gompute_magnitude<T, U>(b));
}
template <typename T, typename U> GOMPUTE_FN T gompute_lcm(T a, T b) {
  const U x = gompute_magnitude<T, U>(a), y = gompute_magnitude<T, U>(b), g = gompute_ugcd<U>(x, y);
  return g == 0 ? (T)0 : (T)(x / g * y);
}
// The 1 bits of |a| (np.bitwise_count), counted without a backend's popcount intrinsic.
template <typename T> GOMPUTE_FN uint8_t gompute_bitwise_count(T a) {
  uint64_t v = gompute_magnitude<T, uint64_t>(a);
  v = v - ((v >> 1) & 0x5555555555555555ull);
  v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
  v = (v + (v >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return (uint8_t)((v * 0x0101010101010101ull) >> 56);
}

// Float ufuncs per width, in NumPy's formulas (npy_math), so that they round as NumPy's do.
#define GOMPUTE_FLOAT_UFUNCS(W, T, S, BITS)                                                   \
  GOMPUTE_FN bool gompute_signbit_##W(T x) { return (gompute_bits_##W(x) >> (BITS - 1)) != 0; } \
  GOMPUTE_FN T gompute_deg2rad_##W(T x) { return x * ((T)3.14159265358979323846 / (T)180); }  \
  GOMPUTE_FN T gompute_rad2deg_##W(T x) { return x * ((T)180 / (T)3.14159265358979323846); }  \
  GOMPUTE_FN T gompute_nextafter_##W(T x, T y) { return nextafter##S(x, y); }                  \
  /* The exponent clamped to int: past +-4096 every finite nonzero result is 0 or inf. */      \
  GOMPUTE_FN T gompute_ldexp_##W(T x, int64_t n) {                                           \
    return ldexp##S(x, (int)(n < -4096 ? -4096 : n > 4096 ? 4096 : n));                      \
  }                                                                                          \
  /* The step away from zero (from either zero, the smallest positive subnormal). */          \
  GOMPUTE_FN T gompute_spacing_##W(T x) {                                                    \
    if (fabs##S(x) == gompute_inf_##W()) return gompute_nan_##W();                           \
    if (x == 0) return gompute_##W##_from_bits(1);                                           \
    return nextafter##S(x, copysign##S(gompute_inf_##W(), x)) - x;                           \
  }                                                                                          \
  /* Equal arguments give x + log 2, which is right for infinities too; a NaN, NaN. */        \
  GOMPUTE_FN T gompute_logaddexp_##W(T x, T y) {                                             \
    if (x == y) return x + (T)0.693147180559945309417232121458176568;                        \
    const T d = x - y;                                                                       \
    if (d > 0) return x + log1p##S(exp##S(-d));                                              \
    if (d <= 0) return y + log1p##S(exp##S(d));                                              \
    return d;                                                                                \
  }                                                                                          \
  GOMPUTE_FN T gompute_logaddexp2_##W(T x, T y) {                                            \
    if (x == y) return x + 1;                                                                \
    const T d = x - y;                                                                       \
    if (d > 0) return x + (T)1.442695040888963407359924681001892137 * log1p##S(exp2##S(-d));  \
    if (d <= 0) return y + (T)1.442695040888963407359924681001892137 * log1p##S(exp2##S(d));  \
    return d;                                                                                \
  }
GOMPUTE_FLOAT_UFUNCS(f32, float, f, 32)
GOMPUTE_FLOAT_UFUNCS(f64, double, , 64)

// f16 and bf16 step in their own ulps, on their 16-bit patterns (NumPy's npy_half_nextafter; its
// rule for equal arguments, x, is kept for bf16, which NumPy lacks).
GOMPUTE_FN uint16_t gompute_half_step(float x, float y, uint16_t hx, uint16_t hy) {
  if ((hx & 0x7fffu) == 0) return (uint16_t)((hy & 0x8000u) | 1u);
  return (uint16_t)((x < y) == !(hx & 0x8000u) ? hx + 1 : hx - 1);
}
GOMPUTE_FN float gompute_nextafter_bf16(float x, float y) {
  if (x != x || y != y) return gompute_nan_f32();
  if (x == y) return x;
  const uint16_t hx = (uint16_t)(gompute_bits_f32(x) >> 16), hy = (uint16_t)(gompute_bits_f32(y) >> 16);
  return gompute_f32_from_bf16_bits(gompute_half_step(x, y, hx, hy));
}
GOMPUTE_FN float gompute_spacing_bf16(float x) {
  if (x != x || fabsf(x) == gompute_inf_f32()) return gompute_nan_f32();
  if (x == 0) return gompute_f32_from_bf16_bits(1);
  return gompute_f32_from_bf16_bits((uint16_t)((gompute_bits_f32(x) >> 16) + 1)) - x;
}
#if defined(GOMPUTE_NEEDS_F16)
GOMPUTE_FN float gompute_nextafter_f16(float x, float y) {
  if (x != x || y != y) return gompute_nan_f32();
  if (x == y) return x;
  return gompute_f32_from_f16_bits(gompute_half_step(x, y, gompute_f16_bits_from_f32(x), gompute_f16_bits_from_f32(y)));
}
// NumPy's npy_half_spacing: the ulp away from zero, as a magnitude, except from a negative power
// of two, where it is the ulp toward zero.
GOMPUTE_FN float gompute_spacing_f16(float x) {
  const uint32_t h = gompute_f16_bits_from_f32(x), e = h & 0x7c00u, m = h & 0x03ffu;
  if (e == 0x7c00u) return gompute_nan_f32();
  if (h == 0x7bffu) return gompute_inf_f32();
  uint32_t r;
  if ((h & 0x8000u) && m == 0) r = e > 0x2c00u ? e - 0x2c00u : e > 0x0400u ? 1u << ((e >> 10) - 2) : 1u;
  else r = e > 0x2800u ? e - 0x2800u : e > 0x0400u ? 1u << ((e >> 10) - 1) : 1u;
  return gompute_f32_from_f16_bits((uint16_t)r);
}
#endif

// Elements whose memory type is not the kernel's parameter type (g.map's storage variants):
// gompute_value reads one as a value (half types as float), gompute_put stores a value into one.
// The conversions they take part in are exact (the variant checks that).
template <typename T> GOMPUTE_FN T gompute_value(T x) { return x; }
GOMPUTE_FN float gompute_value(gompute_bf16 h) { return gompute_load_bf16(h); }
template <typename S, typename V> GOMPUTE_FN void gompute_put(S& dst, V v) { dst = (S)v; }
template <typename V> GOMPUTE_FN void gompute_put(gompute_bf16& dst, V v) { dst = gompute_store_bf16((float)v); }
#if defined(GOMPUTE_NEEDS_F16)
GOMPUTE_FN float gompute_value(gompute_f16 h) { return gompute_load_f16(h); }
template <typename V> GOMPUTE_FN void gompute_put(gompute_f16& dst, V v) { dst = gompute_store_f16((float)v); }
#endif

// The `strides` argument of a strided entry point (lang/module.py, pack_strides): N arrays, the
// inputs then the output, each addressed from its element 0; strides in elements, 0 to broadcast.
// GOMPUTE_MAX_NDIM is the planner's limit (_core.MAX_STRIDED_DIMS); tests/test_facts.py checks it.
#define GOMPUTE_MAX_NDIM 8
template <int N> struct gompute_strides {
  int32_t ndim;
  int32_t pad;
  int64_t shape[GOMPUTE_MAX_NDIM];
  int64_t strides[N][GOMPUTE_MAX_NDIM];
};
static_assert(sizeof(gompute_strides<2>) == 8 + (1 + 2) * 8 * GOMPUTE_MAX_NDIM,
              "gompute_strides must match pack_strides");

// The element offset in each array of element i (C order over the shape).
template <int N> GOMPUTE_FN void gompute_offsets(const gompute_strides<N>& s, uint64_t i, int64_t* at) {
  for (int a = 0; a < N; ++a) at[a] = 0;
  for (int d = s.ndim - 1; d >= 0; --d) {
    const uint64_t n = (uint64_t)s.shape[d];
    const int64_t k = (int64_t)(i % n);
    i /= n;
    for (int a = 0; a < N; ++a) at[a] += k * s.strides[a][d];
  }
}
