"""The C++ of a specialization's entry points: the loops that read the arrays, call the kernel's
function per element and store its result.

On a GPU each entry is a grid-stride loop: a contiguous one over 16-byte vectors of its arrays
where their alignments allow, and over single elements before and after them. On the host every
entry of a specialization goes through one `NAME_rows` function (the kernel over n contiguous
elements, a loop the compiler vectorizes), compiled once: the contiguous entries call it on
their span, the strided entry on each run of its innermost dimension, directly when every array
has stride 1 there, else on chunk buffers it gathers and scatters (preludes/host_strided.h).

An input stored as another type than its parameter's (a storage variant) is converted as it is
read, the result as it is stored; `MapKernel.variant` has checked that both are exact.
"""

from __future__ import annotations

from ..types import ScalarType
from .codegen import storage_ctype, value_ctype
from .typing_rules import is_half

VECTOR_BYTES = 16  # one LDG.E.128 / STG.E.128 (global_load_dwordx4) per array and vector


def entries_source(backend: str, unit, structs: dict[type, str], call_name: str, done: set[int]) -> list[str]:
    """The lines of `unit`'s entry points for `backend`; on the host, preceded by the rows
    function of `unit`'s kernel function unless `done` (ids of functions) already has it."""
    lines = []
    if backend == "host" and id(unit.function) not in done:
        done.add(id(unit.function))
        lines += _rows_template(unit, structs, call_name)
    for entry in unit.entry_points():
        if backend == "host":
            make = _host_strided if entry.kind == "strided" else _host_contiguous
        else:
            make = _gpu_strided if entry.kind == "strided" else _gpu_contiguous
        lines += make(unit, entry, structs, call_name)
    return lines


def _read(storage: ScalarType, param: ScalarType, code: str) -> str:
    """An element in memory as the value its parameter holds."""
    if storage is not param:
        return f"(({value_ctype(param)})gompute_value({code}))"
    return f"gompute_load_{storage.name}({code})" if is_half(storage) else code


def _write(storage: ScalarType, result: ScalarType, target: str, value: str) -> str:
    """Store the kernel's result `value` into the element `target`."""
    if storage is not result:
        return f"gompute_put({target}, {value});"
    return f"{target} = {f'gompute_store_{storage.name}({value})' if is_half(storage) else value};"


def _call(unit, call_name: str, args: list[str]) -> str:
    if unit.params_class is not None:
        args = [*args, "params"]
    return f"{call_name}({', '.join(args)})"


def _pointers(entry):
    return [a for a in entry.args if a.kind == "pointer"]


def _element(unit, entry, call_name: str, refs: list[str]) -> str:
    """`out[i] = fn(in0[i], ..., params);` with array k's element spelled `refs[k]` (in place, the
    one array is both input and output)."""
    pointers = _pointers(entry)
    inputs = refs if entry.kind == "inplace" else refs[:-1]
    args = [_read(p.type, t, ref) for p, t, ref in zip(pointers, unit.in_types, inputs)]
    return _write(pointers[-1].type, unit.out_type, refs[-1], _call(unit, call_name, args))


def _c_arg(arg, structs: dict[type, str]) -> str:
    if arg.kind == "pointer":
        return f"{storage_ctype(arg.type)}* {arg.name}"
    if arg.kind == "len":
        return "uint64_t len"
    if arg.kind == "strides":
        return f"const gompute_strides<{arg.type}> strides"
    return f"const {structs[arg.type]} params"


def vector_elements(entry) -> int:
    """Elements a vector of `entry`'s contiguous loop holds: as many as make 16 bytes of its widest
    storage type (narrower arrays move fewer bytes a vector), or 1 where its arrays are not all
    plain scalars of 1 to 8 bytes, and the loop stays scalar."""
    types = [p.type for p in _pointers(entry)]
    if not all(t.kind in "biuf" and t.itemsize in (1, 2, 4, 8) for t in types):
        return 1
    return VECTOR_BYTES // max(t.itemsize for t in types)


def _gpu_head(unit, entry, structs) -> list[str]:
    args = ", ".join(_c_arg(a, structs) for a in entry.args)
    return [
        f"GOMPUTE_GLOBAL void __launch_bounds__({unit.block_size}) {entry.symbol}({args}) {{",
        "  const uint64_t first = gompute_thread_index(), step = gompute_thread_count();",
    ]


