"""Raw launches of hand-written host kernels: the seed's "A launch, by hand", grids, faults, arity."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g


class Params(g.Params):
    scale: g.f32


def test_a_launch_by_hand(compute, kernels):
    """The seed's example, line for line: alloc, upload, pack, launch, synchronize, download."""
    N = 1024
    host_data = np.linspace(-4, 4, N, dtype=np.float32)
    expected = np.maximum(host_data * 2, 0)
    kernel = kernels.get_kernel("scale_relu")

    buffer = compute.alloc(N * 4)
    try:
        buffer.upload(host_data, N * 4)
        length = g.u64(N)
        params = g.abi.pack(Params, scale=2)
        args = [buffer.arg_ptr(), g.interface.arg(length), g.interface.arg(params)]
        kernel.launch(g.Dim3.linear(N, 256), g.Dim3(256), 0, args)
        compute.synchronize()
        buffer.download(host_data, N * 4)
    finally:
        buffer.free()
    np.testing.assert_array_equal(host_data, expected)


@pytest.mark.parametrize("n", [1, 255, 257, 100_000])
def test_scale_relu_covers_ragged_lengths(compute, kernels, n):
    """A length that is not a multiple of the block: the last block's extra threads do nothing."""
    data = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    with compute.alloc(data.nbytes + 64) as buf:  # spare bytes past `n` must stay untouched
        buf.upload(np.full(data.nbytes + 64, 0xAB, np.uint8))
        buf.upload(data)
        args = [buf.arg_ptr(), g.interface.arg(g.u64(n)), g.interface.arg(g.abi.pack(Params, scale=-3.0))]
        kernels.get_kernel("scale_relu").launch(g.Dim3.linear(n, 256), 256, 0, args)
        compute.synchronize()
        out = np.empty(data.nbytes + 64, np.uint8)
        buf.download(out)
    np.testing.assert_array_equal(out[: data.nbytes].view(np.float32), np.maximum(data * -3, 0))
    assert (out[data.nbytes :] == 0xAB).all()


@pytest.mark.parametrize(
    "grid, block, shared",
    [
        (g.Dim3(1), g.Dim3(1), 0),
        ((13, 7, 5), (8, 4, 2), 0),  # 455 blocks, 29120 threads: runs on the worker pool
        (g.Dim3(101, 3, 2), g.Dim3(64), 48),  # 606 blocks; x is no multiple of the pool's chunk
        (7, (2, 3, 4), 1),
    ],
    ids=["1x1", "13x7x5", "101x3x2-shared", "7-block3d"],
)
def test_grid_runs_every_block_and_thread_once(compute, kernels, grid, block, shared):
    gd = grid if isinstance(grid, g.Dim3) else g.Dim3(*grid) if isinstance(grid, tuple) else g.Dim3(grid)
    bd = block if isinstance(block, g.Dim3) else g.Dim3(*block) if isinstance(block, tuple) else g.Dim3(block)
    blocks, per_block = gd.count, bd.count
    bufs = [compute.alloc(n * 4) for n in (3 * blocks, blocks, blocks * per_block, 7, blocks)]
    try:
        for b in bufs:
            b.upload(np.zeros(b.nbytes, np.uint8))
        kernels.get_kernel("grid_ids").launch(grid, block, shared, [b.arg_ptr() for b in bufs])
        compute.synchronize()
        coords, block_visits, thread_visits, meta, shared_ok = (_download_u32(b) for b in bufs)
    finally:
        for b in bufs:
            b.free()
    np.testing.assert_array_equal(block_visits, np.ones(blocks, np.uint32))
    np.testing.assert_array_equal(thread_visits, np.ones(blocks * per_block, np.uint32))
    z, y, x = np.unravel_index(np.arange(blocks), (gd.z, gd.y, gd.x))  # x fastest
    np.testing.assert_array_equal(coords.reshape(blocks, 3), np.stack([x, y, z], axis=1))
    assert list(meta) == [gd.x, gd.y, gd.z, bd.x, bd.y, bd.z, shared]
    assert shared_ok.all()


