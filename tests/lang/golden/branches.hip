struct Affine {
  double mul;
  int32_t add;
  bool flag;
  gompute_f16 half;
};
static_assert(sizeof(Affine) == 16, "Affine must match Affine's layout");
#line 77 "sample_kernels.py"
GOMPUTE_FN double gompute_kernel_branches(double x, const Affine p) {
  double r = 0.0;
#line 78 "sample_kernels.py"
  if ((x < (-1.0))) {
#line 79 "sample_kernels.py"
    r = (-x);
  } else {
#line 80 "sample_kernels.py"
    if (((((-1.0) <= x) && (x < 1.0)) && (!p.flag))) {
#line 81 "sample_kernels.py"
      r = (x * p.mul);
    } else {
#line 82 "sample_kernels.py"
      if (((x > 100.0) || (x != x))) {
#line 83 "sample_kernels.py"
        return 0.0;
      } else {
#line 85 "sample_kernels.py"
        r = (x + ((double)(p.add)));
      }
    }
  }
#line 86 "sample_kernels.py"
  return ((r + ((double)(gompute_load_f16(p.half)))) + 3.141592653589793);
}
#line 35 "gompute-generated-entries"
GOMPUTE_GLOBAL void __launch_bounds__(256) branches(double* data, uint64_t len, const Affine params) {
  const uint64_t first = gompute_thread_index(), step = gompute_thread_count();
  // 2 elements a vector; `head` elements before the first, `tail` on from the last.
  const uint64_t lead = (uint64_t)data % 16 / 8;
  const uint64_t skip = (2 - lead) % 2;
  const uint64_t head = (uint64_t)data % 16 == lead * 8 && skip < len ? skip : len;
  const uint64_t vectors = (len - head) / 2, tail = head + vectors * 2;
  for (uint64_t j = first; j < head + (len - tail); j += step) {
    const uint64_t i = j < head ? j : tail + (j - head);
    data[i] = gompute_kernel_branches(data[i], params);
  }
  for (uint64_t v = first; v < vectors; v += step) {
    const uint64_t i = head + v * 2;
    GOMPUTE_VECTOR_CHECK(data + i, 16, "branches", "data");
    struct { double e[2]; } vec0;
    vec0 = __builtin_bit_cast(decltype(vec0), gompute_vector_load<gompute_raw16>(data + i));
    vec0.e[0] = gompute_kernel_branches(vec0.e[0], params);
    vec0.e[1] = gompute_kernel_branches(vec0.e[1], params);
    *(gompute_raw16*)(data + i) = __builtin_bit_cast(gompute_raw16, vec0);
  }
}
GOMPUTE_GLOBAL void __launch_bounds__(256) branches__out(double* in0, double* out, uint64_t len, const Affine params) {
  const uint64_t first = gompute_thread_index(), step = gompute_thread_count();
  // 2 elements a vector; `head` elements before the first, `tail` on from the last.
  const uint64_t lead = (uint64_t)in0 % 16 / 8;
  const uint64_t skip = (2 - lead) % 2;
  const uint64_t head = (uint64_t)in0 % 16 == lead * 8 && (uint64_t)out % 16 == lead * 8 && skip < len ? skip : len;
  const uint64_t vectors = (len - head) / 2, tail = head + vectors * 2;
  for (uint64_t j = first; j < head + (len - tail); j += step) {
    const uint64_t i = j < head ? j : tail + (j - head);
    out[i] = gompute_kernel_branches(in0[i], params);
  }
  for (uint64_t v = first; v < vectors; v += step) {
    const uint64_t i = head + v * 2;
    GOMPUTE_VECTOR_CHECK(in0 + i, 16, "branches__out", "in0");
    GOMPUTE_VECTOR_CHECK(out + i, 16, "branches__out", "out");
    struct { double e[2]; } vec0;
    struct { double e[2]; } vec1;
    vec0 = __builtin_bit_cast(decltype(vec0), gompute_vector_load<gompute_raw16>(in0 + i));
    vec1.e[0] = gompute_kernel_branches(vec0.e[0], params);
    vec1.e[1] = gompute_kernel_branches(vec0.e[1], params);
    *(gompute_raw16*)(out + i) = __builtin_bit_cast(gompute_raw16, vec1);
  }
}
GOMPUTE_GLOBAL void __launch_bounds__(256) branches__strided(double* in0, double* out, uint64_t len, const gompute_strides<2> strides, const Affine params) {
  const uint64_t first = gompute_thread_index(), step = gompute_thread_count();
  for (uint64_t i = first; i < len; i += step) {
    int64_t at[2];
    gompute_offsets(strides, i, at);
    out[at[1]] = gompute_kernel_branches(in0[at[0]], params);
  }
}
