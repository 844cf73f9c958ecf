"""Ahead of time: `g.emit_kernels(roots, out=...)` and `gompute emit ROOT... --out DIR`.

Every annotated map kernel defined in each root module is compiled, one image per root and
target, into an importable `gompute_kernels` package with the seed's attributes (`emitted`,
`has_cuda`, `has_hip`, `root_names`, `Entry(blob, symbol)`, `cuda_images`, `hip_images`,
`cuda_index`, `hip_index`) and gompute's additions: CUBINs per arch (`cuda_cubins`), HSACO per
arch (`hip_images_by_arch`), the host backend's shared objects (`host_images`, `host_index`), and
each kernel's `kernel_hashes`, which tell a kernel whether the emitted copy is still its own.

`roots` finds the kernels of root modules, `build` compiles and writes the package, `lookup`
finds an emitted image at run time, `cli` is the `gompute emit` command. This package sits
above the kernel language: it registers its lookup with the language rather than the language
importing it.
"""

from ..lang.kernel import set_prebuilt_lookup
from .build import emit_kernels
from .lookup import PACKAGE, emitted_image

set_prebuilt_lookup(emitted_image)

__all__ = ["PACKAGE", "emit_kernels"]
