"""Producers that lie or are malformed: g.map and g.asbuffer end in a gompute error naming the
array and what is wrong with it, on the general path and the C++ fast path, never a crash.

Each case that once crashed the interpreter runs in a child process (hostile.in_child), so a
regression fails its test rather than killing pytest. The CUDA cases run where CUDA is
present: the fake libcuda in `make test`'s second pass (GOMPUTE_LIBCUDA), or a GPU.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import gompute as g
from gompute.kernel import AutoKernel
from tests.conftest import open_compute
from tests.fakes import images
from tests.map.kernels import double

from .hostile import CaiArray, HostInterface, in_child

# The child's start: x and y, f32 arrays of 4 elements, and `taught`, a g.map of `double` whose
# C++ path takes calls like taught(x, out=y) once it has made one. On CUDA, x and y are device
# Buffers, `out` a CUDA-interface array over y, and the fake's modules load.
IMPORTS = """
import numpy as np
import gompute as g
from gompute.kernel import AutoKernel
from tests.interop.hostile import CaiArray, FreshDlpack, HostInterface, cai_of, outcome
from tests.map.kernels import double
"""
HOST_PRELUDE = (
    IMPORTS
    + """
x = np.arange(4, dtype=np.float32)
y = np.empty_like(x)
taught = AutoKernel(double)
taught(x, out=y)
"""
)
CUDA_PRELUDE = (
    IMPORTS
    + """
import contextlib
from tests.fakes import images
cuda = g.runtime.cuda.Compute.init()
loading = images.host_images() if images.is_fake(cuda) else contextlib.nullcontext()
loading.__enter__()  # for the child's life
x = cuda.empty((4,), g.f32)
x.upload(np.arange(4, dtype=np.float32))
y = cuda.empty((4,), g.f32)
taught = AutoKernel(double)
out = CaiArray(cai_of(y))
taught(CaiArray(cai_of(x)), out=out)
"""
)


@pytest.fixture
def cuda_present():
    """Skips unless a CUDA device (or the fake driver) answers in this process."""
    open_compute(g.Backend.cuda).deinit()


NULL_WITH_ELEMENTS = "its DLPack data pointer is NULL (0), but it has 4 elements"


def test_dlpack_null_data_with_elements_is_refused_on_both_paths():
    lines = in_child(
        HOST_PRELUDE
        + """
print(outcome(lambda: taught(FreshDlpack(x, data=None), out=y)))  # the C++ path must decline it
print(outcome(lambda: AutoKernel(double)(FreshDlpack(x, data=None))))  # the general path alone
print(outcome(lambda: g.asbuffer(FreshDlpack(x, data=None, byte_offset=16))))  # NULL + offset is no address
"""
    )
    assert len(lines) == 3
    for line in lines:
        assert line.startswith("ArgumentError: the tests.FreshDlpack: ")
        assert NULL_WITH_ELEMENTS in line


def test_dlpack_null_data_without_elements_is_an_empty_array():
    lines = in_child(
        HOST_PRELUDE
        + """
empty = np.empty((0, 3), dtype=np.float32)
taught = AutoKernel(double)
taught(empty, out=np.empty_like(empty))
out = np.empty_like(empty)
print(taught(FreshDlpack(empty, data=None), out=out) is out, AutoKernel(double)(FreshDlpack(empty, data=None)).shape)
"""
    )
    assert lines == ["True (0, 3)"]


def test_cuda_array_interface_null_data_with_elements_is_refused_on_both_paths(cuda_present):
    lines = in_child(
        CUDA_PRELUDE
        + """
print(outcome(lambda: taught(CaiArray(cai_of(x, data=(0, False))), out=out)))
print(outcome(lambda: AutoKernel(double)(CaiArray(cai_of(x, data=(0, False))), out=out)))
empty = cuda.empty((0,), g.f32)
print(AutoKernel(double)(CaiArray(cai_of(empty, data=(0, False))), out=CaiArray(cai_of(empty))) is not None)
cuda.synchronize()
"""
    )
    refused = (
        "ArgumentError: the tests.CaiArray: its data pointer is NULL (0), but it has 4 elements; "
        "an array with elements must give the address of its memory"
    )
    assert lines[:2] == [refused, refused]
    assert lines[2] == "True"


@pytest.mark.parametrize("ndim", [-1, -(2**31), 65, 2**30])
def test_dlpack_ndim_out_of_range_is_refused_on_both_paths(ndim):
    lines = in_child(
        HOST_PRELUDE
        + f"""
