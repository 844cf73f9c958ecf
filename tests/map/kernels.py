"""Map kernels the g.map tests call (kernels must live in a .py file)."""

import gompute as g


class Params(g.Params):
    scale: g.f32


@g.map_kernel(block_size=256)
def scale_relu(x: g.f32, p: Params) -> g.f32:
    y = x * p.scale
    return y if y > 0 else g.f32(0)


@g.map_kernel(block_size=128)
def axpy(a: g.f64, x: g.f64, y: g.f64) -> g.f64:
    return a * x + y


@g.map_kernel
def add(x, y):
    return x + y


@g.map_kernel
def double(x):
    return x * 2


@g.map_kernel
def is_positive(x: g.f32) -> g.bool_:
    return x > 0


class HalfParams(g.Params):
    scale: g.f16


@g.map_kernel
def scale_half(x: g.f16, p: HalfParams) -> g.f16:
    return x * p.scale


@g.map_kernel
def to_bf16(x: g.f32) -> g.bf16:
    return g.bf16(x)


class Steps(g.Params):
    steps: g.i32


@g.map_kernel
def relax(x: g.f64, p: Steps) -> g.f64:
    """x moved halfway to 1, `p.steps` times: as much work an element as the caller asks for."""
    y = x
    for _ in range(p.steps):
        y = 0.5 * (y + 1.0)
    return y
