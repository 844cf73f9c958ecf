struct Params {
  float scale;
};
static_assert(sizeof(Params) == 4, "Params must match Params's layout");
#line 28 "sample_kernels.py"
GOMPUTE_FN float gompute_kernel_scale_relu(float x, const Params p) {
  float y = 0.0f;
#line 29 "sample_kernels.py"
  y = (x * p.scale);
#line 30 "sample_kernels.py"
  return ((y > 0.0f) ? y : 0.0f);
}
#line 14 "gompute-generated-entries"
GOMPUTE_GLOBAL void __launch_bounds__(256) scale_relu(float* data, uint64_t len, const Params params) {
  for (uint64_t i = gompute_thread_index(); i < len; i += gompute_thread_count()) {
    data[i] = gompute_kernel_scale_relu(data[i], params);
  }
}
GOMPUTE_GLOBAL void __launch_bounds__(256) scale_relu__out(float* in0, float* out, uint64_t len, const Params params) {
  for (uint64_t i = gompute_thread_index(); i < len; i += gompute_thread_count()) {
    out[i] = gompute_kernel_scale_relu(in0[i], params);
  }
}
GOMPUTE_GLOBAL void __launch_bounds__(256) scale_relu__strided(float* in0, float* out, uint64_t len, const gompute_strides<2> strides, const Params params) {
  for (uint64_t i = gompute_thread_index(); i < len; i += gompute_thread_count()) {
    int64_t at[2];
    gompute_offsets(strides, i, at);
    out[at[1]] = gompute_kernel_scale_relu(in0[at[0]], params);
  }
}
