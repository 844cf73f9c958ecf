"""`g.map(k)` and `g.reduce(k)` on Dask arrays: a lazy Dask array of one kernel call per chunk.

Dask is imported only once a Dask array is given: gompute runs without it. The graph is Dask's
own `blockwise`, as its elementwise ufuncs build theirs: NumPy broadcasting, indices aligned from
the right, chunks unified; each task calls the kernel on its chunks, so NumPy chunks give NumPy
chunks and CuPy chunks CuPy ones, on whichever worker runs it (the kernel pickles by what defines
it, lang/pickling.py). The result's dtype and `meta` come from the kernel's signature: nothing
runs on empty arrays to find them. A reduction is Dask's own `reduction`: the kernel on each
chunk (keeping the reduced dimensions), then its combine alone over the chunks' results, in
Dask's tree. A reduction of several inputs first aligns them as a map does, its `blockwise`
calling the kernel on each block's chunks, and hands Dask's `reduction` those partial results.
"""

from __future__ import annotations

import functools
import math
import sys

import numpy as np

from .errors import ArgumentError
from .lang.kernel import MapKernel
from .lang.reduce_kernel import ReduceKernel, normalize_axes
from .types import from_dtype


def holds_dask_array(values) -> bool:
    """Whether any of `values` is a Dask array (none can be before dask.array is imported)."""
    module = sys.modules.get("dask.array")
    return module is not None and any(isinstance(v, module.Array) for v in values)


def lazy_map(call, kernel: MapKernel, arrays, params: dict):
    """The Dask array of `call(*chunks, **params)` over `arrays` (Dask arrays, and NumPy arrays
    they broadcast with), `call` being `g.map(kernel)` or a `g.BoundKernel` of it."""
    spec = kernel.variant(tuple(from_dtype(a.dtype) for a in arrays))
    if spec.out_type.dtype is None:
        raise ArgumentError(
            f"{kernel.name} returns {spec.out_type.name}, which NumPy (and so Dask) has no dtype for; "
            "return a type NumPy has, such as g.f32"
        )
    # Params go in a partial, not as blockwise's keywords, which a field named `dtype` or `name` would be.
    fn = functools.partial(call, **params) if params else call
    return _blockwise(fn, kernel.name, arrays, spec.out_type.dtype)


def lazy_reduce(call, fold, kernel, arrays, axis, keepdims: bool, params: dict):
    """The Dask array of `call(*arrays, axis=axis, keepdims=keepdims, **params)`, `call` being
    `g.reduce(kernel)`: Dask's own `reduction`, whose chunk step is the call on each chunk and
    whose combine and aggregate steps are `fold`, `g.reduce(combiner(kernel))`, over the chunks'
    results. Several inputs (Dask arrays, and NumPy arrays they broadcast with) are aligned by a
    `blockwise` of the call on each block's chunks, whose partial results the chunk step keeps."""
    import dask.array as da
    from dask.array.utils import meta_from_array

    result = kernel.variant(tuple(from_dtype(a.dtype) for a in arrays)).result
    if result.dtype is None:
        raise ArgumentError(f"{kernel.name} reduces to {result.name}, which NumPy (and so Dask) has no dtype for")
    ndim = max(np.ndim(a) for a in arrays)
    axes = normalize_axes(axis, ndim)
    empty = None  # a kernel with an identity reduces a chunk of no elements to it
    if kernel.identity is None:  # every partial result must reduce elements: there is none for nothing
        _refuse_empty(kernel, arrays, axes)
        arrays = [_without_empty_chunks(a, axes, ndim) if isinstance(a, da.Array) else a for a in arrays]
        empty = result.dtype  # what no chunk sizes known beforehand leave: empty partials (_chunk)
    if len(arrays) == 1:
        x, chunk = arrays[0], functools.partial(_chunk, call, params, empty=empty)
    else:
        blocks = functools.partial(_chunk, call, params, axis=axes, keepdims=True, empty=empty)
        x, chunk = _blockwise(blocks, f"gompute-reduce-{kernel.name}-blocks", arrays, result.dtype, axes), _kept
    return da.reduction(
        x,
        chunk,
        functools.partial(_fold, fold, refuse=kernel.refuse_empty),
        combine=functools.partial(_fold, fold, empty=empty),
        axis=axes,
        keepdims=keepdims,
        dtype=result.dtype,
        meta=meta_from_array(x._meta, ndim=ndim if keepdims else ndim - len(axes), dtype=result.dtype),
        name=f"gompute-reduce-{kernel.name}",
        concatenate=True,
    )