print(outcome(lambda: taught(FreshDlpack(x, ndim={ndim}), out=y)))
print(outcome(lambda: g.asbuffer(FreshDlpack(x, ndim={ndim}))))
"""
    )
    refused = (
        f"ArgumentError: the tests.FreshDlpack: its DLPack ndim is {ndim}; gompute reads arrays of 0 to 64 dimensions"
    )
    assert lines == [refused, refused]


def test_dlpack_shape_pointer_null_is_refused_on_both_paths():
    lines = in_child(
        HOST_PRELUDE
        + """
print(outcome(lambda: taught(FreshDlpack(x, shape=None), out=y)))
print(outcome(lambda: g.asbuffer(FreshDlpack(x, shape=None))))
"""
    )
    refused = "ArgumentError: the tests.FreshDlpack: its DLPack shape pointer is NULL, with ndim 1"
    assert lines == [refused, refused]


def _interface(array, **changes) -> dict:
    interface = dict(array.__array_interface__)
    interface.update(changes)
    return interface


ARRAY_INTERFACE_MALFORMED = "HostInterface: its __array_interface__ is malformed ("


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"data": (0, False)}, "ValueError: data is NULL but array contains data"),
        ({"typestr": "zz9"}, "TypeError: 'typestr' is 'zz9', which is no NumPy type string"),
        ({"typestr": 5}, "TypeError: 'typestr' is 5, which is no NumPy type string"),
    ],
    ids=["null-data", "typestr-zz9", "typestr-int"],
)
def test_array_interface_fields_numpy_refuses_are_named(changes, problem):
    x = np.arange(4, dtype=np.float32)
    array = HostInterface(_interface(x, **changes), keep=x)
    for call in (lambda: g.asbuffer(array), lambda: g.map(double)(array)):
        with pytest.raises(g.ArgumentError) as raised:
            call()
        assert ARRAY_INTERFACE_MALFORMED + problem in str(raised.value)


def test_array_interface_that_is_not_a_dict_is_refused():
    with pytest.raises(g.ArgumentError) as raised:
        g.asbuffer(HostInterface([4, "<f4"]))
    assert ARRAY_INTERFACE_MALFORMED + "TypeError: a list, not a dict)" in str(raised.value)


def test_array_interface_with_a_type_gompute_lacks_says_so():
    z = np.zeros(4, "datetime64[s]")
    with pytest.raises(g.ArgumentError, match=r"datetime64\[s\] has no gompute type"):
        g.asbuffer(HostInterface(_interface(z), keep=z))


def test_array_interface_null_data_without_elements_is_an_empty_array():
    empty = np.empty(0, np.float32)
    assert g.map(double)(HostInterface(_interface(empty, data=(0, False)))).shape == (0,)


# ---- __cuda_array_interface__ ------------------------------------------------------------------


def test_cuda_array_interface_that_is_not_a_dict_is_refused():
    for interface in ([4, "<f4"], "shape=(4,)", (("shape", (4,)),)):
        with pytest.raises(g.ArgumentError) as raised:
            g.asbuffer(CaiArray(interface))
        kind = type(interface).__name__
        assert f"CaiArray: its __cuda_array_interface__ is malformed (TypeError: a {kind}, not a dict)" in str(
            raised.value
        )


@pytest.mark.parametrize("version", [0, 1, 4, 99, -3])
def test_cuda_array_interface_version_gompute_does_not_read_is_refused(version):
    interface = {"shape": (4,), "typestr": "<f4", "data": (4096, False), "version": version, "stream": 1}
    with pytest.raises(g.ArgumentError) as raised:
        g.asbuffer(CaiArray(interface))
    assert f"__cuda_array_interface__ version {version} is not one gompute reads (2 and 3)" in str(raised.value)


def test_cuda_array_interface_version_99_is_refused_on_the_fast_path_too(cuda_present):
    lines = in_child(
        CUDA_PRELUDE
        + """
