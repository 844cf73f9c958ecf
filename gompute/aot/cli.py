"""`gompute emit ROOT... --out DIR [--cuda-arch sm_90 ...] [--hip-arch gfx90a ...]`, a subcommand
of `python -m gompute`."""

from __future__ import annotations

import argparse
import sys

from ..errors import ArgumentError, GomputeError
from .build import emit_kernels


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("roots", nargs="+", metavar="ROOT", help="a module name or a path to a .py file")
    parser.add_argument("--out", default=".", help="folder to write the gompute_kernels package into")
    parser.add_argument("--cuda-arch", action="append", default=[], help="also emit a CUBIN for this arch")
    parser.add_argument("--hip-arch", action="append", default=[], help="emit HSACO for this gfx arch")
    parser.add_argument("--no-cuda", action="store_true", help="skip CUDA even if NVRTC is installed")
    parser.add_argument("--no-host", action="store_true", help="skip the host backend's shared objects")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    """Emit as `args` say; an error is one message on stderr and exit status 2 (bad arguments) or 1."""
    sys.path.insert(0, ".")
    try:
        package = emit_kernels(
            args.roots,
            out=args.out,
            cuda_archs=args.cuda_arch,
            hip_archs=args.hip_arch,
            cuda=False if args.no_cuda else None,
            host=not args.no_host,
            progress=not args.quiet,
        )
    except GomputeError as e:
        print(f"gompute emit: error: {e}", file=sys.stderr)
        return 2 if isinstance(e, ArgumentError) else 1
    print(f"wrote {package}")
    return 0