def _download_u32(buf) -> np.ndarray:
    out = np.empty(buf.nbytes // 4, np.uint32)
    buf.download(out)
    return out


def test_fault_surfaces_at_next_synchronize_then_clears(compute, kernels):
    data = np.array([4, 9, -1, 16] * 8192, np.float32)  # 32768 elements: above the inline limit
    sqrt = kernels.get_kernel("checked_sqrt")
    with compute.alloc(data.nbytes) as buf:
        buf.upload(data)
        sqrt.launch(g.Dim3.linear(data.size, 256), 256, 0, [buf.arg_ptr(), g.interface.arg(g.u64(data.size))])
        with pytest.raises(g.SyncFailed, match="checked_sqrt.*negative input") as info:
            compute.synchronize()
        assert info.value.code == "HOST_KERNEL_TRAP"
        compute.synchronize()  # the fault was reported once; the device is usable again

        good = np.abs(data)
        buf.upload(good)
        sqrt.launch(g.Dim3.linear(data.size, 256), 256, 0, [buf.arg_ptr(), g.interface.arg(g.u64(data.size))])
        compute.synchronize()
        out = np.empty_like(good)
        buf.download(out)
    np.testing.assert_array_equal(out, np.sqrt(good))


def test_fault_on_a_stream_surfaces_at_that_streams_synchronize(compute, kernels):
    sqrt = kernels.get_kernel("checked_sqrt")
    with compute.alloc(4) as buf, compute.create_stream() as stream:
        buf.upload(np.array([-2], np.float32))
        sqrt.launch(1, 1, 0, [buf.arg_ptr(), g.interface.arg(g.u64(1))], stream=stream)
        with pytest.raises(g.SyncFailed, match="negative input"):
            stream.synchronize()
        stream.synchronize()
        compute.synchronize()


def test_launch_accepts_int_tuple_and_dim3(compute, kernels):
    fill = kernels.get_kernel("fill_u32")
    with compute.alloc(64 * 4) as buf:
        for i, (grid, block) in enumerate([(4, 16), ((2, 2), (8, 2)), (g.Dim3(1, 1, 4), g.Dim3(16))]):
            args = [buf.arg_ptr(), g.interface.arg(g.u64(64)), g.interface.arg(g.u32(i + 7))]
            fill.launch(grid, block, 0, args)
            compute.synchronize()
            assert (_download_u32(buf) == i + 7).all()


def test_kernel_name_and_arity(compute, kernels):
    assert kernels.get_kernel("scale_relu").name == "scale_relu"
    assert kernels.get_kernel("scale_relu").arity == 3
    assert kernels.get_kernel("grid_ids").arity == 5
    assert kernels.get_kernel("fill_u32").arity is None  # the module exports no arity for it


def test_wrong_argument_count_is_refused_before_running(compute, kernels):
    kernel = kernels.get_kernel("scale_relu")
    launches_before = g.runtime.stats()["launches"]
    with compute.alloc(16) as buf:
        with pytest.raises(g.LaunchFailed, match="takes 3 arguments.*passed 2"):
            kernel.launch(1, 4, 0, [buf.arg_ptr(), g.interface.arg(g.u64(4))])
        with pytest.raises(g.LaunchFailed, match="takes 3 arguments.*passed 0"):
            kernel.launch(1, 4, 0, [])
    assert g.runtime.stats()["launches"] == launches_before
    compute.synchronize()


@pytest.mark.parametrize("bad", [4, 2.0, b"\x00" * 8, None], ids=["int", "float", "bytes", "None"])
def test_an_argument_that_is_not_an_arg_is_refused(compute, kernels, bad):
    kernel = kernels.get_kernel("fill_u32")
    with compute.alloc(16) as buf:
        with pytest.raises(g.ArgumentError, match="launch argument 1 .*arg_ptr"):
            kernel.launch(1, 4, 0, [buf.arg_ptr(), bad, g.interface.arg(g.u32(1))])


def test_a_buffer_itself_is_not_an_argument_but_interface_arg_takes_it(compute, kernels):
    fill = kernels.get_kernel("fill_u32")
    with compute.alloc(16) as buf:
        with pytest.raises(g.ArgumentError, match="launch argument 0"):
            fill.launch(1, 4, 0, [buf, g.interface.arg(g.u64(4)), g.interface.arg(g.u32(5))])
        fill.launch(1, 4, 0, [g.interface.arg(buf), g.interface.arg(g.u64(4)), g.interface.arg(g.u32(5))])
        compute.synchronize()
        assert list(_download_u32(buf)) == [5, 5, 5, 5]


@pytest.mark.parametrize("grid", [0, (1, 0), (2**31,), "4", (1, 2, 3, 4)], ids=str)
def test_bad_grid_is_refused(compute, kernels, grid):
    with compute.alloc(16) as buf:
        with pytest.raises(g.ArgumentError):
            kernels.get_kernel("fill_u32").launch(
                grid, 1, 0, [buf.arg_ptr(), g.interface.arg(g.u64(4)), g.interface.arg(g.u32(1))]
            )


def test_kernel_outlives_its_module_handle_but_not_its_own_deinit(compute, kernels, host_image):
    module = compute.load_module(host_image)
    fill = module.get_kernel("fill_u32")
    module.deinit()  # releases the handle only: the kernel keeps the module loaded
    with compute.alloc(16) as buf:
        args = [buf.arg_ptr(), g.interface.arg(g.u64(4)), g.interface.arg(g.u32(3))]
        fill.launch(1, 4, 0, args)
        compute.synchronize()
        assert list(_download_u32(buf)) == [3, 3, 3, 3]
        fill.deinit()
        with pytest.raises(g.InvalidHandle, match="deinit"):
            fill.launch(1, 4, 0, args)


def test_launches_are_counted(compute, kernels):
    before = g.runtime.stats()["launches"]
    with compute.alloc(16) as buf:
        args = [buf.arg_ptr(), g.interface.arg(g.u64(4)), g.interface.arg(g.u32(3))]
        for _ in range(3):
            kernels.get_kernel("fill_u32").launch(1, 4, 0, args)
        compute.synchronize()
    assert g.runtime.stats()["launches"] == before + 3


def test_argument_storage_is_copied_at_launch(compute, kernels):
    """Args can be rebuilt or dropped right after launch, as with a GPU driver."""
    fill = kernels.get_kernel("fill_u32")
    n = 1 << 15  # a pool launch, queued behind a previous one
    with compute.alloc(n * 4) as a, compute.alloc(n * 4) as b, compute.create_stream() as s:
        for buf, value in ((a, 11), (b, 22)):
            args = [buf.arg_ptr(), g.interface.arg(g.u64(n)), g.interface.arg(g.u32(value))]
            fill.launch(g.Dim3.linear(n, 256), 256, 0, args, stream=s)
            del args
        s.synchronize()
        assert (_download_u32(a) == 11).all() and (_download_u32(b) == 22).all()


@pytest.mark.parametrize("symbol", ["fill_u32_gompute_arity", "abort", "memcpy"])
def test_only_the_modules_own_kernels_are_kernels(host, host_image, symbol):
    """dlsym found the arity constants (data) and, through the module's dependencies, libc's
    functions; launching them crashed the interpreter."""
    module = host.load_module(host_image)
    with pytest.raises(g.KernelNotFound, match=f"no kernel named '{symbol}'"):
        module.get_kernel(symbol)


THROWER = """#include <gompute/host_launch.h>
#include <stdexcept>
GOMPUTE_HOST_KERNEL(thrower) { throw std::runtime_error("out of luck"); }
"""


@pytest.mark.parametrize("wait", [False, True], ids=["queued", "inline"])
def test_a_kernel_that_throws_is_a_fault_and_the_stream_goes_on(wait):
    """Thrown on a stream's thread it ended the process; inline, it left the stream busy for good."""
    k = g.RawKernel(THROWER, "thrower", backend=g.Backend.host)
    with pytest.raises(g.SyncFailed, match="thrower trapped: threw out of luck"):
        k.kernel.launch(1, 1, 0, [], wait=wait)
        k.compute.synchronize()
    k.compute.synchronize()  # reported once; and nothing waits for ever


def test_a_grid_of_more_than_two_to_the_64_threads_is_refused(host, host_image):
    """Refused, rather than the block count wrapping to 0 and the launch running nothing."""
    fill = host.load_module(host_image).get_kernel("fill_u32")
    with host.alloc(16) as buf:
        with pytest.raises(g.LaunchFailed, match="more than 2\\*\\*64 threads"):
            fill.launch(
                g.Dim3(2**22, 2**21, 2**21), 1, 0, [buf.arg_ptr(), g.interface.arg(g.u64(4)), g.interface.arg(g.u32(1))]
            )
