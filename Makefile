# The two commands a new user needs, each doing its own set-up:
#   make demo   gompute and NumPy only, then `gompute demo`
#   make test   the test tools, PyTorch and JAX too, then the test suite
#   make bench  the benchmarks (tables and plots under benchmarks/results/)
#   make sanitize  the runtime, interop and g.map tests against a core built with ASan and UBSan
#   make soak   benchmarks/soak.py: long runs of the repeated paths, memory printed as they go
# All share one virtual environment in .venv (PYTHON picks the interpreter): `make demo` installs
# what gompute needs to run, `make test` adds what the tests need.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.gompute-installed
TEST_STAMP := $(VENV)/.gompute-test
SOURCES := Makefile pyproject.toml CMakeLists.txt $(wildcard csrc/*) $(wildcard gompute/include/gompute/*)

.PHONY: demo test info bench gpu-wheels sanitize soak clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# gompute itself, editable, with its run-time requirements: all that `make demo` needs. Build
# dependencies go in first so the editable build can run without isolation (and so rebuilds after a
# C++ change are incremental, in build/).
$(STAMP): $(PY) $(SOURCES)
	$(PY) -m pip install --quiet "scikit-build-core>=0.10" "pybind11>=2.12"
	$(PY) -m pip install --quiet --no-build-isolation -e .
	touch $@

# Frameworks the interop tests exercise when present (they skip without them). On this
# project's machines torch 2.13.0 is a CPU build on local disk, and JAX's CPU wheels take
# seconds; `make test TEST_FRAMEWORKS=` skips them elsewhere.
TEST_FRAMEWORKS ?= torch==2.13.0 jax==0.10.2

# The test extra on top: pip reinstalls the editable gompute, an incremental build with nothing to do.
$(TEST_STAMP): $(STAMP)
	$(PY) -m pip install --quiet --no-build-isolation -e ".[test]" $(TEST_FRAMEWORKS)
	touch $@

demo: $(STAMP)
	$(PY) -m gompute demo

info: $(STAMP)
	$(PY) -m gompute info

# The CUDA adapter against tests/fakes/fake_libcuda.cpp, a stand-in for the driver over
# host memory: the runtime and interop suites run again with cuda as a present backend.
FAKE_CUDA := build/fake-cuda/libcuda.so
$(FAKE_CUDA): tests/fakes/fake_libcuda.cpp tests/fakes/fake_device_memory.h gompute/include/gompute/host_launch.h
	mkdir -p $(dir $@)
	$(CXX) -std=c++17 -O1 -shared -fPIC -fvisibility=hidden -Igompute/include $< -o $@ -ldl

# One pytest worker a core (pytest-xdist), each taking whole files, so that a module's fixtures
# (the compiled walks of every builtin) are built once. TEST_WORKERS=0 runs in this process.
TEST_WORKERS ?= auto
PYTEST := $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

# The stand-in driver's pass runs a block's threads a warp at a time, warps in a scattered order
# (tests/fakes/cuda_shim.h, FAKE_CUDA_TURNS); the host pass runs the GPU text in the default order.
test: $(TEST_STAMP) $(FAKE_CUDA)
	$(PYTEST)
	GOMPUTE_LIBCUDA=$(abspath $(FAKE_CUDA)) FAKE_CUDA_DEVICES=2 FAKE_CUDA_TURNS=warps-scattered $(PYTEST) tests/runtime tests/interop tests/map/test_gpu_paths.py tests/map/test_gpu_tuning.py tests/map/test_gpu_check.py tests/map/test_gpu_devices.py tests/map/test_torch_cuda_path.py tests/reduce/test_fake_cuda.py tests/reduce/test_reduce_fast_path.py \
	  tests/reduce/test_direct_results.py::test_cuda_rows tests/reduce/test_direct_results.py::test_cuda_columns

BENCH_STAMP := $(VENV)/.gompute-bench
$(BENCH_STAMP): $(TEST_STAMP)
	$(PY) -m pip install --quiet numexpr matplotlib
	touch $@

# BENCH_ARGS=--quick for a few sizes only.
bench: $(BENCH_STAMP)
	MPLBACKEND=Agg $(PY) benchmarks/suite.py $(BENCH_ARGS)

# For a GPU machine without internet (benchmarks/README.md): gompute's run-time requirements
# but numpy, cuda-pathfinder and pytest, as wheels, to copy there beside the working tree (build/
# is not tracked), and the pure-Python exceptiongroup and tomli that pytest needs on Python 3.10.
GPU_WHEELS := build/gpu-wheels
gpu-wheels: $(STAMP)
	$(PY) -m pip download --quiet --only-binary=:all: -d $(GPU_WHEELS) cuda-pathfinder pytest \
	  $$($(PY) -c "from importlib import metadata; print(*(r for r in metadata.requires('gompute') \
	    if 'extra ==' not in r and not r.startswith('numpy')))")
	$(PY) -m pip download --quiet --only-binary=:all: --no-deps --platform any --implementation py \
	  --python-version 3.10 -d $(GPU_WHEELS) exceptiongroup tomli

# The C++ core with ASan and UBSan (GOMPUTE_SANITIZE in CMakeLists.txt), built in a folder of its
# own, and the tests run against it with leaks checked (tests/sanitize/run.sh says how): the
# runtime, interop and g.map suites, then their CUDA tests on the stand-in driver. The RSS tests are
# left out: ASan keeps freed memory a while on purpose, and LeakSanitizer checks for leaks instead.
# -g1: line tables for the reports' stacks, at a fraction of the compile time of full debug info.
ASAN_DIR   := build/asan
ASAN_STAMP := $(ASAN_DIR)/.built
$(ASAN_STAMP): $(TEST_STAMP) $(SOURCES)
	cmake -S . -B $(ASAN_DIR) -DCMAKE_CXX_COMPILER=$(CXX) -DGOMPUTE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS=-O1 -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DPython_EXECUTABLE=$(abspath $(PY)) \
	  -Dpybind11_DIR=$$($(PY) -m pybind11 --cmakedir)
	cmake --build $(ASAN_DIR) --parallel $$(nproc)
	touch $@

SANITIZE_TESTS ?= tests/runtime tests/interop tests/map \
  --deselect tests/interop/test_lifetimes.py::test_100k_dropped_capsules_leak_nothing \
  --deselect tests/interop/test_lifetimes.py::test_capsules_held_then_dropped_together_leak_nothing
# The reductions whose generated loops compute their own addresses (whole vectors across row ends,
# runs of rows, a line's start), with the kernels themselves built with ASan ($CXX
# -fsanitize=address): a read past an array's end fails them.
SANITIZE_KERNEL_TESTS ?= tests/reduce/test_narrow_columns.py tests/reduce/test_row_lengths.py \
  tests/reduce/test_wide_columns.py
sanitize: $(ASAN_STAMP) $(FAKE_CUDA)
	tests/sanitize/run.sh $(ASAN_DIR) $(PY) -q $(SANITIZE_TESTS)
	GOMPUTE_LIBCUDA=$(abspath $(FAKE_CUDA)) FAKE_CUDA_DEVICES=2 tests/sanitize/run.sh $(ASAN_DIR) $(PY) -q -m cuda $(SANITIZE_TESTS)
	CXX="$(CXX) -fsanitize=address -fno-omit-frame-pointer" tests/sanitize/run.sh $(ASAN_DIR) $(PY) -q $(SANITIZE_KERNEL_TESTS)

# SOAK_ARGS="--scale 0.1" for a quick look, "--save" to write benchmarks/results/<date>-soak.md.
soak: $(TEST_STAMP)
	$(PY) benchmarks/soak.py $(SOAK_ARGS)

clean:
	rm -rf build $(VENV) gompute/_core*.so

# A long run of the kernel compiler's differential fuzzing (tests/lang/test_fuzz.py, which
# `make test` runs with a small budget); FUZZ_EXAMPLES sets its length.
FUZZ_EXAMPLES ?= 2000
.PHONY: fuzz
fuzz: $(TEST_STAMP)
	GOMPUTE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q tests/lang/test_fuzz.py
