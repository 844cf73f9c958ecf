"""Run at start-up by every interpreter of `make sanitize`, which puts this folder on PYTHONPATH.

`gompute._core` is imported from the sanitized build in the folder GOMPUTE_SANITIZED_BUILD, ahead
of the editable install's finder, so that the tests and the Python processes they start all run it. A
sanitized module loads only where libasan is preloaded: a child started without it (a test that
builds its own environment) keeps the normal `_core`.

Leaks are looked for when the program is done but before the interpreter is torn down, from this
process's last atexit handler: then everything Python or gompute still uses is reachable from the
interpreter's state, and what is not is a leak. Checked later, at the end of the process, every
object the interpreter leaves unfreed by design would be one, with the gompute objects it holds.
"""

import atexit
import importlib.machinery
import importlib.util
import os
import sys

_BUILD = os.environ.get("GOMPUTE_SANITIZED_BUILD", "")
_CORE = os.path.join(_BUILD, "_core" + importlib.machinery.EXTENSION_SUFFIXES[0])


class _SanitizedCore:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "gompute._core":
            return None
        loader = importlib.machinery.ExtensionFileLoader(name, _CORE)
        return importlib.util.spec_from_file_location(name, _CORE, loader=loader)


def _check_leaks() -> None:
    """LeakSanitizer's check, now; it ends the process with a report when it finds a leak, and the
    check at the end of the process is then skipped."""
    import ctypes
    import gc

    gc.collect()  # cycles are garbage, not leaks
    sys.stdout.flush()
    sys.stderr.flush()
    ctypes.CDLL(None).__lsan_do_leak_check()


if _BUILD and "libasan" in os.environ.get("LD_PRELOAD", ""):
    sys.meta_path.insert(0, _SanitizedCore)
    atexit.register(_check_leaks)  # registered first, so it runs after every other handler
