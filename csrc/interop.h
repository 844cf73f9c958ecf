// Array exchange between Buffers and the DLPack, CUDA Array Interface and NumPy array
// interface protocols. The one place besides bindings.cpp that knows Python.
#pragma once

#include <pybind11/pybind11.h>

#include "runtime.h"

namespace gompute {

// The gompute scalar type (a Python object) of a layout's dtype.
pybind11::object dtype_of_layout(const Layout& layout);

// Buffer.view(dtype, shape, strides=None, offset=0): strides in bytes, default C order.
Buffer view(const Buffer& b, pybind11::handle dtype, pybind11::handle shape, pybind11::handle strides,
            pybind11::handle offset);

// CUDA Array Interface v3 (CUDA buffers) and NumPy's array interface (host buffers);
// AttributeError on other backends, so hasattr() tells.
pybind11::dict cuda_array_interface(const Buffer& b);
pybind11::dict array_interface(const Buffer& b);
// NumPy's last resort (np.asarray after the buffer protocol and __array_interface__), which a host
// Buffer's view never reaches: device memory and bf16 get an error naming the way out, where NumPy
// would make a 0-d object array, as torch and CuPy refuse a device array; a direct call views a
// host Buffer.
pybind11::object numpy_array(pybind11::handle self, pybind11::handle dtype, pybind11::handle copy);
// Buffer.__reduce__: a Buffer is this process's memory; pickle and copy are told to send values.
pybind11::object refuse_pickle(const Buffer& b);
// The buffer protocol of a host buffer (waits for its stream first).
pybind11::buffer_info host_buffer_info(Buffer& b);

// (DLPack device type, device id) of a buffer.
pybind11::tuple dlpack_device(const Buffer& buffer);

// The array-API `__dlpack__`: a versioned capsule when max_version >= (1, 0), else a
// legacy one. The consumer's stream waits for the buffer's; dl_device/copy may copy.
pybind11::capsule to_dlpack(const Buffer& buffer, pybind11::handle stream, pybind11::handle max_version,
                            pybind11::handle dl_device, pybind11::handle copy);

// The array in a DLPack capsule, which is consumed (renamed used_...). str(what) names
// the array in errors (and is only made for one).
Buffer from_dlpack(pybind11::capsule capsule, pybind11::object what, bool readonly = false);

// Someone else's array at `ptr` (element 0) on backend `kind`, device `ordinal`;
// `owner` is kept alive as long as the Buffer or any work using it.
Buffer wrap_pointer(int kind, int ordinal, uintptr_t ptr, uint8_t code, uint8_t bits, std::vector<int64_t> shape,
                    std::vector<int64_t> strides, bool readonly, pybind11::object owner, pybind11::object what);

}  // namespace gompute
