// gompute host prelude, strided entry points: a block range walks its elements in runs along the
// innermost dimension, an odometer carrying the multi-index, so no element costs a division.
// A run whose arrays all have stride 1 is computed in place. Otherwise it goes in chunks: each
// input of stride 1 is read where it is, each other one gathered into a chunk buffer (with
// vectorized loops for strides -1, 2, 3, 4 and 0), and the result written straight to an output
// of stride 1 or scattered from a buffer, so the computation vectorizes for broadcast and strided
// inputs too. Each chunk is read in full before it is written: an output that is exactly one of
// the inputs (same pointer, same strides) stays correct.
#include <stdlib.h>

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
// where it copies integers in vector lanes.
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
// time around the kernel's rows (entries.py), rather than lane by lane in integer operations
// (host.h), which dominate an f16 kernel's time. Both give the same bits for every input.
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
// new page) per element. Instead the rows of a block range go in tiles of gompute_tile_rows<S...>
// rows by gompute_tile_cols<S...> columns: each such input is gathered by reading down its columns, a
// tile's height of contiguous elements at a time, into a tile buffer (a transpose in register
// blocks), and the rows function then runs on each row of the tile, the first and last rows
// clipped to the block range. The output, contiguous along the rows, is never one of the
// transposed inputs, so each tile may be read in full before it is written.
//
// The tile's height depends on where the input is likely to come from. An array of 16 MB or
// more (far in the cache hierarchy, or in memory) goes in tiles of 256 KB of the widest input
// type (256 rows of f32), so each column of f32 is read 16 lines at a time, a sequential run a
// hardware prefetcher can follow, while the buffer, 264 KB an input, stays in L2. A smaller one
// goes in tiles 16 rows high, a buffer of 16.5 KB of f32 that stays in L1. The buffers come from
// the heap, kept for the thread's next call (gompute_tile_memory). benchmarks/results/ holds the
// transpose timings that chose these sizes.
// A far tile also prefetches the next tile's input into L2 as its rows run, and streams its rows
// out where the CPU can (gompute_stream, below).
#define GOMPUTE_TILE_ROWS 16
#define GOMPUTE_TILE_FAR (16 << 20)
#define GOMPUTE_TILE_COLS 256
#define GOMPUTE_TILE_ROW_BYTES 1024
#define GOMPUTE_TILE_FAR_BYTES (256 << 10)
#define GOMPUTE_TILE_PREFETCH 32

// The size of the widest of types S (1 for none: an entry without inputs is never tiled).
template <typename... S>
GOMPUTE_FN size_t gompute_widest() {
  const size_t sizes[] = {1, sizeof(S)...};
  size_t widest = 1;
  for (size_t size : sizes) widest = size > widest ? size : widest;
  return widest;
}

// Whether a tile layout over `elements` of inputs of types S is far (the height rule above).
template <typename... S>
GOMPUTE_FN bool gompute_tile_far(int64_t elements) {
  return (uint64_t)elements * gompute_widest<S...>() >= GOMPUTE_TILE_FAR;
}

// The columns of a tile of inputs of types S: GOMPUTE_TILE_COLS, or as many as a 1 KB row of the
// widest input where that is more (inputs of 1 and 2 bytes), so that narrow types call the rows
// function no more often per byte than f32 does.
template <typename... S>
GOMPUTE_FN int64_t gompute_tile_cols() {
  const int64_t widest = (int64_t)gompute_widest<S...>();
  return widest * GOMPUTE_TILE_COLS >= GOMPUTE_TILE_ROW_BYTES ? GOMPUTE_TILE_COLS : GOMPUTE_TILE_ROW_BYTES / widest;
}

// A tile's buffers hold rows of pitch elements: its columns, and 8 more, so that the rows do not
// all start at the same place of a cache set.
GOMPUTE_FN int64_t gompute_tile_pitch(int64_t cols) { return cols + 8; }

// The rows of a tile of inputs of types S, far or not: a far one holds 256 KB of its widest
// input (256 rows of f32, f16 or bytes, 128 of f64), whose columns it reads 1 KB at a time (f32).
template <typename... S>
GOMPUTE_FN int64_t gompute_tile_rows(bool far) {
  return far ? GOMPUTE_TILE_FAR_BYTES / (gompute_tile_cols<S...>() * (int64_t)gompute_widest<S...>()) : GOMPUTE_TILE_ROWS;
}

