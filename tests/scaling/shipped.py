"""Kernels shipped to the workers as an emitted package (`gompute emit tests.scaling.shipped`)."""

import gompute as g


@g.map_kernel
def shipped_cube(x: g.f32) -> g.f32:
    return x * x * x