def _gpu_contiguous(unit, entry, structs, call_name: str) -> list[str]:
    """A grid-stride loop over vectors of `vector_elements(entry)` elements, each array read and
    written a whole vector at a time, and one over the elements no vector holds. Vectors start
    at the first element at which every array is vector-aligned; where the arrays do not share
    one (their addresses differ modulo a vector, as a view or a byte offset may make them),
    there are no vectors and the scalar loop does every element."""
    pointers = _pointers(entry)
    width = vector_elements(entry)
    scalar = _element(unit, entry, call_name, [f"{p.name}[i]" for p in pointers])
    if width == 1:
        loop = ["  for (uint64_t i = first; i < len; i += step) {", f"    {scalar}", "  }"]
        return [*_gpu_head(unit, entry, structs), *loop, "}"]
    lead = pointers[0]
    fits = " && ".join(f"(uint64_t){p.name} % {width * p.type.itemsize} == lead * {p.type.itemsize}" for p in pointers)
    return [
        *_gpu_head(unit, entry, structs),
        f"  // {width} elements a vector; `head` elements before the first, `tail` on from the last.",
        f"  const uint64_t lead = (uint64_t){lead.name} % {width * lead.type.itemsize} / {lead.type.itemsize};",
        f"  const uint64_t skip = ({width} - lead) % {width};",
        f"  const uint64_t head = {fits} && skip < len ? skip : len;",
        f"  const uint64_t vectors = (len - head) / {width}, tail = head + vectors * {width};",
        "  for (uint64_t j = first; j < head + (len - tail); j += step) {",
        "    const uint64_t i = j < head ? j : tail + (j - head);",
        f"    {scalar}",
        "  }",
        "  for (uint64_t v = first; v < vectors; v += step) {",
        f"    const uint64_t i = head + v * {width};",
        *_gpu_vector(unit, entry, call_name, width),
        "  }",
        "}",
    ]


def _gpu_vector(unit, entry, call_name: str, width: int) -> list[str]:
    """The body of the vector loop: the vector at element i of each input, loaded whole, the
    kernel on each of its elements, the output's vector stored whole. Each vector is a struct
    of elements bit-cast from its raw chunk, which the prelude's gompute_vector_load reads in a
    form the GPU compiler keeps as one load; the alignment check is the CUDA-on-CPU runs' own."""
    pointers = _pointers(entry)
    raw = [f"gompute_raw{width * p.type.itemsize}" for p in pointers]
    lines = [
        f'    GOMPUTE_VECTOR_CHECK({p.name} + i, {width * p.type.itemsize}, "{entry.symbol}", "{p.name}");'
        for p in pointers
    ]
    lines += [f"    struct {{ {storage_ctype(p.type)} e[{width}]; }} vec{k};" for k, p in enumerate(pointers)]
    read = pointers if entry.kind == "inplace" else pointers[:-1]
    lines += [
        f"    vec{k} = __builtin_bit_cast(decltype(vec{k}), gompute_vector_load<{raw[k]}>({p.name} + i));"
        for k, p in enumerate(read)
    ]
    # One statement an element, not a loop: a compiler that left the loop rolled would index the
    # vectors at run time, and so keep them in thread-local memory.
    lines += [
        f"    {_element(unit, entry, call_name, [f'vec{k}.e[{j}]' for k in range(len(pointers))])}"
        for j in range(width)
    ]
    out = len(pointers) - 1
    return [*lines, f"    *({raw[out]}*)({pointers[out].name} + i) = __builtin_bit_cast({raw[out]}, vec{out});"]


def _gpu_strided(unit, entry, structs, call_name: str) -> list[str]:
    pointers = _pointers(entry)
    refs = [f"{p.name}[at[{k}]]" for k, p in enumerate(pointers)]
    return [
        *_gpu_head(unit, entry, structs),
        "  for (uint64_t i = first; i < len; i += step) {",
        f"    int64_t at[{len(pointers)}];",
        "    gompute_offsets(strides, i, at);",
        f"    {_element(unit, entry, call_name, refs)}",
        "  }",
        "}",
    ]


