"""gompute: elementwise kernels written in Python, run on the arrays you already have.

The layers, bottom up: `g.runtime` (devices, buffers, streams, modules, launches over
CUDA, HIP and the host CPU), `g.abi` and `g.interface` (kernel arguments), the scalar
types (`g.f32`, ...), and the error hierarchy under `g.GomputeError`; the kernel language
(`g.lang`: `@g.map_kernel`, the builtins) and its compilers (`gompute.compile`); `g.map`,
`g.BoundKernel` and the array interop that launch kernels on other libraries' arrays; and
ahead-of-time images (`gompute.aot`: `g.emit_kernels`, and the lookup `g.raw_kernel_by_name`
and compiled kernels use).
"""

from . import abi, interface, runtime, types
from ._core import Buffer, Event, Module, PinnedMemory, Stream
from .abi import Params
from .backend import Backend
from .dim3 import Dim3
from .interop import asbuffer, from_dlpack
from .kernel import AutoKernel, BoundKernel, map, run  # noqa: A004 - g.map is the library's verb
from .reduce import reduce  # noqa: A004 - g.reduce is the library's verb
from .errors import (
    AllocFailed,
    ArgumentError,
    BackendUnavailable,
    BufferFreed,
    CompileError,
    CopyFailed,
    DeviceError,
    GomputeError,
    InvalidHandle,
    KernelNotFound,
    LaunchFailed,
    ModuleLoadFailed,
    SourceRejected,
    SyncFailed,
)
from .types import bf16, bool_, c64, c128, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64

__version__ = "0.1.0"

# The kernel language. Last: its builtins (abs, min, max, round, pow, ...) shadow Python's here.
from . import lang
from .aot import emit_kernels
from .lang import Func, MapKernel, func, map_kernel
from .lang.reduce_kernel import ReduceKernel, reduce_kernel
from .raw import RawByName, RawKernel, raw_kernel_by_name
from .lang.builtins import *  # noqa: F403 - the kernel language's builtins, as g.NAME
