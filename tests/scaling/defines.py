"""Defines kernels in `__main__` and in an IPython cell, which no other process can import, and
pickles them: `python defines.py OUT` writes OUT/main.pickle, OUT/main.cloudpickle, OUT/cell.pickle,
OUT/cell.cloudpickle and OUT/tokens.json (each kernel's token as this process computes it)."""

import json
import pickle
import sys
from pathlib import Path

import cloudpickle
import dask.base
import numpy as np

import gompute as g
from tests.scaling import kernels

BIAS = np.float32(0.25)


class Mix(g.Params):
    weight: g.f64
    count: g.u8


@g.func
def cube(x):
    return x * x * x


@g.map_kernel(block_size=64)
def mix(x: g.f32, p: Mix) -> g.f32:
    return cube(x) * p.weight + p.count + BIAS


@g.map_kernel
def shifted(x):
    return x << 1


# The same definitions typed into a notebook cell.
CELL = """
import numpy as np
import gompute as g

BIAS = np.float32(0.25)

class Mix(g.Params):
    weight: g.f64
    count: g.u8

@g.func
def cube(x):
    return x * x * x

@g.map_kernel(block_size=64)
def mix(x: g.f32, p: Mix) -> g.f32:
    return cube(x) * p.weight + p.count + BIAS
"""


def cell_namespace() -> dict:
    """The names an IPython cell running CELL defines."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_cell(CELL).raise_error()
    return shell.user_ns


def payload(ns: dict) -> dict:
    kernel = ns["mix"]
    return {"kernel": kernel, "map": g.map(kernel), "func": ns["cube"], "bound": g.BoundKernel(kernel, "host")}


def main(out: Path) -> None:
    cell = cell_namespace()
    for name, ns in (("main", globals()), ("cell", cell)):
        for module in (pickle, cloudpickle):
            (out / f"{name}.{module.__name__}").write_bytes(module.dumps(payload(ns)))
    (out / "shifted.pickle").write_bytes(pickle.dumps(shifted))
    tokens = {
        "main": mix.__dask_tokenize__(),
        "cell": cell["mix"].__dask_tokenize__(),
        "module": kernels.gain_square.__dask_tokenize__(),
        "dask_main": dask.base.tokenize(g.map(mix)),
        "dask_module": dask.base.tokenize(g.map(kernels.gain_square)),
        "shifted_line": shifted.src.first_line + 2,
    }
    (out / "tokens.json").write_text(json.dumps(tokens))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
