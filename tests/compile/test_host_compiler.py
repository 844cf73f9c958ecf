"""Finding the host C++ compiler, what goes into its cache key, and its failures."""

from __future__ import annotations

import re
import shutil
import stat

import numpy as np
import pytest

import gompute as g
from gompute.compile import DiskCache, host
from gompute.errors import CompileError

SOURCE = '#include "gompute/host_launch.h"\nGOMPUTE_HOST_KERNEL(noop) { (void)launch; }\n'


@pytest.fixture
def logging_cxx(tmp_path):
    """A $CXX that records each call and hands it to the real compiler."""
    real = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if real is None:
        pytest.skip("no C++ compiler on PATH")
    log = tmp_path / "calls.log"
    wrapper = tmp_path / "logging-c++"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {real} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    return wrapper, log


def test_cxx_is_used_first_and_is_part_of_the_key(tmp_path, monkeypatch, logging_cxx):
    wrapper, log = logging_cxx
    monkeypatch.setenv("CXX", str(wrapper))
    compiler = host.find_compiler()
    assert compiler.command == (str(wrapper),) and compiler.version and compiler.target_cpu
    data, entry = host.compile_shared_object("noop", SOURCE, DiskCache(tmp_path))
    assert data[:4] == b"\x7fELF" and (entry / "source.cpp").read_text() == SOURCE
    call = log.read_text().splitlines()[-1]
    for flag in ("-O3", "-march=native", "-shared", "-fPIC", "-fvisibility=hidden"):
        assert flag in call.split()
    monkeypatch.delenv("CXX")
    _, other = host.compile_shared_object("noop", SOURCE, DiskCache(tmp_path))
    assert other != entry  # another compiler identity, another entry


def test_gcc_only_options_go_to_gcc_only():
    gcc = host.HostCompiler(("g++",), "g++ (Debian 12.2.0-14+deb12u1) 12.2.0", "cooperlake")
    clang = host.HostCompiler(("zig", "c++"), "clang version 22.1.8", "sapphirerapids")
    assert set(host.GCC_FLAGS) <= set(gcc.flags)  # Clang refuses -fno-split-loops
    assert not set(host.GCC_FLAGS) & set(clang.flags) and set(host.FLAGS) <= set(clang.flags)
    assert clang.partitioned_flags() == ()  # -flto-partition is GCC's


def _compiles(log) -> list[list[str]]:
    """The logged compiler calls that built a cached module (not the probes)."""
    return [line.split() for line in log.read_text().splitlines() if "source.cpp" in line]


def test_a_reductions_module_compiles_in_partitions_and_a_maps_does_not(tmp_path, monkeypatch, logging_cxx):
    """A reduction's loops take seconds to optimize: GCC compiles them a function a partition, on
    every core; a map module's three entries compile as one. The cache's folder is named with both
    kinds of quote, which the partitions' makefile once could not take."""
    wrapper, log = logging_cxx
    monkeypatch.setenv("CXX", str(wrapper))
    monkeypatch.setenv("GOMPUTE_CACHE_DIR", str(tmp_path / 'it\'s a "cache"'))
    if not host.find_compiler().partitioned_flags():
        pytest.skip(f"{host.find_compiler().version} does not link in partitions")

    @g.map_kernel
    def twice(x: g.f32) -> g.f32:
        return x * 2

    @g.reduce_kernel(identity=0)
    def squares(x: g.f32) -> g.f32:
        return x * x

    x = np.arange(10, dtype=np.float32)
    assert np.array_equal(g.map(twice)(x), x * 2) and g.reduce(squares)(x) == (x * x).sum()
    (map_call, reduce_call) = _compiles(log)
    assert not any(flag.startswith("-flto") for flag in map_call)
    assert set(host.PARTITIONED_GCC_FLAGS) <= set(reduce_call)


