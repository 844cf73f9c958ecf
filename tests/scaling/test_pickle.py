"""Kernels, @g.func functions, g.map(k) and g.BoundKernel pickle and cloudpickle: by reference
from an importable module, by what defines them from `__main__` and an IPython cell."""

import json
import pickle
from types import SimpleNamespace

import numpy as np
import pytest

from .conftest import NO_EXTRA, run_script

cloudpickle = pytest.importorskip("cloudpickle", reason=NO_EXTRA)
tokenize = pytest.importorskip("dask.base", reason=NO_EXTRA).tokenize

import gompute as g  # noqa: E402 - after the skip
from tests.scaling import kernels  # noqa: E402

PICKLERS = [pickle, cloudpickle]


@pytest.fixture(scope="module")
def defined(tmp_path_factory):
    """What tests/scaling/defines.py, run as a script, pickled: (folder, tokens)."""
    out = tmp_path_factory.mktemp("pickles")
    ipython_dir = tmp_path_factory.mktemp("ipython")
    pytest.importorskip("IPython")
    run_script("defines.py", "pickle", str(out), env={"IPYTHONDIR": str(ipython_dir)})
    return out, json.loads((out / "tokens.json").read_text())


@pytest.mark.parametrize("module", PICKLERS, ids=lambda m: m.__name__)
def test_module_kernels_pickle_by_reference_to_the_same_objects(module):
    for obj in (kernels.gain_square, kernels.square, kernels.Scale, g.map(kernels.gain_square), g.map(kernels.twice)):
        assert module.loads(module.dumps(obj)) is obj
    assert module.loads(module.dumps(kernels.sum_of_squares)) is kernels.sum_of_squares
    assert len(pickle.dumps(kernels.gain_square)) < 200  # a reference, not the source


@pytest.mark.parametrize("module", PICKLERS, ids=lambda m: m.__name__)
def test_a_bound_kernel_pickles_as_its_kernel_and_device(module):
    bound = module.loads(module.dumps(g.BoundKernel(kernels.gain_square, g.Backend.host)))
    assert bound.kernel is kernels.gain_square and bound.backend is g.Backend.host
    x, y = np.linspace(-2, 2, 50, dtype=np.float32), np.ones(50, np.float32)
    np.testing.assert_array_equal(bound(x, y, gain=3, shift=-1), kernels.gain_square_numpy(x, y, 3, -1))


@pytest.mark.parametrize("where", ["main", "cell"])
@pytest.mark.parametrize("module", PICKLERS, ids=lambda m: m.__name__)
def test_kernels_of_main_and_of_an_ipython_cell_unpickle_and_run(defined, where, module):
    folder, tokens = defined
    loaded = pickle.loads((folder / f"{where}.{module.__name__}").read_bytes())
    kernel = loaded["kernel"]
    assert kernel.__module__ == "__main__" and kernel.block_size == 64
    assert loaded["map"] is g.map(kernel)  # the one kept on the kernel
    assert loaded["bound"].kernel is kernel
    assert kernel.__dask_tokenize__() == tokens[where]
    assert [(f.name, f.type, f.offset) for f in kernel.params_class.__fields__] == [
        ("weight", g.f64, 0),
        ("count", g.u8, 8),
    ]
    x = np.linspace(-3, 3, 101, dtype=np.float32)
    expected = kernels.mix_numpy(x, 1.5, 7, {"main": 0.25, "cell": 0.75}[where])
    np.testing.assert_array_equal(loaded["map"](x, weight=1.5, count=7), expected)
    np.testing.assert_array_equal(loaded["bound"](x, weight=1.5, count=7), expected)
    assert loaded["func"](3) == 27  # a @g.func is still the plain function from Python


def test_one_definition_is_one_kernel_per_process_however_often_it_arrives(defined):
    """So a worker that receives a kernel with every task compiles it once."""
    folder, _ = defined
    kernels_loaded = [pickle.loads((folder / f"main.{m.__name__}").read_bytes())["kernel"] for m in PICKLERS]
    kernels_loaded.append(pickle.loads((folder / "main.pickle").read_bytes())["kernel"])
    assert all(k is kernels_loaded[0] for k in kernels_loaded)


