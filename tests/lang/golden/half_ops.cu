#line 107 "sample_kernels.py"
GOMPUTE_FN float gompute_kernel_half_ops(float x, float y) {
  float z = 0.0f;
#line 108 "sample_kernels.py"
  z = gompute_round_f16((gompute_round_f16((x * y)) + gompute_round_f16(sqrtf(fabsf(x)))));
#line 109 "sample_kernels.py"
  z = gompute_round_f16((z - 0.099975586f));
#line 110 "sample_kernels.py"
  return ((z == z) ? gompute_max(z, y) : x);
}
#line 12 "gompute-generated-entries"
GOMPUTE_GLOBAL void __launch_bounds__(256) half_ops(gompute_f16* in0, gompute_f16* in1, gompute_f16* out, uint64_t len) {
  for (uint64_t i = gompute_thread_index(); i < len; i += gompute_thread_count()) {
    out[i] = gompute_store_f16(gompute_kernel_half_ops(gompute_load_f16(in0[i]), gompute_load_f16(in1[i])));
  }
}
GOMPUTE_GLOBAL void __launch_bounds__(256) half_ops__strided(gompute_f16* in0, gompute_f16* in1, gompute_f16* out, uint64_t len, const gompute_strides<3> strides) {
  for (uint64_t i = gompute_thread_index(); i < len; i += gompute_thread_count()) {
    int64_t at[3];
    gompute_offsets(strides, i, at);
    out[at[2]] = gompute_store_f16(gompute_kernel_half_ops(gompute_load_f16(in0[at[0]]), gompute_load_f16(in1[at[1]])));
  }
}
