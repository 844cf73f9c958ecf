// Arguments from Python. The bindings take numbers and streams as Python objects and
// convert them here, so a wrong one is an ArgumentError naming the argument and what it
// takes (pybind11's own conversion says only "incompatible function arguments").
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime.h"

namespace gompute {

// The name of v's type, for messages.
std::string type_name(pybind11::handle v);

// An int (anything with __index__) from 0 to `max`; `what` names it ("upload: offset").
uint64_t count_arg(pybind11::handle v, const std::string& what, uint64_t max = UINT64_MAX);
// The same, or nullopt for None.
std::optional<uint64_t> optional_count_arg(pybind11::handle v, const std::string& what);
// An int that fits in 64 signed bits.
int64_t int64_arg(pybind11::handle v, const std::string& what);
// An int from lo to hi.
int64_t ranged_arg(pybind11::handle v, const std::string& what, int64_t lo, int64_t hi);
// An int, or a tuple or list of them.
std::vector<int64_t> ints_arg(pybind11::handle v, const std::string& what);
// None (nullptr: the default stream) or a gompute Stream.
Stream* stream_arg(pybind11::handle v, const std::string& what);

}  // namespace gompute
