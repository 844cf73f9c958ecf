"""g.map on the fake libcuda (tests/fakes/fake_libcuda.cpp).

g.map compiles CUDA kernels with NVRTC, whose CUBINs the fake cannot run; under
`host_images()` each module is compiled for the host instead, with the kernel table the
fake reads in place of a CUBIN's function table. A host entry point takes the same
arguments as the CUDA one, so every launch g.map makes works unchanged.
"""

from __future__ import annotations

import contextlib

import gompute as g
from gompute import kernel as bound
from gompute.compile import build_image
from gompute.lang import kernel as lang

FAKE_DEVICE = "Fake CUDA Device"


def kernel_table(names) -> str:
    """The C++ of the kernel table the fake reads from a host shared object, as from a CUBIN."""
    listed = ", ".join(f'"{name}"' for name in names)
    return f'extern "C" {{ __attribute__((visibility("default"))) const char* fake_cuda_kernels[] = {{{listed}, 0}}; }}'


def is_fake(compute) -> bool:
    return compute.backend is g.Backend.cuda and compute.device_info().name == FAKE_DEVICE


@contextlib.contextmanager
def host_images():
    """While active, g.map's CUDA modules are host shared objects the fake can load."""
    host_image_of, target_arch = lang.MapKernel.image_of, bound._target_arch

    def image_of(self, spec, backend, arch=None):
        if lang.backend_name(backend) != "cuda":
            return host_image_of(self, spec, backend, arch)
        entries = tuple(spec.entry_points())
        source = f"{lang.module_source([spec], 'host')}\n{kernel_table(e.symbol for e in entries)}\n"
        data, _, _ = build_image("host", source, None, spec.name)
        return lang.Image(data, "cubin", "cuda", arch, entries, None)

    lang.MapKernel.image_of = image_of
    bound._target_arch = lambda compute: None if compute.backend is g.Backend.host else "sm_90"
    try:
        yield
    finally:
        lang.MapKernel.image_of, bound._target_arch = host_image_of, target_arch
