"""The DLPack ABI seen from Python (ctypes), to read capsules field by field and to make them
by hand as any foreign producer could."""

from __future__ import annotations

import ctypes

READ_ONLY, IS_COPIED = 1 << 0, 1 << 1
KDL_CPU = 1


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


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))),
]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DLManagedTensorVersioned._fields_ = [
    ("major", ctypes.c_uint32),
    ("minor", ctypes.c_uint32),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", DLTensor),
]

capi = ctypes.pythonapi
capi.PyCapsule_GetName.restype = ctypes.c_char_p
capi.PyCapsule_GetName.argtypes = [ctypes.py_object]
capi.PyCapsule_GetPointer.restype = ctypes.c_void_p
capi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
capi.PyCapsule_SetName.restype = ctypes.c_int
capi.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
capi.PyCapsule_New.restype = ctypes.py_object
capi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

# Capsule names must outlive the capsules that carry them: module-level constants do.
USED_VERSIONED = b"used_dltensor_versioned"
FOREIGN_NAME = b"not_a_tensor"


def capsule_name(capsule) -> bytes:
    return capi.PyCapsule_GetName(capsule)


def managed(capsule):
    """The DLManagedTensor(Versioned) inside an unconsumed capsule."""
    name = capsule_name(capsule)
    kind = DLManagedTensorVersioned if name == b"dltensor_versioned" else DLManagedTensor
    return kind.from_address(capi.PyCapsule_GetPointer(capsule, name))


def tensor_fields(t: DLTensor) -> dict:
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else None
    return {
        "data": (t.data or 0) + t.byte_offset,
        "device": (t.device.device_type, t.device.device_id),
        "dtype": (t.dtype.code, t.dtype.bits, t.dtype.lanes),
        "shape": shape,
        "strides": strides,
    }


class Producer:
    """An object whose __dlpack__ hands out one given capsule (as a misbehaving producer could)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **_):
        return self.capsule

    def __dlpack_device__(self):
        return (KDL_CPU, 0)


VERSIONED_NAME, LEGACY_NAME = b"dltensor_versioned", b"dltensor"
# Hand-made tensors by address, kept for the whole session: a second deleter call is then
# counted rather than a use-after-free, and no two tensors ever share an address.
_producers: dict[int, Handmade] = {}


def _on_delete(managed_ptr) -> None:
    _producers[ctypes.addressof(managed_ptr.contents)].deletions += 1


_DELETE_VERSIONED = DLManagedTensorVersioned._fields_[3][1](_on_delete)
_DELETE_LEGACY = DLManagedTensor._fields_[2][1](_on_delete)


class Handmade:
    """A DLPack tensor over `array`'s memory built field by field; `capsule` carries it."""

    def __init__(
        self,
        array,
        versioned=True,
        strides=True,
        byte_offset=0,
        flags=0,
        device=(KDL_CPU, 0),
        dtype=None,
        major=1,
    ):
        self.array = array
        self.shape = (ctypes.c_int64 * array.ndim)(*array.shape)
        self.strides = (ctypes.c_int64 * array.ndim)(*(s // array.itemsize for s in array.strides))
        self.m = (DLManagedTensorVersioned if versioned else DLManagedTensor)()
        t = self.m.dl_tensor
        t.data = array.ctypes.data - byte_offset
        t.byte_offset = byte_offset
        t.device = DLDevice(*device)
        t.ndim = array.ndim
        kind = {"b": 6, "i": 0, "u": 1, "f": 2, "c": 5}[array.dtype.kind]
        t.dtype = DLDataType(*(dtype or (kind, array.itemsize * 8, 1)))
        t.shape = self.shape
        t.strides = self.strides if strides else None
        if versioned:
            self.m.major, self.m.minor, self.m.flags = major, 1, flags
            self.m.deleter = _DELETE_VERSIONED
        else:
            self.m.deleter = _DELETE_LEGACY
        self.deletions = 0
        _producers[ctypes.addressof(self.m)] = self
        self.capsule = capi.PyCapsule_New(ctypes.addressof(self.m), VERSIONED_NAME if versioned else LEGACY_NAME, None)

    def deleted(self) -> int:
        return self.deletions