def test_a_gcc_without_link_time_optimization_compiles_a_reduction_whole(tmp_path, monkeypatch, logging_cxx):
    wrapper, log = logging_cxx
    refusing = tmp_path / "no-lto-c++"
    refusing.write_text(f'#!/bin/sh\ncase "$*" in *-flto*) exit 1;; esac\nexec {wrapper} "$@"\n')
    refusing.chmod(refusing.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("CXX", str(refusing))
    compiler = host.find_compiler()
    assert compiler.partitioned_flags() == ()
    data, _ = host.compile_shared_object("noop", SOURCE, DiskCache(tmp_path), partitioned=True)
    assert data[:4] == b"\x7fELF" and not any(flag.startswith("-flto") for flag in _compiles(log)[-1])


def test_a_missing_cxx_falls_back_to_the_system_compiler_and_says_so(monkeypatch):
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    with pytest.warns(UserWarning, match=r"\$CXX \(/nonexistent/c\+\+\) cannot be run.*unset CXX"):
        assert host.find_compiler().command[0] != "/nonexistent/c++"


def test_a_blank_cxx_is_unset(monkeypatch):
    monkeypatch.setenv("CXX", "  ")
    blank = host.find_compiler()
    monkeypatch.delenv("CXX")
    assert blank.command == host.find_compiler().command


def test_a_march_of_cxxs_own_replaces_native(monkeypatch, logging_cxx, tmp_path):
    wrapper, log = logging_cxx
    monkeypatch.setenv("CXX", f"{wrapper} -march=x86-64-v2")
    compiler = host.find_compiler()
    assert "-march=native" not in compiler.flags
    host.compile_shared_object("noop", SOURCE, DiskCache(tmp_path))
    call = log.read_text().splitlines()[-1].split()
    assert "-march=x86-64-v2" in call and "-march=native" not in call
    assert compiler.target_cpu.startswith("x86-64-v2") or "clang" in compiler.version.lower()


def _fake_compiler(tmp_path, name: str, output: str):
    """A 'compiler' that prints `output` for every call but --version."""
    script = tmp_path / name
    (tmp_path / f"{name}.out").write_text(output)
    script.write_text(f'#!/bin/sh\n[ "$1" = --version ] && {{ echo "fake 1.0"; exit 0; }}\ncat {tmp_path}/{name}.out\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return (str(script),)


def test_two_cpus_gcc_names_alike_are_two_targets(tmp_path):
    """GCC 12 names a CPU with AVX-512 and one without it both znver3: the target key is the name
    and every -m option it turns on, so a cache shared by the two keeps their builds apart."""
    help_text = "The following options are target specific:\n  -march=  \t\tznver3\n  -mavx2  \t\t[enabled]\n"
    zen4 = host._target_cpu(_fake_compiler(tmp_path, "zen4", help_text + "  -mavx512f \t\t[enabled]\n"))
    zen3 = host._target_cpu(_fake_compiler(tmp_path, "zen3", help_text + "  -mavx512f \t\t[disabled]\n"))
    assert zen4.startswith("znver3-") and zen3.startswith("znver3-") and zen4 != zen3


def test_clangs_target_is_the_last_cpu_of_its_command_line(tmp_path):
    """zig c++ passes -target-cpu twice, x86-64 and then the CPU it builds for."""
    line = ' "clang" "-cc1" "-target-cpu" "x86-64" "-target-feature" "+avx2" "-target-cpu" "znver4" "-x" "c++"\n'
    assert host._target_cpu(_fake_compiler(tmp_path, "zig", line)).startswith("znver4-")


def test_no_compiler_at_all_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(host.importlib.util, "find_spec", lambda name: None)  # and no ziglang wheel
    with pytest.raises(CompileError, match="apt install g\\+\\+.*pip install ziglang"):
        host.find_compiler()


def test_compiler_failure_carries_the_log_and_keeps_the_source(tmp_path):
    with pytest.raises(CompileError) as info:
        host.compile_shared_object("broken", SOURCE + "this is not C++;\n", DiskCache(tmp_path))
    message = str(info.value)
    assert isinstance(info.value, g.SourceRejected)
    assert "the host C++ compiler failed" in message and "this is not C++" in message
    assert "gompute bug" not in message  # the source may be the user's (g.RawKernel)
    path = re.search(r"source: (\S+)", message).group(1)
    assert open(path).read().endswith("this is not C++;\n") and "/failed/" in path


def test_target_cpu_is_what_march_native_means():
    cpu = host.find_compiler().target_cpu
    assert cpu and " " not in cpu


def test_a_raw_kernels_bad_source_is_the_users_and_generated_code_that_fails_is_gomputes(monkeypatch):
    with pytest.raises(g.SourceRejected) as raw:
        g.RawKernel(SOURCE + "this is not C++;\n", "broken_raw", backend=g.Backend.host)
    assert "gompute bug" not in str(raw.value) and "this is not C++" in str(raw.value)

    from gompute.lang import kernel as lang_kernel
    from tests.map.kernels import double

    monkeypatch.setattr(lang_kernel, "module_source", lambda specs, backend: "this is not C++ either;\n")
    with pytest.raises(g.SourceRejected, match="gompute generated code that does not compile .a gompute bug") as ours:
        lang_kernel.compile_module([double.specialize(g.f32)], "host", None, "broken_generated")
    assert ours.value.source_dir is not None and "this is not C++ either" in str(ours.value)
