"""A PyTorch CUDA tensor on the fake libcuda (torch's CPU build makes no CUDA tensors).

`FakeCudaTensor.over(buffer)` is a real torch.Tensor: a CPU placeholder of the buffer's shape
and dtype carries its autograd state (requires_grad, the negative bit, the version counter
g.map's writes bump). Its type carries a DLPack exchange table as torch.Tensor does, written
in C++ like torch's (built by the host compiler on first use): its
`dltensor_from_py_object_no_sync` describes the buffer's device memory, and its
`current_work_stream` answers with the stream `set_current_stream` last set for the device
(the seam for torch's current stream). g.map's C++ path reads it with the code it reads a
real CUDA tensor with; the general path asks the same table for the stream, then reads the
buffer through `__dlpack__`. Its `managed_tensor_allocator` makes a contiguous Buffer on the
prototype's device (torch's makes a tensor from the caching allocator), and
`managed_tensor_to_py_object_no_sync` a FakeCudaTensor over it: how g.map and g.reduce make
new results of a torch tensor, in C++.
"""

from __future__ import annotations

import ctypes
import functools
import weakref

import numpy as np
import torch

import gompute as g
from gompute.compile import build_image
from tests.interop.dlpack_abi import DLDataType, DLDevice, DLManagedTensorVersioned, DLTensor, capi

CAPSULE_NAME = b"dlpack_exchange_api"  # the capsule name DLPack gives the exchange table

KDL_CUDA = 2
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}  # NumPy's kind -> DLPack's type code
_KINDS = {code: kind for kind, code in _CODES.items()}

# The table and what it answers from: a DLTensor per live FakeCudaTensor (by its address, the
# PyObject* the table is given) and a current stream per device. Called with the GIL held.
TABLE_SOURCE = r"""
#include <cstdint>
#include <mutex>
#include <unordered_map>

extern "C" {
struct DLDevice { int32_t device_type, device_id; };
struct DLDataType { uint8_t code, bits; uint16_t lanes; };
struct DLTensor {
  void* data; DLDevice device; int32_t ndim; DLDataType dtype;
  int64_t* shape; int64_t* strides; uint64_t byte_offset;
};
struct Table {
  uint32_t major, minor; void* prev_api;
  void* managed_tensor_allocator; void* managed_tensor_from_py_object_no_sync;
  void* managed_tensor_to_py_object_no_sync;
  int (*dltensor_from_py_object_no_sync)(void*, DLTensor*);
  int (*current_work_stream)(int32_t, int32_t, void**);
};
}

namespace {
constexpr int kDevices = 8;
std::mutex mu;
std::unordered_map<const void*, DLTensor> tensors;
void* streams[kDevices];
long long queries[kDevices];

int view(void* object, DLTensor* out) {  // -1 without a Python error: the C++ path declines
  std::lock_guard<std::mutex> lock(mu);
  auto it = tensors.find(object);
  if (it == tensors.end()) return -1;
  *out = it->second;
  return 0;
}

int current_stream(int32_t, int32_t device, void** out) {
  if (device < 0 || device >= kDevices) return -1;
  std::lock_guard<std::mutex> lock(mu);
  ++queries[device];
  *out = streams[device];
  return 0;
}

Table table = {1, 3, nullptr, nullptr, nullptr, nullptr, view, current_stream};
}  // namespace

#define FAKE_API extern "C" __attribute__((visibility("default")))
FAKE_API const Table* fake_torch_table() { return &table; }
// The allocator and the tensor-to-object call, Python functions (ctypes): set once, before the
// table's capsule is made.
FAKE_API void fake_torch_set_allocator(void* allocate, void* to_object) {
  table.managed_tensor_allocator = allocate;
  table.managed_tensor_to_py_object_no_sync = to_object;
}
FAKE_API void fake_torch_describe(const void* object, const DLTensor* t) {
  std::lock_guard<std::mutex> lock(mu);
  tensors[object] = *t;
}
FAKE_API void fake_torch_forget(const void* object) {
  std::lock_guard<std::mutex> lock(mu);
  tensors.erase(object);
}
FAKE_API void fake_torch_set_stream(int device, void* stream) {
  std::lock_guard<std::mutex> lock(mu);
  streams[device] = stream;
}
FAKE_API long long fake_torch_queries(int device) {
  std::lock_guard<std::mutex> lock(mu);
  return queries[device];
}
"""


@functools.cache
def _library() -> ctypes.CDLL:
    _, _, folder = build_image("host", TABLE_SOURCE, None, "fake_torch_table")
    lib = ctypes.CDLL(str(folder / "host.so"))
    lib.fake_torch_table.restype = ctypes.c_void_p
    lib.fake_torch_describe.argtypes = [ctypes.c_void_p, ctypes.POINTER(DLTensor)]
    lib.fake_torch_forget.argtypes = [ctypes.c_void_p]
    lib.fake_torch_set_stream.argtypes = [ctypes.c_int, ctypes.c_void_p]
    lib.fake_torch_queries.argtypes = [ctypes.c_int]
    lib.fake_torch_queries.restype = ctypes.c_longlong
    lib.fake_torch_set_allocator.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.fake_torch_set_allocator(ctypes.cast(_allocate, ctypes.c_void_p), ctypes.cast(_to_object, ctypes.c_void_p))
    FakeCudaTensor.__dlpack_c_exchange_api__ = capi.PyCapsule_New(lib.fake_torch_table(), CAPSULE_NAME, None)
    return lib


