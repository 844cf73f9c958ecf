// The DLPack ABI (dlpack.h, version 1.x), declared from the public specification.
// Only the parts gompute produces and consumes.
#pragma once

#include <cstdint>

// The major version gompute reads and writes; a capsule of another major is not read.
#define DLPACK_MAJOR_VERSION 1

extern "C" {

enum DLDeviceType : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLCUDAManaged = 13,
};

struct DLDevice {
  DLDeviceType device_type;
  int32_t device_id;
};

enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
};

struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};

struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; NULL means compact row-major
  uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};

constexpr uint64_t DLPACK_FLAG_BITMASK_READ_ONLY = 1ull << 0;
constexpr uint64_t DLPACK_FLAG_BITMASK_IS_COPIED = 1ull << 1;

struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
};

}  // extern "C"
