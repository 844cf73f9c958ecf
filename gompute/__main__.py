"""`python -m gompute info | demo | emit`: what this machine can run, a kernel run by hand, and
ahead-of-time kernel images."""

from __future__ import annotations

import argparse
import sys

from . import _core
from .backend import Backend, cuda_version
from .errors import GomputeError
from .runtime import device_info


def _gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:.1f} GiB"


def _driver_text(backend: Backend, version: int) -> str:
    if backend is Backend.host:
        return f"host ABI {version}"
    if backend is Backend.cuda:
        return "CUDA driver {}.{}".format(*cuda_version(version))
    return f"HIP driver {version}"


def info(out=sys.stdout) -> int:
    """Prints each backend, whether it is usable and why not, and its devices."""
    for backend in (Backend.cuda, Backend.hip, Backend.host):
        usable, reason, version, count = _core.probe(backend.kind)
        if not usable:
            print(f"{backend.value:5} unavailable: {reason}", file=out)
            continue
        print(f"{backend.value:5} usable: {_driver_text(backend, version)}, {count} device(s)", file=out)
        for ordinal in range(count):
            try:
                d = device_info(backend, ordinal)
            except GomputeError as e:
                print(f"      [{ordinal}] cannot be queried: {e}", file=out)
                continue
            arch = (
                d.arch
                if backend is Backend.host
                else f"{d.arch} (compute capability {d.compute_capability[0]}.{d.compute_capability[1]})"
            )
            units = "worker threads" if backend is Backend.host else "multiprocessors"
            print(f"      [{ordinal}] {d.name}: {arch}, {_gib(d.total_memory)}, {d.multiprocessors} {units}", file=out)
    print("cpu   always: the polite arm Compute.init() falls back to when no GPU backend is usable", file=out)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gompute", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("info", help="backends, devices and why a backend is unavailable")
    commands.add_parser("demo", help="probe, allocate, upload, launch, download, and say what ran where")
    from .aot.cli import add_arguments as emit_arguments

    emit_arguments(
        commands.add_parser("emit", help="compile the kernels of ROOT modules into a gompute_kernels package")
    )
    args = parser.parse_args(argv)
    if args.command == "info":
        return info()
    if args.command == "emit":
        from .aot.cli import run as run_emit

        return run_emit(args)
    from .demo import main as demo

    return demo()


if __name__ == "__main__":
    sys.exit(main())
