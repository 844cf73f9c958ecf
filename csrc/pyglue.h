// Holding Python objects from C++ work that may finish on a thread without the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>

#include "driver.h"

namespace gompute {

// Runs `call` now if this thread holds the GIL, else soon on a thread that does.
// Worker threads never wait for the GIL: the thread holding it may be waiting in
// synchronize for that very worker.
void with_gil_later(std::function<void()> call);
// Runs what with_gil_later queued (it also runs by itself, as a pending call).
void run_deferred_releases();
// The same, cheaply, when anything waits; for a thread that holds the GIL to queue new work.
// Pending calls run only on the main thread, which may be blocked (in a join) while other
// threads queue work and its releases pile up.
void release_waiting();

// A KeepAlive holding `obj`, released with the GIL whichever thread lets go of it.
KeepAlive keep_python(pybind11::object obj);

}  // namespace gompute
