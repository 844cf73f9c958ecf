"""`g.map(k)` on Dask arrays: a lazy Dask array of one kernel call per chunk.

Dask is imported only once a Dask array is given: gompute runs without it. The graph is Dask's
own `blockwise`, as its elementwise ufuncs build theirs: NumPy broadcasting, indices aligned from
the right, chunks unified; each task calls the kernel on its chunks, so NumPy chunks give NumPy
chunks and CuPy chunks CuPy ones, on whichever worker runs it (the kernel pickles by what defines
it, lang/pickling.py). The result's dtype and `meta` come from the kernel's signature: nothing
runs on empty arrays to find them.
"""

from __future__ import annotations

import functools
import sys

import numpy as np

from .errors import ArgumentError
from .lang.kernel import MapKernel
from .types import from_dtype


def holds_dask_array(values) -> bool:
    """Whether any of `values` is a Dask array (none can be before dask.array is imported)."""
    module = sys.modules.get("dask.array")
    return module is not None and any(isinstance(v, module.Array) for v in values)


def lazy_map(call, kernel: MapKernel, arrays, params: dict):
    """The Dask array of `call(*chunks, **params)` over `arrays` (Dask arrays, and NumPy arrays
    they broadcast with), `call` being `g.map(kernel)` or a `g.BoundKernel` of it."""
    import dask.array as da
    from dask.array.utils import meta_from_array

    spec = kernel.variant(tuple(from_dtype(a.dtype) for a in arrays))
    if spec.out_type.dtype is None:
        raise ArgumentError(
            f"{kernel.name} returns {spec.out_type.name}, which NumPy (and so Dask) has no dtype for; "
            "return a type NumPy has, such as g.f32"
        )
    ndim = max(np.ndim(a) for a in arrays)
    pairs = []
    for a in arrays:
        pairs += [a, tuple(range(np.ndim(a)))[::-1]]  # the last dimension is index 0 in every array
    chunk_type = next(a for a in arrays if isinstance(a, da.Array))._meta
    meta = meta_from_array(chunk_type, ndim=ndim, dtype=spec.out_type.dtype)
    # Params go in a partial, not as blockwise's keywords, which a field named `dtype` or `name` would be.
    fn = functools.partial(call, **params) if params else call
    return da.blockwise(fn, tuple(range(ndim))[::-1], *pairs, token=kernel.name, dtype=meta.dtype, meta=meta)
