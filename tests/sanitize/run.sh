#!/usr/bin/env bash
# pytest against the sanitized core that `make sanitize` builds (GOMPUTE_SANITIZE in CMakeLists.txt):
#   tests/sanitize/run.sh BUILD PYTHON [pytest arguments]
# BUILD is the core's CMake build folder, PYTHON the test environment's interpreter. Every Python
# process of the run imports that core (sitecustomize.py here); leaks are checked in each.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
python=$2
shift 2

# The interpreter is not sanitized, so the runtime of the compiler that built the core is preloaded,
# and libstdc++ after it: ASan finds the C++ runtime's exception entry points only if it is loaded.
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
preload="$("$cxx" -print-file-name=libasan.so) $("$cxx" -print-file-name=libstdc++.so)"

# Compilers run without the preload: they are not what is checked, and they leak by design.
mkdir -p "$build/bin"
for name in c++ g++ clang++; do
  real=$(command -v "$name") || continue
  [ "$real" = "$build/bin/$name" ] && continue
  printf '#!/bin/sh\nunset LD_PRELOAD\nexec %s "$@"\n' "$real" > "$build/bin/$name"
  chmod +x "$build/bin/$name"
done

# ASan's dlopen stands in for its caller's, whose RUNPATH is then not searched: NVRTC would not find
# the builtins library beside it.
nvrtc=$("$python" -c 'import os; from cuda import pathfinder
print(os.path.dirname(pathfinder.load_nvidia_dynamic_lib("nvrtc").abs_path))' 2>/dev/null || true)

export LD_PRELOAD="$preload" PYTHONPATH="$here" GOMPUTE_SANITIZED_BUILD="$build" PATH="$build/bin:$PATH"
export LD_LIBRARY_PATH="$nvrtc${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Python's objects on the heap, where LeakSanitizer looks for the pointers they hold: pymalloc's
# arenas are not scanned, so what only they point to would be reported as leaked.
export PYTHONMALLOC=malloc
# intercept_tls_get_addr=0: LeakSanitizer's scan of dynamic TLS crashes in these processes.
# allocator_may_return_null=1: an allocation too large fails as the tests expect, not as a report.
export ASAN_OPTIONS=detect_leaks=1:intercept_tls_get_addr=0:allocator_may_return_null=1
export LSAN_OPTIONS="suppressions=$here/lsan.supp"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# --capture=sys: a sanitizer's report, written as the process dies, reaches the terminal.
exec "$python" -m pytest --capture=sys "$@"
