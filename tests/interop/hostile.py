"""Arrays that lie: producers whose protocols describe memory wrongly or are malformed, and
a child interpreter to call g.map on them in, so a crash fails a test instead of pytest."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from .dlpack_abi import KDL_CPU, Handmade

REPO = Path(__file__).resolve().parents[2]


class FreshDlpack:
    """A CPU DLPack producer handing out a new capsule over `array` on every __dlpack__
    call (as a real producer does), with the DLTensor `fields` set as given."""

    def __init__(self, array, **fields):
        self.array, self.fields, self.made = array, fields, []

    def __dlpack_device__(self):
        return (KDL_CPU, 0)

    def __dlpack__(self, **_):
        made = Handmade(self.array)
        for name, value in self.fields.items():
            setattr(made.m.dl_tensor, name, value)
        self.made.append(made)  # the ctypes memory the capsule points into stays alive
        return made.capsule


class CaiArray:
    """A CUDA array given only through `__cuda_array_interface__`, the dict held as given
    (any value a producer might put there)."""

    def __init__(self, interface):
        self.__cuda_array_interface__ = interface


def cai_of(buffer, **changes) -> dict:
    """A well-formed v3 interface of a 1-D f32 CUDA Buffer, with `changes` applied."""
    interface = {
        "shape": tuple(buffer.shape),
        "typestr": "<f4",
        "data": (buffer.data_addr(), False),
        "version": 3,
        "strides": None,
        "stream": 1,
    }
    interface.update(changes)
    return interface


class HostInterface:
    """A host array given only through `__array_interface__`, the dict held as given."""

    def __init__(self, interface, keep=None):
        self.__array_interface__ = interface
        self.keep = keep  # the memory the interface points into


def outcome(call) -> str:
    """What `call()` ended in: "ok", or the gompute error's type name and message (any other
    exception propagates, and fails the child)."""
    import gompute as g

    try:
        call()
    except g.GomputeError as e:
        return f"{type(e).__name__}: {e}"
    return "ok"


def in_child(body: str, env: dict[str, str] | None = None) -> list[str]:
    """The lines `body` prints, run in a new interpreter with this process's environment
    (GOMPUTE_LIBCUDA included) updated by `env`, and the repository importable. A child that
    dies of a signal or exits nonzero fails the calling test, with its stderr."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(body)],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"the child exited with {result.returncode}:\n{result.stderr[-4000:]}"
    return result.stdout.splitlines()
