"""The reductions' GPU text (CUDA and HIP C++, as NVRTC and hiprtc get it) run on the CPU: built
through tests/fakes/cuda_shim.h, whose blocks run their threads cooperatively (warp shuffles,
`__shared__`, `__syncthreads`), and launched on the host runtime with the grid a GPU gets."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import gompute as g
from gompute.lang.module import module_source
from gompute.lang.reduce_layout import GPU_LOADS, GPU_PACK_LOADS, pack_elements
from gompute.reduce import AutoReduce, BoundReduce
from tests.fakes import images

from . import kernels as K

reduce_module = importlib.import_module("gompute.reduce")  # the module, not g.reduce


class TextBound(BoundReduce):
    """A host device running a reduction's GPU text, cut as for a GPU."""

    def __init__(self, kernel, text: str):
        super().__init__(kernel, g.Backend.host)
        self.gpu, self.text = True, text

    def image(self, part) -> bytes:
        symbols = [e.symbol for e in part.entry_points()]
        warp, name = 64 if self.text == "hip" else 32, f"{part.name}__{part.group}_{self.text}"
        return images.gpu_text_image(module_source([part], self.text), symbols, name, warp)


def on_gpu_text(kernel, text: str) -> AutoReduce:
    auto = AutoReduce(kernel)
    auto._bound[(g.Backend.host, 0)] = TextBound(kernel, text)
    return auto


RNG = np.random.default_rng(11)


