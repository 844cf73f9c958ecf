struct Affine {
  double mul;
  int32_t add;
  bool flag;
  gompute_f16 half;
};
static_assert(sizeof(Affine) == 16, "Affine must match Affine's layout");
#line 77 "sample_kernels.py"
GOMPUTE_FN double gompute_kernel_branches(double x, const Affine p) {
  double r = 0.0;
#line 78 "sample_kernels.py"
  if ((x < (-1.0))) {
#line 79 "sample_kernels.py"
    r = (-x);
  } else {
#line 80 "sample_kernels.py"
    if (((((-1.0) <= x) && (x < 1.0)) && (!p.flag))) {
#line 81 "sample_kernels.py"
      r = (x * p.mul);
    } else {
#line 82 "sample_kernels.py"
      if (((x > 100.0) || (x != x))) {
#line 83 "sample_kernels.py"
        return 0.0;
      } else {
#line 85 "sample_kernels.py"
        r = (x + ((double)(p.add)));
      }
    }
  }
#line 86 "sample_kernels.py"
  return ((r + ((double)(gompute_load_f16(p.half)))) + 3.141592653589793);
}
#line 35 "gompute-generated-entries"
GOMPUTE_HOST_ARITY(branches, 3);
GOMPUTE_HOST_KERNEL(branches) {
  const gompute_dim3 block = launch->block_dim;
  if ((uint64_t)block.x * block.y * block.z != 256u)
    GOMPUTE_TRAP(launch, "branches: launched with a block size other than its block_size, 256");
  double* data = (double*)(uintptr_t)*(const uint64_t*)launch->args[0];
  const uint64_t len = *(const uint64_t*)launch->args[1];
  Affine params;
  memcpy(&params, launch->args[2], sizeof params);
  const gompute_dim3 grid = launch->grid_dim;
  const uint64_t stride = (uint64_t)grid.x * grid.y * grid.z * 256u;
  const uint64_t span = (launch->block_end - launch->block_begin) * 256u;
  for (uint64_t base = launch->block_begin * 256u; base < len; base += stride) {
    const uint64_t end = base + span < len ? base + span : len;
    for (uint64_t i = base; i < end; ++i) {
      data[i] = gompute_kernel_branches(data[i], params);
    }
  }
}
GOMPUTE_HOST_ARITY(branches__out, 4);
GOMPUTE_HOST_KERNEL(branches__out) {
  const gompute_dim3 block = launch->block_dim;
  if ((uint64_t)block.x * block.y * block.z != 256u)
    GOMPUTE_TRAP(launch, "branches__out: launched with a block size other than its block_size, 256");
  double* in0 = (double*)(uintptr_t)*(const uint64_t*)launch->args[0];
  double* out = (double*)(uintptr_t)*(const uint64_t*)launch->args[1];
  const uint64_t len = *(const uint64_t*)launch->args[2];
  Affine params;
  memcpy(&params, launch->args[3], sizeof params);
  const gompute_dim3 grid = launch->grid_dim;
  const uint64_t stride = (uint64_t)grid.x * grid.y * grid.z * 256u;
  const uint64_t span = (launch->block_end - launch->block_begin) * 256u;
  for (uint64_t base = launch->block_begin * 256u; base < len; base += stride) {
    const uint64_t end = base + span < len ? base + span : len;
    for (uint64_t i = base; i < end; ++i) {
      out[i] = gompute_kernel_branches(in0[i], params);
    }
  }
}
