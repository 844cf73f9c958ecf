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
template <typename gompute_S0, typename gompute_S1, typename gompute_SO>
GOMPUTE_FN void gompute_kernel_half_ops_loop(const gompute_S0* in0, const gompute_S1* in1, gompute_SO* out, int64_t n) {
  GOMPUTE_INDEPENDENT
  for (int64_t j = 0; j < n; ++j) gompute_put(out[j], gompute_kernel_half_ops(((float)gompute_value(in0[j])), ((float)gompute_value(in1[j]))));
}
template <typename gompute_S0, typename gompute_S1, typename gompute_SO>
GOMPUTE_ROWS void gompute_kernel_half_ops_rows(const gompute_S0* in0, const gompute_S1* in1, gompute_SO* out, int64_t n) {
#if defined(GOMPUTE_F16C)
  if constexpr (gompute_any_half<gompute_S0, gompute_S1, gompute_SO>::value) {
    for (int64_t j = 0; j < n; j += GOMPUTE_HALF_CHUNK) {
      const int64_t m = n - j < GOMPUTE_HALF_CHUNK ? n - j : GOMPUTE_HALF_CHUNK;
      float w0[GOMPUTE_HALF_CHUNK], w1[GOMPUTE_HALF_CHUNK], wo[GOMPUTE_HALF_CHUNK];
      gompute_kernel_half_ops_loop(gompute_widen(w0, in0 + j, m), gompute_widen(w1, in1 + j, m), gompute_wide_out(wo, out + j), m);
      gompute_narrow(out + j, wo, m);
    }
    return;
  }
#endif
  gompute_kernel_half_ops_loop(in0, in1, out, n);
}
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
    gompute_kernel_half_ops_rows(in0 + base, in1 + base, out + base, (int64_t)(end - base));
  }
}
GOMPUTE_HOST_ARITY(half_ops__strided, 5);
GOMPUTE_HOST_KERNEL(half_ops__strided) {
  const gompute_dim3 block = launch->block_dim;
  if ((uint64_t)block.x * block.y * block.z != 256u)
    GOMPUTE_TRAP(launch, "half_ops__strided: launched with a block size other than its block_size, 256");
  gompute_f16* in0 = (gompute_f16*)(uintptr_t)*(const uint64_t*)launch->args[0];
  gompute_f16* in1 = (gompute_f16*)(uintptr_t)*(const uint64_t*)launch->args[1];
  gompute_f16* out = (gompute_f16*)(uintptr_t)*(const uint64_t*)launch->args[2];
  const uint64_t len = *(const uint64_t*)launch->args[3];
  gompute_strides<3> strides;
  memcpy(&strides, launch->args[4], sizeof strides);
  const gompute_dim3 grid = launch->grid_dim;
  const uint64_t stride = (uint64_t)grid.x * grid.y * grid.z * 256u;
  const uint64_t span = (launch->block_end - launch->block_begin) * 256u;
  const bool tile = gompute_tile_layout(strides);
  const bool tiled0 = tile && gompute_tiled(strides, 0);
  const bool tiled1 = tile && gompute_tiled(strides, 1);
  const bool far = tile && gompute_tile_far<gompute_f16, gompute_f16>((int64_t)len);
  const int64_t tile_rows = gompute_tile_rows<gompute_f16, gompute_f16>(far);
  const int64_t tile_cols = gompute_tile_cols<gompute_f16, gompute_f16>();
  const int64_t tile_pitch = gompute_tile_pitch(tile_cols);
  const int64_t tile_height = !tile ? 0 : strides.shape[0] < tile_rows ? strides.shape[0] : tile_rows;
  const size_t tile_bytes0 = gompute_tile_bytes<gompute_f16>(tile && strides.strides[0][1] != 1, tile_height, tile_pitch);
  const size_t tile_bytes1 = gompute_tile_bytes<gompute_f16>(tile && strides.strides[1][1] != 1, tile_height, tile_pitch);
  const size_t stream_bytes = gompute_tile_bytes<gompute_f16>(far && GOMPUTE_CAN_STREAM, 1, tile_pitch);
  const size_t tile_bytes = tile_bytes0 + tile_bytes1 + stream_bytes;
  unsigned char* const tiles = tile_bytes ? gompute_tile_memory(tile_bytes) : nullptr;
  if (tile_bytes && !tiles)
    GOMPUTE_TRAP(launch, "half_ops__strided: out of memory for the tile buffers of a transposed input");
  gompute_f16* t0 = (gompute_f16*)(tiles);
  gompute_f16* t1 = (gompute_f16*)(tiles + tile_bytes0);
  gompute_f16* const streamed = (gompute_f16*)(tiles + tile_bytes0 + tile_bytes1);
  for (uint64_t base = launch->block_begin * 256u; base < len; base += stride) {
    const uint64_t end = base + span < len ? base + span : len;
    auto run = [&](const int64_t* at, const int64_t* step, int64_t n) {
      if (step[0] == 1 && step[1] == 1 && step[2] == 1) return gompute_kernel_half_ops_rows(in0 + at[0], in1 + at[1], out + at[2], n);
      for (int64_t j0 = 0; j0 < n; j0 += GOMPUTE_CHUNK) {
        const int64_t m = n - j0 < GOMPUTE_CHUNK ? n - j0 : GOMPUTE_CHUNK;
        gompute_f16 b0[GOMPUTE_CHUNK];
        gompute_f16 b1[GOMPUTE_CHUNK];
        gompute_f16 b2[GOMPUTE_CHUNK];
        const auto* s0 = gompute_source(b0, in0 + at[0] + j0 * step[0], step[0], m);
        const auto* s1 = gompute_source(b1, in1 + at[1] + j0 * step[1], step[1], m);
        auto* s2 = step[2] == 1 ? out + at[2] + j0 * step[2] : b2;
        gompute_kernel_half_ops_rows(s0, s1, s2, m);
        if (step[2] != 1) gompute_scatter(out + at[2] + j0 * step[2], step[2], b2, m);
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
          const auto* p1 = in1 + (int64_t)r * strides.strides[1][0] + c * strides.strides[1][1];
          if (tiled1) gompute_gather_tile(t1, p1, strides.strides[1][1], t, m, (int64_t)cols - c, tile_pitch);
          if (far && m * (int64_t)sizeof *out >= GOMPUTE_PREFETCH_MIN) {
            const gompute_next_tile next = gompute_tile_after(r, t, c, m, end, cols, tile_rows, tile_cols);
            const auto* n0 = p0 + next.dr * strides.strides[0][0] + next.dc * strides.strides[0][1];
            const auto* n1 = p1 + next.dr * strides.strides[1][0] + next.dc * strides.strides[1][1];
            for (int64_t i = 0; i < t; ++i) {
              if (tiled0) gompute_prefetch_next(n0, strides.strides[0][1], next, i);
              if (tiled1) gompute_prefetch_next(n1, strides.strides[1][1], next, i);
              const uint64_t at = (r + (uint64_t)i) * cols + (uint64_t)c;
              const int64_t j0 = base > at ? (int64_t)(base - at) : 0;
              const int64_t j1 = end < at + (uint64_t)m ? (int64_t)(end - at) : m;
              if (j0 >= j1) continue;
              const auto* s0 = tiled0 ? t0 + i * tile_pitch + j0 : gompute_source(t0 + i * tile_pitch + j0, p0 + i * strides.strides[0][0] + j0 * strides.strides[0][1], strides.strides[0][1], j1 - j0);
              const auto* s1 = tiled1 ? t1 + i * tile_pitch + j0 : gompute_source(t1 + i * tile_pitch + j0, p1 + i * strides.strides[1][0] + j0 * strides.strides[1][1], strides.strides[1][1], j1 - j0);
              auto* d = out + (int64_t)(r + i) * strides.strides[2][0] + c + j0;
              const bool streaming = stream && (j1 - j0) * sizeof *d >= GOMPUTE_STREAM_MIN;
              auto* s2 = streaming ? streamed : d;
              gompute_kernel_half_ops_rows(s0, s1, s2, j1 - j0);
              if (streaming) gompute_stream(d, streamed, (size_t)(j1 - j0) * sizeof *d);
            }
          } else {
            for (int64_t i = 0; i < t; ++i) {
              const uint64_t at = (r + (uint64_t)i) * cols + (uint64_t)c;
              const int64_t j0 = base > at ? (int64_t)(base - at) : 0;
              const int64_t j1 = end < at + (uint64_t)m ? (int64_t)(end - at) : m;
              if (j0 >= j1) continue;
              const auto* s0 = tiled0 ? t0 + i * tile_pitch + j0 : gompute_source(t0 + i * tile_pitch + j0, p0 + i * strides.strides[0][0] + j0 * strides.strides[0][1], strides.strides[0][1], j1 - j0);
              const auto* s1 = tiled1 ? t1 + i * tile_pitch + j0 : gompute_source(t1 + i * tile_pitch + j0, p1 + i * strides.strides[1][0] + j0 * strides.strides[1][1], strides.strides[1][1], j1 - j0);
              auto* s2 = out + (int64_t)(r + i) * strides.strides[2][0] + c + j0;
              gompute_kernel_half_ops_rows(s0, s1, s2, j1 - j0);
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