@pytest.mark.parametrize("text", ["cuda", "hip"])
def test_rows_columns_and_strided_reductions(text):
    x = RNG.standard_normal((37, 300)).astype(np.float32)
    total = on_gpu_text(K.total, text)
    for axis in (None, 0, 1):
        np.testing.assert_allclose(total(x, axis=axis), np.sum(x, axis=axis), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(total(x.T[::2], axis=1), np.sum(x.T[::2], axis=1), rtol=1e-5, atol=1e-4)
    cube = RNG.standard_normal((6, 5, 70)).astype(np.float64)
    np.testing.assert_allclose(total(cube, axis=(0, 2)), np.sum(cube, axis=(0, 2)), rtol=1e-12)
    big = RNG.standard_normal(3 * 256 * 8 * 5 + 17).astype(np.float32)  # several blocks' items
    np.testing.assert_allclose(total(big), np.sum(big, dtype=np.float64), rtol=1e-6)


@pytest.mark.parametrize("text", ["cuda", "hip"])
def test_every_kind_of_combine(text):
    i = RNG.integers(-100, 100, (9, 130), dtype=np.int16)
    np.testing.assert_array_equal(on_gpu_text(K.largest, text)(i, axis=1), np.max(i, axis=1))
    np.testing.assert_array_equal(on_gpu_text(K.smallest, text)(i, axis=0), np.min(i, axis=0))
    np.testing.assert_array_equal(on_gpu_text(K.parity, text)(i), np.bitwise_xor.reduce(i, axis=None))
    np.testing.assert_array_equal(on_gpu_text(K.total, text)(i > 0, axis=1), np.sum(i > 0, axis=1))
    x, y = RNG.standard_normal((2, 500)).astype(np.float32)
    np.testing.assert_allclose(on_gpu_text(K.dot, text)(x, y), np.dot(x.astype(np.float64), y), rtol=1e-5)
    z = RNG.standard_normal((40, 3))
    np.testing.assert_array_equal(on_gpu_text(K.extreme, text)(z, axis=0), z[np.argmax(np.abs(z), axis=0), range(3)])
    np.testing.assert_allclose(on_gpu_text(K.shifted_sum, text)(z, by=1.5), np.sum(z + 1.5))
    h = RNG.standard_normal(1000).astype(np.float16)
    np.testing.assert_allclose(on_gpu_text(K.total, text)(h), np.sum(h), rtol=2e-3)


def test_empty_reductions_store_the_identity():
    e = np.zeros((0, 5), np.float32)
    np.testing.assert_array_equal(on_gpu_text(K.product, "cuda")(e, axis=0), np.ones(5, np.float32))


@pytest.mark.parametrize("text", ["cuda", "hip"])
def test_loads_ahead_end_where_rows_and_columns_do(text, monkeypatch):
    """A thread loads GPU_LOADS elements before it combines them: items that end anywhere among a
    thread's loads, items of many such steps (two partials at most: long items), columns of any
    count of reduced rows, and two inputs."""
    monkeypatch.setattr(reduce_module, "_GPU_PARTIALS", 2)
    total, largest = on_gpu_text(K.total, text), on_gpu_text(K.largest, text)
    for n in (1, 7, 255, 257, 2047, 2049, 20_077):
        i = RNG.integers(-1000, 1000, n).astype(np.int32)
        assert total(i) == i.sum(dtype=np.int64)
        assert largest(i) == i.max()
        rows = np.stack([i, i[::-1]])
        np.testing.assert_array_equal(total(rows, axis=1), rows.sum(axis=1, dtype=np.int64))
    for count in (1, 7, 8, 9, 127, 129, 300):
        x = RNG.integers(-1000, 1000, (count, 40)).astype(np.int64)
        np.testing.assert_array_equal(total(x, axis=0), x.sum(axis=0))
        np.testing.assert_array_equal(largest(x, axis=0), x.max(axis=0))
    dot = on_gpu_text(K.dot64, text)
    x, y = RNG.standard_normal((2, 3001))
    np.testing.assert_allclose(dot(x, y), np.dot(x, y), rtol=1e-12)
    m = x[:2900].reshape(29, 100)
    np.testing.assert_allclose(dot(m, y[:100], axis=0), (m * y[:100]).sum(axis=0), rtol=1e-12)


@g.reduce_kernel(identity=0)
def weighted(x, w):
    return x * w


@pytest.fixture
def entries(monkeypatch):
    """The first entry of each reduction called from here on, in order (every call planned in
    Python: none taught to the C++ path)."""
    kinds, plan = [], BoundReduce.plan

    def recorded(self, *args):
        found = plan(self, *args)
        kinds.append(found[0])
        return found

    monkeypatch.setattr(BoundReduce, "plan", recorded)
    monkeypatch.setattr(AutoReduce, "learn", lambda *args: None)
    return kinds


@pytest.mark.parametrize("text", ["cuda", "hip"])
def test_packed_items_start_and_end_anywhere_in_a_pack(text, monkeypatch, entries):
    """Rows contiguous in every input take the packed rows entry (16 bytes of the widest input a
    load): items that start at every element of a pack, of lengths that end anywhere in one and
    around a block's loads of them (4 packs a thread), two items a result, rows whose lengths put
    each one's first element elsewhere in a pack, and two inputs of one width and of two. Inputs
    that meet their pack boundaries at different elements take the rows entry."""
    monkeypatch.setattr(reduce_module, "_GPU_PARTIALS", 2)
    total, largest, dot = on_gpu_text(K.total, text), on_gpu_text(K.largest, text), on_gpu_text(weighted, text)
    for dtype, v in ((np.int8, 16), (np.bool_, 16), (np.int16, 8), (np.float32, 4), (np.int64, 2)):
        x = RNG.integers(-100, 100, 4 * 256 * v + 3 * v).astype(dtype)
        wide = np.float64 if dtype == np.float32 else np.int64
        for start in range(v):
            for n in (257, 256 + v, 4 * 256 * v - 1, len(x) - v):  # more than the short rows' 256
                a = x[start : start + n]
                assert total(a) == a.sum(dtype=wide), (dtype, start, n)
                assert largest(a) == a.max(), (dtype, start, n)
        rows = RNG.integers(-100, 100, (37, 301)).astype(dtype)
        np.testing.assert_array_equal(total(rows, axis=1), rows.sum(axis=1, dtype=wide))
        np.testing.assert_array_equal(largest(rows[:, 3:], axis=1), rows[:, 3:].max(axis=1))
    h = RNG.standard_normal(3000).astype(np.float16)
    np.testing.assert_array_equal(largest(h[5:]), h[5:].max())
    assert set(entries) == {"packed_rows"}, entries
    i, j = RNG.integers(-100, 100, (2, 3001))
    for x, w in ((i.astype(np.int16), j.astype(np.int32)), (i.astype(np.int32), j.astype(np.int32))):
        for a, b, kind in (
            (x[1:], w[1:], "packed_rows"),
            (x[:2996].reshape(7, 428)[:, :-1], w[:427], "packed_rows"),  # rows 428 apart: 0 past a pack, as w's 0
            (x[1:], w[:-1], "rows"),
            (x[:2996].reshape(7, 428)[:, 1:], w[1:428], "packed_rows"),
            (x[:2996].reshape(4, 749)[:, :-1], w[:748], "rows"),  # rows 749 apart: 1 past a pack, w's 0
        ):
            entries.clear()
            np.testing.assert_array_equal(dot(a, b, axis=-1), (a.astype(np.int64) * b).sum(axis=-1))
            assert entries == [kind], (a.shape, a.strides, entries)


@pytest.mark.parametrize("text", ["cuda", "hip"])
def test_packed_columns_read_a_pack_of_results_a_row(text, monkeypatch, entries):
    """Columns whose rows start on pack boundaries in every input take the packed columns entry
    (a thread V results, a pack of each input a row): tiles of a multiple of V results and not (the
    last thread's results an element at a time), two tiles, a row, a few (several rows a step in a
    narrow tile, combined in shared memory) and many (past the packs loaded at once), two items a
    result, and two inputs of two widths. Rows not a whole pack apart take the columns entry."""
    monkeypatch.setattr(reduce_module, "_GPU_PARTIALS", 2)
    total, largest, dot = on_gpu_text(K.total, text), on_gpu_text(K.largest, text), on_gpu_text(weighted, text)
    for dtype, v in ((np.int8, 16), (np.float16, 8), (np.float32, 4), (np.int64, 2)):
        shapes = ((1, 8 * v, 8 * v), (5, 8 * v, 3 * v + 1), (300, 4 * v, 2 * v), (3, 258 * v, 257 * v + 1))
        for rows, stride, cols in shapes:  # rows of `cols` results, `stride` elements apart
            x = RNG.integers(-100, 100, (rows, stride)).astype(dtype)[:, :cols]
            want = x.sum(axis=0, dtype=np.float64 if dtype in (np.float16, np.float32) else np.int64)
            got = total(x, axis=0)
            if dtype == np.float16:  # summed in f32, rounded to f16
                np.testing.assert_array_equal(got, want.astype(np.float16))
            else:
                np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(largest(x[-2:], axis=0), x[-2:].max(axis=0))
        assert set(entries) == {"packed_columns"}, (dtype, entries)
        entries.clear()
    i, j = RNG.integers(-100, 100, (2, 300, 40))
    x, w = i.astype(np.int16), j.astype(np.int32)
    for a, b in ((x, w), (x[:, :37], w[:, :37])):
        np.testing.assert_array_equal(dot(a, b, axis=0), (a.astype(np.int64) * b).sum(axis=0))
    assert entries == ["packed_columns"] * 2, entries
    entries.clear()
    np.testing.assert_array_equal(total(x[:, :39].copy(), axis=0), x[:, :39].sum(axis=0, dtype=np.int64))  # 39 apart
    assert entries == ["columns"], entries


@pytest.mark.parametrize("text", ["cuda", "hip"])
def test_short_rows_take_a_thread_or_a_group_each(text, monkeypatch):
    """Rows of up to 16 elements are a thread's each, of up to 256 a group's of 32 threads (the
    planner's gpu_thread_rows and gpu_group_rows), in a grid that strides past its blocks (one
    block here), along one reduced dimension or several."""
    monkeypatch.setattr(reduce_module, "_GPU_MAX_BLOCKS", 1)
    total, largest = on_gpu_text(K.total, text), on_gpu_text(K.largest, text)
    for width in (1, 2, 3, 8, 15, 16, 17, 31, 32, 33, 100, 255, 256, 257):
        i = RNG.integers(-1000, 1000, (1001, width)).astype(np.int32)
        np.testing.assert_array_equal(total(i, axis=1), i.sum(axis=1, dtype=np.int64))
        np.testing.assert_array_equal(largest(i[::-2, ::-1], axis=1), i[::-2].max(axis=1))
    for rows, cols in ((4, 5), (9, 11)):  # two reduced dimensions, a thread's rows and a group's
        cube = RNG.integers(-1000, 1000, (300, rows, cols)).astype(np.int64).transpose(0, 2, 1)
        np.testing.assert_array_equal(total(cube, axis=(1, 2), keepdims=True), cube.sum(axis=(1, 2), keepdims=True))
    for width in (9, 200):
        f = RNG.standard_normal((700, width)).astype(np.float32)
        np.testing.assert_allclose(total(f, axis=1), f.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(total(np.zeros((5, 0), np.float32), axis=1), np.zeros(5, np.float32))


@pytest.mark.parametrize("text", ["cuda", "hip"])
def test_a_few_results_of_many_partials_finish_a_block_each(text, monkeypatch):
    """Results of at least a block's count of partials, at most a block of them (a full sum: 4096
    partials), finish in a block each; items of 256 elements here, so that 80 000 make 313."""
    monkeypatch.setattr(reduce_module, "GPU_ITEMS", 1)
    total, largest = on_gpu_text(K.total, text), on_gpu_text(K.largest, text)
    i = RNG.integers(-1000, 1000, (3, 80_000)).astype(np.int32)
    assert total(i) == i.sum(dtype=np.int64)
    np.testing.assert_array_equal(total(i, axis=1), i.sum(axis=1, dtype=np.int64))
    np.testing.assert_array_equal(largest(i, axis=1), i.max(axis=1))
    np.testing.assert_array_equal(total(np.ascontiguousarray(i.T), axis=0), i.sum(axis=1, dtype=np.int64))  # columns
    f = RNG.standard_normal(80_000)
    np.testing.assert_allclose(total(f), f.sum(), rtol=1e-12)


@pytest.mark.parametrize("text", ["cuda", "hip"])
def test_narrow_columns_read_several_rows_a_step(text):
    """A columns tile of w < 256 results reads R rows a step (the most a power of two of w threads
    fill of the block) and combines each result's R values in shared memory: widths that leave
    threads over, a last tile narrower than the others, items of several chunks, results under two
    kept dimensions."""
    total, largest = on_gpu_text(K.total, text), on_gpu_text(K.largest, text)
    for width, rows in [(1, 700), (2, 700), (3, 700), (3, 10_881), (5, 1000), (64, 300), (100, 333), (257, 300)]:
        i = RNG.integers(-1000, 1000, (rows, width)).astype(np.int32)
        np.testing.assert_array_equal(total(i, axis=0), i.sum(axis=0, dtype=np.int64))
        np.testing.assert_array_equal(largest(i, axis=0), i.max(axis=0))
    cube = RNG.integers(-1000, 1000, (4, 500, 3)).astype(np.int64)
    np.testing.assert_array_equal(total(cube, axis=1), cube.sum(axis=1))
    f = RNG.standard_normal((5000, 7)).astype(np.float32)
    np.testing.assert_allclose(total(f, axis=0), f.sum(axis=0, dtype=np.float64), rtol=1e-5, atol=1e-4)


# FAKE_CUDA_TURNS (tests/fakes/cuda_shim.h): the orders beside the default (each thread a turn, rising).
TURNS = ("reverse", "scattered", "warps", "warps-reverse", "warps-scattered")


@pytest.mark.parametrize("text", ["cuda", "hip"])
def test_results_do_not_depend_on_the_order_threads_run_in(text, monkeypatch, entries):
    """A GPU runs a block's threads in no set order between barriers. Every order the shim knows
    (each thread a turn, in rising, falling or scattered order, or a warp running ahead until it
    waits at the block's barrier) gives the default order's bits: no thread reads shared memory
    that another writes with no barrier between. One block takes every item, so that items reuse
    warps[] and lanes[]; each entry, a short row a thread and a group, narrow columns (several
    rows a step, combined in lanes[]), and the finish. Dropping the barrier that frees warps[] for
    the block's next item changes only the warp-ahead orders' bits."""
    monkeypatch.setattr(reduce_module, "_GPU_MAX_BLOCKS", 1)
    total, largest = on_gpu_text(K.total, text), on_gpu_text(K.largest, text)
    x = RNG.standard_normal(3 * 256 * 8 * 5 + 17).astype(np.float32)
    m = RNG.standard_normal((300, 40)).astype(np.float32)
    calls = [
        lambda: total(x[1:]),  # packed rows
        lambda: total(m.T[::2], axis=1),  # rows
        lambda: largest(m[:, 1:], axis=1),
        lambda: total(m, axis=0),  # packed columns
        lambda: total(m[:, :39].copy(), axis=0),  # columns
        lambda: total(m[:, :3].copy(), axis=0),  # narrow columns
        lambda: largest(m[:, :5].copy(), axis=0),
        lambda: total(m[:, :8], axis=1),  # short rows: a thread each
        lambda: total(m.T[:, :100], axis=1),  # a group each
    ]
    results = lambda: [np.asarray(call()) for call in calls]  # noqa: E731
    want = results()
    assert {"rows", "columns", "packed_rows", "packed_columns"} <= set(entries), entries
    np.testing.assert_allclose(want[0], np.sum(x[1:], dtype=np.float64), rtol=1e-6)
    np.testing.assert_allclose(want[3], m.sum(axis=0), rtol=1e-5, atol=1e-5)
    for turns in TURNS:
        monkeypatch.setenv("FAKE_CUDA_TURNS", turns)
        for call, got, expected in zip(calls, results(), want):
            assert got.tobytes() == expected.tobytes(), (turns, call.__code__.co_firstlineno)
    monkeypatch.setenv("FAKE_CUDA_TURNS", "sideways")
    with pytest.raises(g.SyncFailed, match="FAKE_CUDA_TURNS is forward, reverse or scattered"):
        total(x)


GPU_SPECS = [K.sumsq.variant((g.f32,)), K.total.variant((g.i8,)), K.dot64.variant((g.f64, g.f64))]
GPU_SPECS += [K.extreme.variant((g.f64,)), K.largest.variant((g.f16,))]


def _too_few_loads(spec, entry, loads: list[str], wide: str) -> str | None:
    """Why `entry`'s machine code (its global loads' opcodes) does not load as its text means, or
    None: GPU_LOADS elements of each input at once in rows and columns; in the packed entries
    (GPU_SPECS' inputs are of one width) GPU_PACK_LOADS 16-byte chunks (`wide`) of each, and single
    elements only at an item's ends or a tile's last results (hiprtc once read each chunk of bytes
    as one byte, sixteen times)."""
    n = len(spec.in_storage)
    if entry.kind.startswith("packed"):
        # Elements one at a time: an item's head and tail in rows, a tile's last results in columns.
        chunks, single = loads.count(wide), 2 * n if entry.kind == "packed_rows" else pack_elements(spec) * n
        if chunks < GPU_PACK_LOADS * n or len(loads) - chunks > single:
            want = f"{GPU_PACK_LOADS * n} and <= {single} others wanted"
            return f"{entry.symbol}: {chunks} chunk loads of {len(loads)}, {want}"
        return None
    want = GPU_LOADS * n if entry.kind in ("rows", "columns") else 1
    return None if len(loads) >= want else f"{entry.symbol}: {len(loads)} loads, {want} wanted"


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "newest"])
def test_the_cuda_entries_keep_everything_in_registers(arch):
    from tests import sass

    if sass.missing():
        pytest.skip(sass.missing())
    arch = sass.newest_arch() if arch == "newest" else arch
    functions = sass.of_kernels(GPU_SPECS, arch, f"reduce_sass_{arch}")
    for spec in GPU_SPECS:
        for entry in spec.entry_points():
            f = functions[entry.symbol]
            assert not f.local_accesses(), (entry.symbol, [str(i) for i in f.local_accesses()])
            assert _too_few_loads(spec, entry, [i.opcode for i in f.find("LDG")], "LDG.E.128") is None


