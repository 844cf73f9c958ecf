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
GOMPUTE_GLOBAL void __launch_bounds__(256) scale_relu__from_i16__to_f64(int16_t* in0, double* out, uint64_t len, const Params params) {
  const uint64_t first = gompute_thread_index(), step = gompute_thread_count();
  // 2 elements a vector; `head` elements before the first, `tail` on from the last.
  const uint64_t lead = (uint64_t)in0 % 4 / 2;
  const uint64_t skip = (2 - lead) % 2;
  const uint64_t head = (uint64_t)in0 % 4 == lead * 2 && (uint64_t)out % 16 == lead * 8 && skip < len ? skip : len;
  const uint64_t vectors = (len - head) / 2, tail = head + vectors * 2;
  for (uint64_t j = first; j < head + (len - tail); j += step) {
    const uint64_t i = j < head ? j : tail + (j - head);
    gompute_put(out[i], gompute_kernel_scale_relu(((float)gompute_value(in0[i])), params));
  }
  for (uint64_t v = first; v < vectors; v += step) {
    const uint64_t i = head + v * 2;
    GOMPUTE_VECTOR_CHECK(in0 + i, 4, "scale_relu__from_i16__to_f64", "in0");
    GOMPUTE_VECTOR_CHECK(out + i, 16, "scale_relu__from_i16__to_f64", "out");
    struct { int16_t e[2]; } vec0;
    struct { double e[2]; } vec1;
    vec0 = __builtin_bit_cast(decltype(vec0), gompute_vector_load<gompute_raw4>(in0 + i));
    gompute_put(vec1.e[0], gompute_kernel_scale_relu(((float)gompute_value(vec0.e[0])), params));
    gompute_put(vec1.e[1], gompute_kernel_scale_relu(((float)gompute_value(vec0.e[1])), params));
    *(gompute_raw16*)(out + i) = __builtin_bit_cast(gompute_raw16, vec1);
  }
}
GOMPUTE_GLOBAL void __launch_bounds__(256) scale_relu__from_i16__to_f64__strided(int16_t* in0, double* out, uint64_t len, const gompute_strides<2> strides, const Params params) {
  const uint64_t first = gompute_thread_index(), step = gompute_thread_count();
  for (uint64_t i = first; i < len; i += step) {
    int64_t at[2];
    gompute_offsets(strides, i, at);
    gompute_put(out[at[1]], gompute_kernel_scale_relu(((float)gompute_value(in0[at[0]])), params));
  }
}
