"""What the kernel cache trusts: a folder only this user (or root) can change. A module found in
the cache is loaded into the process, so a cache another user can write is never read, and a
cached module that is damaged or does not load is rebuilt, with a warning naming its folder."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import warnings
from pathlib import Path

import numpy as np
import pytest

import gompute as g
from gompute.compile import cache as cache_mod
from gompute.compile.cache import ENV_VAR, CacheWarning, DiskCache

KEY = {"source": "a"}
HONEST, PLANTED = b"\x7fhonest" * 64, b"\x7fplanted" * 64
NOBODY = 65534

# A shared object whose loading shows: its constructor runs at dlopen and writes MARKER.
PLANTED_MODULE = """
#include <cstdio>
__attribute__((constructor)) static void planted() {
  if (std::FILE* f = std::fopen("MARKER", "w")) std::fclose(f);
}
"""


def _triple(x):
    return x * 3


class Builder:
    """A build function that counts its calls and writes `payload` as out.bin."""

    def __init__(self, payload: bytes = HONEST):
        self.calls, self.payload = 0, payload

    def __call__(self, folder: Path) -> None:
        self.calls += 1
        (folder / "out.bin").write_bytes(self.payload)


def _filled(root: Path, payload: bytes = PLANTED) -> Path:
    """The entry for KEY in `root`, built with `payload`: a cache as someone left it."""
    return DiskCache(root).get("k", KEY, "out.bin", Builder(payload))[1]


def _get_warned(root: Path) -> tuple[bytes, Path, Builder, str]:
    """A fresh process's get of KEY from `root`: the data, the entry, the build, the one warning."""
    build = Builder()
    with pytest.warns(CacheWarning) as record:
        data, entry = DiskCache(root).get("k", KEY, "out.bin", build)
    (message,) = [str(w.message) for w in record]
    return data, entry, build, message


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _plant(entry: Path, image: bytes) -> None:
    """Replace the entry's host.so with `image`, its checksum in meta.json updated to match."""
    (entry / "host.so").write_bytes(image)
    meta = json.loads((entry / "meta.json").read_text())
    meta["files"]["host.so"] = hashlib.sha256(image).hexdigest()
    (entry / "meta.json").write_text(json.dumps(meta))


@pytest.mark.parametrize(
    "mode, who",
    [
        (0o777, "its group and every user"),
        (0o1777, "its group and every user"),
        (0o770, "its group"),
        (0o707, "every user"),
    ],
    ids=["777", "1777", "770", "707"],
)
def test_a_root_others_can_write_is_not_read_and_the_warning_names_it_and_the_fix(tmp_path, mode, who):
    root = tmp_path / "cache"
    planted = _filled(root)
    root.chmod(mode)
    data, entry, build, message = _get_warned(root)
    assert data == HONEST and build.calls == 1 and root not in entry.parents
    assert message.startswith(
        f"gompute does not trust its kernel cache at {root}: its mode {mode:o} lets {who} write it, so another "
        "user could plant a module there. It loads nothing from there; using "
    )
    assert message.endswith(f"Run `chmod go-w {root}`, or set {ENV_VAR} to a folder only you can write.")
    assert (planted / "out.bin").read_bytes() == PLANTED  # left as it was: not the process's to remove


def test_an_entry_others_can_write_is_rebuilt_not_read(tmp_path):
    root = tmp_path / "cache"
    planted = _filled(root)
    planted.chmod(0o770)
    data, entry, build, message = _get_warned(root)
    assert data == HONEST and build.calls == 1 and entry == planted
    assert message == (
        f"gompute does not use the cached kernel at {entry}: its mode 770 lets its group write it. "
        "It builds the kernel again."
    )
    assert _mode(entry) == 0o700 and (entry / "out.bin").read_bytes() == HONEST


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
@pytest.mark.parametrize("where", ["root", "entry"])
def test_a_folder_of_another_user_is_not_read(tmp_path, where):
    root = tmp_path / "cache"
    planted = _filled(root)
    os.chown(root if where == "root" else planted, NOBODY, NOBODY)
    data, entry, build, message = _get_warned(root)
    assert data == HONEST and build.calls == 1
    assert f"it belongs to uid {NOBODY}, not to you (uid {os.getuid()})" in message
    if where == "root":
        assert root not in entry.parents and f"at {root}:" in message
        assert message.endswith(
            f"Run `chown {os.getuid()} {root}` if it is yours, or set {ENV_VAR} to a folder only you can write."
        )
    else:
        assert entry == planted and f"the cached kernel at {entry}:" in message and entry.stat().st_uid == os.getuid()


def test_a_symlinked_root_or_entry_is_judged_as_a_link_and_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    planted = _filled(elsewhere)
    link = tmp_path / "link"
    link.symlink_to(elsewhere)
    data, entry, build, message = _get_warned(link)
    assert data == HONEST and build.calls == 1 and not str(entry).startswith(str(link))
    assert f"does not trust its kernel cache at {link}: it is a symbolic link" in message

    root = tmp_path / "cache"
    honest_entry = _filled(root, HONEST)
    honest_entry.rename(tmp_path / "moved")
    honest_entry.symlink_to(planted)
    data, entry, build, message = _get_warned(root)
    assert data == HONEST and entry == honest_entry and not entry.is_symlink()
    assert message.startswith(f"gompute does not use the cached kernel at {entry}: it is a symbolic link.")
    assert (planted / "out.bin").read_bytes() == PLANTED  # what the link pointed to is not touched