@pytest.mark.parametrize("arch", ["gfx90a", "gfx1030"])
def test_the_hip_entries_keep_everything_in_registers(arch):
    """Through a real hiprtc (tests/compile/test_hip_real.py says what a CPU machine can check): no
    spills, no scratch, the launch bound gompute launches with, and the rows' warp shuffles and
    shared memory where a block combines its threads."""
    from tests import amdgcn

    if amdgcn.missing():
        pytest.skip(amdgcn.missing())
    kernels = amdgcn.of_kernels(GPU_SPECS, arch, f"reduce_hip_{arch}")
    for spec in GPU_SPECS:
        for entry in spec.entry_points():
            k = kernels[entry.symbol]
            assert (k.spills, k.scratch, k.dynamic_stack, k.scratch_accesses()) == (0, 0, False, []), k
            assert k.max_block == spec.block_size, entry.symbol
            loads = [i.split(" ", 1)[0] for i in k.find("global_load")]
            assert _too_few_loads(spec, entry, loads, "global_load_dwordx4") is None
            if entry.kind == "rows":
                assert k.find("ds_bpermute") and k.find("ds_write") and k.find("s_barrier"), entry.symbol


@pytest.mark.parametrize("text", ["cuda", "hip"])
def test_a_sum_of_negative_zeros_is_positive_zero_as_numpys(text):
    total = on_gpu_text(K.total, text)
    for dtype in (np.float16, np.float32, np.float64):
        for shape, axis in K.EVERY_STORE:
            assert not np.signbit(np.asarray(total(np.full(shape, -0.0, dtype), axis=axis))).any(), (shape, axis)
