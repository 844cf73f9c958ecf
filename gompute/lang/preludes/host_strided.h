// gompute host prelude, strided entry points: a block range walks its elements in runs along the
// innermost dimension, an odometer carrying the multi-index, so no element costs a division.
// A run whose arrays all have stride 1 is computed in place. Otherwise it goes in chunks: each
// input of stride 1 is read where it is, each other one gathered into a chunk buffer (with
// vectorized loops for strides -1, 2, 3, 4 and 0), and the result written straight to an output
// of stride 1 or scattered from a buffer, so the computation vectorizes for broadcast and strided
// inputs too. Each chunk is read in full before it is written: an output that is exactly one of
// the inputs (same pointer, same strides) stays correct.
#define GOMPUTE_CHUNK 128

typedef void (*gompute_run_fn)(void* run, const int64_t* at, const int64_t* step, int64_t n);

// Calls run(at, step, n) for each run of elements [begin, end): n elements of the innermost
// dimension, the first at element offset at[a] of array a, the next step[a] further on. Compiled
// once per array count (the runs are called through a pointer), not once per entry point.
template <int N>
GOMPUTE_ROWS void gompute_walk(const gompute_strides<N>& s, uint64_t begin, uint64_t end, gompute_run_fn fn, void* run) {
  const int nd = s.ndim;
  int64_t at[N], step[N], idx[8];
  uint64_t rest = begin;
  for (int a = 0; a < N; ++a) {
    at[a] = 0;
    step[a] = nd ? s.strides[a][nd - 1] : 0;
  }
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = (int64_t)(rest % (uint64_t)s.shape[d]);
    rest /= (uint64_t)s.shape[d];
    for (int a = 0; a < N; ++a) at[a] += idx[d] * s.strides[a][d];
  }
  if (nd == 0) {
    if (begin < end) fn(run, at, step, (int64_t)1);
    return;
  }
  const int last = nd - 1;
  for (uint64_t i = begin; i < end;) {
    const uint64_t row_left = (uint64_t)(s.shape[last] - idx[last]);
    const int64_t n = (int64_t)(row_left < end - i ? row_left : end - i);
    fn(run, at, step, n);
    i += (uint64_t)n;
    if (i >= end) break;
    // The run ended its row: back to the row's start, then carry into the outer dimensions.
    for (int a = 0; a < N; ++a) at[a] -= idx[last] * step[a];
    idx[last] = 0;
    for (int d = last - 1; d >= 0; --d) {
      for (int a = 0; a < N; ++a) at[a] += s.strides[a][d];
      if (++idx[d] < s.shape[d]) break;
      for (int a = 0; a < N; ++a) at[a] -= s.shape[d] * s.strides[a][d];
      idx[d] = 0;
    }
  }
}

template <int N, typename Run>
GOMPUTE_FN void gompute_runs(const gompute_strides<N>& s, uint64_t begin, uint64_t end, Run run) {
  auto call = [](void* r, const int64_t* at, const int64_t* step, int64_t n) { (*(Run*)r)(at, step, n); };
  gompute_walk<N>(s, begin, end, call, &run);
}

// Copies between an array's run and a chunk buffer of its own element type. Reversed and small
// constant strides get loops of their own: with the stride known, the compiler vectorizes them
// (contiguous loads, then a permute or deinterleave), where the general loop is one load a lane.
template <typename S>
GOMPUTE_ROWS void gompute_gather_lanes(S* b, const S* p, int64_t step, int64_t n) {
  if (step == 0) {
    for (int64_t j = 0; j < n; ++j) b[j] = p[0];
  } else if (step == 1) {
    for (int64_t j = 0; j < n; ++j) b[j] = p[j];
  } else if (step == -1) {
    for (int64_t j = 0; j < n; ++j) b[j] = p[-j];
  } else if (step == 2) {
    for (int64_t j = 0; j < n; ++j) b[j] = p[2 * j];
  } else if (step == 3) {
    for (int64_t j = 0; j < n; ++j) b[j] = p[3 * j];
  } else if (step == 4) {
    for (int64_t j = 0; j < n; ++j) b[j] = p[4 * j];
  } else {
    for (int64_t j = 0; j < n; ++j) b[j] = p[j * step];
  }
}

