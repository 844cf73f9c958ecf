#line 55 "sample_kernels.py"
GOMPUTE_FN float gompute_fn_square(float v) {
#line 56 "sample_kernels.py"
  return (v * v);
}
#line 55 "sample_kernels.py"
GOMPUTE_FN int64_t gompute_fn_square_2(int64_t v) {
#line 56 "sample_kernels.py"
  return ((int64_t)((uint64_t)v * (uint64_t)v));
}
#line 60 "sample_kernels.py"
GOMPUTE_FN float gompute_kernel_loops(int32_t x, float y) {
  float acc = 0.0f;
  int64_t i = 0LL;
  int64_t j = 0LL;
  int64_t k = 0LL;
#line 61 "sample_kernels.py"
  acc = 0.0f;
#line 62 "sample_kernels.py"
  {
    const int32_t gompute_it1_stop = gompute_imod<int32_t>(x, 10);
    const int32_t gompute_it1_step = 1;
    const int32_t gompute_it1_start = 0;
    const uint32_t gompute_it1_count = (uint32_t)(gompute_it1_start < gompute_it1_stop) * (uint32_t)((uint32_t)gompute_it1_stop - (uint32_t)gompute_it1_start);
    uint32_t gompute_it1_k = 0;
    do {
      if (gompute_it1_k < gompute_it1_count) {
        const int32_t gompute_it1 = (int32_t)((uint32_t)gompute_it1_start + gompute_it1_k * (uint32_t)gompute_it1_step);
#line 62 "sample_kernels.py"
        i = ((int64_t)(gompute_it1));
#line 63 "sample_kernels.py"
        if ((i == 3LL)) {
#line 64 "sample_kernels.py"
          continue;
        }
#line 65 "sample_kernels.py"
        acc = (acc + (y * ((float)(i))));
      }
    } while (++gompute_it1_k < gompute_it1_count);
  }
#line 66 "sample_kernels.py"
  {
    const int64_t gompute_it2_stop = 0LL;
    const int64_t gompute_it2_step = ((int64_t)-3LL);
    for (int64_t gompute_it2 = 10LL; gompute_it2 > gompute_it2_stop; gompute_it2 += gompute_it2_step) {
#line 66 "sample_kernels.py"
      j = ((int64_t)(gompute_it2));
#line 67 "sample_kernels.py"
      acc = (acc - ((float)(j)));
    }
  }
#line 68 "sample_kernels.py"
  k = 0LL;
#line 69 "sample_kernels.py"
  while (true) {
#line 70 "sample_kernels.py"
    k = ((int64_t)((uint64_t)k + (uint64_t)1LL));
#line 71 "sample_kernels.py"
    if ((k >= 3LL)) {
#line 72 "sample_kernels.py"
      break;
    }
  }
#line 73 "sample_kernels.py"
  return ((((acc + ((float)(k))) + 0.5f) + gompute_fn_square(y)) + ((float)(gompute_fn_square_2(2LL))));
}
#line 68 "gompute-generated-entries"
GOMPUTE_GLOBAL void __launch_bounds__(256) loops(int32_t* in0, float* in1, float* out, uint64_t len) {
  for (uint64_t i = gompute_thread_index(); i < len; i += gompute_thread_count()) {
    out[i] = gompute_kernel_loops(in0[i], in1[i]);
  }
}
GOMPUTE_GLOBAL void __launch_bounds__(256) loops__strided(int32_t* in0, float* in1, float* out, uint64_t len, const gompute_strides<3> strides) {
  for (uint64_t i = gompute_thread_index(); i < len; i += gompute_thread_count()) {
    int64_t at[3];
    gompute_offsets(strides, i, at);
    out[at[2]] = gompute_kernel_loops(in0[at[0]], in1[at[1]]);
  }
}
