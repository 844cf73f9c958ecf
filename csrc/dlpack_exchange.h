// DLPack's C exchange table (dlpack.h, DLPackExchangeAPI), declared from the public
// specification: a framework's array type carries it as `type(x).__dlpack_c_exchange_api__`,
// a capsule named "dlpack_exchange_api" holding a pointer to a table that lives as long as
// the process. Its functions read an array and the current stream of a device with no Python
// call in between. Only the parts gompute calls are given their types.
#pragma once

#include "dlpack.h"

extern "C" {

struct DLPackExchangeAPIHeader {
  DLPackVersion version;  // a table of another major version is not read
  DLPackExchangeAPIHeader* prev_api;
};

struct DLPackExchangeAPI {
  DLPackExchangeAPIHeader header;
  // A new contiguous tensor of `prototype`'s dtype, ndim, shape and device, owned by `*out`; 0 on
  // success, -1 after calling set_error(error_ctx, kind, message). May be NULL.
  int (*managed_tensor_allocator)(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
                                  void (*set_error)(void* error_ctx, const char* kind, const char* message));
  void* managed_tensor_from_py_object_no_sync;
  // The framework's array owning `tensor`, a new reference in `*out_py_object`; 0 on success, -1
  // with a Python error set. May be NULL.
  int (*managed_tensor_to_py_object_no_sync)(DLManagedTensorVersioned* tensor, void** out_py_object);
  // Fills `out` with a view of `py_object` (the caller keeps the object alive); 0 on success,
  // -1 with a Python error set. May be NULL.
  int (*dltensor_from_py_object_no_sync)(void* py_object, DLTensor* out);
  // The framework's current stream on the device (NULL: its default stream, or none on a
  // CPU); 0 on success, -1 with a Python error set.
  int (*current_work_stream)(DLDeviceType device_type, int32_t device_id, void** out_current_stream);
};

}  // extern "C"
