# The two commands a new user needs, each doing its own set-up:
#   make demo   probe the backends and run a kernel by hand
#   make test   the test suite
# Both build a virtual environment in .venv (PYTHON picks the interpreter).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.gompute-installed
SOURCES := pyproject.toml CMakeLists.txt $(wildcard csrc/*) $(wildcard gompute/include/gompute/*)

.PHONY: demo test info bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Build dependencies go in first so the in-place editable build can run without isolation.
$(STAMP): $(PY) $(SOURCES)
	$(PY) -m pip install --quiet "scikit-build-core>=0.10" "pybind11>=2.12"
	$(PY) -m pip install --quiet --no-build-isolation -e ".[test]"
	touch $@

demo: $(STAMP)
	$(PY) -m gompute demo

info: $(STAMP)
	$(PY) -m gompute info

test: $(STAMP)
	$(PY) -m pytest -q

clean:
	rm -rf build $(VENV) gompute/_core*.so
