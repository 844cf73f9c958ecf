"""g.map on the fake libcuda (tests/fakes/fake_libcuda.cpp).

g.map compiles CUDA kernels with NVRTC, whose CUBINs the fake cannot run; under
`host_images()` the CUDA text of each module, exactly as NVRTC would get it, is compiled by the
host C++ compiler through cuda_shim.h instead, with a launcher per kernel that runs the grid it
is given and the kernel table the fake reads in place of a CUBIN's function table. Every launch
g.map makes then runs the generated CUDA code.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import gompute as g
from gompute import kernel as bound
from gompute.compile import build_image
from gompute.lang import kernel as lang

FAKE_DEVICE = "Fake CUDA Device"
SHIM = Path(__file__).with_name("cuda_shim.h")


def kernel_table(names) -> str:
    """The C++ of the kernel table the fake reads from a host shared object, as from a CUBIN."""
    listed = ", ".join(f'"{name}"' for name in names)
    return f'extern "C" {{ __attribute__((visibility("default"))) const char* fake_cuda_kernels[] = {{{listed}, 0}}; }}'


# What makes a text's threads wait for one another: its blocks then run on fibers (cuda_shim.h).
COOPERATIVE = re.compile(
    r"\b(__syncthreads|__syncwarp|__shfl\w*_sync|__ballot_sync|__any_sync|__all_sync|__activemask)\b"
)
# `extern __shared__ T name[];` on a line of its own: dynamic shared memory, which C++ cannot
# declare; the name becomes the launch's sharedMemBytes (cuda_shim.h dynamic_shared).
DYNAMIC_SHARED = re.compile(
    r"^[ \t]*extern[ \t]+__shared__[ \t]+(?:__align__\(\s*\d+\s*\)[ \t]+)?(?P<type>[\w:<>, ]+?)[ \t]+(?P<name>\w+)"
    r"[ \t]*\[[ \t]*\][ \t]*;[ \t]*$",
    re.MULTILINE,
)
DEVICE_MAX_THREADS = 1024


def launch_bound(text: str, kernel: str) -> str:
    """The maximum threads a block of `kernel`'s __launch_bounds__ in `text`, else the device's limit."""
    found = re.search(rf"__launch_bounds__\s*\(\s*([^,()]+?)\s*(?:,[^()]*)?\)\s*{re.escape(kernel)}\s*\(", text)
    return found.group(1) if found else str(DEVICE_MAX_THREADS)


def gpu_text_source(text: str, kernels, warp_size: int = 32) -> str:
    """The host C++ of the GPU text `text` (CUDA or HIP C++) whose `__global__` functions are
    `kernels`: the shim, the text with each kernel renamed (the host-ABI entry takes its name),
    a launcher per kernel and the kernel table. The shim is pasted, not included, so that the
    disk cache's key, the source, covers it."""
    kernels = list(kernels)
    settings = f"#define GOMPUTE_CUDA_WARP_SIZE {warp_size}\n"
    if COOPERATIVE.search(text):
        settings += "#define GOMPUTE_CUDA_COOPERATIVE 1\n"
    renames = "".join(f"#define {k} gompute_cuda_{k}\n" for k in kernels)
    launchers = "".join(f"#undef {k}\nGOMPUTE_CUDA_ENTRY({k}, {launch_bound(text, k)})\n" for k in kernels)
    body = DYNAMIC_SHARED.sub(lambda m: f"#define {m['name']} (*gompute_cuda::dynamic_shared<{m['type']}>())", text)
    return f"{settings}{SHIM.read_text()}\n{renames}{body}\n{launchers}{kernel_table(kernels)}\n"


def gpu_text_image(text: str, kernels, name: str, warp_size: int = 32) -> bytes:
    """The host shared object of the GPU text `text` (see gpu_text_source), through the disk cache."""
    data, _, _ = build_image("host", gpu_text_source(text, kernels, warp_size), None, name)
    return data


def is_fake(compute) -> bool:
    return compute.backend is g.Backend.cuda and compute.device_info().name == FAKE_DEVICE


@contextlib.contextmanager
def host_images(text: str = "cuda"):
    """While active, g.map's CUDA modules are host shared objects the fake can load, built from
    the generated GPU text of `text`, "cuda" (what NVRTC would compile) or "hip"."""
    host_image_of, target_arch = lang.MapKernel.image_of, bound._target_arch

    def image_of(self, spec, backend, arch=None):
        if lang.backend_name(backend) != "cuda":
            return host_image_of(self, spec, backend, arch)
        entries = tuple(spec.entry_points())
        warp_size = 64 if text == "hip" else 32  # the HIP text's first target, gfx90a, runs 64-lane wavefronts
        data = gpu_text_image(lang.module_source([spec], text), (e.symbol for e in entries), spec.name, warp_size)
        return lang.Image(data, "cubin", "cuda", arch, entries, None)

    lang.MapKernel.image_of = image_of
    bound._target_arch = lambda compute: None if compute.backend is g.Backend.host else "sm_90"
    try:
        yield
    finally:
        lang.MapKernel.image_of, bound._target_arch = host_image_of, target_arch
