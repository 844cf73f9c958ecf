// What the GPU drivers (driver_cuda.cpp, driver_hip.cpp) share: the vendor library opened
// once, at first use, and its entry points resolved by name; the reason it cannot be used,
// kept and raised by every later call; each call's result checked and reported with the
// vendor's symbolic error name. A vendor file holds only its translation: its entry points,
// how it initializes, and one override per driver call.
#pragma once

#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "driver.h"
#include "dynlib.h"

namespace gompute {

class GpuDriver : public Driver {
 public:
  void ensure_loaded() final {
    std::call_once(loaded_, [this] { load(); });
    if (!unavailable_.empty()) throw Error(ErrorKind::BackendUnavailable, vendor_ + " is unavailable: " + unavailable_);
  }

  int driver_version() final { return version_; }

 protected:
  // CUDA_SUCCESS and hipSuccess: both APIs report success as 0 and a failure as its code.
  static constexpr int kSuccess = 0;

  // `vendor` names it in messages ("CUDA"); `library_env` names the variable that overrides
  // the library's path, else the first of `library_names` that loads is used.
  GpuDriver(std::string vendor, const char* library_env, std::vector<std::string> library_names)
      : vendor_(std::move(vendor)), library_env_(library_env), library_names_(std::move(library_names)) {}

  // Fills the vendor's table with need() (and lib_.symbol() for optional entry points),
  // the driver's init call first: a library without it is not this vendor's driver at all,
  // one without a later entry point is a driver too old.
  virtual void resolve() = 0;
  // Runs once the table is complete: initializes the driver and sets version_; returns why
  // the backend cannot be used (too old, no device), or "" when it can.
  virtual std::string initialize() = 0;
  virtual std::string error_name(int result) const = 0;
  virtual std::string error_text(int result) const = 0;

  // Resolves a required entry point; a missing one makes the backend unavailable.
  template <typename Fn>
  void need(Fn& slot, const char* name) {
    slot = lib_.symbol<std::remove_reference_t<Fn>>(name);
    if (!slot) {
      missing_ += (missing_.empty() ? "" : ", ") + std::string(name);
      lacks_first_ = lacks_first_ || first_;
    }
    first_ = false;
  }

  void check(int result, const char* call, ErrorKind kind = ErrorKind::DeviceError) const {
    if (result != kSuccess) fail(kind, error_name(result), std::string(call) + ": " + error_text(result));
  }

  DynamicLibrary lib_;
  int version_ = 0;

 private:
  void load() {
    if (!lib_.open(library_env_, library_names_, &unavailable_)) return;
    resolve();
    if (!missing_.empty()) {
      unavailable_ = (lacks_first_ ? "not a " + vendor_ + " driver: " : std::string("driver too old: ")) + lib_.path() +
                     " lacks " + missing_;
      return;
    }
    unavailable_ = initialize();
  }

  const std::string vendor_;
  const char* const library_env_;
  const std::vector<std::string> library_names_;
  std::once_flag loaded_;
  std::string unavailable_;
  std::string missing_;
  bool first_ = true, lacks_first_ = false;
};

}  // namespace gompute
