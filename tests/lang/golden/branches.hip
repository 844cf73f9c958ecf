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
  for (uint64_t i = gompute_thread_index(); i < len; i += gompute_thread_count()) {
    data[i] = gompute_kernel_branches(data[i], params);
  }
}
GOMPUTE_GLOBAL void __launch_bounds__(256) branches__out(double* in0, double* out, uint64_t len, const Affine params) {
  for (uint64_t i = gompute_thread_index(); i < len; i += gompute_thread_count()) {
    out[i] = gompute_kernel_branches(in0[i], params);
  }
}
GOMPUTE_GLOBAL void __launch_bounds__(256) branches__strided(double* in0, double* out, uint64_t len, const gompute_strides<2> strides, const Affine params) {
  for (uint64_t i = gompute_thread_index(); i < len; i += gompute_thread_count()) {
    int64_t at[2];
    gompute_offsets(strides, i, at);
    out[at[1]] = gompute_kernel_branches(in0[at[0]], params);
  }
}
