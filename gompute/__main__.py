"""`gompute info | demo | emit | --version` (also `python -m gompute ...`): what this machine can
run and with what, the main job shown end to end, and ahead-of-time kernel images."""

from __future__ import annotations

import argparse
import sys

from . import __version__
from .errors import GomputeError
from .info import backends, environment


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gompute", description=__doc__)
    parser.add_argument("--version", action="version", version=f"gompute {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("info", help="gompute's version, compilers and cache; the backends, and why one is unavailable")
    commands.add_parser("demo", help="g.map on NumPy (and torch) timed beside NumPy, then the runtime by hand")
    from .aot.cli import add_arguments as emit_arguments

    emit_arguments(
        commands.add_parser("emit", help="compile the kernels of ROOT modules into a gompute_kernels package")
    )
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except GomputeError as e:  # the user's machine or request, said in their words: no traceback
        print(f"gompute {args.command}: {e}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    if args.command == "info":
        environment()
        backends()
        return 0
    if args.command == "emit":
        from .aot.cli import run as run_emit

        return run_emit(args)
    from .demo import main as demo

    return demo()


if __name__ == "__main__":
    sys.exit(main())
