"""A PyTorch CUDA tensor on the fake libcuda (torch's CPU build makes no CUDA tensors).

`FakeCudaTensor.over(buffer)` is a real torch.Tensor: a CPU placeholder of the buffer's shape
and dtype carries its autograd state (requires_grad, the negative bit, the version counter
g.map's writes bump). Its type carries a DLPack exchange table as torch.Tensor does, written
in C++ like torch's (built by the host compiler on first use): its
`dltensor_from_py_object_no_sync` describes the buffer's device memory, and its
`current_work_stream` answers with the stream `set_current_stream` last set for the device
(the seam for torch's current stream). g.map's C++ path reads it with the code it reads a
real CUDA tensor with; the general path asks the same table for the stream, then reads the
buffer through `__dlpack__`.
"""

from __future__ import annotations

import ctypes
import functools
import weakref

import numpy as np
import torch

from gompute.compile import build_image
from tests.interop.dlpack_abi import DLDataType, DLDevice, DLTensor, capi

CAPSULE_NAME = b"dlpack_exchange_api"  # the capsule name DLPack gives the exchange table

KDL_CUDA = 2
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}  # NumPy's kind -> DLPack's type code

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

const Table table = {1, 3, nullptr, nullptr, nullptr, nullptr, view, current_stream};
}  // namespace

#define FAKE_API extern "C" __attribute__((visibility("default")))
FAKE_API const Table* fake_torch_table() { return &table; }
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
    FakeCudaTensor.__dlpack_c_exchange_api__ = capi.PyCapsule_New(lib.fake_torch_table(), CAPSULE_NAME, None)
    return lib


class FakeCudaTensor(torch.Tensor):
    """A torch.Tensor whose memory, as its type's exchange table tells it, is `self.buffer`."""

    __torch_function__ = torch._C._disabled_torch_function_impl  # torch ops see the placeholder
    __dlpack_c_exchange_api__ = None  # the table's capsule, once built

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
