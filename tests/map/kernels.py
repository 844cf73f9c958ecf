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


class Every(g.Params):
    a: g.f16
    b: g.f32
    c: g.f64
    d: g.i8
    e: g.u16
    f: g.i32
    h: g.i64
    i: g.u64
    j: g.bool_


@g.map_kernel
def pick(field: g.i32, p: Every) -> g.f64:
    """The params field numbered `field`, as f64 (exact for every value the tests pack)."""
    out = g.f64(p.j)
    if field == 0:
        out = g.f64(p.a)
    elif field == 1:
        out = g.f64(p.b)
    elif field == 2:
        out = p.c
    elif field == 3:
        out = g.f64(p.d)
    elif field == 4:
        out = g.f64(p.e)
    elif field == 5:
        out = g.f64(p.f)
    elif field == 6:
        out = g.f64(p.h)
    elif field == 7:
        out = g.f64(p.i)
    return out