// Where the tile after the one of rows [r, r + t) and columns [c, c + m) is, in a block range's
// elements [., end) of rows of `cols` columns: the next one along the rows, else the first of the
// next rows, none past `end`. Its rows and columns (0 for none), its origin's distance from this
// one's in rows and columns, and how many of its columns each of this tile's t rows prefetches.
struct gompute_next_tile {
  int64_t rows, cols, dr, dc, per_row;
};
GOMPUTE_FN gompute_next_tile gompute_tile_after(uint64_t r, int64_t t, int64_t c, int64_t m, uint64_t end, uint64_t cols,
                                                int64_t tile_rows, int64_t tile_cols) {
  gompute_next_tile next = {t, 0, 0, m, 0};
  if (c + m < (int64_t)cols) {
    const int64_t right = (int64_t)cols - c - m;
    next.cols = right < tile_cols ? right : tile_cols;
  } else {
    const uint64_t rb = (end + cols - 1) / cols, below = rb > r + (uint64_t)t ? rb - r - (uint64_t)t : 0;
    next.rows = below < (uint64_t)tile_rows ? (int64_t)below : tile_rows;
    next.cols = (int64_t)cols < tile_cols ? (int64_t)cols : tile_cols;
    next.dr = t;
    next.dc = -c;
  }
  if ((r + (uint64_t)next.dr) * cols + (uint64_t)(c + next.dc) >= end) next.cols = 0;  // past the range
  next.per_row = (next.cols + t - 1) / t;
  return next;
}

// The tile buffers of one call of a strided entry. An input has one, `rows` rows of `pitch`
// elements 64-byte aligned, where it is `needed`: a transpose, or strided along the rows too
// (gathered row by row into it).
template <typename S>
GOMPUTE_FN size_t gompute_tile_bytes(bool needed, int64_t rows, int64_t pitch) {
  return needed ? ((size_t)rows * (size_t)pitch * sizeof(S) + 63) & ~(size_t)63 : 0;
}

// The tile buffers of the calling thread, kept from call to call: one allocation per thread (and
// module), grown when a call needs more and freed when the thread ends. Not on the stack: a
// thread's stack may be as small as Python's threading.stack_size minimum, 32 KiB, smaller than
// a tile buffer. Not from the heap every call: an allocation per call is a noticeable share of a
// small transpose. Null only where the memory could not be had.
struct gompute_tile_cache {
  unsigned char* data = nullptr;
  size_t size = 0;
  ~gompute_tile_cache() { free(data); }
};
static unsigned char* gompute_tile_memory(size_t bytes) {
  static thread_local gompute_tile_cache cache;
  if (bytes > cache.size) {
    free(cache.data);
    cache.size = (bytes + 4095) & ~(size_t)4095;  // whole pages; aligned_alloc wants a multiple of 64
    cache.data = (unsigned char*)aligned_alloc(64, cache.size);
    if (!cache.data) cache.size = 0;
  }
  return cache.data;
}

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
typedef uint8_t gompute_v16b __attribute__((vector_size(16)));
typedef uint16_t gompute_v16h __attribute__((vector_size(32)));
typedef uint32_t gompute_v8u __attribute__((vector_size(32)));
typedef uint64_t gompute_v4d __attribute__((vector_size(32)));

// An 8 x 8 block of 4-byte elements (V: 8 of them), transposed in registers:
// b[i * pitch + j] = p[i + j * step] for i, j < 8, the elements moved as bits
// (floats or integers alike). The shuffles are AVX's unpack, shuffle and 128-bit permute
// steps, written portably.
template <typename V, typename E>
GOMPUTE_FN void gompute_transpose_8x8(E* o, const E* q, int64_t step, int64_t pitch) {
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
  for (int k = 0; k < 8; ++k) memcpy(o + k * pitch, &t[k], sizeof(V));
}

