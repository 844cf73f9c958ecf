"""g.reduce's out= into a torch tensor counts the write for autograd, as g.map's does: a torch
subclass too, whose type lives outside torch's modules."""

from __future__ import annotations

import numpy as np
import pytest

import gompute as g

from . import kernels as K

torch = pytest.importorskip("torch")


class _MyTensor(torch.Tensor):
    pass


@pytest.mark.parametrize("as_type", [torch.Tensor, _MyTensor], ids=["Tensor", "subclass"])
def test_a_reduction_into_a_tensor_moves_its_version_counter(as_type):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = torch.zeros(4).as_subclass(as_type)
    version = out._version
    got = g.reduce(K.sumsq)(torch.from_numpy(x), axis=0, out=out)
    assert got is out
    assert out._version > version
    np.testing.assert_allclose(out.as_subclass(torch.Tensor).numpy(), (x * x).sum(axis=0), rtol=1e-6)
