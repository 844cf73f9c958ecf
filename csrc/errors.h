// gompute's C++ exception. The bindings translate it, in one place, into the Python
// class of the same name in gompute/errors.py.
#pragma once

#include <stdexcept>
#include <string>

namespace gompute {

// Every kind of error the C++ core raises, listed once: the enum, the name the bindings
// raise it as and _core.ERROR_KINDS are all expanded from this list, and
// tests/test_facts.py checks gompute/errors.py has exactly these classes beside its own.
#define GOMPUTE_ERROR_KINDS(X) \
  X(BackendUnavailable)        \
  X(AllocFailed)               \
  X(CopyFailed)                \
  X(SyncFailed)                \
  X(KernelNotFound)            \
  X(ModuleLoadFailed)          \
  X(LaunchFailed)              \
  X(BufferFreed)               \
  X(InvalidHandle)             \
  X(DeviceError)               \
  X(ArgumentError)

enum class ErrorKind {
#define GOMPUTE_ERROR_KIND_ENUMERATOR(name) name,
  GOMPUTE_ERROR_KINDS(GOMPUTE_ERROR_KIND_ENUMERATOR)
#undef GOMPUTE_ERROR_KIND_ENUMERATOR
};

// The kinds' names in enum order: the Python class each kind is raised as.
inline constexpr const char* kErrorKindNames[] = {
#define GOMPUTE_ERROR_KIND_NAME(name) #name,
    GOMPUTE_ERROR_KINDS(GOMPUTE_ERROR_KIND_NAME)
#undef GOMPUTE_ERROR_KIND_NAME
};

inline const char* error_kind_name(ErrorKind kind) { return kErrorKindNames[static_cast<int>(kind)]; }

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
