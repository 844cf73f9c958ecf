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
  return ((((acc + ((float)(k))) + 0.5f) + gompute_fn_square(y)) + (gompute_plus_zero<float>((float)(gompute_fn_square_2(2LL)))));
}
#line 68 "gompute-generated-entries"
GOMPUTE_GLOBAL void __launch_bounds__(256) loops(int32_t* in0, float* in1, float* out, uint64_t len) {
  const uint64_t first = gompute_thread_index(), step = gompute_thread_count();
  // 4 elements a vector; `head` elements before the first, `tail` on from the last.
  const uint64_t lead = (uint64_t)in0 % 16 / 4;
  const uint64_t skip = (4 - lead) % 4;
  const uint64_t head = (uint64_t)in0 % 16 == lead * 4 && (uint64_t)in1 % 16 == lead * 4 && (uint64_t)out % 16 == lead * 4 && skip < len ? skip : len;
  const uint64_t vectors = (len - head) / 4, tail = head + vectors * 4;
  for (uint64_t j = first; j < head + (len - tail); j += step) {
    const uint64_t i = j < head ? j : tail + (j - head);
    out[i] = gompute_kernel_loops(in0[i], in1[i]);
  }
  for (uint64_t v = first; v < vectors; v += step) {
    const uint64_t i = head + v * 4;
    GOMPUTE_VECTOR_CHECK(in0 + i, 16, "loops", "in0");
    GOMPUTE_VECTOR_CHECK(in1 + i, 16, "loops", "in1");
    GOMPUTE_VECTOR_CHECK(out + i, 16, "loops", "out");
    struct { int32_t e[4]; } vec0;
    struct { float e[4]; } vec1;
    struct { float e[4]; } vec2;
    vec0 = __builtin_bit_cast(decltype(vec0), gompute_vector_load<gompute_raw16>(in0 + i));
    vec1 = __builtin_bit_cast(decltype(vec1), gompute_vector_load<gompute_raw16>(in1 + i));
    vec2.e[0] = gompute_kernel_loops(vec0.e[0], vec1.e[0]);
    vec2.e[1] = gompute_kernel_loops(vec0.e[1], vec1.e[1]);
    vec2.e[2] = gompute_kernel_loops(vec0.e[2], vec1.e[2]);
    vec2.e[3] = gompute_kernel_loops(vec0.e[3], vec1.e[3]);
    *(gompute_raw16*)(out + i) = __builtin_bit_cast(gompute_raw16, vec2);
  }
}
GOMPUTE_GLOBAL void __launch_bounds__(256) loops__strided(int32_t* in0, float* in1, float* out, uint64_t len, const gompute_strides<3> strides) {
  const uint64_t first = gompute_thread_index(), step = gompute_thread_count();
  for (uint64_t i = first; i < len; i += step) {
    int64_t at[3];
    gompute_offsets(strides, i, at);
    out[at[2]] = gompute_kernel_loops(in0[at[0]], in1[at[1]]);
  }
}