template <typename S>
GOMPUTE_ROWS void gompute_scatter_lanes(S* p, int64_t step, const S* b, int64_t n) {
  if (step == 1) {
    for (int64_t j = 0; j < n; ++j) p[j] = b[j];
  } else if (step == -1) {
    for (int64_t j = 0; j < n; ++j) p[-j] = b[j];
  } else if (step == 2) {
    for (int64_t j = 0; j < n; ++j) p[2 * j] = b[j];
  } else {
    for (int64_t j = 0; j < n; ++j) p[j * step] = b[j];
  }
}

// What an element is copied as: a half as its 16 bits, since GCC copies a struct one at a time,
// where it copies integers in vector lanes (the f16 copies of x[::2] took 1.5x the contiguous time).
template <typename S> struct gompute_lane { typedef S type; };
template <> struct gompute_lane<gompute_f16> { typedef uint16_t type; };
template <> struct gompute_lane<gompute_bf16> { typedef uint16_t type; };

template <typename S>
GOMPUTE_FN void gompute_gather(S* b, const S* p, int64_t step, int64_t n) {
  typedef typename gompute_lane<S>::type L;
  gompute_gather_lanes((L*)b, (const L*)p, step, n);
}

template <typename S>
GOMPUTE_FN void gompute_scatter(S* p, int64_t step, const S* b, int64_t n) {
  typedef typename gompute_lane<S>::type L;
  gompute_scatter_lanes((L*)p, step, (const L*)b, n);
}

// Halves in memory, widened and narrowed by the F16C instructions, 8 per instruction, a chunk at a
// time around the kernel's rows (entries.py): the lane-by-lane conversions in integer operations
// (host.h) took most of an f16 kernel's time. Both give the same bits for every input.
#if defined(GOMPUTE_NEEDS_F16) && defined(__F16C__)
#define GOMPUTE_F16C 1
#define GOMPUTE_HALF_CHUNK 256
typedef short gompute_v8hi __attribute__((vector_size(16)));
typedef float gompute_v8sf __attribute__((vector_size(32)));
#if defined(__clang__)  // Clang has no builtin of the instruction; its conversion of a vector is it
typedef _Float16 gompute_v8hf __attribute__((vector_size(16)));
GOMPUTE_FN gompute_v8sf gompute_cvtph_ps(gompute_v8hi h) {
  gompute_v8hf x;
  memcpy(&x, &h, sizeof x);
  return __builtin_convertvector(x, gompute_v8sf);
}
GOMPUTE_FN gompute_v8hi gompute_cvtps_ph(gompute_v8sf f) {
  const gompute_v8hf x = __builtin_convertvector(f, gompute_v8hf);
  gompute_v8hi h;
  memcpy(&h, &x, sizeof h);
  return h;
}
#else
GOMPUTE_FN gompute_v8sf gompute_cvtph_ps(gompute_v8hi h) { return __builtin_ia32_vcvtph2ps256(h); }
GOMPUTE_FN gompute_v8hi gompute_cvtps_ph(gompute_v8sf f) { return __builtin_ia32_vcvtps2ph256(f, 0); }  // 0: to nearest even
#endif

template <typename S> struct gompute_is_half { static constexpr bool value = false; };
template <> struct gompute_is_half<gompute_f16> { static constexpr bool value = true; };
template <typename... S> struct gompute_any_half { static constexpr bool value = (gompute_is_half<S>::value || ...); };

// A chunk of an input as the kernel reads it: halves widened into w, any other type where it is.
template <typename S> GOMPUTE_FN const S* gompute_widen(float* w, const S* p, int64_t n) { return p; }
GOMPUTE_FN const float* gompute_widen(float* w, const gompute_f16* p, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    gompute_v8hi h;
    memcpy(&h, p + j, sizeof h);
    const gompute_v8sf f = gompute_cvtph_ps(h);
    memcpy(w + j, &f, sizeof f);
  }
  for (; j < n; ++j) w[j] = gompute_load_f16(p[j]);
  return w;
}

// Where the kernel writes a chunk of the output: for halves the floats w, narrowed into p after.
template <typename S> GOMPUTE_FN S* gompute_wide_out(float* w, S* p) { return p; }
GOMPUTE_FN float* gompute_wide_out(float* w, gompute_f16* p) { return w; }
template <typename S> GOMPUTE_FN void gompute_narrow(S* p, const float* w, int64_t n) {}
GOMPUTE_FN void gompute_narrow(gompute_f16* p, const float* w, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    gompute_v8sf f;
    memcpy(&f, w + j, sizeof f);
    const gompute_v8hi h = gompute_cvtps_ph(f);
    memcpy(p + j, &h, sizeof h);
  }
  for (; j < n; ++j) p[j] = gompute_store_f16(w[j]);
}
#endif

