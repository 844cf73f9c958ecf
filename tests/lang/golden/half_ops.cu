#line 107 "sample_kernels.py"
GOMPUTE_FN float gompute_kernel_half_ops(float x, float y) {
  float z = 0.0f;
#line 108 "sample_kernels.py"
  z = gompute_round_f16((gompute_round_f16((x * y)) + gompute_round_f16(sqrtf(fabsf(x)))));
#line 109 "sample_kernels.py"
  z = gompute_round_f16((z - 0.099975586f));
#line 110 "sample_kernels.py"
  return ((z == z) ? gompute_max<float>(y, z) : x);
}
#line 12 "gompute-generated-entries"
GOMPUTE_GLOBAL void __launch_bounds__(256) half_ops(gompute_f16* in0, gompute_f16* in1, gompute_f16* out, uint64_t len) {
  const uint64_t first = gompute_thread_index(), step = gompute_thread_count();
  // 8 elements a vector; `head` elements before the first, `tail` on from the last.
  const uint64_t lead = (uint64_t)in0 % 16 / 2;
  const uint64_t skip = (8 - lead) % 8;
  const uint64_t head = (uint64_t)in0 % 16 == lead * 2 && (uint64_t)in1 % 16 == lead * 2 && (uint64_t)out % 16 == lead * 2 && skip < len ? skip : len;
  const uint64_t vectors = (len - head) / 8, tail = head + vectors * 8;
  for (uint64_t j = first; j < head + (len - tail); j += step) {
    const uint64_t i = j < head ? j : tail + (j - head);
    out[i] = gompute_store_f16(gompute_kernel_half_ops(gompute_load_f16(in0[i]), gompute_load_f16(in1[i])));
  }
  for (uint64_t v = first; v < vectors; v += step) {
    const uint64_t i = head + v * 8;
    GOMPUTE_VECTOR_CHECK(in0 + i, 16, "half_ops", "in0");
    GOMPUTE_VECTOR_CHECK(in1 + i, 16, "half_ops", "in1");
    GOMPUTE_VECTOR_CHECK(out + i, 16, "half_ops", "out");
    struct { gompute_f16 e[8]; } vec0;
    struct { gompute_f16 e[8]; } vec1;
    struct { gompute_f16 e[8]; } vec2;
    vec0 = __builtin_bit_cast(decltype(vec0), gompute_vector_load<gompute_raw16>(in0 + i));
    vec1 = __builtin_bit_cast(decltype(vec1), gompute_vector_load<gompute_raw16>(in1 + i));
    vec2.e[0] = gompute_store_f16(gompute_kernel_half_ops(gompute_load_f16(vec0.e[0]), gompute_load_f16(vec1.e[0])));
    vec2.e[1] = gompute_store_f16(gompute_kernel_half_ops(gompute_load_f16(vec0.e[1]), gompute_load_f16(vec1.e[1])));
    vec2.e[2] = gompute_store_f16(gompute_kernel_half_ops(gompute_load_f16(vec0.e[2]), gompute_load_f16(vec1.e[2])));
    vec2.e[3] = gompute_store_f16(gompute_kernel_half_ops(gompute_load_f16(vec0.e[3]), gompute_load_f16(vec1.e[3])));
    vec2.e[4] = gompute_store_f16(gompute_kernel_half_ops(gompute_load_f16(vec0.e[4]), gompute_load_f16(vec1.e[4])));
    vec2.e[5] = gompute_store_f16(gompute_kernel_half_ops(gompute_load_f16(vec0.e[5]), gompute_load_f16(vec1.e[5])));
    vec2.e[6] = gompute_store_f16(gompute_kernel_half_ops(gompute_load_f16(vec0.e[6]), gompute_load_f16(vec1.e[6])));
    vec2.e[7] = gompute_store_f16(gompute_kernel_half_ops(gompute_load_f16(vec0.e[7]), gompute_load_f16(vec1.e[7])));
    *(gompute_raw16*)(out + i) = __builtin_bit_cast(gompute_raw16, vec2);
  }
}
GOMPUTE_GLOBAL void __launch_bounds__(256) half_ops__strided(gompute_f16* in0, gompute_f16* in1, gompute_f16* out, uint64_t len, const gompute_strides<3> strides) {
  const uint64_t first = gompute_thread_index(), step = gompute_thread_count();
  for (uint64_t i = first; i < len; i += step) {
    int64_t at[3];
    gompute_offsets(strides, i, at);
    out[at[2]] = gompute_store_f16(gompute_kernel_half_ops(gompute_load_f16(in0[at[0]]), gompute_load_f16(in1[at[1]])));
  }
}
