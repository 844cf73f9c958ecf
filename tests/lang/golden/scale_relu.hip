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
  const uint64_t first = gompute_thread_index(), step = gompute_thread_count();
  // 4 elements a vector; `head` elements before the first, `tail` on from the last.
  const uint64_t lead = (uint64_t)data % 16 / 4;
  const uint64_t skip = (4 - lead) % 4;
  const uint64_t head = (uint64_t)data % 16 == lead * 4 && skip < len ? skip : len;
  const uint64_t vectors = (len - head) / 4, tail = head + vectors * 4;
  for (uint64_t j = first; j < head + (len - tail); j += step) {
    const uint64_t i = j < head ? j : tail + (j - head);
    data[i] = gompute_kernel_scale_relu(data[i], params);
  }
  for (uint64_t v = first; v < vectors; v += step) {
    const uint64_t i = head + v * 4;
    GOMPUTE_VECTOR_CHECK(data + i, 16, "scale_relu", "data");
    struct { float e[4]; } vec0;
    vec0 = __builtin_bit_cast(decltype(vec0), gompute_vector_load<gompute_raw16>(data + i));
    vec0.e[0] = gompute_kernel_scale_relu(vec0.e[0], params);
    vec0.e[1] = gompute_kernel_scale_relu(vec0.e[1], params);
    vec0.e[2] = gompute_kernel_scale_relu(vec0.e[2], params);
    vec0.e[3] = gompute_kernel_scale_relu(vec0.e[3], params);
    *(gompute_raw16*)(data + i) = __builtin_bit_cast(gompute_raw16, vec0);
  }
}
GOMPUTE_GLOBAL void __launch_bounds__(256) scale_relu__out(float* in0, float* out, uint64_t len, const Params params) {
  const uint64_t first = gompute_thread_index(), step = gompute_thread_count();
  // 4 elements a vector; `head` elements before the first, `tail` on from the last.
  const uint64_t lead = (uint64_t)in0 % 16 / 4;
  const uint64_t skip = (4 - lead) % 4;
  const uint64_t head = (uint64_t)in0 % 16 == lead * 4 && (uint64_t)out % 16 == lead * 4 && skip < len ? skip : len;
  const uint64_t vectors = (len - head) / 4, tail = head + vectors * 4;
  for (uint64_t j = first; j < head + (len - tail); j += step) {
    const uint64_t i = j < head ? j : tail + (j - head);
    out[i] = gompute_kernel_scale_relu(in0[i], params);
  }
  for (uint64_t v = first; v < vectors; v += step) {
    const uint64_t i = head + v * 4;
    GOMPUTE_VECTOR_CHECK(in0 + i, 16, "scale_relu__out", "in0");
    GOMPUTE_VECTOR_CHECK(out + i, 16, "scale_relu__out", "out");
    struct { float e[4]; } vec0;
    struct { float e[4]; } vec1;
    vec0 = __builtin_bit_cast(decltype(vec0), gompute_vector_load<gompute_raw16>(in0 + i));
    vec1.e[0] = gompute_kernel_scale_relu(vec0.e[0], params);
    vec1.e[1] = gompute_kernel_scale_relu(vec0.e[1], params);
    vec1.e[2] = gompute_kernel_scale_relu(vec0.e[2], params);
    vec1.e[3] = gompute_kernel_scale_relu(vec0.e[3], params);
    *(gompute_raw16*)(out + i) = __builtin_bit_cast(gompute_raw16, vec1);
  }
}
GOMPUTE_GLOBAL void __launch_bounds__(256) scale_relu__strided(float* in0, float* out, uint64_t len, const gompute_strides<2> strides, const Params params) {
  const uint64_t first = gompute_thread_index(), step = gompute_thread_count();
  for (uint64_t i = first; i < len; i += step) {
    int64_t at[2];
    gompute_offsets(strides, i, at);
    out[at[1]] = gompute_kernel_scale_relu(in0[at[0]], params);
  }
}
