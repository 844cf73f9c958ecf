"""The one disk cache of compiled kernels.

An entry is a folder a person can read, `<root>/<name>-<hash>/`, holding the generated source,
the binary and `meta.json` (what the key was made of, and each file's sha256). The hash covers
everything that changes the binary: gompute's version, the source, the compiler's identity and
version, the options and the target.

Entries are built in a temporary folder and published with one `os.replace`, under a file
lock per key, so several processes compiling the same kernel build it once and never see half
an entry. An entry whose files do not match their checksums is removed and rebuilt. A root that
cannot be written is still read, and new entries go to a private temporary folder, with one
warning, removed when the process exits.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

from ..errors import CompileError

ENV_VAR = "GOMPUTE_CACHE_DIR"


class CacheWarning(UserWarning):
    """The cache location cannot be used; gompute compiles into a temporary one instead."""


def gompute_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gompute")
    except PackageNotFoundError:
        return "0+unknown"


def default_root() -> Path:
    env = os.environ.get(ENV_VAR)
    if env:
        return _absolute(env)  # a relative one would move with the working directory
    import platformdirs

    return Path(platformdirs.user_cache_dir("gompute", appauthor=False))


def key_hash(key: dict) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class DiskCache:
    """Compiled binaries by key; `get` returns one, building and publishing it on a miss."""

    def __init__(self, root: Path | str | None = None):
        self.requested = _absolute(root) if root is not None else default_root()
        self._root: Path | None = None

    @property
    def root(self) -> Path:
        if self._root is None:
            self._root = self._usable_root()
        return self._root

    def _usable_root(self) -> Path:
        try:
            _make_private_dir(self.requested)
            probe = self.requested / f".probe-{uuid.uuid4().hex}"
            probe.write_bytes(b"")
            probe.unlink()
            return self.requested
        except OSError as e:
            fallback = Path(tempfile.mkdtemp(prefix="gompute-cache-"))
            atexit.register(shutil.rmtree, fallback, ignore_errors=True)  # the process's own
            warnings.warn(
                f"gompute cannot write its kernel cache at {self.requested} ({e.strerror or e}); "
                f"using {fallback} for this process. Set {ENV_VAR} to a writable folder.",
                CacheWarning,
                stacklevel=4,
            )
            return fallback

    def entry_dir(self, name: str, key: dict) -> Path:
        return self.root / _entry_name(name, key)

    def get(self, name: str, key: dict, binary: str, build: Callable[[Path], None]) -> tuple[bytes, Path]:
        """The bytes of file `binary` of the entry for `key`, and the entry's folder.

        On a miss, `build(folder)` writes the entry's files (the binary among them) into a fresh
        folder; the cache adds meta.json and publishes the folder. A location that cannot be
        written is still read: a read-only cache filled beforehand serves its entries.
        """
        published = self.requested / _entry_name(name, key)
        data = _read_valid(published, binary)
        if data is not None:
            return data, published
        entry = self.entry_dir(name, key)
        data = _read_valid(entry, binary) if entry != published else None
        if data is not None:
            return data, entry
        locks = self.root / ".locks"
        try:
            locks.mkdir(exist_ok=True)
        except FileExistsError:
            raise CompileError(f"{locks} is a file, where the cache keeps its lock folder; remove it") from None
        with FileLock(str(locks / f"{entry.name}.lock")):
            data = _read_valid(entry, binary)  # another process may have built it meanwhile
            if data is not None:
                return data, entry
            if entry.exists():
                _remove(entry)  # corrupt or unreadable: rebuild it
            for stale in self.root.glob(f".tmp-{entry.name}-*"):  # a killed build's: this lock is ours
                shutil.rmtree(stale, ignore_errors=True)
            tmp = self.root / f".tmp-{entry.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            tmp.mkdir()
            try:
                try:
                    build(tmp)
                except CompileError as e:
                    raise self._keep_failed(tmp, entry, e) from None
                files = {p.name: _sha256(p) for p in sorted(tmp.iterdir()) if p.is_file()}
                if binary not in files:
                    raise CompileError(f"building {name} reported success but wrote no {binary}")
                meta = {"name": name, "binary": binary, "key": _readable(key), "files": files}
                (tmp / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True, default=str))
                os.replace(tmp, entry)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
        return (entry / binary).read_bytes(), entry

    def _keep_failed(self, tmp: Path, entry: Path, error: CompileError) -> CompileError:
        """Keep a failed build's files where the error message can point at them."""
        failed = self.root / "failed" / entry.name
        failed.parent.mkdir(exist_ok=True)
        if failed.exists():
            shutil.rmtree(failed, ignore_errors=True)
        os.replace(tmp, failed)
        kept = type(error)(str(error).replace(str(tmp), str(failed)))  # a SourceRejected stays one
        kept.source_dir = failed
        return kept


def _entry_name(name: str, key: dict) -> str:
    """`<name>-<hash>`, the name cut to 64 characters: a file name has at most 255 bytes, and the
    lock, temporary and trash names add to it."""
    return f"{name[:64]}-{key_hash(key)[:24]}"


def _absolute(path: Path | str) -> Path:
    return Path(os.path.abspath(Path(path).expanduser()))


def _readable(key: dict) -> dict:
    """The key as meta.json shows it: long values (the source) by their sha256."""
    return {
        k: (f"sha256:{hashlib.sha256(str(v).encode()).hexdigest()}" if len(str(v)) > 200 else v) for k, v in key.items()
    }


def _read_valid(entry: Path, binary: str) -> bytes | None:
    """The binary of a complete entry whose files all match meta.json, else None."""
    try:
        meta = json.loads((entry / "meta.json").read_text())
        files = meta["files"]
        data = (entry / binary).read_bytes()
        if files.get(binary) != hashlib.sha256(data).hexdigest():
            return None
        for fname, digest in files.items():
            if fname != binary and _sha256(entry / fname) != digest:
                return None
        return data
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


def _remove(entry: Path) -> None:
    trash = entry.with_name(f".trash-{entry.name}-{uuid.uuid4().hex[:8]}")
    try:
        os.replace(entry, trash)
    except OSError:
        return
    shutil.rmtree(trash, ignore_errors=True)


def _make_private_dir(path: Path) -> None:
    if path.is_dir():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:  # another process made it first
        if path.is_dir():
            return
        raise
    os.chmod(path, 0o700)  # mkdir's mode is filtered by the umask


_default: DiskCache | None = None


def default_cache() -> DiskCache:
    """The process's cache at the default location (GOMPUTE_CACHE_DIR, else the user cache dir)."""
    global _default
    if _default is None or _default.requested != default_root():
        _default = DiskCache()
    return _default
