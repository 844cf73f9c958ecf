// The planner's functions in gompute._core (plan_bindings.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace gompute {

void bind_planner(pybind11::module_& m);

}  // namespace gompute