def _rows_template(unit, structs, call_name: str) -> list[str]:
    """`NAME_rows(in0, ..., out, n[, params])`: the kernel over n contiguous elements, for any
    storage types (each entry instantiates it with its own). Every caller passes an output that is
    one of the inputs, element for element, or overlaps none of them (g.map refuses other
    overlaps), so the loop is marked GOMPUTE_INDEPENDENT (host.h): without it GCC leaves a kernel
    whose own loop it does not unroll scalar. Where some of the storage types are halves and the
    CPU converts them (GOMPUTE_F16C, host_strided.h), the loop runs on chunks widened to floats."""
    n_in = len(unit.in_types)
    names = [f"gompute_S{k}" for k in range(n_in)] + ["gompute_SO"]  # no user name begins so
    template = f"template <{', '.join(f'typename {t}' for t in names)}>"
    params = [f"const {structs[unit.params_class]}& params"] if unit.params_class is not None else []
    args = ", ".join(
        [*(f"const {t}* in{k}" for k, t in enumerate(names[:-1])), f"{names[-1]}* out", "int64_t n", *params]
    )
    values = [f"(({value_ctype(t)})gompute_value(in{k}[j]))" for k, t in enumerate(unit.in_types)]
    loop = [
        template,
        f"GOMPUTE_FN void {call_name}_loop({args}) {{",
        "  GOMPUTE_INDEPENDENT",
        f"  for (int64_t j = 0; j < n; ++j) gompute_put(out[j], {_call(unit, call_name, values)});",
        "}",
    ]
    # The output is narrowed by the F16C instruction too, unless the kernel has a loop: GCC runs
    # 32 elements of a chain of dependent operations at a time where halves are stored in the loop,
    # 16 where floats are, which outweighs the cheaper conversion.
    narrow = not unit.function.has_loop
    wide = [f"w{k}" for k in range(n_in)] + (["wo"] if narrow else [])
    widened = [*(f"gompute_widen(w{k}, in{k} + j, m)" for k in range(n_in))]
    widened.append("gompute_wide_out(wo, out + j)" if narrow else "out + j")
    return [
        *loop,
        template,
        f"GOMPUTE_ROWS void {call_name}_rows({args}) {{",
        "#if defined(GOMPUTE_F16C)",
        f"  if constexpr (gompute_any_half<{', '.join(names)}>::value) {{",
        "    for (int64_t j = 0; j < n; j += GOMPUTE_HALF_CHUNK) {",
        "      const int64_t m = n - j < GOMPUTE_HALF_CHUNK ? n - j : GOMPUTE_HALF_CHUNK;",
        *([f"      float {', '.join(f'{w}[GOMPUTE_HALF_CHUNK]' for w in wide)};"] if wide else []),
        f"      {_rows_call(unit, call_name, widened, 'm', 'loop')}",
        *(["      gompute_narrow(out + j, wo, m);"] if narrow else []),
        "    }",
        "    return;",
        "  }",
        "#endif",
        f"  {_rows_call(unit, call_name, [*(f'in{k}' for k in range(n_in)), 'out'], 'n', 'loop')}",
        "}",
    ]


def _rows_call(unit, call_name: str, arrays: list[str], n: str, part: str = "rows") -> str:
    params = ["params"] if unit.params_class is not None else []
    return f"{call_name}_{part}({', '.join([*arrays, n, *params])});"


def _host_head(unit, entry, structs) -> list[str]:
    """Block size check and arguments; then the grid-stride loop over this call's block range,
    whose blocks own one contiguous span of elements, [base, end), per pass over the grid."""
    bs = f"{unit.block_size}u"
    lines = [
        f"GOMPUTE_HOST_ARITY({entry.symbol}, {entry.arity});",
        f"GOMPUTE_HOST_KERNEL({entry.symbol}) {{",
        "  const gompute_dim3 block = launch->block_dim;",
        f"  if ((uint64_t)block.x * block.y * block.z != {bs})",
        f'    GOMPUTE_TRAP(launch, "{entry.symbol}: launched with a block size other than its block_size, '
        f'{unit.block_size}");',
    ]
    for i, arg in enumerate(entry.args):
        if arg.kind == "pointer":
            ctype = storage_ctype(arg.type)
            lines.append(f"  {ctype}* {arg.name} = ({ctype}*)(uintptr_t)*(const uint64_t*)launch->args[{i}];")
        elif arg.kind == "len":
            lines.append(f"  const uint64_t len = *(const uint64_t*)launch->args[{i}];")
        else:
            name = "strides" if arg.kind == "strides" else "params"
            ctype = f"gompute_strides<{arg.type}>" if arg.kind == "strides" else structs[arg.type]
            lines.append(f"  {ctype} {name};")
            lines.append(f"  memcpy(&{name}, launch->args[{i}], sizeof {name});")
    return lines + [
        "  const gompute_dim3 grid = launch->grid_dim;",
        f"  const uint64_t stride = (uint64_t)grid.x * grid.y * grid.z * {bs};",
        f"  const uint64_t span = (launch->block_end - launch->block_begin) * {bs};",
        f"  for (uint64_t base = launch->block_begin * {bs}; base < len; base += stride) {{",
        "    const uint64_t end = base + span < len ? base + span : len;",
    ]


