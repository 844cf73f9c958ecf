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

A module found in the cache is loaded into this process, so the cache trusts a folder (the root,
and each entry before its binary is read) only where no one but this user (or root) can change
it: owned by one of them, written by no group or other, and not a symbolic link (judged by
lstat, as what it is, not what it points to); the folders above the root too, save that one
others can write with the sticky bit set (`/tmp`) is trusted: whoever can write a folder above
it could swap the root. A checksum beside a module defends nothing against someone who can write
its folder. An untrusted root is never read: gompute warns once, naming the folder and the fix,
and uses a private temporary folder. An untrusted, damaged or unloadable entry is rebuilt, with
a warning naming it.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import stat
import tempfile
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

from ..errors import CompileError

ENV_VAR = "GOMPUTE_CACHE_DIR"


class CacheWarning(UserWarning):
    """A cache folder cannot be used or trusted: gompute compiles into a private one, or again."""


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
        """Where entries are built: the requested folder while it is trusted and writable, else a
        private one of this process's own."""
        if self._root is None or (self._root == self.requested and _distrust_root(self._root) is not None):
            self._root = self._usable_root()
        return self._root

    def _usable_root(self) -> Path:
        unwritable = _unwritable(self.requested)
        untrusted = _distrust_root(self.requested)
        if untrusted is not None:
            why, fix = untrusted
            return _private_fallback(
                f"gompute does not trust its kernel cache at {self.requested}: {why}, so another user could "
                "plant a module there. It loads nothing from there",
                fix,
            )
        if unwritable is not None:
            return _private_fallback(
                f"gompute cannot write its kernel cache at {self.requested} ({unwritable.strerror or unwritable})",
                f"Set {ENV_VAR} to a writable folder.",
            )
        return self.requested

    def get(
        self,
        name: str,
        key: dict,
        binary: str,
        build: Callable[[Path], None],
        load_problem: Callable[[bytes], str | None] | None = None,
    ) -> tuple[bytes, Path]:
        """The bytes of file `binary` of the entry for `key`, and the entry's folder.

        On a miss, `build(folder)` writes the entry's files (the binary among them) into a fresh
        folder; the cache adds meta.json and publishes the folder. A location that cannot be
        written is still read: a read-only cache filled beforehand serves its entries.
        `load_problem(binary)` says why a binary found in the cache does not load (None where it
        does); such an entry is rebuilt, with a warning.
        """
        published = self.requested / _entry_name(name, key)
        if _distrust_root(self.requested) is None:  # an untrusted root is never read; `root` warns of it once
            data = _read_trusted(published, binary, load_problem, warn=True)
            if data is not None:
                return data, published
        root = self.root
        entry = root / published.name
        data = _read_trusted(entry, binary, load_problem, warn=True) if entry != published else None
        if data is not None:
            return data, entry
        locks = root / ".locks"
        try:
            locks.mkdir(exist_ok=True)
        except FileExistsError:
            raise CompileError(f"{locks} is a file, where the cache keeps its lock folder; remove it") from None
        with FileLock(str(locks / f"{entry.name}.lock")):
            data = _read_trusted(entry, binary, load_problem, warn=False)  # another process may have built it
            if data is not None:
                return data, entry
            if os.path.lexists(entry):
                _remove(entry)  # untrusted, corrupt or unloadable: rebuild it
            for stale in root.glob(f".tmp-{entry.name}-*"):  # a killed build's: this lock is ours
                shutil.rmtree(stale, ignore_errors=True)
            tmp = root / f".tmp-{entry.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            tmp.mkdir(mode=0o700)  # whatever the umask: a group-writable entry would not be trusted
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


