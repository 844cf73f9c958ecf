"""Kernels of an importable module: they pickle by reference (module and qualname)."""

import math

import numpy as np

import gompute as g

OFFSET = 0.5


class Scale(g.Params):
    gain: g.f32
    shift: g.i32


@g.func
def square(x):
    return x * x


@g.map_kernel(block_size=128)
def gain_square(x: g.f32, y: g.f32, p: Scale) -> g.f32:
    return square(x) * p.gain + y + p.shift + OFFSET + math.floor(0.5)


@g.map_kernel
def twice(x):
    return x * 2


@g.map_kernel
def halve(x: g.f32) -> g.f32:
    return x * 0.5


@g.map_kernel
def to_bf16(x: g.f32) -> g.bf16:
    return g.bf16(x)


def gain_square_numpy(x, y, gain, shift):
    """gain_square as NumPy computes it: f32 up to the i32 shift, which makes the sum f64."""
    x, y = np.asarray(x, np.float32), np.asarray(y, np.float32)
    partial = (x * x * np.float32(gain) + y).astype(np.float64)
    return (partial + np.int32(shift) + OFFSET + 0.0).astype(np.float32)


@g.map_kernel
def never_compiled_elsewhere(x: g.f32) -> g.f32:
    return x - 1


def mix_numpy(x, weight, count, bias):
    """The `mix` kernels of defines.py as NumPy computes them: f64 from the f64 weight on."""
    x = np.asarray(x, np.float32)
    return (x * x * x * np.float64(weight) + count + np.float32(bias)).astype(np.float32)


@g.reduce_kernel(identity=0)
def sum_of_squares(x: g.f32) -> g.f32:
    return x * x + OFFSET


from tests.scaling import kernels as this  # noqa: E402 - this module, read as another module would read it


@g.map_kernel
def through_module(x: g.f32) -> g.f32:  # a @g.func and a number, read as a module's attributes
    return this.square(x) + this.OFFSET