// A chunk's input: the run itself where it is contiguous, else gathered into b.
template <typename S>
GOMPUTE_FN const S* gompute_source(S* b, const S* p, int64_t step, int64_t n) {
  if (step == 1) return p;
  gompute_gather(b, p, step, n);
  return b;
}

// The 2-D tile path, for a transpose: a collapsed layout of two dimensions whose output is
// contiguous along the rows while some input is contiguous down the columns (outer stride 1,
// inner stride not). Walking such an input along the rows touches a new cache line (and soon a
// new page) per element. Instead the rows of a block range go in tiles of GOMPUTE_TILE_ROWS rows
// by GOMPUTE_TILE_COLS columns: each such input is gathered by reading down its columns,
// GOMPUTE_TILE_ROWS contiguous elements at a time, into a tile buffer in L1 (a small transpose),
// and the rows function then runs on each row of the tile, the first and last rows clipped to the
// block range. The output, contiguous along the rows, is never one of the transposed inputs, so
// each tile may be read in full before it is written. Tiles 16 rows high read each input column
// a whole 64-byte line of f32 at a time (8 rows used half of every line, and took the other half
// back from L2 a tile row later): on the 2-core VM, 10000 x 1000 went from 1.82x the contiguous
// time to 1.63-1.67x and 3162 x 3162 from 2.29x to 1.88-1.92x (benchmarks/results/
// 2026-12-03-vm-transpose.md). The padded buffer rows (the pitch) and the prefetch 32 columns
// ahead gained a few per cent each, near the noise. A throwaway C model of this loop put a
// transpose that stores straight from the registers at 1.0-1.1x: the remaining gap is the
// gather and the rows pass running one after the other, not overlapped.
#define GOMPUTE_TILE_ROWS 16
#define GOMPUTE_TILE_COLS 256
#define GOMPUTE_TILE_PITCH (GOMPUTE_TILE_COLS + 8)
#define GOMPUTE_TILE_PREFETCH 32

template <int N>
GOMPUTE_FN bool gompute_tiled(const gompute_strides<N>& s, int a) {
  return s.ndim == 2 && s.strides[a][0] == 1 && s.strides[a][1] != 1;
}

// Whether the tile path takes layout s: the output (array N - 1) is contiguous along its rows
// and some input is a transpose.
template <int N>
GOMPUTE_FN bool gompute_tile_layout(const gompute_strides<N>& s) {
  if (s.ndim != 2 || s.strides[N - 1][1] != 1 || s.shape[0] < 2 || s.shape[1] < 2) return false;
  for (int a = 0; a < N - 1; ++a)
    if (gompute_tiled(s, a)) return true;
  return false;
}

#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)  // GCC 12+, clang: no intrinsics header to parse
#define GOMPUTE_REGISTER_TRANSPOSE 1
// Loaded and stored with memcpy, which is an unaligned vector move: a template argument loses a
// typedef's aligned() attribute, and with it the vector type assumes its full alignment.
typedef uint16_t gompute_v8h __attribute__((vector_size(16)));
typedef uint32_t gompute_v8u __attribute__((vector_size(32)));
typedef uint64_t gompute_v4d __attribute__((vector_size(32)));

