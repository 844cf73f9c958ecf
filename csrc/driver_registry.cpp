// The process-wide driver table of each backend, and the error bookkeeping shared by
// all of them.
#include <mutex>

#include "driver.h"

namespace gompute {

namespace {
thread_local std::string t_last_error;
}

const char* backend_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::cuda: return "cuda";
    case BackendKind::hip: return "hip";
    case BackendKind::host: return "host";
  }
  return "unknown";
}

const std::string& Driver::last_error() const { return t_last_error; }

void Driver::fail(ErrorKind kind, const std::string& code, const std::string& message) const {
  t_last_error = code.empty() ? message : code + ": " + message;
  throw Error(kind, message, code);
}

Driver& driver(BackendKind kind) {
  // Never destroyed: worker threads and vendor drivers may still be running at exit,
  // and tearing them down from a static destructor is unsafe.
  static std::once_flag once[3];
  static Driver* drivers[3];
  const int i = static_cast<int>(kind);
  std::call_once(once[i], [&] {
    switch (kind) {
      case BackendKind::cuda: drivers[i] = make_cuda_driver().release(); break;
      case BackendKind::hip: drivers[i] = make_hip_driver().release(); break;
      case BackendKind::host: drivers[i] = make_host_driver().release(); break;
    }
  });
  return *drivers[i];
}

int pointer_device(BackendKind kind, DevicePtr ptr) {
  Driver& d = driver(kind);
  try {
    d.ensure_loaded();
  } catch (const Error&) {
    return -1;
  }
  return d.pointer_device(ptr);
}

}  // namespace gompute
