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
GOMPUTE_HOST_ARITY(half_ops, 4);
GOMPUTE_HOST_KERNEL(half_ops) {
  const gompute_dim3 block = launch->block_dim;
  if ((uint64_t)block.x * block.y * block.z != 256u)
    GOMPUTE_TRAP(launch, "half_ops: launched with a block size other than its block_size, 256");
  gompute_f16* in0 = (gompute_f16*)(uintptr_t)*(const uint64_t*)launch->args[0];
  gompute_f16* in1 = (gompute_f16*)(uintptr_t)*(const uint64_t*)launch->args[1];
  gompute_f16* out = (gompute_f16*)(uintptr_t)*(const uint64_t*)launch->args[2];
  const uint64_t len = *(const uint64_t*)launch->args[3];
  const gompute_dim3 grid = launch->grid_dim;
  const uint64_t stride = (uint64_t)grid.x * grid.y * grid.z * 256u;
  const uint64_t span = (launch->block_end - launch->block_begin) * 256u;
  for (uint64_t base = launch->block_begin * 256u; base < len; base += stride) {
    const uint64_t end = base + span < len ? base + span : len;
    for (uint64_t i = base; i < end; ++i) {
      out[i] = gompute_store_f16(gompute_kernel_half_ops(gompute_load_f16(in0[i]), gompute_load_f16(in1[i])));
    }
  }
}