// An 8 x 8 block of 2- or 4-byte elements (V: 8 of them), transposed in registers:
// b[i * GOMPUTE_TILE_PITCH + j] = p[i + j * step] for i, j < 8, the elements moved as bits
// (floats, halves or integers alike). The shuffles are AVX's unpack, shuffle and 128-bit permute
// steps, written portably.
template <typename V, typename E>
GOMPUTE_FN void gompute_transpose_8x8(E* o, const E* q, int64_t step) {
  V r[8], t[8];
  for (int k = 0; k < 8; ++k) memcpy(&r[k], q + k * step, sizeof(V));
  for (int k = 0; k < 8; k += 2) {
    t[k] = __builtin_shufflevector(r[k], r[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[k + 1] = __builtin_shufflevector(r[k], r[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int k = 0; k < 8; k += 4) {
    r[k] = __builtin_shufflevector(t[k], t[k + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    r[k + 1] = __builtin_shufflevector(t[k], t[k + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    r[k + 2] = __builtin_shufflevector(t[k + 1], t[k + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    r[k + 3] = __builtin_shufflevector(t[k + 1], t[k + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (int k = 0; k < 4; ++k) {
    t[k] = __builtin_shufflevector(r[k], r[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    t[k + 4] = __builtin_shufflevector(r[k], r[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
  for (int k = 0; k < 8; ++k) memcpy(o + k * GOMPUTE_TILE_PITCH, &t[k], sizeof(V));
}

// The same for a 4 x 4 block of 8-byte elements: unpack pairs, then swap 128-bit halves.
GOMPUTE_FN void gompute_transpose_4x4(uint64_t* o, const uint64_t* q, int64_t step) {
  gompute_v4d r[4], t[4];
  for (int k = 0; k < 4; ++k) memcpy(&r[k], q + k * step, sizeof r[k]);
  for (int k = 0; k < 4; k += 2) {
    t[k] = __builtin_shufflevector(r[k], r[k + 1], 0, 4, 2, 6);
    t[k + 1] = __builtin_shufflevector(r[k], r[k + 1], 1, 5, 3, 7);
  }
  for (int k = 0; k < 2; ++k) {
    r[k] = __builtin_shufflevector(t[k], t[k + 2], 0, 1, 4, 5);
    r[k + 2] = __builtin_shufflevector(t[k], t[k + 2], 2, 3, 6, 7);
  }
  for (int k = 0; k < 4; ++k) memcpy(o + k * GOMPUTE_TILE_PITCH, &r[k], sizeof r[k]);
}

// Elements of `bytes` bytes go in register blocks of gompute_block_width<bytes> columns (0: none).
template <int bytes>
struct gompute_block_width { static const int value = bytes == 2 || bytes == 4 ? 8 : bytes == 8 ? 4 : 0; };

template <typename S>
GOMPUTE_FN void gompute_transpose_block(S* o, const S* q, int64_t step) {
  if constexpr (sizeof(S) == 2) gompute_transpose_8x8<gompute_v8h>((uint16_t*)o, (const uint16_t*)q, step);
  if constexpr (sizeof(S) == 4) gompute_transpose_8x8<gompute_v8u>((uint32_t*)o, (const uint32_t*)q, step);
  if constexpr (sizeof(S) == 8) gompute_transpose_4x4((uint64_t*)o, (const uint64_t*)q, step);
}
#endif
#endif

// b[i * GOMPUTE_TILE_PITCH + j] = p[i + j * step] for i < t, j < m: t rows of m elements of a tile,
// read down the columns. Full-height columns of 2-, 4- and 8-byte elements go in register
// transposes, which prefetch the columns GOMPUTE_TILE_PREFETCH further on (into the next tile,
// while `ahead`, the columns left from p, allows).
template <typename S>
GOMPUTE_ROWS void gompute_gather_tile(S* b, const S* p, int64_t step, int64_t t, int64_t m, int64_t ahead) {
  int64_t done = 0;  // columns gathered in register transposes
#if defined(GOMPUTE_REGISTER_TRANSPOSE)
  constexpr int64_t w = gompute_block_width<sizeof(S)>::value;
  if constexpr (w > 0) {  // no register blocks for 1-byte elements
    if (t == GOMPUTE_TILE_ROWS) {
      done = m - m % w;
      for (int64_t j = 0; j < done; j += w) {
        for (int64_t k = j + GOMPUTE_TILE_PREFETCH; k < j + w + GOMPUTE_TILE_PREFETCH && k < ahead; ++k) {
          const S* f = p + k * step;
          for (int64_t l = 0; l < GOMPUTE_TILE_ROWS; l += 64 / sizeof(S)) __builtin_prefetch(f + l);
          __builtin_prefetch(f + GOMPUTE_TILE_ROWS - 1);
        }
        for (int64_t i = 0; i < GOMPUTE_TILE_ROWS; i += w)
          gompute_transpose_block(b + i * GOMPUTE_TILE_PITCH + j, p + i + j * step, step);
      }
    }
  }
#endif
  typedef typename gompute_lane<S>::type L;
  L* lanes = (L*)b;
  for (int64_t j = done; j < m; ++j) {
    const L* q = (const L*)(p + j * step);
    for (int64_t i = 0; i < t; ++i) lanes[i * GOMPUTE_TILE_PITCH + j] = q[i];
  }
}
