#include "pyglue.h"

#include <atomic>
#include <mutex>
#include <vector>

namespace py = pybind11;

namespace gompute {
namespace {

std::mutex g_mu;
std::vector<std::function<void()>> g_calls;
std::atomic<bool> g_scheduled{false};  // a pending call will run run_calls
std::atomic<bool> g_waiting{false};    // g_calls is not empty

int run_calls(void*) {
  g_scheduled.store(false);
  std::vector<std::function<void()>> calls;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    calls.swap(g_calls);
    g_waiting.store(false);
  }
  for (auto& call : calls) call();
  return 0;
}

}  // namespace

void with_gil_later(std::function<void()> call) {
  if (Py_IsInitialized() && PyGILState_Check()) {
    call();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_calls.push_back(std::move(call));
    g_waiting.store(true);
  }
  // After finalization nothing may touch Python: what is queued then is leaked.
  if (Py_IsInitialized() && !g_scheduled.exchange(true) && Py_AddPendingCall(run_calls, nullptr) != 0)
    g_scheduled.store(false);
}

void run_deferred_releases() { run_calls(nullptr); }

void release_waiting() {
  if (g_waiting.load(std::memory_order_relaxed)) run_calls(nullptr);
}

KeepAlive keep_python(py::object obj) {
  release_waiting();
  PyObject* held = obj.release().ptr();
  return KeepAlive(held, [](const void* p) {
    with_gil_later([p] { Py_DECREF(static_cast<PyObject*>(const_cast<void*>(p))); });
  });
}

}  // namespace gompute
