// gompute complex prelude: g.c64 and g.c128, written out so that the same text builds on the host,
// with NVRTC and with hiprtc (no <complex>, no cuComplex.h).
//
// Layout: {re, im}, cuComplex's and cuDoubleComplex's and std::complex's. On a GPU aligned to the
// whole value's size, as cuComplex and cuDoubleComplex are (views and imports aligned to less are
// refused there). On the host c128 is aligned to a part, as std::complex<double> and NumPy's
// complex128 are: NumPy calls an array at an 8-byte boundary aligned, and the 16-byte aligned moves
// GCC would use for an alignas(16) type fault on it. A params struct's c128 field is aligned to 16
// on every backend (module.py), where gompute.abi puts it.
// Arithmetic and comparisons are NumPy's loops (a plain product, Smith's quotient); the functions
// follow C99 Annex G / glibc, which NumPy calls, for inf and NaN where the comments say so. c64's
// functions compute in double and round each part once: as accurate as f32 can hold, and free of
// the intermediate overflows of the f32 formulas, at double's cost on a GPU.

#if defined(__device__)  // NVRTC, hiprtc and the CUDA-on-CPU shim: constructors run on the device
#define GOMPUTE_COMPLEX_METHOD __device__ inline
#else
#define GOMPUTE_COMPLEX_METHOD inline
#endif

struct gompute_c128;

struct alignas(8) gompute_c64 {
  float re, im;
  gompute_c64() = default;
  GOMPUTE_COMPLEX_METHOD gompute_c64(float r, float i) : re(r), im(i) {}
  // From a real value (imaginary part 0): C's conversion of it to the part type.
  template <typename R>
  GOMPUTE_COMPLEX_METHOD explicit gompute_c64(R r) : re((float)r), im(0.0f) {}
  GOMPUTE_COMPLEX_METHOD explicit gompute_c64(gompute_c128 z);
};

#if defined(__device__)
#define GOMPUTE_C128_ALIGN 16
#else
#define GOMPUTE_C128_ALIGN 8
#endif

struct alignas(GOMPUTE_C128_ALIGN) gompute_c128 {
  double re, im;
  gompute_c128() = default;
  GOMPUTE_COMPLEX_METHOD gompute_c128(double r, double i) : re(r), im(i) {}
  template <typename R>
  GOMPUTE_COMPLEX_METHOD explicit gompute_c128(R r) : re((double)r), im(0.0) {}
  GOMPUTE_COMPLEX_METHOD explicit gompute_c128(gompute_c64 z) : re(z.re), im(z.im) {}
};

GOMPUTE_COMPLEX_METHOD gompute_c64::gompute_c64(gompute_c128 z) : re((float)z.re), im((float)z.im) {}

static_assert(sizeof(gompute_c64) == 8 && alignof(gompute_c64) == 8, "gompute_c64 must be laid out as cuComplex");
static_assert(sizeof(gompute_c128) == 16 && alignof(gompute_c128) == GOMPUTE_C128_ALIGN,
              "gompute_c128 must be laid out as cuDoubleComplex");