// The same for a 16 x 16 block of 2-byte (V: gompute_v16h) or 1-byte (gompute_v16b) elements:
// four perfect shuffles of the rows (row m with row m + 8, their low halves interleaved, then
// their high halves) transpose it: for halves, twice the elements per instruction of an 8 x 8
// block of 16-byte rows; for bytes, a transpose in registers rather than element by element.
template <typename V, typename E>
GOMPUTE_FN void gompute_transpose_16x16(E* o, const E* q, int64_t step, int64_t pitch) {
  V r[16], t[16];
  for (int k = 0; k < 16; ++k) memcpy(&r[k], q + k * step, sizeof r[k]);
  for (int stage = 0; stage < 4; ++stage) {
    for (int m = 0; m < 8; ++m) {
      t[2 * m] = __builtin_shufflevector(r[m], r[m + 8], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      t[2 * m + 1] = __builtin_shufflevector(r[m], r[m + 8], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    }
    for (int k = 0; k < 16; ++k) r[k] = t[k];
  }
  for (int k = 0; k < 16; ++k) memcpy(o + k * pitch, &r[k], sizeof r[k]);
}

// The same for a 4 x 4 block of 8-byte elements: unpack pairs, then swap 128-bit halves.
GOMPUTE_FN void gompute_transpose_4x4(uint64_t* o, const uint64_t* q, int64_t step, int64_t pitch) {
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
  for (int k = 0; k < 4; ++k) memcpy(o + k * pitch, &r[k], sizeof r[k]);
}

// Elements of `bytes` bytes go in register blocks of gompute_block_width<bytes> columns (0: none).
template <int bytes>
struct gompute_block_width { static const int value = bytes <= 2 ? 16 : bytes == 4 ? 8 : bytes == 8 ? 4 : 0; };

template <typename S>
GOMPUTE_FN void gompute_transpose_block(S* o, const S* q, int64_t step, int64_t pitch) {
  if constexpr (sizeof(S) == 1) gompute_transpose_16x16<gompute_v16b>((uint8_t*)o, (const uint8_t*)q, step, pitch);
  if constexpr (sizeof(S) == 2) gompute_transpose_16x16<gompute_v16h>((uint16_t*)o, (const uint16_t*)q, step, pitch);
  if constexpr (sizeof(S) == 4) gompute_transpose_8x8<gompute_v8u>((uint32_t*)o, (const uint32_t*)q, step, pitch);
  if constexpr (sizeof(S) == 8) gompute_transpose_4x4((uint64_t*)o, (const uint64_t*)q, step, pitch);
}

// Prefetches the t elements of each of columns [j + GOMPUTE_TILE_PREFETCH, + w) of a tile read down
// its columns, those of them before `ahead`.
template <typename S>
GOMPUTE_FN void gompute_prefetch_columns(const S* p, int64_t step, int64_t j, int64_t w, int64_t t, int64_t ahead) {
  for (int64_t k = j + GOMPUTE_TILE_PREFETCH; k < j + w + GOMPUTE_TILE_PREFETCH && k < ahead; ++k) {
    const S* f = p + k * step;
    for (int64_t l = 0; l < t; l += 64 / sizeof(S)) __builtin_prefetch(f + l);
    __builtin_prefetch(f + t - 1);
  }
}
#endif
#endif

// Prefetches into L2 the columns of the next tile (origin p, read down its columns) that row i of
// this one takes care of, while the rows run: the rows loop is all stores, and the input's next
// reads overlap them instead of waiting for the gather.
template <typename S>
GOMPUTE_FN void gompute_prefetch_next(const S* p, int64_t step, const gompute_next_tile& next, int64_t i) {
  const int64_t first = i * next.per_row, last = first + next.per_row < next.cols ? first + next.per_row : next.cols;
  for (int64_t k = first; k < last; ++k) {
    const S* f = p + k * step;
    for (int64_t l = 0; l < next.rows; l += 64 / sizeof(S)) __builtin_prefetch(f + l, 0, 2);
    __builtin_prefetch(f + next.rows - 1, 0, 2);
  }
}

// b[i * pitch + j] = p[i + j * step] for i < t, j < m: t rows of m elements of a tile, read down
// the columns. The whole blocks of 1-, 2-, 4- and 8-byte elements go in register transposes,
// which prefetch the columns GOMPUTE_TILE_PREFETCH further on (into the next tile, while `ahead`,
// the columns left from p, allows); the rest element by element.
template <typename S>
GOMPUTE_FN void gompute_gather_tile_rows(S* b, const S* p, int64_t step, int64_t t, int64_t m, int64_t ahead,
                                         int64_t pitch) {
  int64_t done = 0, high = 0;  // the columns and rows gathered in register transposes
#if defined(GOMPUTE_REGISTER_TRANSPOSE)
  constexpr int64_t w = gompute_block_width<sizeof(S)>::value;
  if constexpr (w > 0) {
    high = t - t % w;
    done = high > 0 ? m - m % w : 0;
    for (int64_t j = 0; j < done; j += w) {
      gompute_prefetch_columns(p, step, j, w, t, ahead);
      for (int64_t i = 0; i < high; i += w)
        gompute_transpose_block(b + i * pitch + j, p + i + j * step, step, pitch);
    }
  }
#endif
  typedef typename gompute_lane<S>::type L;
  L* lanes = (L*)b;
  for (int64_t j = done; j < m; ++j) {
    const L* q = (const L*)(p + j * step);
    for (int64_t i = 0; i < t; ++i) lanes[i * pitch + j] = q[i];
  }
  for (int64_t j = 0; high < t && j < done; ++j) {  // the rows below the last whole block
    const L* q = (const L*)(p + j * step);
    for (int64_t i = high; i < t; ++i) lanes[i * pitch + j] = q[i];
  }
}

// The same, compiled apart for tiles of GOMPUTE_TILE_ROWS: with the height known, the blocks and
// prefetches of a column unroll, which matters most to small transposes.
template <typename S>
GOMPUTE_ROWS void gompute_gather_tile(S* b, const S* p, int64_t step, int64_t t, int64_t m, int64_t ahead,
                                      int64_t pitch) {
  if (t == GOMPUTE_TILE_ROWS) return gompute_gather_tile_rows(b, p, step, GOMPUTE_TILE_ROWS, m, ahead, pitch);
  gompute_gather_tile_rows(b, p, step, t, m, ahead, pitch);
}

// Streaming (non-temporal) stores, for a transpose's output far in memory: its rows go out 1 KB to
// each of 256 rows a tile, and ordinary stores read every line before they write it, reads that
// then compete with the input's. Stores that go straight to memory do not.
// Whole lines only, so AVX-512's 64-byte stores: a line written in two 32-byte halves is no
// longer a whole-line store, and loses to ordinary stores. They are weakly ordered: a call that
// made them ends with gompute_stream_fence, before the pool or the stream says the launch is done.
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__has_builtin)
#if __has_builtin(__builtin_nontemporal_store) || __has_builtin(__builtin_ia32_movntdq512)
#define GOMPUTE_STREAM 1
typedef long long gompute_v8q __attribute__((vector_size(64)));

// Copies n bytes from b to p, those between p's first and last 64-byte boundaries in streaming
// stores, the few before and after by memcpy. Clang splits a 64-byte vector in two for the Intel
// CPUs it prefers 32-byte vectors on, unless told otherwise.
#if defined(__clang__)
#define GOMPUTE_WHOLE_LINES __attribute__((min_vector_width(512)))
#else
#define GOMPUTE_WHOLE_LINES
#endif
GOMPUTE_FN GOMPUTE_WHOLE_LINES void gompute_stream(void* p, const void* b, size_t n) {
  unsigned char* d = (unsigned char*)p;
  const unsigned char* q = (const unsigned char*)b;
  size_t head = (size_t)(-(uintptr_t)d & 63);
  if (head > n) head = n;
  memcpy(d, q, head);
  size_t j = head;
  for (; j + 64 <= n; j += 64) {
    gompute_v8q v;
    memcpy(&v, q + j, sizeof v);
#if __has_builtin(__builtin_nontemporal_store)
    __builtin_nontemporal_store(v, (gompute_v8q*)(d + j));
#else
    __builtin_ia32_movntdq512((gompute_v8q*)(d + j), v);
#endif
  }
  memcpy(d + j, q + j, n - j);
}
GOMPUTE_FN void gompute_stream_fence() { __builtin_ia32_sfence(); }
#endif
#endif

// Whether the tile path streams the output rows of a far layout: where the CPU has the stores, for
// rows of GOMPUTE_STREAM_MIN bytes or more (a row of a few elements has no whole lines to stream,
// only the copies around them). Tiles narrower than GOMPUTE_PREFETCH_MIN bytes neither stream nor
// prefetch the next tile: for rows of a few elements the bookkeeping costs more than it saves.
#define GOMPUTE_STREAM_MIN 256
#define GOMPUTE_PREFETCH_MIN 64
#if defined(GOMPUTE_STREAM)
#define GOMPUTE_CAN_STREAM true
#else
#define GOMPUTE_CAN_STREAM false
GOMPUTE_FN void gompute_stream(void* p, const void* b, size_t n) { memcpy(p, b, n); }
GOMPUTE_FN void gompute_stream_fence() {}
#endif
