// Opening a vendor library at first use, so gompute needs no vendor SDK to build
// and `import gompute` works on any machine.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace gompute {

class DynamicLibrary {
 public:
  DynamicLibrary() = default;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  // Library handles of vendor drivers stay open until process exit: unloading a GPU
  // driver while its own threads run is unsafe, and the OS reclaims it anyway.
  ~DynamicLibrary() = default;

  // Opens the library named by the environment variable `override_env` if it is set,
  // else the first of `names` that loads. Returns false and fills `why` on failure.
  bool open(const char* override_env, const std::vector<std::string>& names, std::string* why) {
    std::vector<std::string> tried;
    if (const char* path = std::getenv(override_env); path && *path) {
      tried.push_back(std::string(path) + " (from " + override_env + ")");
      handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (!handle_) return failed(why, tried, dlerror());
    } else {
      std::string last;
      for (const auto& name : names) {
        tried.push_back(name);
        handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle_) break;
        last = dlerror();
      }
      if (!handle_) return failed(why, tried, last);
    }
    path_ = tried.back();
    return true;
  }

  template <typename Fn>
  Fn symbol(const char* name) const {
    return reinterpret_cast<Fn>(dlsym(handle_, name));
  }

  const std::string& path() const { return path_; }

 private:
  static bool failed(std::string* why, const std::vector<std::string>& tried, const std::string& detail) {
    std::string names;
    for (const auto& t : tried) names += (names.empty() ? "" : ", ") + t;
    *why = "library not found (tried " + names + "): " + detail;
    return false;
  }

  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace gompute