// NumPy's complex loops, operator by operator, for C the type and R its part type.
#define GOMPUTE_COMPLEX_ARITHMETIC(C, R)                                                     \
  GOMPUTE_FN C operator+(C a, C b) { return C(a.re + b.re, a.im + b.im); }                   \
  GOMPUTE_FN C operator-(C a, C b) { return C(a.re - b.re, a.im - b.im); }                   \
  GOMPUTE_FN C operator-(C a) { return C(-a.re, -a.im); }                                    \
  GOMPUTE_FN C operator*(C a, C b) { return C(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re); } \
  /* Smith's algorithm, as NumPy divides: by the larger part of b, so nothing overflows early; */ \
  /* x / 0 is the parts divided by zero (inf or NaN). */                                     \
  GOMPUTE_FN C operator/(C a, C b) {                                                         \
    const R br = fabs(b.re), bi = fabs(b.im);                                                \
    if (br >= bi) {                                                                          \
      if (br == 0 && bi == 0) return C(a.re / br, a.im / br);                                \
      const R rat = b.im / b.re, scl = (R)1 / (b.re + b.im * rat);                           \
      return C((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl);                        \
    }                                                                                        \
    const R rat = b.re / b.im, scl = (R)1 / (b.im + b.re * rat);                             \
    return C((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl);                          \
  }                                                                                          \
  GOMPUTE_FN bool operator==(C a, C b) { return a.re == b.re && a.im == b.im; }              \
  GOMPUTE_FN bool operator!=(C a, C b) { return a.re != b.re || a.im != b.im; }              \
  GOMPUTE_FN R gompute_creal(C z) { return z.re; }                                           \
  GOMPUTE_FN R gompute_cimag(C z) { return z.im; }                                           \
  GOMPUTE_FN C gompute_cconj(C z) { return C(z.re, -z.im); }                                 \
  GOMPUTE_FN bool gompute_cisnan(C z) { return z.re != z.re || z.im != z.im; }               \
  GOMPUTE_FN bool gompute_cisinf(C z) { return fabs(z.re) == (R)gompute_inf_f64() || fabs(z.im) == (R)gompute_inf_f64(); } \
  GOMPUTE_FN bool gompute_cisfinite(C z) { return fabs(z.re) < (R)gompute_inf_f64() && fabs(z.im) < (R)gompute_inf_f64(); }
GOMPUTE_COMPLEX_ARITHMETIC(gompute_c64, float)
GOMPUTE_COMPLEX_ARITHMETIC(gompute_c128, double)
#undef GOMPUTE_COMPLEX_ARITHMETIC

GOMPUTE_FN float gompute_cabs(gompute_c64 z) { return hypotf(z.re, z.im); }
GOMPUTE_FN double gompute_cabs(gompute_c128 z) { return hypot(z.re, z.im); }
GOMPUTE_FN float gompute_carg(gompute_c64 z) { return atan2f(z.im, z.re); }
GOMPUTE_FN double gompute_carg(gompute_c128 z) { return atan2(z.im, z.re); }

GOMPUTE_FN bool gompute_finite_f64(double x) { return fabs(x) < gompute_inf_f64(); }

// e**z. Annex G's cases: the real axis is exp(x) with the imaginary zero kept; an infinite or NaN
// imaginary part gives NaN, but (inf, NaN) for x = +inf and 0 for x = -inf. Past x = 709, where
// exp(x) overflows and exp(x) * cos(y) may not, exp(709) multiplies apart.
GOMPUTE_FN gompute_c128 gompute_cexp(gompute_c128 z) {
  const double x = z.re, y = z.im;
  if (y == 0) return gompute_c128(exp(x), y);
  if (!gompute_finite_f64(y)) {
    if (x == gompute_inf_f64()) return gompute_c128(x, y - y);
    if (x == -gompute_inf_f64()) return gompute_c128(0.0, 0.0);
    return gompute_c128(y - y, y - y);
  }
  if (x > 709.0) {
    const double e = exp(x - 709.0), big = exp(709.0);
    return gompute_c128(cos(y) * big * e, sin(y) * big * e);
  }
  const double e = exp(x);
  return gompute_c128(e * cos(y), e * sin(y));
}

// log|z| + i arg z. Near the unit circle log|z| is log1p of |z|**2 - 1 formed with two fused
// multiply-adds, which keeps its accuracy where log(hypot) would cancel to nothing; |z|
// past 1e300 or below 1e-300 is scaled by a power of two first, so that hypot neither overflows
// nor loses bits to subnormals. log(0) is -inf; an infinite part makes the real part +inf.
GOMPUTE_FN gompute_c128 gompute_clog(gompute_c128 z) {
  const double x = z.re, y = z.im, ax = fabs(x), ay = fabs(y);
  const double big = ax > ay ? ax : ay, small = ax > ay ? ay : ax, ln2 = 0.6931471805599453;
  double re;
  if (big >= 0.5 && big <= 2.0) {
    re = 0.5 * log1p(fma(small, small, fma(big, big, -1.0)));
  } else if (big > 1e300 && gompute_finite_f64(big)) {
    re = log(hypot(x * 0.5, y * 0.5)) + ln2;
  } else if (big < 1e-300 && big > 0) {
    const double up = 18014398509481984.0;  // 2**54
    re = log(hypot(x * up, y * up)) - 54.0 * ln2;
  } else {
    re = log(hypot(x, y));
  }
  return gompute_c128(re, atan2(y, x));
}

// The principal square root (Kahan's, as FreeBSD's csqrt): sqrt((|x| + |z|) / 2) and y over twice
// it, the larger part first, so neither cancels; scaled by a power of four near overflow and
// underflow. sqrt(x + i inf) is (inf, inf); x = -inf gives (0 or NaN, +-inf), x = +inf (inf, 0 or
// NaN); a NaN part otherwise gives NaN.
GOMPUTE_FN gompute_c128 gompute_csqrt(gompute_c128 z) {
  double x = z.re, y = z.im;
  const double inf = gompute_inf_f64();
  if (x == 0 && y == 0) return gompute_c128(0.0, y);
  if (fabs(y) == inf) return gompute_c128(inf, y);
  if (x != x) return gompute_c128(x, x);
  if (fabs(x) == inf) {
    if (x > 0) return gompute_c128(x, y != y ? y : copysign(0.0, y));
    return gompute_c128(fabs(y - y), copysign(inf, y));
  }
  if (y != y) return gompute_c128(y, y);
  double scale = 1.0;
  if (fabs(x) >= 7.446288774449766e307 || fabs(y) >= 7.446288774449766e307) {  // DBL_MAX / (1 + sqrt 2)
    x *= 0.25, y *= 0.25, scale = 2.0;
  } else if (fabs(x) < 1e-150 && fabs(y) < 1e-150) {
    const double up = 4.149515568880993e180;  // 2**600
    x *= up, y *= up, scale = 4.909093465297727e-91;  // 2**-300
  }
  const double t = sqrt((fabs(x) + hypot(x, y)) * 0.5);
  if (x >= 0) return gompute_c128(t * scale, y / (2.0 * t) * scale);
  return gompute_c128(fabs(y) / (2.0 * t) * scale, copysign(t, y) * scale);
}

// sin(x + iy) = sin x cosh y + i cos x sinh y. On the axes a zero part is kept as it is, not
// multiplied by an infinity or NaN (sin(0 + i inf) is (0, inf), sin(inf + 0i) is (NaN, 0)).
GOMPUTE_FN gompute_c128 gompute_csin(gompute_c128 z) {
  const double x = z.re, y = z.im;
  if (x == 0) return gompute_c128(x, sinh(y));
  if (y == 0) return gompute_c128(sin(x), gompute_finite_f64(x) ? cos(x) * y : y);
  return gompute_c128(sin(x) * cosh(y), cos(x) * sinh(y));
}

// cos(x + iy) = cos x cosh y - i sin x sinh y, with the same care on the axes as gompute_csin.
GOMPUTE_FN gompute_c128 gompute_ccos(gompute_c128 z) {
  const double x = z.re, y = z.im;
  if (x == 0) return gompute_c128(cosh(y), -x * copysign(1.0, y));
  if (y == 0) return gompute_c128(cos(x), gompute_finite_f64(x) ? -(sin(x) * y) : y);
  return gompute_c128(cos(x) * cosh(y), -(sin(x) * sinh(y)));
}

// Kahan's tanh (as glibc's and FreeBSD's ctanh): with t = tan y, s = sinh x, r = sqrt(1 + s*s),
// tanh z = (r s (1 + t*t) + i t) / (1 + (1 + t*t) s*s), where nothing cancels; past |x| = 22,
// tanh x is +-1 to double precision and the imaginary part 4 sin y cos y e**-2|x|.
GOMPUTE_FN gompute_c128 gompute_ctanh(gompute_c128 z) {
  const double x = z.re, y = z.im;
  if (x != x) return gompute_c128(x, y == 0 ? y : x);
  if (fabs(x) == gompute_inf_f64()) {
    return gompute_c128(copysign(1.0, x), copysign(0.0, gompute_finite_f64(y) ? sin(y) * cos(y) : y));
  }
  if (!gompute_finite_f64(y)) return gompute_c128(x == 0 ? x : y - y, y - y);
  if (y == 0) return gompute_c128(tanh(x), y);
  if (fabs(x) >= 22.0) {
    const double e = exp(-fabs(x));
    return gompute_c128(copysign(1.0, x), 4.0 * sin(y) * cos(y) * e * e);
  }
  const double t = tan(y), beta = 1.0 + t * t, s = sinh(x), rho = sqrt(1.0 + s * s);
  const double denom = 1.0 + beta * s * s;
  return gompute_c128(beta * rho * s / denom, t / denom);
}

// C's complex product (C99 Annex G, libgcc's __muldc3): the plain product, but where both its parts
// are NaN and a factor is infinite, the infinity the product has (NumPy's `*` is the plain product).
GOMPUTE_FN bool gompute_isinf_f64(double x) { return fabs(x) == gompute_inf_f64(); }
GOMPUTE_FN double gompute_unit_f64(double x) { return copysign(gompute_isinf_f64(x) ? 1.0 : 0.0, x); }
GOMPUTE_FN double gompute_nan_to_zero_f64(double x) { return x != x ? copysign(0.0, x) : x; }
GOMPUTE_FN gompute_c128 gompute_cmul_annex_g(gompute_c128 p, gompute_c128 q) {
  double a = p.re, b = p.im, c = q.re, d = q.im;
  const double ac = a * c, bd = b * d, ad = a * d, bc = b * c, x = ac - bd, y = ad + bc;
  if (x == x || y == y) return gompute_c128(x, y);
  bool recalc = false;
  if (gompute_isinf_f64(a) || gompute_isinf_f64(b)) {
    a = gompute_unit_f64(a), b = gompute_unit_f64(b), c = gompute_nan_to_zero_f64(c), d = gompute_nan_to_zero_f64(d);
    recalc = true;
  }
  if (gompute_isinf_f64(c) || gompute_isinf_f64(d)) {
    c = gompute_unit_f64(c), d = gompute_unit_f64(d), a = gompute_nan_to_zero_f64(a), b = gompute_nan_to_zero_f64(b);
    recalc = true;
  }
  if (!recalc && (gompute_isinf_f64(ac) || gompute_isinf_f64(bd) || gompute_isinf_f64(ad) || gompute_isinf_f64(bc))) {
    a = gompute_nan_to_zero_f64(a), b = gompute_nan_to_zero_f64(b);
    c = gompute_nan_to_zero_f64(c), d = gompute_nan_to_zero_f64(d);
    recalc = true;
  }
  if (!recalc) return gompute_c128(x, y);
  const double inf = gompute_inf_f64();
  return gompute_c128(inf * (a * c - b * d), inf * (a * d + b * c));
}

// a**b as NumPy computes it (npy_cpow): b = 0 gives 1; 0**b is 0 where b's real part is positive,
// else NaN; an integer b below 100 in magnitude is repeated multiplication (and 1 / that for b < 0),
// in the type itself, as NumPy does; any other b is C's cpow, which NumPy calls: exp(b log a), with
// C's complex product (gompute_cmul_annex_g) where infinities meet.
template <typename C>
GOMPUTE_FN C gompute_cpow(C a, C b) {
  typedef decltype(a.re) R;
  const C one = C((R)1, (R)0);
  if (b.re == 0 && b.im == 0) return one;
  if (a.re == 0 && a.im == 0) {
    if (b.re > 0) return C((R)0, (R)0);
    const R nan = (R)gompute_nan_f64();
    return C(nan, nan);
  }
  if (b.im == 0 && b.re > -100 && b.re < 100 && b.re == (R)(int)b.re) {
    int n = (int)b.re;
    if (n == 1) return a;
    if (n == 2) return a * a;
    if (n == 3) return a * (a * a);
    C p = a, r = one;
    for (int k = n < 0 ? -n : n; k; k >>= 1) {
      if (k & 1) r = r * p;
      if (k > 1) p = p * p;
    }
    return n < 0 ? one / r : r;
  }
  return C(gompute_cexp(gompute_cmul_annex_g(gompute_c128(b), gompute_clog(gompute_c128(a)))));
}


// The kin of exp and log, by NumPy's own formulas for them (its nc_exp2, nc_log2, nc_log10,
// nc_expm1 and nc_log1p), on the functions above: the values NumPy computes, accurate where its are.
GOMPUTE_FN gompute_c128 gompute_cexp2(gompute_c128 z) {
  const double ln2 = 0.6931471805599453;
  return gompute_cexp(gompute_c128(z.re * ln2, z.im * ln2));
}
GOMPUTE_FN gompute_c128 gompute_clog2(gompute_c128 z) {
  const gompute_c128 l = gompute_clog(z);
  const double log2e = 1.4426950408889634;
  return gompute_c128(l.re * log2e, l.im * log2e);
}
GOMPUTE_FN gompute_c128 gompute_clog10(gompute_c128 z) {
  const gompute_c128 l = gompute_clog(z);
  const double log10e = 0.4342944819032518;
  return gompute_c128(l.re * log10e, l.im * log10e);
}
GOMPUTE_FN gompute_c128 gompute_cexpm1(gompute_c128 z) {
  const double a = sin(z.im * 0.5);
  return gompute_c128(expm1(z.re) * cos(z.im) - 2.0 * a * a, exp(z.re) * sin(z.im));
}
GOMPUTE_FN gompute_c128 gompute_clog1p(gompute_c128 z) {
  return gompute_c128(log(hypot(z.re + 1.0, z.im)), atan2(z.im, z.re + 1.0));
}

// The hyperbolic sine and cosine and the tangent, by Annex G's identities with the functions above:
// sinh z = i sin(-i z), cosh z = cos(-i z), tan z = -i tanh(i z) (multiplying by i is exact).
GOMPUTE_FN gompute_c128 gompute_csinh(gompute_c128 z) {
  const gompute_c128 s = gompute_csin(gompute_c128(z.im, -z.re));
  return gompute_c128(-s.im, s.re);
}
GOMPUTE_FN gompute_c128 gompute_ccosh(gompute_c128 z) { return gompute_ccos(gompute_c128(z.im, -z.re)); }
GOMPUTE_FN gompute_c128 gompute_ctan(gompute_c128 z) {
  const gompute_c128 t = gompute_ctanh(gompute_c128(-z.im, z.re));
  return gompute_c128(t.im, -t.re);
}

// c64's functions compute in double and round each part once.
#define GOMPUTE_C64_IN_DOUBLE(name) \
  GOMPUTE_FN gompute_c64 name(gompute_c64 z) { return gompute_c64(name(gompute_c128(z))); }
GOMPUTE_C64_IN_DOUBLE(gompute_cexp)
GOMPUTE_C64_IN_DOUBLE(gompute_clog)
GOMPUTE_C64_IN_DOUBLE(gompute_csqrt)
GOMPUTE_C64_IN_DOUBLE(gompute_csin)
GOMPUTE_C64_IN_DOUBLE(gompute_ccos)
GOMPUTE_C64_IN_DOUBLE(gompute_ctanh)
GOMPUTE_C64_IN_DOUBLE(gompute_cexp2)
GOMPUTE_C64_IN_DOUBLE(gompute_clog2)
GOMPUTE_C64_IN_DOUBLE(gompute_clog10)
GOMPUTE_C64_IN_DOUBLE(gompute_cexpm1)
GOMPUTE_C64_IN_DOUBLE(gompute_clog1p)
GOMPUTE_C64_IN_DOUBLE(gompute_csinh)
GOMPUTE_C64_IN_DOUBLE(gompute_ccosh)
GOMPUTE_C64_IN_DOUBLE(gompute_ctan)
#undef GOMPUTE_C64_IN_DOUBLE

// NumPy's sign of a complex number, z / |z|, computed in the type itself as NumPy's loop does: 0 for
// 0, NaN where |z| is NaN, and where |z| is infinite the unit along the infinite part (NaN for both).
template <typename C>
GOMPUTE_FN C gompute_csign(C z) {
  typedef decltype(z.re) R;
  const R m = hypot(z.re, z.im), inf = (R)gompute_inf_f64(), nan = (R)gompute_nan_f64();
  if (m != m) return C(nan, nan);
  if (m == inf) {
    if (fabs(z.re) == inf) return fabs(z.im) == inf ? C(nan, nan) : C(z.re > 0 ? (R)1 : (R)-1, (R)0);
    return C((R)0, z.im > 0 ? (R)1 : (R)-1);
  }
  if (m == 0) return C((R)0, (R)0);
  return C(z.re / m, z.im / m);
}

// 1 / z as NumPy's complex reciprocal computes it: Smith's quotient, and 1 / 0 is NaN + i NaN.
template <typename C>
GOMPUTE_FN C gompute_creciprocal(C z) {
  typedef decltype(z.re) R;
  if (fabs(z.im) <= fabs(z.re)) {
    const R r = z.im / z.re, d = z.re + z.im * r;
    return C((R)1 / d, -r / d);
  }
  const R r = z.re / z.im, d = z.re * r + z.im;
  return C(r / d, (R)-1 / d);
}

// Each part rounded half to even, as NumPy's complex rint.
template <typename C>
GOMPUTE_FN C gompute_crint(C z) { return C(rint(z.re), rint(z.im)); }
