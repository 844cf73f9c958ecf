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
GOMPUTE_HOST_ARITY(scale_relu, 3);
GOMPUTE_HOST_KERNEL(scale_relu) {
  const gompute_dim3 block = launch->block_dim;
  if ((uint64_t)block.x * block.y * block.z != 256u)
    GOMPUTE_TRAP(launch, "scale_relu: launched with a block size other than its block_size, 256");
  float* data = (float*)(uintptr_t)*(const uint64_t*)launch->args[0];
  const uint64_t len = *(const uint64_t*)launch->args[1];
  Params params;
  memcpy(&params, launch->args[2], sizeof params);
  const gompute_dim3 grid = launch->grid_dim;
  const uint64_t stride = (uint64_t)grid.x * grid.y * grid.z * 256u;
  const uint64_t span = (launch->block_end - launch->block_begin) * 256u;
  for (uint64_t base = launch->block_begin * 256u; base < len; base += stride) {
    const uint64_t end = base + span < len ? base + span : len;
    for (uint64_t i = base; i < end; ++i) {
      data[i] = gompute_kernel_scale_relu(data[i], params);
    }
  }
}
GOMPUTE_HOST_ARITY(scale_relu__out, 4);
GOMPUTE_HOST_KERNEL(scale_relu__out) {
  const gompute_dim3 block = launch->block_dim;
  if ((uint64_t)block.x * block.y * block.z != 256u)
    GOMPUTE_TRAP(launch, "scale_relu__out: launched with a block size other than its block_size, 256");
  float* in0 = (float*)(uintptr_t)*(const uint64_t*)launch->args[0];
  float* out = (float*)(uintptr_t)*(const uint64_t*)launch->args[1];
  const uint64_t len = *(const uint64_t*)launch->args[2];
  Params params;
  memcpy(&params, launch->args[3], sizeof params);
  const gompute_dim3 grid = launch->grid_dim;
  const uint64_t stride = (uint64_t)grid.x * grid.y * grid.z * 256u;
  const uint64_t span = (launch->block_end - launch->block_begin) * 256u;
  for (uint64_t base = launch->block_begin * 256u; base < len; base += stride) {
    const uint64_t end = base + span < len ? base + span : len;
    for (uint64_t i = base; i < end; ++i) {
      out[i] = gompute_kernel_scale_relu(in0[i], params);
    }
  }
}
