"""`python -m gompute info | demo | emit`: what this machine can run, a kernel run by hand, and
ahead-of-time kernel images."""

from __future__ import annotations

import argparse
import sys

from .info import backends


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
        backends()
        return 0
    if args.command == "emit":
        from .aot.cli import run as run_emit

        return run_emit(args)
    from .demo import main as demo

    return demo()


if __name__ == "__main__":
    sys.exit(main())