def _distrust(path: Path) -> tuple[str, str] | None:
    """Why someone besides this user and root could change `path`, and the fix; None where no one
    can, or where it does not exist. A symbolic link is judged as itself: gompute does not follow
    one into a folder it has not checked."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    private = f"set {ENV_VAR} to a folder only you can write"
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link", f"Point {ENV_VAR} at a folder itself, or {private}."
    if st.st_uid not in (os.getuid(), 0):  # root can change anything the process runs anyway
        return (
            f"it belongs to uid {st.st_uid}, not to you (uid {os.getuid()})",
            f"Run `chown {os.getuid()} {path}` if it is yours, or {private}.",
        )
    if st.st_mode & 0o022:
        who = {0o020: "its group", 0o002: "every user", 0o022: "its group and every user"}[st.st_mode & 0o022]
        return f"its mode {stat.S_IMODE(st.st_mode):o} lets {who} write it", f"Run `chmod go-w {path}`, or {private}."
    return None


def _distrust_root(root: Path) -> tuple[str, str] | None:
    """As `_distrust` for the root, and for every folder above it: whoever can write a folder
    above the root can rename the root away and put a folder of their own in its place. A
    folder others can write with the sticky bit set (`/tmp`) lets them remove only their own
    entries, so it is trusted. Folders are checked where the root's path names them and where
    they really are (a symbolic link above the root is followed, its target's folders checked)."""
    untrusted = _distrust(root)
    if untrusted is not None:
        return untrusted
    above = [*root.parents, *Path(os.path.realpath(root.parent)).parents, Path(os.path.realpath(root.parent))]
    for folder in dict.fromkeys(above):
        try:
            st = os.lstat(folder)
        except OSError:
            continue  # not made yet: checked on a later call, once it is
        if stat.S_ISLNK(st.st_mode):
            continue  # replaceable only by whoever can write the folder holding it, checked too
        why = _distrust(folder)
        sticky_and_ours = st.st_mode & stat.S_ISVTX and st.st_uid in (os.getuid(), 0)
        if why is not None and not sticky_and_ours:
            return f"the folder {folder} above it: {why[0]}", why[1]
    return None


def _private_fallback(why: str, fix: str) -> Path:
    """A folder of this process's own, removed at exit, said once with `why` and `fix`."""
    fallback = Path(tempfile.mkdtemp(prefix="gompute-cache-"))  # 0700
    atexit.register(shutil.rmtree, fallback, ignore_errors=True)
    warnings.warn(f"{why}; using {fallback} for this process. {fix}", CacheWarning, stacklevel=5)
    return fallback


def _read_trusted(
    entry: Path, binary: str, load_problem: Callable[[bytes], str | None] | None, warn: bool
) -> bytes | None:
    """The binary of `entry` where the entry is trusted, whole and loads; else None, and
    where `warn` and the entry exists, a warning naming it (the caller rebuilds it)."""
    if not os.path.lexists(entry):
        return None
    untrusted = _distrust(entry)
    data = _read_valid(entry, binary) if untrusted is None else None
    problem = load_problem(data) if data is not None and load_problem is not None else None
    if data is not None and problem is None:
        return data
    if warn:
        if untrusted is not None:
            why = untrusted[0]
        elif problem is not None:
            why = f"its {binary} does not load ({problem})"
        else:
            why = "its files are missing or do not match the checksums in its meta.json"
        warnings.warn(
            f"gompute does not use the cached kernel at {entry}: {why}. It builds the kernel again.",
            CacheWarning,
            stacklevel=3,
        )
    return None


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
    if trash.is_symlink():  # rmtree refuses a link: the link goes, not what it points to
        trash.unlink()
    else:
        shutil.rmtree(trash, ignore_errors=True)


def _unwritable(folder: Path) -> OSError | None:
    """Why `folder` cannot be written (None where it can); made private (0700) where it is missing."""
    try:
        _make_private_dir(folder)
        probe = folder / f".probe-{uuid.uuid4().hex}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        return e
    return None


def _make_private_dir(path: Path) -> None:
    """`path` (mode 700) and the missing folders above it (755), whatever the umask: a folder
    above the root that others could write would make the root untrusted (`_distrust_root`)."""
    missing = [p for p in (path, *path.parents) if not p.is_dir()]
    for folder in reversed(missing):
        mode = 0o700 if folder == path else 0o755
        try:
            folder.mkdir(mode=mode)
        except FileExistsError:  # another process made it first
            if folder.is_dir():
                continue
            raise
        os.chmod(folder, mode)  # mkdir's mode is filtered by the umask


_default: DiskCache | None = None


def default_cache() -> DiskCache:
    """The process's cache at the default location (GOMPUTE_CACHE_DIR, else the user cache dir)."""
    global _default
    if _default is None or _default.requested != default_root():
        _default = DiskCache()
    return _default