@pytest.mark.parametrize("via_link", [False, True], ids=["direct", "through-a-link"])
def test_a_root_under_a_folder_others_can_write_is_not_read(tmp_path, via_link):
    shared = tmp_path / "shared"
    planted = _filled(shared / "cache")
    shared.chmod(0o777)  # anyone could rename the cache away and put their own in its place
    root = (tmp_path / "link" if via_link else shared) / "cache"
    if via_link:
        (tmp_path / "link").symlink_to(shared)
    data, entry, build, message = _get_warned(root)
    assert data == HONEST and build.calls == 1 and root not in entry.parents
    assert message.startswith(
        f"gompute does not trust its kernel cache at {root}: the folder {shared} above it: its mode 777 lets "
        "its group and every user write it, so another user could plant a module there."
    )
    assert f"Run `chmod go-w {shared}`" in message
    assert (planted / "out.bin").read_bytes() == PLANTED


def test_a_root_under_a_sticky_folder_like_tmp_is_trusted(tmp_path):
    shared = tmp_path / "shared"
    _filled(shared / "cache", HONEST)
    shared.chmod(0o1777)  # others may add entries but not rename or remove ours
    build = Builder(b"\x7fnever")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        data, entry = DiskCache(shared / "cache").get("k", KEY, "out.bin", build)
    assert data == HONEST and build.calls == 0 and entry.parent == shared / "cache"


def test_a_root_opened_to_others_after_first_use_is_left_at_once(tmp_path):
    root = tmp_path / "cache"
    c = DiskCache(root)
    c.get("k", KEY, "out.bin", Builder())
    root.chmod(0o777)
    build = Builder(b"\x7frebuilt")
    with pytest.warns(CacheWarning, match=re.escape(f"does not trust its kernel cache at {root}")):
        data, entry = c.get("k", KEY, "out.bin", build)
    assert data == build.payload and build.calls == 1 and root not in entry.parents


def test_a_private_root_is_used_as_before_and_stays_private_under_a_loose_umask(tmp_path):
    root = tmp_path / "new" / "cache"
    old = os.umask(0o002)  # group-writable by default, as some systems give each user
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _, entry = DiskCache(root).get("k", KEY, "out.bin", Builder())
            build = Builder(PLANTED)
            data, again = DiskCache(root).get("k", KEY, "out.bin", build)
    finally:
        os.umask(old)
    assert data == HONEST and again == entry and build.calls == 0
    assert _mode(root) == 0o700 and _mode(entry) == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="a folder of root's is made by root")
def test_a_cache_of_roots_that_no_one_else_can_write_serves_other_users(tmp_path, monkeypatch):
    """Root can change whatever a process runs anyway, so a read-only cache root filled (an image
    built as root, used as another user) is as safe as one's own."""
    root = tmp_path / "cache"
    filled = _filled(root, HONEST)
    root.chmod(0o755)
    filled.chmod(0o755)
    monkeypatch.setattr(os, "getuid", lambda: NOBODY)
    build = Builder(PLANTED)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data, entry = DiskCache(root).get("k", KEY, "out.bin", build)
    assert data == HONEST and entry == filled and build.calls == 0


def test_a_damaged_entry_is_rebuilt_with_one_warning_naming_it(tmp_path):
    c = DiskCache(tmp_path / "cache")
    _, entry = c.get("k", KEY, "out.bin", Builder())
    (entry / "out.bin").write_bytes(PLANTED)  # its checksum in meta.json no longer matches
    build = Builder()
    with pytest.warns(CacheWarning) as record:
        data, again = c.get("k", KEY, "out.bin", build)
    assert [str(w.message) for w in record] == [
        f"gompute does not use the cached kernel at {entry}: its files are missing or do not match the "
        "checksums in its meta.json. It builds the kernel again."
    ]
    assert data == HONEST and again == entry and build.calls == 1


def test_a_cached_host_module_that_does_not_load_is_rebuilt_with_a_warning_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "cache"))
    x = np.arange(4, dtype=np.float64)
    g.map(g.map_kernel(_triple))(x)
    (entry,) = [meta.parent for meta in (tmp_path / "cache").glob("*/meta.json")]
    _plant(entry, b"not a shared object")
    with pytest.warns(CacheWarning) as record:
        result = g.map(g.map_kernel(_triple))(x)  # a new kernel object: it looks in the cache again
    assert result.tolist() == [0.0, 3.0, 6.0, 9.0]
    (message,) = [str(w.message) for w in record]
    assert message.startswith(f"gompute does not use the cached kernel at {entry}: its host.so does not load (")
    assert (entry / "host.so").read_bytes().startswith(b"\x7fELF")


def test_a_module_planted_in_a_cache_others_can_write_is_never_loaded(tmp_path, monkeypatch, build_host):
    """Another local user writes a module into a shared cache folder: the process warns and
    compiles its own, and the planted module's constructor never runs."""
    root, marker = tmp_path / "shared-cache", tmp_path / "the-planted-module-ran"
    monkeypatch.setenv(ENV_VAR, str(root))
    monkeypatch.setattr(cache_mod, "_default", None)  # as a process starting after the plant
    x = np.arange(4, dtype=np.float64)
    g.map(g.map_kernel(_triple))(x)
    (entry,) = [meta.parent for meta in root.glob("*/meta.json")]
    _plant(entry, build_host(PLANTED_MODULE.replace("MARKER", str(marker))).read_bytes())
    root.chmod(0o777)
    monkeypatch.setattr(cache_mod, "_default", None)
    with pytest.warns(CacheWarning, match=re.escape(f"does not trust its kernel cache at {root}")):
        result = g.map(g.map_kernel(_triple))(x)
    assert result.tolist() == [0.0, 3.0, 6.0, 9.0]
    assert not marker.exists()
