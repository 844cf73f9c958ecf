"""`g.map(k)` and `g.reduce(k)` on Dask arrays: a lazy Dask array of one kernel call per chunk.

Dask is imported only once a Dask array is given: gompute runs without it. The graph is Dask's
own `blockwise`, as its elementwise ufuncs build theirs: NumPy broadcasting, indices aligned from
the right, chunks unified; each task calls the kernel on its chunks, so NumPy chunks give NumPy
chunks and CuPy chunks CuPy ones, on whichever worker runs it (the kernel pickles by what defines
it, lang/pickling.py). The result's dtype and `meta` come from the kernel's signature: nothing
runs on empty arrays to find them. A reduction is Dask's own `reduction`: the kernel on each
chunk (keeping the reduced dimensions), then its combine alone over the chunks' results, in
Dask's tree.
"""

from __future__ import annotations

import functools
import sys

import numpy as np

from .errors import ArgumentError
from .lang.kernel import MapKernel
from .lang.reduce_kernel import ReduceKernel
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


def lazy_reduce(call, fold, kernel, arrays, axis, keepdims: bool, params: dict):
    """The Dask array of `call(array, axis=axis, keepdims=keepdims, **params)`, `call` being
    `g.reduce(kernel)`: Dask's own `reduction`, whose chunk step is the call on each chunk and
    whose combine and aggregate steps are `fold`, `g.reduce(combiner(kernel))`, over the chunks'
    results."""
    import dask.array as da
    from dask.array.utils import meta_from_array

    if len(arrays) != 1:
        raise ArgumentError(
            f"{kernel.name} takes {len(arrays)} arrays, and a Dask reduction (dask.array.reduction) takes one; "
            "reduce the Dask arrays one by one, or map them to one first with g.map"
        )
    x = arrays[0] if isinstance(arrays[0], da.Array) else da.asarray(arrays[0])
    result = kernel.variant((from_dtype(x.dtype),)).result
    if result.dtype is None:
        raise ArgumentError(f"{kernel.name} reduces to {result.name}, which NumPy (and so Dask) has no dtype for")
    step = functools.partial(_fold, fold)
    return da.reduction(
        x,
        functools.partial(_chunk, call, params),
        step,
        combine=step,
        axis=axis,
        keepdims=keepdims,
        dtype=result.dtype,
        meta=meta_from_array(x._meta, ndim=0, dtype=result.dtype),
        name=f"gompute-reduce-{kernel.name}",
        concatenate=True,
    )


def _chunk(call, params, chunk, axis, keepdims):
    return call(chunk, axis=axis, keepdims=keepdims, **params)


def _fold(fold, partials, axis, keepdims):
    return fold(partials, axis=axis, keepdims=keepdims)


def combined(x):
    """The map part of a kernel's combiner: each partial result as it is."""
    return x


def combiner(kernel):
    """A reduction kernel of `kernel`'s combine and identity over its results, kept on it."""
    found = kernel.__dict__.get("_combiner")
    if found is None:
        found = ReduceKernel(combined, kernel.identity, kernel.combine, kernel.block_size)
        found.numpy_rules = False  # partials accumulate in their own type: they are the results
        kernel._combiner = found
    return found
