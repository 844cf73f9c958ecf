"""Finding NVRTC: cuda-pathfinder first, then the libraries wheels and toolkits ship."""

from __future__ import annotations

import sys

import pytest

from gompute import CompileError
from gompute.compile import nvrtc


@pytest.fixture
def fresh_load():
    nvrtc.load.cache_clear()
    yield nvrtc.load
    nvrtc.load.cache_clear()


def test_without_cuda_pathfinder_the_wheels_library_is_found(fresh_load, monkeypatch):
    if not nvrtc.available():
        pytest.skip("no NVRTC on this machine (pip install nvidia-cuda-nvrtc)")
    nvrtc.load.cache_clear()
    monkeypatch.setitem(sys.modules, "cuda", None)  # `from cuda import pathfinder` raises ImportError
    monkeypatch.delenv("GOMPUTE_LIBNVRTC", raising=False)
    lib = fresh_load()
    assert "libnvrtc" in lib.path and lib.version >= (11, 0)


def test_an_override_that_does_not_load_says_where(fresh_load, monkeypatch, tmp_path):
    missing = tmp_path / "libnvrtc.so"
    monkeypatch.setenv("GOMPUTE_LIBNVRTC", str(missing))
    with pytest.raises(CompileError, match=f"{missing}.*GOMPUTE_LIBNVRTC"):
        fresh_load()


def test_nothing_found_says_what_to_install(fresh_load, monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda", None)
    monkeypatch.delenv("GOMPUTE_LIBNVRTC", raising=False)
    monkeypatch.setattr(nvrtc, "_fallback_paths", lambda: ["/nonexistent/libnvrtc.so"])
    with pytest.raises(
        CompileError, match=r"gompute\[cuda\].*/nonexistent/libnvrtc.so|/nonexistent/libnvrtc.so.*gompute\[cuda\]"
    ):
        fresh_load()