def test_tokens_are_the_same_in_every_process(defined):
    _, tokens = defined
    assert kernels.gain_square.__dask_tokenize__() == tokens["module"]
    assert kernels.through_module.__dask_tokenize__() == tokens["through_module"]
    assert tokenize(g.map(kernels.gain_square)) == tokens["dask_module"]
    folder, _ = defined
    unpickled = pickle.loads((folder / "main.pickle").read_bytes())["map"]
    assert tokenize(unpickled) == tokens["dask_main"]


def test_tokens_tell_definitions_apart():
    tokens = {k.__dask_tokenize__() for k in (kernels.gain_square, kernels.twice, kernels.halve)}
    assert len(tokens) == 3
    assert tokenize(g.map(kernels.twice)) != tokenize(g.BoundKernel(kernels.twice, "host"))


def test_an_unpickled_kernel_points_errors_at_the_users_line(defined):
    folder, tokens = defined
    shifted = pickle.loads((folder / "shifted.pickle").read_bytes())
    with pytest.raises(g.CompileError, match="bitwise") as caught:
        shifted.specialize(g.f32)
    assert caught.value.filename.endswith("defines.py")
    assert caught.value.lineno == tokens["shifted_line"]
    assert "return x << 1" in str(caught.value)


def test_a_kernel_defined_in_a_function_pickles_with_its_closure():
    def make(factor):
        @g.map_kernel
        def scaled(x: g.f32) -> g.f32:
            return x * factor

        return scaled

    for module in PICKLERS:
        kernel = module.loads(module.dumps(make(3)))
        np.testing.assert_array_equal(g.map(kernel)(np.arange(4, dtype=np.float32)), [0, 3, 6, 9])
    assert make(3).__dask_tokenize__() == make(3).__dask_tokenize__() != make(4).__dask_tokenize__()


class Gains:  # a class whose attribute a kernel below reads
    HALF = 0.5


def test_attributes_complex_numbers_and_local_params_travel_and_tell_tokens_apart():
    """What the language reads through an object's attributes (a config, a class), complex
    constants and a factory's own Params class go with a kernel, and are part of its token."""

    def make(cfg, c):
        class Shift(g.Params):
            by: g.f32

        @g.map_kernel
        def mixed(x: g.f32, p: Shift) -> g.f32:
            return x * cfg.scale * Gains.HALF + (x * c).imag + p.by

        return mixed

    x = np.arange(4, dtype=np.float32)
    for scale, c in ((2.0, 1j), (4.0, 3j)):
        for module in PICKLERS:
            kernel = module.loads(module.dumps(make(SimpleNamespace(scale=scale), c)))
            np.testing.assert_array_equal(g.map(kernel)(x, by=1), x * scale * 0.5 + x * c.imag + 1)
    made = [make(SimpleNamespace(scale=s), c) for s, c in ((2.0, 1j), (2.0, 1j), (4.0, 1j), (2.0, 3j))]
    tokens = [k.__dask_tokenize__() for k in made]
    assert tokens[0] == tokens[1] and len(set(tokens)) == 3


LATE = 1.0  # a global the kernel below reads, rebound after it is defined


def test_a_kernel_pickles_the_values_it_was_compiled_with():
    """An annotated kernel is translated when defined: a global rebound since, or a module's
    attribute set at run time, arrives as the kernel's code holds it, not as it is now or as the
    module's file sets it."""
    global LATE

    def make():
        @g.map_kernel
        def late(x: g.f32) -> g.f32:
            return x * LATE + kernels.OFFSET

        return late

    x = np.ones(2, np.float32)
    kernels.OFFSET = 10.0
    try:
        kernel = make()
        LATE, kernels.OFFSET = 2.0, 0.5
        token = kernel.__dask_tokenize__()
        for module in PICKLERS:
            np.testing.assert_array_equal(g.map(module.loads(module.dumps(kernel)))(x), [11, 11])
        np.testing.assert_array_equal(g.map(kernel)(x), [11, 11])
        assert token == kernel.__dask_tokenize__() != make().__dask_tokenize__()
    finally:
        LATE, kernels.OFFSET = 1.0, 0.5


def test_scalar_types_unpickle_as_the_same_objects():
    import cloudpickle

    for t in (g.f32, g.bf16, g.u64, g.bool_):
        assert pickle.loads(pickle.dumps(t)) is t
        assert cloudpickle.loads(cloudpickle.dumps(t)) is t
    assert pickle.loads(pickle.dumps(g.f16(1.5))) == g.f16(1.5)