def _host_contiguous(unit, entry, structs, call_name: str) -> list[str]:
    pointers = _pointers(entry)
    arrays = [f"{p.name} + base" for p in (pointers * 2 if entry.kind == "inplace" else pointers)]
    return [
        *_host_head(unit, entry, structs),
        f"    {_rows_call(unit, call_name, arrays, '(int64_t)(end - base)')}",
        "  }",
        "}",
    ]


def _tile_buffers(symbol: str, inputs, output) -> list[str]:
    """The tile path's buffer t<k> of each input, and the row `streamed` of far layouts' output,
    in the thread's one allocation (host_strided.h)."""
    types = [storage_ctype(p.type) for p in inputs]
    sizes = [
        f"gompute_tile_bytes<{ctype}>(tile && strides.strides[{k}][1] != 1, tile_height, tile_pitch)"
        for k, ctype in enumerate(types)
    ]
    out_type = storage_ctype(output.type)
    lines = [
        f"  const bool far = tile && gompute_tile_far<{', '.join(types)}>((int64_t)len);",
        f"  const int64_t tile_rows = gompute_tile_rows<{', '.join(types)}>(far);",
        f"  const int64_t tile_cols = gompute_tile_cols<{', '.join(types)}>();",
        "  const int64_t tile_pitch = gompute_tile_pitch(tile_cols);",
        "  const int64_t tile_height = !tile ? 0 : strides.shape[0] < tile_rows ? strides.shape[0] : tile_rows;",
        *(f"  const size_t tile_bytes{k} = {size};" for k, size in enumerate(sizes)),
        f"  const size_t stream_bytes = gompute_tile_bytes<{out_type}>(far && GOMPUTE_CAN_STREAM, 1, tile_pitch);",
        f"  const size_t tile_bytes = {' + '.join([*(f'tile_bytes{k}' for k in range(len(inputs))), 'stream_bytes'])};",
        "  unsigned char* const tiles = tile_bytes ? gompute_tile_memory(tile_bytes) : nullptr;",
        "  if (tile_bytes && !tiles)",
        f'    GOMPUTE_TRAP(launch, "{symbol}: out of memory for the tile buffers of a transposed input");',
    ]
    offset = "tiles"
    for k, ctype in enumerate(types):
        lines.append(f"  {ctype}* t{k} = ({ctype}*)({offset});")
        offset = f"{offset} + tile_bytes{k}"
    lines.append(f"  {out_type}* const streamed = ({out_type}*)({offset});")
    return lines


