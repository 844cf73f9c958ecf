"""Reduction kernels the g.reduce tests call (kernels must live in a .py file)."""

import gompute as g


@g.reduce_kernel(identity=0)
def total(x):
    return x


@g.reduce_kernel(identity=0)
def sumsq(x: g.f32) -> g.f32:
    return x * x


@g.reduce_kernel(combine=g.max)
def absmax(x: g.f32) -> g.f32:
    return abs(x)


@g.reduce_kernel(combine=g.max)
def largest(x):
    return x


@g.reduce_kernel(combine=min)
def smallest(x):
    return x


@g.reduce_kernel(identity=1, combine="*")
def product(x):
    return x


@g.reduce_kernel(identity=-1, combine="&")
def all_bits(x):
    return x


@g.reduce_kernel(identity=0, combine="|")
def any_bits(x):
    return x


@g.reduce_kernel(identity=0, combine="^")
def parity(x):
    return x


@g.reduce_kernel(identity=0)
def dot(x: g.f32, y: g.f32) -> g.f32:
    return x * y


@g.reduce_kernel(identity=0)
def dot64(x: g.f64, y: g.f64) -> g.f64:
    return x * y


@g.func
def larger_magnitude(a: g.f64, b: g.f64) -> g.f64:
    return a if abs(a) >= abs(b) else b


@g.reduce_kernel(identity=0.0, combine=larger_magnitude)
def extreme(x: g.f64) -> g.f64:
    return x


class Shift(g.Params):
    by: g.f64


@g.reduce_kernel(identity=0)
def shifted_sum(x: g.f64, p: Shift) -> g.f64:
    return x + p.by


@g.reduce_kernel(identity=0)
def count_positive(x: g.f32) -> g.i64:
    return 1 if x > 0 else 0


# Shapes and axes that reach every store of a result: a full sum (short, one item, several items and
# a finish), short rows, rows in tiles, in lanes and as items, narrow and wide columns, a finish.
EVERY_STORE = [
    ((1,), None), ((2,), None), ((8,), None), ((300_000,), None),
    ((50, 2), 1), ((50, 3), 1), ((50, 12), 1), ((50, 100), 1), ((20, 3000), 1), ((2, 200_000), 1),
    ((300, 7), 0), ((300, 1000), 0), ((40_000, 16), 0), ((3000, 300), 0),
]  # fmt: skip
