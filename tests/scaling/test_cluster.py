"""Kernels on a cluster of worker processes (distributed.LocalCluster), defined in an importable
module, in a script's `__main__` and in an IPython cell: results equal NumPy's, each kernel is
compiled at most once per worker process, a failed compile reaches the client as CompileError,
and a worker without a C++ compiler runs kernels from an emitted package shipped to it."""

import json
import logging

import numpy as np
import pytest

from .conftest import NO_EXTRA, run_script

da = pytest.importorskip("dask.array", reason=NO_EXTRA)
distributed = pytest.importorskip("distributed", reason=NO_EXTRA)

import gompute as g  # noqa: E402 - after the skip
from tests.scaling import kernels, workers  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # distributed's own


@pytest.fixture(scope="module")
def client():
    """Two worker processes of one thread each, counting the kernels they compile."""
    with (
        distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None, silence_logs=logging.ERROR
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.run(workers.count_compiles)
        yield client


def compiled(client, name: str) -> list[int]:
    """How often each worker process compiled the kernel `name`."""
    return [counts.get(name, 0) for counts in client.run(workers.compiles).values()]


def test_kernels_of_a_module_run_on_the_workers_compiled_once_each(client):
    x = np.linspace(-3, 3, 40_000, dtype=np.float32)
    y = np.linspace(1, 2, 40_000, dtype=np.float32)
    lazy = g.map(kernels.gain_square)(da.from_array(x, chunks=2_000), da.from_array(y, chunks=5_000), gain=2, shift=1)
    for _ in range(2):  # the second graph's tasks find the kernel compiled
        np.testing.assert_array_equal(lazy.compute(), kernels.gain_square_numpy(x, y, 2, 1))
    counts = compiled(client, "gain_square")
    assert max(counts) == 1 and sum(counts) >= 1, counts


@pytest.fixture(scope="module")
def script_on_cluster(client, tmp_path_factory):
    """defines.py run as a user's script against the cluster: its `__main__` kernel and an
    IPython cell's, each mapped over a Dask array there."""
    pytest.importorskip("IPython")
    address = client.scheduler.address
    env = {"IPYTHONDIR": str(tmp_path_factory.mktemp("ipython"))}
    return json.loads(run_script("defines.py", "cluster", address, env=env).stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("where, name", [("main", "mix"), ("cell", "cell_mix")])
def test_kernels_of_main_and_of_an_ipython_cell_run_on_the_workers(client, script_on_cluster, where, name):
    assert script_on_cluster[where] == 0.0
    counts = compiled(client, name)
    assert max(counts) == 1, counts  # the workers could not import it; each built it once from its source


def test_a_worker_whose_compile_fails_reports_the_compile_error(client):
    client.run(workers.without_compiler)
    try:
        lazy = g.map(kernels.never_compiled_elsewhere)(da.ones(100, dtype=np.float32, chunks=50))
        with pytest.raises(g.CompileError, match="no C\\+\\+ compiler found"):
            lazy.compute()
    finally:
        client.run(workers.with_compiler)


def test_a_worker_without_a_compiler_runs_a_shipped_emitted_package(client, tmp_path):
    """As docs/scaling.md ships one: emitted into a folder, uploaded to every worker's sys.path."""
    from distributed.diagnostics.plugin import UploadDirectory

    built = tmp_path / "kernels_build"
    g.emit_kernels(["tests.scaling.shipped"], out=built, cuda=False, progress=False)
    client.register_plugin(UploadDirectory(str(built), update_path=True, restart_workers=True))
    client.run(workers.count_compiles)  # restarted: new processes
    client.run(workers.without_compiler)
    try:
        from tests.scaling import shipped

        x = np.linspace(-1, 1, 1000, dtype=np.float32)
        result = g.map(shipped.shipped_cube)(da.from_array(x, chunks=100)).compute()
        np.testing.assert_array_equal(result, x * x * x)
        assert compiled(client, "shipped_cube") == [0, 0]
    finally:
        client.run(workers.with_compiler)