def _host_strided(unit, entry, structs, call_name: str) -> list[str]:
    pointers = _pointers(entry)
    rows = [f"{p.name} + at[{k}]" for k, p in enumerate(pointers)]
    unit_steps = " && ".join(f"step[{k}] == 1" for k in range(len(pointers)))
    out = len(pointers) - 1
    head = _host_head(unit, entry, structs)
    tiled = [f"  const bool tiled{k} = tile && gompute_tiled(strides, {k});" for k in range(out)]
    lines = [
        *head[:-2],
        "  const bool tile = gompute_tile_layout(strides);",
        *tiled,
        *_tile_buffers(entry.symbol, pointers[:out], pointers[out]),
        *head[-2:],
        "    auto run = [&](const int64_t* at, const int64_t* step, int64_t n) {",
        f"      if ({unit_steps}) return {_rows_call(unit, call_name, rows, 'n')}",
        "      for (int64_t j0 = 0; j0 < n; j0 += GOMPUTE_CHUNK) {",
        "        const int64_t m = n - j0 < GOMPUTE_CHUNK ? n - j0 : GOMPUTE_CHUNK;",
    ]
    for k, p in enumerate(pointers):
        lines.append(f"        {storage_ctype(p.type)} b{k}[GOMPUTE_CHUNK];")
    for k in range(out):
        lines.append(f"        const auto* s{k} = gompute_source(b{k}, {rows[k]} + j0 * step[{k}], step[{k}], m);")
    target = f"{rows[out]} + j0 * step[{out}]"
    lines += [
        f"        auto* s{out} = step[{out}] == 1 ? {target} : b{out};",
        f"        {_rows_call(unit, call_name, [f's{k}' for k in range(len(pointers))], 'm')}",
        f"        if (step[{out}] != 1) gompute_scatter({target}, step[{out}], b{out}, m);",
        "      }",
        "    };",
        "    if (tile) {",
        "      // Rows [ra, rb) in tiles (host_strided.h), each row clipped to the elements [base, end);",
        "      // far ones prefetch the next tile as their rows run and stream their rows out.",
        "      const bool stream = far && GOMPUTE_CAN_STREAM;",
        "      const uint64_t cols = (uint64_t)strides.shape[1];",
        "      const uint64_t ra = base / cols, rb = (end + cols - 1) / cols;",
        "      for (uint64_t r = ra; r < rb; r += tile_rows) {",
        "        const int64_t t = rb - r < tile_rows ? (int64_t)(rb - r) : tile_rows;",
        "        for (int64_t c = 0; c < (int64_t)cols; c += tile_cols) {",
        "          const int64_t m = (int64_t)cols - c < tile_cols ? (int64_t)cols - c : tile_cols;",
        "          const uint64_t first = r * cols + (uint64_t)c, last = (r + t - 1) * cols + (uint64_t)(c + m);",
        "          if (end <= first || base >= last) continue;",
    ]
    for k, p in enumerate(pointers[:-1]):
        st = f"strides.strides[{k}]"
        lines += [
            f"          const auto* p{k} = {p.name} + (int64_t)r * {st}[0] + c * {st}[1];",
            f"          if (tiled{k}) gompute_gather_tile(t{k}, p{k}, {st}[1], t, m, (int64_t)cols - c, tile_pitch);",
        ]
    # A far tile GOMPUTE_PREFETCH_MIN bytes wide or more prefetches the next one and streams its
    # rows of GOMPUTE_STREAM_MIN bytes or more; a narrower one goes row by row as it is.
    o = pointers[out].name
    after = "gompute_tile_after(r, t, c, m, end, cols, tile_rows, tile_cols)"
    lines += [
        f"          if (far && m * (int64_t)sizeof *{o} >= GOMPUTE_PREFETCH_MIN) {{",
        f"            const gompute_next_tile next = {after};",
        *(f"            const auto* n{k} = p{k} + {_next_offset(k)};" for k in range(out)),
        *_tile_row_loop(unit, call_name, pointers, wide=True),
        "          } else {",
        *_tile_row_loop(unit, call_name, pointers, wide=False),
        "          }",
        "        }",
        "      }",
        "      if (stream) gompute_stream_fence();",
        "      continue;",
        "    }",
        "    gompute_runs(strides, base, end, run);",
        "  }",
        "}",
    ]
    return lines


def _tile_row_loop(unit, call_name: str, pointers, wide: bool) -> list[str]:
    """The rows of a tile, clipped to [base, end), into the kernel's rows function; `wide`: each
    row also prefetches its share of the next tile, and is streamed out through `streamed`."""
    out = len(pointers) - 1
    pad = " " * 14
    lines = [f"{pad[:-2]}for (int64_t i = 0; i < t; ++i) {{"]
    if wide:
        lines += [
            f"{pad}if (tiled{k}) gompute_prefetch_next(n{k}, strides.strides[{k}][1], next, i);" for k in range(out)
        ]
    lines += [
        f"{pad}const uint64_t at = (r + (uint64_t)i) * cols + (uint64_t)c;",
        f"{pad}const int64_t j0 = base > at ? (int64_t)(base - at) : 0;",
        f"{pad}const int64_t j1 = end < at + (uint64_t)m ? (int64_t)(end - at) : m;",
        f"{pad}if (j0 >= j1) continue;",
    ]
    for k in range(out):
        st = f"strides.strides[{k}]"
        row = f"t{k} + i * tile_pitch + j0"
        walked = f"gompute_source({row}, p{k} + i * {st}[0] + j0 * {st}[1], {st}[1], j1 - j0)"
        lines.append(f"{pad}const auto* s{k} = tiled{k} ? {row} : {walked};")
    target = f"{pointers[out].name} + (int64_t)(r + i) * strides.strides[{out}][0] + c + j0"
    call = _rows_call(unit, call_name, [f"s{k}" for k in range(len(pointers))], "j1 - j0")
    if wide:
        lines += [
            f"{pad}auto* d = {target};",
            f"{pad}const bool streaming = stream && (j1 - j0) * sizeof *d >= GOMPUTE_STREAM_MIN;",
            f"{pad}auto* s{out} = streaming ? streamed : d;",
            f"{pad}{call}",
            f"{pad}if (streaming) gompute_stream(d, streamed, (size_t)(j1 - j0) * sizeof *d);",
        ]
    else:
        lines += [f"{pad}auto* s{out} = {target};", f"{pad}{call}"]
    return [*lines, f"{pad[:-2]}}}"]


def _next_offset(k: int) -> str:
    """How far the next tile's origin is from this one's in input k (gompute_next_tile)."""
    return f"next.dr * strides.strides[{k}][0] + next.dc * strides.strides[{k}][1]"
