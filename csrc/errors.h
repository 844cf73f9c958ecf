// gompute's C++ exception. The bindings translate it, in one place, into the Python
// class of the same name in gompute/errors.py.
#pragma once

#include <stdexcept>
#include <string>

namespace gompute {

enum class ErrorKind {
  BackendUnavailable,
  AllocFailed,
  CopyFailed,
  SyncFailed,
  KernelNotFound,
  ModuleLoadFailed,
  LaunchFailed,
  BufferFreed,
  InvalidHandle,
  DeviceError,
  ArgumentError,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message, std::string code = "")
      : std::runtime_error(std::move(message)), kind_(kind), code_(std::move(code)) {}
  ErrorKind kind() const { return kind_; }
  // The vendor's symbolic error name (e.g. CUDA_ERROR_OUT_OF_MEMORY), or "".
  const std::string& code() const { return code_; }

 private:
  ErrorKind kind_;
  std::string code_;
};

[[noreturn]] inline void raise(ErrorKind kind, const std::string& message) { throw Error(kind, message); }

}  // namespace gompute
