"""Kernels that exercise the language's Python semantics (tests/lang/test_semantics.py, the golden
files and the emit tests). Each is also plain Python: called on NumPy scalars, it gives the
reference result, so it uses `np.float32(x)`-style casts, which mean the same in both.
"""

import math

import numpy as np

import gompute.lang as g

SCALE = 3  # module-level constants are captured when a kernel is compiled
OFFSET = np.float32(0.5)


class Params(g.Params):
    scale: g.f32


class Affine(g.Params):
    mul: g.f64
    add: g.i32
    flag: g.bool_
    half: g.f16


@g.map_kernel(block_size=256)
def scale_relu(x: g.f32, p: Params) -> g.f32:
    y = x * p.scale
    return y if y > 0 else g.f32(0)


@g.func
def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n //= 2
        else:
            n = 3 * n + 1
        steps += 1
        if steps >= 500:
            break
    return steps


@g.map_kernel(block_size=128)
def collatz(x: g.i64) -> g.i32:
    if x < 1:
        return -1
    return collatz_steps(x)


@g.func
def square(v):
    return v * v


@g.map_kernel
def loops(x: g.i32, y: g.f32) -> g.f32:
    acc = 0  # becomes f32: the promoted type of everything assigned to it
    for i in range(x % 10):
        if i == 3:
            continue
        acc += y * i
    for j in range(10, 0, -3):
        acc -= j
    k = 0
    while True:
        k += 1
        if k >= SCALE:
            break
    return acc + k + OFFSET + square(y) + square(2)


@g.map_kernel
def branches(x: g.f64, p: Affine) -> g.f64:
    if x < -1:
        r = -x
    elif -1 <= x < 1 and not p.flag:
        r = x * p.mul
    elif x > 100 or x != x:
        return 0.0
    else:
        r = x + p.add
    return r + p.half + math.pi


@g.map_kernel
def values(a: g.i16, b: g.i16) -> g.i16:
    return (a or b) + (a and 3) + (np.int16(7) if a > b else b // 2)


@g.map_kernel
def generic_mix(a, b):
    return a * 2 + b / 3 - (a if a < b else b)


@g.map_kernel
def casts(x: g.f64) -> g.i16:
    w = np.int32(np.float32(x) * 2) + int(x > 0) + np.int8(SCALE)
    w **= 2
    return np.int16(w) % 1000 - np.uint8(x < 0)


@g.map_kernel
def half_ops(x: g.f16, y: g.f16) -> g.f16:
    z = x * y + g.sqrt(abs(x))
    z -= g.f16(0.1)
    return max(z, y) if z == z else x


@g.map_kernel
def bf16_ops(x: g.bf16, y: g.f32) -> g.bf16:
    return x * 3 + y


@g.map_kernel
def narrow(x: g.f64) -> g.f16:
    return x  # one rounding, f64 to f16, as NumPy's astype does


@g.map_kernel
def fill(p: Params) -> g.f32:
    return p.scale + 1


@g.map_kernel
def mixed_compare(a: g.i64, b: g.u64) -> g.i64:
    return (a < b) + 2 * (a == b) + 4 * (a > b) + 8 * (b >= a)
