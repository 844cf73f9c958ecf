"""`_core.current_work_stream`: the stream g.map's C++ path launches a tensor's work on, which the
general path asks too (kernel._torch_stream), so the two cannot disagree. The framework is
tests/fakes/torch_cuda.py's tensor, whose type carries a DLPack exchange table as torch's does;
its memory here is a host Buffer's, which the stream query never touches."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g
from gompute import _core, kernel

torch = pytest.importorskip("torch")
torch_cuda = pytest.importorskip("tests.fakes.torch_cuda")


@pytest.fixture
def tensor():
    buffer = g.asbuffer(np.zeros(8, np.float32))
    t = torch_cuda.FakeCudaTensor.over(buffer)
    yield t
    torch_cuda.FakeCudaTensor.set_current_stream(buffer.device, None)


def test_the_tables_current_stream_is_the_answer(tensor):
    device = tensor.buffer.device
    asked = torch_cuda.FakeCudaTensor.stream_queries(device)
    assert _core.current_work_stream(tensor) == 0  # the default stream
    torch_cuda.FakeCudaTensor.set_current_stream(device, 0x5000)
    assert _core.current_work_stream(tensor) == 0x5000
    assert kernel._torch_stream(tensor) == 0x5000  # the general path asks the same code
    assert torch_cuda.FakeCudaTensor.stream_queries(device) == asked + 3


def test_types_without_a_table_this_reads_give_none(tensor):
    for obj in (np.zeros(3), g.asbuffer(np.zeros(3)), object(), 3):
        assert _core.current_work_stream(obj) is None


def test_a_tensor_the_table_does_not_know_gives_none():
    """The table views only tensors it was told about (its view fails without a Python error)."""
    stray = torch.Tensor._make_subclass(torch_cuda.FakeCudaTensor, torch.zeros(2))
    torch_cuda.FakeCudaTensor.over(g.asbuffer(np.zeros(1, np.float32)))  # the table is built
    assert _core.current_work_stream(stray) is None
