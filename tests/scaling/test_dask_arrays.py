"""g.map(k) on Dask arrays: a lazy Dask array built with blockwise, run here on Dask's threaded
scheduler."""

import subprocess
import sys

import numpy as np
import pytest

from .conftest import NO_EXTRA, REPO

da = pytest.importorskip("dask.array", reason=NO_EXTRA)

import gompute as g  # noqa: E402 - after the skip
from tests.scaling import kernels  # noqa: E402


def compute(array):
    return array.compute(scheduler="threads")


def test_a_call_with_a_dask_array_is_lazy_and_typed_from_the_signature():
    x = da.from_array(np.linspace(-4, 4, 1000, dtype=np.float32), chunks=128)
    launches = g.runtime.stats()["launches"]
    lazy = g.map(kernels.gain_square)(x, x, gain=2, shift=3)
    assert isinstance(lazy, da.Array) and lazy.chunks == x.chunks
    assert lazy.dtype == np.float32 and type(lazy._meta) is np.ndarray and lazy._meta.dtype == np.float32
    assert g.runtime.stats()["launches"] == launches  # nothing ran, not even on empty arrays
    np.testing.assert_array_equal(compute(lazy), kernels.gain_square_numpy(x, x, 2, 3))


def test_dask_and_numpy_arrays_broadcast_with_chunks_unified():
    a = np.arange(6 * 8, dtype=np.float32).reshape(6, 8)
    x = da.from_array(a, chunks=(2, 3))
    row = da.from_array(np.linspace(0, 1, 8, dtype=np.float32), chunks=5)  # chunked unlike x
    column = np.arange(6, dtype=np.float32).reshape(6, 1)
    np.testing.assert_array_equal(
        compute(g.map(kernels.gain_square)(x, row, gain=0.5, shift=-1)), kernels.gain_square_numpy(a, row, 0.5, -1)
    )
    np.testing.assert_array_equal(
        compute(g.map(kernels.gain_square)(column, x, gain=1, shift=0)), kernels.gain_square_numpy(column, a, 1, 0)
    )
    zero_d = np.asarray(2, np.float32)
    np.testing.assert_array_equal(
        compute(g.map(kernels.gain_square)(x, zero_d, gain=1, shift=0)), kernels.gain_square_numpy(a, 2, 1, 0)
    )


@pytest.mark.parametrize("dtype", [np.int16, np.uint8, np.float64])
def test_a_generic_kernel_takes_each_dtype_and_gives_its_own(dtype):
    values = np.arange(50).astype(dtype)
    lazy = g.map(kernels.twice)(da.from_array(values, chunks=7))
    assert lazy.dtype == (values * 2).dtype
    np.testing.assert_array_equal(compute(lazy), values * 2)


def test_inputs_convert_to_the_annotations_as_in_a_plain_call():
    lazy = g.map(kernels.halve)(da.from_array(np.arange(10, dtype=np.int16), chunks=4))
    assert lazy.dtype == np.float32
    np.testing.assert_array_equal(compute(lazy), np.arange(10, dtype=np.float32) * 0.5)
    with pytest.raises(g.ArgumentError, match="does not convert to it exactly"):
        g.map(kernels.halve)(da.zeros(10, dtype=np.float64, chunks=5))


def test_a_bound_kernel_maps_dask_arrays_too():
    bound = g.BoundKernel(kernels.halve, g.Backend.host)
    x = da.arange(20, dtype=np.float32, chunks=6)
    np.testing.assert_array_equal(compute(bound(x)), np.arange(20, dtype=np.float32) * 0.5)


def test_the_graph_is_named_after_the_kernel_and_its_token():
    x = da.ones(10, dtype=np.float32, chunks=5)
    first, again = g.map(kernels.halve)(x), g.map(kernels.halve)(x)
    assert first.name == again.name and first.name.startswith("halve-")
    gain = g.map(kernels.gain_square)
    assert gain(x, x, gain=1, shift=0).name != gain(x, x, gain=2, shift=0).name


def test_out_and_run_on_a_dask_array_are_refused_saying_what_to_do():
    x = da.ones(10, dtype=np.float32, chunks=5)
    with pytest.raises(g.ArgumentError, match="Dask arrays are immutable.*da.store"):
        g.run(kernels.halve, x)
    with pytest.raises(g.ArgumentError, match="Dask arrays are immutable"):
        g.map(kernels.halve)(x, out=np.empty(10, np.float32))
    with pytest.raises(g.ArgumentError, match="stream="):
        g.map(kernels.halve)(x, stream=1)


def test_arguments_are_checked_when_the_graph_is_built():
    x = da.ones(10, dtype=np.float32, chunks=5)
    with pytest.raises(g.ArgumentError, match="g.map takes arrays"):
        g.map(kernels.gain_square)(x, 1.0, gain=1, shift=0)
    with pytest.raises(g.ArgumentError, match="needs a value for shift"):
        g.map(kernels.gain_square)(x, x, gain=1)
    with pytest.raises(g.ArgumentError, match="shift"):
        g.map(kernels.gain_square)(x, x, gain=1, shift=2**40)
    with pytest.raises(g.ArgumentError, match="NumPy .*has no dtype"):
        g.map(kernels.to_bf16)(x)


def test_cupy_chunks_stay_cupy():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    try:
        x = da.from_array(cupy.arange(100, dtype=cupy.float32), chunks=30)
    except Exception as e:  # CuPy without a usable GPU
        pytest.skip(f"CuPy cannot make an array here: {e}")
    lazy = g.map(kernels.halve)(x)
    assert type(lazy._meta) is cupy.ndarray
    result = compute(lazy)
    assert type(result) is cupy.ndarray
    np.testing.assert_array_equal(cupy.asnumpy(result), np.arange(100, dtype=np.float32) * 0.5)


def test_gompute_does_not_import_dask_unless_given_a_dask_array():
    code = (
        "import sys, numpy as np, gompute as g\n"
        "from tests.scaling import kernels\n"
        "g.map(kernels.halve)(np.ones(4, np.float32))\n"
        "assert not any(m == 'dask' or m.startswith('dask.') for m in sys.modules), sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=120)
