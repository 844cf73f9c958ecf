"""A PyTorch CUDA tensor on the fake libcuda (torch's CPU build makes no CUDA tensors).

`FakeCudaTensor.over(buffer)` is a real torch.Tensor: a CPU placeholder of the buffer's shape
and dtype carries its autograd state (requires_grad, the negative bit, the version counter
g.map's writes bump). Its type carries a DLPack exchange table as torch.Tensor does, whose
`dltensor_from_py_object_no_sync` describes the buffer's device memory and whose
`current_work_stream` answers with `FakeCudaTensor.current_stream(device_id)`, a function a
test sets (the seam for torch's current stream). g.map's C++ path reads it with the code it
reads a real CUDA tensor with; the general path asks the same table for the stream, then
reads the buffer through `__dlpack__`.
"""

from __future__ import annotations

import ctypes

import numpy as np
import torch

from gompute.dlpack_exchange import CAPSULE_NAME, MAJOR_VERSION, ExchangeAPI

KDL_CUDA = 2
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}  # NumPy's kind -> DLPack's type code


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class FakeCudaTensor(torch.Tensor):
    """A torch.Tensor whose memory, as its type's exchange table tells it, is `self.buffer`."""

    __torch_function__ = torch._C._disabled_torch_function_impl  # torch ops see the placeholder
    current_stream = staticmethod(lambda device_id: 0)  # torch's current stream per device; 0: the default
    stream_queries = 0  # how many times the table was asked for the current stream

    @staticmethod
    def over(buffer) -> FakeCudaTensor:
        dtype = np.dtype(buffer.dtype.dtype)
        tensor = torch.Tensor._make_subclass(FakeCudaTensor, torch.from_numpy(np.zeros(tuple(buffer.shape), dtype)))
        tensor.buffer = buffer
        tensor.dl_shape = (ctypes.c_int64 * max(len(buffer.shape), 1))(*buffer.shape)
        tensor.dl_strides = (ctypes.c_int64 * max(len(buffer.shape), 1))(*(s // dtype.itemsize for s in buffer.strides))
        return tensor

    @property
    def is_cuda(self) -> bool:
        return True

    def __dlpack_device__(self):
        return KDL_CUDA, self.buffer.device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self.buffer.__dlpack__(stream=stream, max_version=max_version)


# The table's functions. They run from C, where a Python exception cannot be raised: a
# failure returns -1 with no error set, which the C++ path takes as "not this path".
@ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(DLTensor))
def _describe(tensor, out) -> int:
    try:
        buffer, dtype = tensor.buffer, np.dtype(tensor.buffer.dtype.dtype)
        out[0] = DLTensor(
            buffer.data_addr(),
            DLDevice(KDL_CUDA, buffer.device),
            len(buffer.shape),
            DLDataType(_CODES[dtype.kind], dtype.itemsize * 8, 1),
            tensor.dl_shape,
            tensor.dl_strides,
            0,
        )
        return 0
    except Exception:  # noqa: BLE001 - see above
        return -1


@ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p))
def _current_work_stream(device_type, device_id, out) -> int:
    try:
        FakeCudaTensor.stream_queries += 1
        out[0] = FakeCudaTensor.current_stream(device_id) or None
        return 0
    except Exception:  # noqa: BLE001 - see above
        return -1


_TABLE = ExchangeAPI(
    major=MAJOR_VERSION,
    minor=3,
    dltensor_from_py_object_no_sync=ctypes.cast(_describe, ctypes.c_void_p),
    current_work_stream=ctypes.cast(_current_work_stream, ctypes.c_void_p),
)
_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
FakeCudaTensor.__dlpack_c_exchange_api__ = _new_capsule(ctypes.addressof(_TABLE), CAPSULE_NAME, None)
