"""Defines kernels in `__main__` and in an IPython cell, which no other process can import.

`python defines.py pickle OUT` pickles them: OUT/main.pickle, OUT/main.cloudpickle, OUT/cell.pickle,
OUT/cell.cloudpickle and OUT/tokens.json (each kernel's token as this process computes it).
`python defines.py cluster ADDRESS` maps them over Dask arrays on the cluster at ADDRESS, as a
user's script or notebook does, and prints per definition the largest difference from NumPy.
"""

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


# The same definitions typed into a notebook cell, with a bias and a name of its own.
CELL = """
import numpy as np
import gompute as g

BIAS = np.float32(0.75)

class Mix(g.Params):
    weight: g.f64
    count: g.u8

@g.func
def cube(x):
    return x * x * x

@g.map_kernel(block_size=64)
def cell_mix(x: g.f32, p: Mix) -> g.f32:
    return cube(x) * p.weight + p.count + BIAS
"""
BIASES = {"main": 0.25, "cell": 0.75}


def cell_namespace() -> dict:
    """The names an IPython cell running CELL defines."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_cell(CELL).raise_error()
    return shell.user_ns


def kernel_of(ns: dict):
    return ns["mix"] if "mix" in ns else ns["cell_mix"]


def payload(ns: dict) -> dict:
    kernel = kernel_of(ns)
    return {"kernel": kernel, "map": g.map(kernel), "func": ns["cube"], "bound": g.BoundKernel(kernel, "host")}


def pickle_all(out: Path) -> None:
    cell = cell_namespace()
    for name, ns in (("main", globals()), ("cell", cell)):
        for module in (pickle, cloudpickle):
            (out / f"{name}.{module.__name__}").write_bytes(module.dumps(payload(ns)))
    (out / "shifted.pickle").write_bytes(pickle.dumps(shifted))
    tokens = {
        "main": mix.__dask_tokenize__(),
        "cell": cell["cell_mix"].__dask_tokenize__(),
        "module": kernels.gain_square.__dask_tokenize__(),
        "through_module": kernels.through_module.__dask_tokenize__(),
        "dask_main": dask.base.tokenize(g.map(mix)),
        "dask_module": dask.base.tokenize(g.map(kernels.gain_square)),
        "shifted_line": shifted.src.first_line + 2,
    }
    (out / "tokens.json").write_text(json.dumps(tokens))


def on_cluster(address: str) -> None:
    import dask.array as da
    from distributed import Client

    x = np.linspace(-2, 2, 10_000, dtype=np.float32)
    with Client(address):
        differences = {}
        for where, ns in (("main", globals()), ("cell", cell_namespace())):
            lazy = g.map(kernel_of(ns))(da.from_array(x, chunks=1000), weight=1.5, count=7)
            expected = kernels.mix_numpy(x, 1.5, 7, BIASES[where])
            differences[where] = float(np.abs(lazy.compute() - expected).max())
    print(json.dumps(differences))


if __name__ == "__main__":
    if sys.argv[1] == "pickle":
        pickle_all(Path(sys.argv[2]))
    else:
        on_cluster(sys.argv[2])
