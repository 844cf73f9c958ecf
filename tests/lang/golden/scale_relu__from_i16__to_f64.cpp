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
template <typename S0, typename SO>
GOMPUTE_ROWS void gompute_kernel_scale_relu_rows(const S0* in0, SO* out, int64_t n, const Params& params) {
  for (int64_t j = 0; j < n; ++j) gompute_put(out[j], gompute_kernel_scale_relu(((float)gompute_value(in0[j])), params));
}
GOMPUTE_HOST_ARITY(scale_relu__from_i16__to_f64, 4);
GOMPUTE_HOST_KERNEL(scale_relu__from_i16__to_f64) {
  const gompute_dim3 block = launch->block_dim;
  if ((uint64_t)block.x * block.y * block.z != 256u)
    GOMPUTE_TRAP(launch, "scale_relu__from_i16__to_f64: launched with a block size other than its block_size, 256");
  int16_t* in0 = (int16_t*)(uintptr_t)*(const uint64_t*)launch->args[0];
  double* out = (double*)(uintptr_t)*(const uint64_t*)launch->args[1];
  const uint64_t len = *(const uint64_t*)launch->args[2];
  Params params;
  memcpy(&params, launch->args[3], sizeof params);
  const gompute_dim3 grid = launch->grid_dim;
  const uint64_t stride = (uint64_t)grid.x * grid.y * grid.z * 256u;
  const uint64_t span = (launch->block_end - launch->block_begin) * 256u;
  for (uint64_t base = launch->block_begin * 256u; base < len; base += stride) {
    const uint64_t end = base + span < len ? base + span : len;
    gompute_kernel_scale_relu_rows(in0 + base, out + base, (int64_t)(end - base), params);
  }
}
GOMPUTE_HOST_ARITY(scale_relu__from_i16__to_f64__strided, 5);
GOMPUTE_HOST_KERNEL(scale_relu__from_i16__to_f64__strided) {
  const gompute_dim3 block = launch->block_dim;
  if ((uint64_t)block.x * block.y * block.z != 256u)
    GOMPUTE_TRAP(launch, "scale_relu__from_i16__to_f64__strided: launched with a block size other than its block_size, 256");
  int16_t* in0 = (int16_t*)(uintptr_t)*(const uint64_t*)launch->args[0];
  double* out = (double*)(uintptr_t)*(const uint64_t*)launch->args[1];
  const uint64_t len = *(const uint64_t*)launch->args[2];
  gompute_strides<2> strides;
  memcpy(&strides, launch->args[3], sizeof strides);
  Params params;
  memcpy(&params, launch->args[4], sizeof params);
  const gompute_dim3 grid = launch->grid_dim;
  const uint64_t stride = (uint64_t)grid.x * grid.y * grid.z * 256u;
  const uint64_t span = (launch->block_end - launch->block_begin) * 256u;
  for (uint64_t base = launch->block_begin * 256u; base < len; base += stride) {
    const uint64_t end = base + span < len ? base + span : len;
    gompute_runs(strides, base, end, [&](const int64_t* at, const int64_t* step, int64_t n) {
      if (step[0] == 1 && step[1] == 1) return gompute_kernel_scale_relu_rows(in0 + at[0], out + at[1], n, params);
      for (int64_t j0 = 0; j0 < n; j0 += GOMPUTE_CHUNK) {
        const int64_t m = n - j0 < GOMPUTE_CHUNK ? n - j0 : GOMPUTE_CHUNK;
        int16_t b0[GOMPUTE_CHUNK];
        double b1[GOMPUTE_CHUNK];
        const auto* s0 = gompute_source(b0, in0 + at[0] + j0 * step[0], step[0], m);
        auto* s1 = step[1] == 1 ? out + at[1] + j0 * step[1] : b1;
        gompute_kernel_scale_relu_rows(s0, s1, m, params);
        if (step[1] != 1) gompute_scatter(out + at[1] + j0 * step[1], step[1], b1, m);
      }
    });
  }
}
