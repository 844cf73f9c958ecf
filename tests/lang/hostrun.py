"""Run generated host kernels in tests.

Through the public runtime (`g.runtime.host`) when gompute's C++ core is built; before that,
by calling the shared object's entry point with ctypes, exactly as the host launch convention says
(include/gompute/host_launch.h). Both paths take the same arguments and give the same results.
"""

from __future__ import annotations

import ctypes
import os
import tempfile

import numpy as np

from gompute.lang.kernel import Image


def runtime_available() -> bool:
    try:
        import gompute

        return hasattr(gompute, "runtime") and hasattr(gompute.runtime, "host")
    except ImportError:
        return False


class _Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint32), ("y", ctypes.c_uint32), ("z", ctypes.c_uint32)]


_TRAP = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)


class _Launch(ctypes.Structure):
    _fields_ = [
        ("launch_version", ctypes.c_uint32),
        ("arg_count", ctypes.c_uint32),
        ("args", ctypes.POINTER(ctypes.c_void_p)),
        ("grid_dim", _Dim3),
        ("block_dim", _Dim3),
        ("block_begin", ctypes.c_uint64),
        ("block_end", ctypes.c_uint64),
        ("shared", ctypes.c_void_p),
        ("shared_bytes", ctypes.c_uint32),
        ("trap", _TRAP),
        ("runtime", ctypes.c_void_p),
    ]


_loaded: dict[bytes, ctypes.CDLL] = {}


def _library(image: Image) -> ctypes.CDLL:
    lib = _loaded.get(image.data)
    if lib is None:
        fd, path = tempfile.mkstemp(suffix=".so")
        with os.fdopen(fd, "wb") as f:
            f.write(image.data)
        lib = _loaded[image.data] = ctypes.CDLL(path)
        os.unlink(path)
    return lib


def launch_ctypes(image: Image, symbol: str, args: list, grid: int, block: int, chunks: int = 2) -> list[str]:
    """Launch `symbol` with `args` (NumPy arrays, or bytes for scalars/params); returns trap messages.

    The grid runs as `chunks` calls over disjoint block ranges, as the runtime's worker pool does.
    """
    lib = _library(image)
    storage = []
    for a in args:
        if isinstance(a, np.ndarray):
            storage.append(ctypes.c_uint64(a.ctypes.data))
        else:
            storage.append(ctypes.create_string_buffer(bytes(a), max(len(bytes(a)), 1)))
    argv = (ctypes.c_void_p * len(args))(*(ctypes.cast(ctypes.pointer(s), ctypes.c_void_p) for s in storage))
    traps: list[str] = []
    trap = _TRAP(lambda launch, msg: traps.append(msg.decode()))
    entry = getattr(lib, symbol)
    bounds = np.linspace(0, grid, chunks + 1).astype(np.uint64)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        if lo == hi:
            continue
        launch = _Launch(
            1, len(args), argv, _Dim3(grid, 1, 1), _Dim3(block, 1, 1), int(lo), int(hi), None, 0, trap, None
        )
        entry(ctypes.byref(launch))
    return traps


def launch_runtime(image: Image, symbol: str, args: list, grid: int, block: int) -> list[str]:
    import gompute as g

    c = g.runtime.host.Compute.init()
    module = c.load_module(image.data)
    kernel = module.get_kernel(symbol)
    buffers, launch_args = [], []
    for a in args:
        if isinstance(a, np.ndarray):
            buf = c.alloc(max(a.nbytes, 1))
            if a.nbytes:
                buf.upload(a)
            buffers.append((buf, a))
            launch_args.append(buf.arg_ptr())
        else:
            launch_args.append(g.interface.arg(a))
    kernel.launch(g.Dim3(grid), g.Dim3(block), 0, launch_args)
    c.synchronize()
    for buf, a in buffers:
        if a.nbytes:
            buf.download(a)
        buf.free()
    return []


def storage_dtype(t) -> np.dtype:
    """The NumPy dtype holding `t`'s bytes (bf16, which NumPy lacks, as its uint16 bits)."""
    return t.dtype if t.dtype is not None else np.dtype(np.uint16)


def run_spec(
    image: Image,
    spec,
    *inputs: np.ndarray,
    params: bytes | None = None,
    inplace: bool = False,
    n: int | None = None,
) -> np.ndarray:
    """Launch `spec`'s entry point in `image` on `inputs`; returns the output array."""
    n = n if n is not None else len(inputs[0])
    entry = next(e for e in spec.entry_points() if e.kind == ("inplace" if inplace else "map"))
    if inplace:
        out = np.array(inputs[0], dtype=storage_dtype(spec.out_type))
        args = [out]
    else:
        out = np.zeros(n, dtype=storage_dtype(spec.out_type))
        args = [np.ascontiguousarray(a, dtype=storage_dtype(t)) for a, t in zip(inputs, spec.in_types)] + [out]
    args.append(np.uint64(n).tobytes())
    if params is not None:
        args.append(params)
    grid = max(1, -(-n // spec.block_size))
    launch = launch_runtime if runtime_available() else launch_ctypes
    traps = launch(image, entry.symbol, args, grid, spec.block_size)
    assert not traps, traps
    return out


def map_host(kernel, *inputs: np.ndarray, params: bytes | None = None, types=(), inplace: bool = False) -> np.ndarray:
    """`kernel` compiled alone for the host and applied elementwise to `inputs`."""
    return run_spec(
        kernel.compile_for("host", None, *types),
        kernel.specialize(*types),
        *inputs,
        params=params,
        inplace=inplace,
    )
