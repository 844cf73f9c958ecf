"""DLPack's C exchange table from Python (csrc/dlpack_exchange.h is the C++ side).

A framework that carries the table on its array type (`type(x).__dlpack_c_exchange_api__`,
PyTorch among them) answers "which stream is current on this device" with one C call. The
C++ path of g.map reads torch tensors and their stream through it; the general path asks
the same table here, so the two launch on the same stream.
"""

from __future__ import annotations

import ctypes

CAPSULE_NAME = b"dlpack_exchange_api"
MAJOR_VERSION = 1  # the major version of the table this reads

# int current_work_stream(DLDeviceType device_type, int32_t device_id, void** out_current_stream):
# 0, or -1 with a Python error set (PYFUNCTYPE holds the GIL and raises it).
CurrentWorkStream = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p))


class ExchangeAPI(ctypes.Structure):
    """DLPackExchangeAPI: its header, then five function pointers (the C++ side calls them)."""

    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("prev_api", ctypes.c_void_p),
        ("managed_tensor_allocator", ctypes.c_void_p),
        ("managed_tensor_from_py_object_no_sync", ctypes.c_void_p),
        ("managed_tensor_to_py_object_no_sync", ctypes.c_void_p),
        ("dltensor_from_py_object_no_sync", ctypes.c_void_p),
        ("current_work_stream", ctypes.c_void_p),
    ]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def table(array) -> ExchangeAPI | None:
    """The exchange table `array`'s type carries, or None (none, another major version, or no
    stream function): the rule csrc/array_view.cpp's exchange_api applies."""
    capsule = getattr(type(array), "__dlpack_c_exchange_api__", None)
    if type(capsule).__name__ != "PyCapsule":
        return None
    try:
        address = _capsule_pointer(capsule, CAPSULE_NAME)
    except ValueError:  # a capsule of another name
        return None
    api = ExchangeAPI.from_address(address)
    if api.major != MAJOR_VERSION or not api.current_work_stream or not api.dltensor_from_py_object_no_sync:
        return None
    return api


def current_stream(array, device_type: int, device_id: int) -> int | None:
    """The current stream of `array`'s framework on the device (0: its default stream), or None
    when `array`'s type carries no exchange table."""
    api = table(array)
    if api is None:
        return None
    stream = ctypes.c_void_p()
    CurrentWorkStream(api.current_work_stream)(device_type, device_id, ctypes.byref(stream))
    return stream.value or 0
