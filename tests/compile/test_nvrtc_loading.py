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
        pytest.skip("no NVRTC on this machine (pip install 'gompute[cuda13]')")
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
    with pytest.raises(CompileError, match=r"/nonexistent/libnvrtc.so.*gompute\[cuda12\]' or 'gompute\[cuda13\]'"):
        fresh_load()


class _Found:
    """A stand-in for a loaded NVRTC: only its version matters to `choose`."""

    def __init__(self, version, looked_at):
        self.version = version
        looked_at.append(version)


def _found(versions, looked_at):
    return (_Found(v, looked_at) for v in versions)


@pytest.mark.parametrize(
    "versions, driver, chosen, looked_at",
    [
        ([(13, 0), (12, 9)], 12080, (12, 9), 2),  # a 12.8 driver cannot load CUDA 13's output
        ([(12, 9), (13, 0)], 13000, (12, 9), 1),  # the first that fits; the rest are not loaded
        ([(12, 9)], 12040, (12, 9), 1),  # minor versions aside: a CUBIN from 12.9 loads on 12.4
        ([(13, 0), (13, 5)], 12080, (13, 0), 2),  # none fits: the first (load() warns)
        ([(13, 5)], None, (13, 5), 1),  # no driver (compiling for elsewhere): the first
        ([], 12080, None, 0),
    ],
)
def test_the_nvrtc_chosen_is_the_first_the_driver_can_load(versions, driver, chosen, looked_at):
    seen = []
    found = nvrtc.choose(_found(versions, seen), driver)
    assert (found.version if found else None) == chosen
    assert len(seen) == looked_at


def test_load_passes_the_installed_drivers_version(fresh_load, monkeypatch):
    if not nvrtc.available():
        pytest.skip("no NVRTC on this machine (pip install 'gompute[cuda13]')")
    nvrtc.load.cache_clear()
    monkeypatch.delenv("GOMPUTE_LIBNVRTC", raising=False)
    asked = []
    monkeypatch.setattr(nvrtc, "_cuda_driver_version", lambda: 99000)
    monkeypatch.setattr(nvrtc, "choose", lambda found, driver: asked.append(driver) or next(iter(found)))
    assert fresh_load().version >= (11, 0) and asked == [99000]


def test_an_nvrtc_newer_than_the_driver_is_used_with_a_warning_naming_the_fix(fresh_load, monkeypatch):
    monkeypatch.delenv("GOMPUTE_LIBNVRTC", raising=False)
    newer = _Found((13, 0), [])
    newer.path = "/somewhere/libnvrtc.so.13"
    monkeypatch.setattr(nvrtc, "_candidates", lambda tried: iter([newer]))
    monkeypatch.setattr(nvrtc, "_cuda_driver_version", lambda: 12080)
    with pytest.warns(UserWarning, match=r"CUDA 12\.8 driver: NVRTC 13\.0 .*gompute\[cuda12\].*GOMPUTE_LIBNVRTC"):
        assert fresh_load() is newer


def test_pytorchs_and_condas_libraries_are_looked_for(monkeypatch, tmp_path):
    site_packages, conda = tmp_path / "site-packages", tmp_path / "conda"
    (site_packages / "torch" / "lib").mkdir(parents=True)
    (conda / "lib").mkdir(parents=True)
    torchs = site_packages / "torch" / "lib" / "libnvrtc-1a2b3c4d.so.12"
    condas = conda / "lib" / "libnvrtc.so.12"
    for library in (torchs, condas, site_packages / "torch" / "lib" / "libnvrtc-builtins.so.12"):
        library.touch()
    monkeypatch.setattr(nvrtc.site, "getsitepackages", lambda: [str(site_packages)])
    monkeypatch.setattr(nvrtc.site, "getusersitepackages", lambda: str(tmp_path / "nothing"))
    monkeypatch.setenv("CONDA_PREFIX", str(conda))
    found = nvrtc._fallback_paths()
    assert found[:2] == [str(torchs), str(condas)] and not any("builtins" in p for p in found)