class FakeCudaTensor(torch.Tensor):
    """A torch.Tensor whose memory, as its type's exchange table tells it, is `self.buffer`."""

    __torch_function__ = torch._C._disabled_torch_function_impl  # torch ops see the placeholder
    __dlpack_c_exchange_api__ = None  # the table's capsule, once built
    allocations = 0  # tensors the table's allocator made
    refuse_allocations = False  # the allocator fails, as torch's out of memory

    @staticmethod
    def over(buffer) -> FakeCudaTensor:
        lib = _library()
        dtype = np.dtype(buffer.dtype.dtype)
        tensor = torch.Tensor._make_subclass(FakeCudaTensor, torch.from_numpy(np.zeros(tuple(buffer.shape), dtype)))
        tensor.buffer = buffer
        ndim = len(buffer.shape)
        tensor.dl_shape = (ctypes.c_int64 * max(ndim, 1))(*buffer.shape)  # the table points at these
        tensor.dl_strides = (ctypes.c_int64 * max(ndim, 1))(*(s // dtype.itemsize for s in buffer.strides))
        described = DLTensor(
            buffer.data_addr(),
            DLDevice(KDL_CUDA, buffer.device),
            ndim,
            DLDataType(_CODES[dtype.kind], dtype.itemsize * 8, 1),
            tensor.dl_shape,
            tensor.dl_strides,
            0,
        )
        lib.fake_torch_describe(id(tensor), ctypes.byref(described))
        weakref.finalize(tensor, lib.fake_torch_forget, id(tensor))
        return tensor

    @staticmethod
    def set_current_stream(device: int, handle: int | None) -> None:
        """torch's current stream on `device` is now `handle` (None or 0: the default stream)."""
        _library().fake_torch_set_stream(device, handle or None)

    @staticmethod
    def stream_queries(device: int) -> int:
        """How many times the table was asked for `device`'s current stream."""
        return _library().fake_torch_queries(device)

    @property
    def is_cuda(self) -> bool:
        return True

    def __dlpack_device__(self):
        return KDL_CUDA, self.buffer.device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self.buffer.__dlpack__(stream=stream, max_version=max_version)


# The allocator's tensors not yet given up by their deleter, by address: each with what its
# DLManagedTensorVersioned points at (shape, strides) and the Buffer that owns its memory.
_made: dict[int, tuple] = {}
_SetError = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p)
_Deleter = DLManagedTensorVersioned._fields_[3][1]


@_Deleter
def _delete(tensor) -> None:
    _made.pop(ctypes.addressof(tensor.contents), None)


@ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.POINTER(DLTensor),
    ctypes.POINTER(ctypes.POINTER(DLManagedTensorVersioned)),
    ctypes.c_void_p,
    _SetError,
)
def _allocate(prototype, out, error_ctx, set_error) -> int:
    """The table's managed_tensor_allocator: a contiguous Buffer of the prototype's dtype, shape and
    device, or -1 after set_error (out of memory, as torch says it, with a trace after its first line)."""
    p = prototype.contents
    shape = tuple(p.shape[d] for d in range(p.ndim))
    try:
        if FakeCudaTensor.refuse_allocations:
            raise MemoryError(f"CUDA out of memory. Tried to allocate {shape}\nfake trace line")
        dtype = np.dtype(f"{_KINDS[p.dtype.code]}{p.dtype.bits // 8}")
        buffer = g.runtime.cuda.Compute.init_device(p.device.device_id).empty(shape, g.types.from_dtype(dtype))
    except Exception as e:  # every failure is the allocator's -1, as torch's
        set_error(error_ctx, type(e).__name__.encode(), str(e).encode())
        return -1
    FakeCudaTensor.allocations += 1
    ndim = len(shape)
    extents = (ctypes.c_int64 * max(ndim, 1))(*shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*(s // dtype.itemsize for s in buffer.strides))
    tensor = DLManagedTensorVersioned(1, 0, None, _delete, 0)
    tensor.dl_tensor = DLTensor(buffer.data_addr(), p.device, ndim, p.dtype, extents, strides, 0)
    _made[ctypes.addressof(tensor)] = (tensor, extents, strides, buffer)
    out[0] = ctypes.pointer(tensor)
    return 0


@ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(DLManagedTensorVersioned), ctypes.POINTER(ctypes.c_void_p))
def _to_object(tensor, out) -> int:
    """The table's managed_tensor_to_py_object_no_sync: a FakeCudaTensor over the tensor's Buffer (a new
    reference); the managed tensor is given up, as the framework's array owns it now."""
    buffer = _made[ctypes.addressof(tensor.contents)][3]
    made = FakeCudaTensor.over(buffer)
    tensor.contents.deleter(tensor)
    capi.Py_IncRef(ctypes.py_object(made))
    out[0] = id(made)
    return 0