def _blockwise(fn, token: str, arrays, dtype, reduced=()):
    """Dask's `blockwise` of `fn` over `arrays` broadcast together (the last dimension is index 0 in
    every array), `fn` giving arrays of `dtype`, of extent 1 along the `reduced` dimensions."""
    import dask.array as da
    from dask.array.utils import meta_from_array

    ndim = max(np.ndim(a) for a in arrays)
    pairs = []
    for a in arrays:
        pairs += [a, tuple(range(np.ndim(a)))[::-1]]
    chunk_type = next(a for a in arrays if isinstance(a, da.Array))._meta
    meta = meta_from_array(chunk_type, ndim=ndim, dtype=dtype)
    index = tuple(range(ndim))[::-1]
    adjust = {index[d]: 1 for d in reduced} or None
    return da.blockwise(fn, index, *pairs, token=token, dtype=meta.dtype, meta=meta, adjust_chunks=adjust)


def _refuse_empty(kernel, arrays, axes) -> None:
    """Refuses, as a call on arrays does, a reduction of no elements into results of a kernel with no
    identity, where the shapes are known."""
    shapes = [np.shape(a) for a in arrays]
    if any(math.isnan(n) for shape in shapes for n in shape):
        return
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        return  # blockwise says which shapes do not align
    kernel.refuse_empty(shape, axes)


def _without_empty_chunks(x, axes, ndim: int):
    """`x` without its zero-length chunks along the reduced `axes` (of the `ndim` dimensions it
    broadcasts to), where it has longer ones there: a kernel with no identity has no partial result
    for a chunk of no elements."""
    chunks = list(x.chunks)
    for d in range(x.ndim):
        sizes = chunks[d]
        if d + ndim - x.ndim in axes and 0 in sizes and any(sizes) and not any(map(math.isnan, sizes)):
            chunks[d] = tuple(n for n in sizes if n)
    return x if tuple(chunks) == x.chunks else x.rechunk(tuple(chunks))


def _chunk(call, params, *chunks, axis, keepdims, empty=None):
    """The call on a chunk (or a block's chunks). With `empty`, a dtype: a chunk of no elements
    along a reduced axis, which an array whose chunk sizes Dask does not know (after boolean
    indexing) may hold, gives an empty partial of that dtype, as Dask's own max does for one."""
    if empty is not None:
        shape = np.broadcast_shapes(*(np.shape(c) for c in chunks))
        if not all(shape[d] for d in axis):
            return _empty_partial(chunks[0], shape, axis, empty)
    return call(*chunks, axis=axis, keepdims=keepdims, **params)


def _empty_partial(like, shape, axis, dtype):
    """A partial of no elements, of `like`'s library: extent 0 along the reduced axes where `shape`
    has none, 1 along the others, so that it joins its neighbours' partials in the combine."""
    import array_api_compat

    kept = tuple((1 if shape[d] else 0) if d in axis else n for d, n in enumerate(shape))
    return array_api_compat.array_namespace(like).empty(kept, dtype=dtype)


def _kept(partials, axis, keepdims):
    """The chunk step over partial results already of extent 1 along the reduced axes."""
    return partials


def _fold(fold, partials, axis, keepdims, empty=None, refuse=None):
    """The combine step (with `empty`, a dtype, where partials may be empty) or the aggregate (with
    `refuse`, the kernel's refuse_empty): a combine of partials all empty along a reduced axis passes
    on an empty one, and the aggregate of such refuses as a call of the kernel does."""
    if empty is not None and not all(partials.shape[d] for d in axis):
        return _empty_partial(partials, partials.shape, axis, empty)
    if refuse is not None:
        refuse(partials.shape, axis)
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