print(outcome(lambda: taught(CaiArray(cai_of(x, version=99)), out=out)))
cuda.synchronize()
"""
    )
    assert lines == [
        "ArgumentError: the tests.CaiArray: __cuda_array_interface__ version 99 is not one gompute reads (2 and 3)"
    ]


@pytest.mark.parametrize("stream", ["'abc'", "-5", "2**64", "True", "1.5"])
def test_cuda_array_interface_stream_that_is_no_handle_is_named(stream):
    interface = {"shape": (4,), "typestr": "<f4", "data": (4096, False), "version": 3, "stream": eval(stream)}
    with pytest.raises(g.ArgumentError) as raised:
        g.asbuffer(CaiArray(interface))
    given = repr(interface["stream"])
    assert f"CaiArray: its __cuda_array_interface__ 'stream' is {given}, not a stream handle; " in str(raised.value)


@pytest.fixture
def fake_cuda():
    """Skips unless CUDA here is the fake driver, which refuses any handle it did not make."""
    compute = open_compute(g.Backend.cuda)
    fake = images.is_fake(compute)
    compute.deinit()
    if not fake:
        pytest.skip("a real driver may read through a handle that is no stream, and crash; the fake refuses it")


def test_cuda_array_interface_stream_the_driver_does_not_know_is_named_on_both_paths(fake_cuda):
    lines = in_child(
        CUDA_PRELUDE
        + """
print(outcome(lambda: AutoKernel(double)(CaiArray(cai_of(x, stream=12345678)), out=CaiArray(cai_of(y)))))
print(outcome(lambda: taught(CaiArray(cai_of(x, stream=12345678)), out=CaiArray(cai_of(y, stream=12345678)))))
cuda.synchronize()
"""
    )
    assert lines[0].startswith(
        "ArgumentError: the tests.CaiArray: its __cuda_array_interface__ 'stream' is 12345678, which is no stream "
        "of cuda:0 ("
    )
    assert lines[1].startswith("LaunchFailed: cuLaunchKernel: ")
    assert lines[1].endswith(
        ": the arrays' stream 12345678 (a __cuda_array_interface__ 'stream', a Buffer's, or torch's current one) "
        "is no stream of cuda:0"
    )


# ---- arrays on different devices ---------------------------------------------------------------


@pytest.fixture
def cuda():
    """A CUDA Compute whose g.map modules load (host images on the fake driver); skips without CUDA."""
    compute = open_compute(g.Backend.cuda)
    with images.host_images() if images.is_fake(compute) else contextlib.nullcontext():
        yield compute
    compute.deinit()


def test_out_on_cuda_with_inputs_on_the_host_asks_to_move_the_inputs(cuda):
    x = np.arange(4, dtype=np.float32)
    k = AutoKernel(double)
    k(x, out=np.empty_like(x))  # the C++ path takes host calls now, and declines this one
    with pytest.raises(g.ArgumentError) as raised:
        k(x, out=cuda.empty((4,), g.f32))
    assert (
        "double: the numpy.ndarray ((4,), float32) is on host:0, but the call runs on cuda:0; move it there first"
        in (str(raised.value))
    )


def test_out_on_the_host_with_inputs_on_cuda_asks_to_move_out(cuda):
    x = cuda.empty((4,), g.f32)
    with pytest.raises(g.ArgumentError) as raised:
        AutoKernel(double)(x, out=np.empty(4, np.float32))
    assert "the numpy.ndarray ((4,), float32) is on host:0, but the call runs on cuda:0; move it there first" in (
        str(raised.value)
    )


# ---- results -----------------------------------------------------------------------------------


def test_a_result_too_large_to_allocate_is_alloc_failed_on_both_paths():
    # 2**58 bytes: past any machine's address space, so no allocator (overcommitting or not) gives it.
    huge = np.broadcast_to(np.float32(1), (2**28, 2**28))
    taught = AutoKernel(double)
    taught(np.ones((2, 2), np.float32))  # the C++ path makes NumPy f32 results now, and lets this one fall through
    for k in (taught, AutoKernel(double)):
        with pytest.raises(g.AllocFailed) as raised:
            k(huge)
        assert str(raised.value).startswith(
            f"the call's result (float32, shape (268435456, 268435456), {2**58} bytes) cannot be allocated: "
        )
