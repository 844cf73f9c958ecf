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
template <typename gompute_S0, typename gompute_SO>
GOMPUTE_FN void gompute_kernel_scale_relu_loop(const gompute_S0* in0, gompute_SO* out, int64_t n, const Params& params) {
  GOMPUTE_INDEPENDENT
  for (int64_t j = 0; j < n; ++j) gompute_put(out[j], gompute_kernel_scale_relu(((float)gompute_value(in0[j])), params));
}
template <typename gompute_S0, typename gompute_SO>
GOMPUTE_ROWS void gompute_kernel_scale_relu_rows(const gompute_S0* in0, gompute_SO* out, int64_t n, const Params& params) {
#if defined(GOMPUTE_F16C)
  if constexpr (gompute_any_half<gompute_S0, gompute_SO>::value) {
    for (int64_t j = 0; j < n; j += GOMPUTE_HALF_CHUNK) {
      const int64_t m = n - j < GOMPUTE_HALF_CHUNK ? n - j : GOMPUTE_HALF_CHUNK;
      float w0[GOMPUTE_HALF_CHUNK], wo[GOMPUTE_HALF_CHUNK];
      gompute_kernel_scale_relu_loop(gompute_widen(w0, in0 + j, m), gompute_wide_out(wo, out + j), m, params);
      gompute_narrow(out + j, wo, m);
    }
    return;
  }
#endif
  gompute_kernel_scale_relu_loop(in0, out, n, params);
}
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
    gompute_kernel_scale_relu_rows(data + base, data + base, (int64_t)(end - base), params);
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
    gompute_kernel_scale_relu_rows(in0 + base, out + base, (int64_t)(end - base), params);
  }
}
GOMPUTE_HOST_ARITY(scale_relu__strided, 5);
GOMPUTE_HOST_KERNEL(scale_relu__strided) {
  const gompute_dim3 block = launch->block_dim;
  if ((uint64_t)block.x * block.y * block.z != 256u)
    GOMPUTE_TRAP(launch, "scale_relu__strided: launched with a block size other than its block_size, 256");
  float* in0 = (float*)(uintptr_t)*(const uint64_t*)launch->args[0];
  float* out = (float*)(uintptr_t)*(const uint64_t*)launch->args[1];
  const uint64_t len = *(const uint64_t*)launch->args[2];
  gompute_strides<2> strides;
  memcpy(&strides, launch->args[3], sizeof strides);
  Params params;
  memcpy(&params, launch->args[4], sizeof params);
  const gompute_dim3 grid = launch->grid_dim;
  const uint64_t stride = (uint64_t)grid.x * grid.y * grid.z * 256u;
  const uint64_t span = (launch->block_end - launch->block_begin) * 256u;
  const bool tile = gompute_tile_layout(strides);
  const bool tiled0 = tile && gompute_tiled(strides, 0);
  const bool far = tile && gompute_tile_far<float>((int64_t)len);
  const int64_t tile_rows = gompute_tile_rows<float>(far);
  const int64_t tile_cols = gompute_tile_cols<float>();
  const int64_t tile_pitch = gompute_tile_pitch(tile_cols);
  const int64_t tile_height = !tile ? 0 : strides.shape[0] < tile_rows ? strides.shape[0] : tile_rows;
  const size_t tile_bytes0 = gompute_tile_bytes<float>(tile && strides.strides[0][1] != 1, tile_height, tile_pitch);
  const size_t stream_bytes = gompute_tile_bytes<float>(far && GOMPUTE_CAN_STREAM, 1, tile_pitch);
  const size_t tile_bytes = tile_bytes0 + stream_bytes;
  unsigned char* const tiles = tile_bytes ? gompute_tile_memory(tile_bytes) : nullptr;
  if (tile_bytes && !tiles)
    GOMPUTE_TRAP(launch, "scale_relu__strided: out of memory for the tile buffers of a transposed input");
  float* t0 = (float*)(tiles);
  float* const streamed = (float*)(tiles + tile_bytes0);
  for (uint64_t base = launch->block_begin * 256u; base < len; base += stride) {
    const uint64_t end = base + span < len ? base + span : len;
    auto run = [&](const int64_t* at, const int64_t* step, int64_t n) {
      if (step[0] == 1 && step[1] == 1) return gompute_kernel_scale_relu_rows(in0 + at[0], out + at[1], n, params);
      for (int64_t j0 = 0; j0 < n; j0 += GOMPUTE_CHUNK) {
        const int64_t m = n - j0 < GOMPUTE_CHUNK ? n - j0 : GOMPUTE_CHUNK;
        float b0[GOMPUTE_CHUNK];
        float b1[GOMPUTE_CHUNK];
        const auto* s0 = gompute_source(b0, in0 + at[0] + j0 * step[0], step[0], m);
        auto* s1 = step[1] == 1 ? out + at[1] + j0 * step[1] : b1;
        gompute_kernel_scale_relu_rows(s0, s1, m, params);
        if (step[1] != 1) gompute_scatter(out + at[1] + j0 * step[1], step[1], b1, m);
      }
    };
    if (tile) {
      // Rows [ra, rb) in tiles (host_strided.h), each row clipped to the elements [base, end);
      // far ones prefetch the next tile as their rows run and stream their rows out.
      const bool stream = far && GOMPUTE_CAN_STREAM;
      const uint64_t cols = (uint64_t)strides.shape[1];
      const uint64_t ra = base / cols, rb = (end + cols - 1) / cols;
      for (uint64_t r = ra; r < rb; r += tile_rows) {
        const int64_t t = rb - r < tile_rows ? (int64_t)(rb - r) : tile_rows;
        for (int64_t c = 0; c < (int64_t)cols; c += tile_cols) {
          const int64_t m = (int64_t)cols - c < tile_cols ? (int64_t)cols - c : tile_cols;
          const uint64_t first = r * cols + (uint64_t)c, last = (r + t - 1) * cols + (uint64_t)(c + m);
          if (end <= first || base >= last) continue;
          const auto* p0 = in0 + (int64_t)r * strides.strides[0][0] + c * strides.strides[0][1];
          if (tiled0) gompute_gather_tile(t0, p0, strides.strides[0][1], t, m, (int64_t)cols - c, tile_pitch);
          if (far && m * (int64_t)sizeof *out >= GOMPUTE_PREFETCH_MIN) {
            const gompute_next_tile next = gompute_tile_after(r, t, c, m, end, cols, tile_rows, tile_cols);
            const auto* n0 = p0 + next.dr * strides.strides[0][0] + next.dc * strides.strides[0][1];
            for (int64_t i = 0; i < t; ++i) {
              if (tiled0) gompute_prefetch_next(n0, strides.strides[0][1], next, i);
              const uint64_t at = (r + (uint64_t)i) * cols + (uint64_t)c;
              const int64_t j0 = base > at ? (int64_t)(base - at) : 0;
              const int64_t j1 = end < at + (uint64_t)m ? (int64_t)(end - at) : m;
              if (j0 >= j1) continue;
              const auto* s0 = tiled0 ? t0 + i * tile_pitch + j0 : gompute_source(t0 + i * tile_pitch + j0, p0 + i * strides.strides[0][0] + j0 * strides.strides[0][1], strides.strides[0][1], j1 - j0);
              auto* d = out + (int64_t)(r + i) * strides.strides[1][0] + c + j0;
              const bool streaming = stream && (j1 - j0) * sizeof *d >= GOMPUTE_STREAM_MIN;
              auto* s1 = streaming ? streamed : d;
              gompute_kernel_scale_relu_rows(s0, s1, j1 - j0, params);
              if (streaming) gompute_stream(d, streamed, (size_t)(j1 - j0) * sizeof *d);
            }
          } else {
            for (int64_t i = 0; i < t; ++i) {
              const uint64_t at = (r + (uint64_t)i) * cols + (uint64_t)c;
              const int64_t j0 = base > at ? (int64_t)(base - at) : 0;
              const int64_t j1 = end < at + (uint64_t)m ? (int64_t)(end - at) : m;
              if (j0 >= j1) continue;
              const auto* s0 = tiled0 ? t0 + i * tile_pitch + j0 : gompute_source(t0 + i * tile_pitch + j0, p0 + i * strides.strides[0][0] + j0 * strides.strides[0][1], strides.strides[0][1], j1 - j0);
              auto* s1 = out + (int64_t)(r + i) * strides.strides[1][0] + c + j0;
              gompute_kernel_scale_relu_rows(s0, s1, j1 - j0, params);
            }
          }
        }
      }
      if (stream) gompute_stream_fence();
      continue;
    }
    gompute_runs(strides, base, end, run);
  }
}
