"""Kernels by hand: `g.RawKernel` for a user's own C++ kernel, `g.raw_kernel_by_name` for an
emitted one chosen at run time. Both are handles with `alloc`, `launch`, `synchronize`."""

from __future__ import annotations

from .compile import build_image
from .lang.kernel import backend_name


class _RawHandle:
    """A kernel bound to one device, with the calls a launch by hand needs."""

    def __init__(self, compute, image: bytes, symbol: str):
        self.compute = compute
        self.module = compute.load_module(image)
        self.kernel = self.module.get_kernel(symbol)
        self.symbol = symbol

    @property
    def backend(self):
        return self.compute.backend

    def alloc(self, nbytes: int):
        return self.compute.alloc(nbytes)

    def launch(self, grid, block, shared_bytes: int, args, stream=None, wait: bool = False) -> None:
        """Kernel.launch: on the default stream unless `stream` is given; `wait` returns once it ran."""
        self.kernel.launch(grid, block, shared_bytes, args, stream=stream, wait=wait)

    def launch_on_stream(self, grid, block, shared_bytes: int, args, stream) -> None:
        self.kernel.launch_on_stream(grid, block, shared_bytes, args, stream)

    def synchronize(self) -> None:
        self.compute.synchronize()

    def deinit(self) -> None:
        self.compute.deinit()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.deinit()


def _open(backend, ordinal: int):
    from .runtime import dynamic

    compute = dynamic.Compute.init_device(backend, ordinal)
    compute._live("a raw kernel (backend=g.Backend.host builds it for the CPU)")  # not the cpu arm
    return compute


def _device_arch(compute) -> str | None:
    return None if backend_name(compute.backend) == "host" else compute.device_info().arch


class RawKernel(_RawHandle):
    """A user's own CUDA or HIP C++ kernel (its own ABI), compiled by NVRTC/hiprtc through the disk
    cache; on the host backend, C++ written to include/gompute/host_launch.h.

    >>> k = g.RawKernel(source, "my_kernel", backend=g.Backend.cuda)
    """

    def __init__(self, source: str, name: str, backend=None, ordinal: int = 0, arch: str | None = None):
        compute = _open(backend, ordinal)
        arch = arch or _device_arch(compute)
        data, _, self.cache_dir = build_image(backend_name(compute.backend), source, arch, name)
        super().__init__(compute, data, name)


class RawByName(_RawHandle):
    """An emitted kernel found by name (`g.raw_kernel_by_name`)."""


def raw_kernel_by_name(backend, name: str, ordinal: int = 0) -> RawByName:
    """The emitted kernel `name` (from `gompute_kernels`) on device `ordinal` of `backend`.

    An unknown name raises KernelNotFound listing near matches. On CUDA a CUBIN for the device's
    arch is preferred to the portable PTX.
    """
    from .aot.lookup import find_by_name

    compute = _open(backend, ordinal)
    data, _, symbol = find_by_name(backend_name(compute.backend), name, _device_arch(compute))
    return RawByName(compute, data, symbol)
