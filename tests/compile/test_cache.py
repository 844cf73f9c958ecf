"""The disk cache: hit, miss, corrupt entry, unwritable location, several processes at once."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from gompute.compile import cache as cache_mod
from gompute.compile.cache import CacheWarning, DiskCache
from gompute.errors import CompileError


class Builder:
    """A build function that counts its calls and writes a source and a binary."""

    def __init__(self, payload: bytes = b"\x7fbinary" * 100):
        self.calls, self.payload = 0, payload

    def __call__(self, folder: Path) -> None:
        self.calls += 1
        (folder / "source.cpp").write_text("int main() {}\n")
        (folder / "out.bin").write_bytes(self.payload)


def test_miss_builds_then_hit_reads_without_building(tmp_path):
    build = Builder()
    data, entry = DiskCache(tmp_path).get("k", {"source": "a"}, "out.bin", build)
    assert data == build.payload and build.calls == 1
    again, same = DiskCache(tmp_path).get("k", {"source": "a"}, "out.bin", build)  # a fresh process's view
    assert again == data and same == entry and build.calls == 1


def test_another_key_is_another_entry(tmp_path):
    build = Builder()
    c = DiskCache(tmp_path)
    _, a = c.get("k", {"source": "a", "target": "x"}, "out.bin", build)
    _, b = c.get("k", {"source": "a", "target": "y"}, "out.bin", build)
    assert a != b and build.calls == 2
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == sorted([a.name, b.name])


def test_entry_is_a_readable_folder_with_meta(tmp_path):
    root = tmp_path / "new-cache"
    _, entry = DiskCache(root).get("scale_relu", {"source": "x" * 500, "target": "sm_90"}, "out.bin", Builder())
    assert entry.parent == root and entry.name.startswith("scale_relu-")
    assert sorted(p.name for p in entry.iterdir()) == ["meta.json", "out.bin", "source.cpp"]
    meta = json.loads((entry / "meta.json").read_text())
    assert meta["binary"] == "out.bin" and set(meta["files"]) == {"out.bin", "source.cpp"}
    assert meta["key"]["target"] == "sm_90" and meta["key"]["source"].startswith("sha256:")
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert not [p for p in root.iterdir() if p.name.startswith(".tmp-")]


@pytest.mark.parametrize("damage", ["truncate binary", "flip source", "drop meta", "garbage meta"])
def test_corrupt_entry_is_rebuilt(tmp_path, damage):
    build = Builder()
    c = DiskCache(tmp_path)
    _, entry = c.get("k", {"source": "a"}, "out.bin", build)
    if damage == "truncate binary":
        (entry / "out.bin").write_bytes(b"\x7fbin")
    elif damage == "flip source":
        (entry / "source.cpp").write_text("changed")
    elif damage == "drop meta":
        (entry / "meta.json").unlink()
    else:
        (entry / "meta.json").write_text("{not json")
    with pytest.warns(CacheWarning, match=str(entry.name)):  # the damaged entry is named
        data, again = c.get("k", {"source": "a"}, "out.bin", build)
    assert data == build.payload and again == entry and build.calls == 2
    assert c.get("k", {"source": "a"}, "out.bin", build)[0] == build.payload and build.calls == 2


def test_unwritable_location_falls_back_with_one_warning(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(cache_mod.ENV_VAR, str(blocker / "cache"))  # a folder cannot be made under a file
    c = DiskCache()
    with pytest.warns(CacheWarning, match="cannot write its kernel cache") as record:
        data, entry = c.get("k", {"source": "a"}, "out.bin", Builder())
    assert len(record) == 1 and data == Builder().payload
    assert not str(entry).startswith(str(blocker)) and stat.S_IMODE(c.root.stat().st_mode) == 0o700
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c.get("k2", {"source": "b"}, "out.bin", Builder())  # no second warning


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes to read-only folders")
def test_read_only_location_falls_back(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    with pytest.warns(CacheWarning):
        _, entry = DiskCache(ro).get("k", {"source": "a"}, "out.bin", Builder())
    assert ro not in entry.parents


def test_env_var_overrides_the_location(tmp_path, monkeypatch):
    monkeypatch.setenv(cache_mod.ENV_VAR, str(tmp_path / "here"))
    assert cache_mod.default_cache().root == tmp_path / "here"


def test_a_relative_location_stays_where_it_was_when_the_directory_changes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(cache_mod.ENV_VAR, "relative-cache")
    c = cache_mod.default_cache()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    _, entry = c.get("k", {"source": "a"}, "out.bin", Builder())
    assert entry.parent == tmp_path / "relative-cache"


def test_a_location_that_cannot_be_written_still_serves_its_entries(tmp_path, monkeypatch):
    """A read-only cache filled beforehand (an image, a shared mount) is read; only new entries
    go to the temporary fallback."""
    filled = Builder()
    _, entry = DiskCache(tmp_path).get("k", {"source": "a"}, "out.bin", filled)

    def unwritable(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(cache_mod, "_make_private_dir", unwritable)
    build, c = Builder(), DiskCache(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a hit does not even look for a writable place
        data, again = c.get("k", {"source": "a"}, "out.bin", build)
    assert data == filled.payload and again == entry and build.calls == 0
    with pytest.warns(CacheWarning):
        _, new = c.get("k", {"source": "b"}, "out.bin", build)
    assert build.calls == 1 and tmp_path not in new.parents


def test_a_long_name_is_cut_in_the_entrys_folder_name(tmp_path):
    name = "k" * 300  # a generic kernel's symbol can run long; a file name has 255 bytes at most
    data, entry = DiskCache(tmp_path).get(name, {"source": "a"}, "out.bin", Builder())
    assert data == Builder().payload and len(entry.name) < 100 and entry.name.startswith("k" * 64 + "-")


def test_a_killed_builds_temporary_folder_goes_with_the_next_build(tmp_path):
    """Under the entry's lock no other build of it runs, so its temporary folders are leftovers."""
    c = DiskCache(tmp_path)
    name = cache_mod._entry_name("k", {"source": "a"})
    left = tmp_path / f".tmp-{name}-12345-deadbeef"
    left.mkdir()
    (left / "out.bin").write_bytes(b"half")
    c.get("k", {"source": "a"}, "out.bin", Builder())
    assert not left.exists() and not list(tmp_path.glob(".tmp-*"))


def test_a_file_where_the_lock_folder_goes_is_named_in_the_error(tmp_path):
    (tmp_path / ".locks").write_text("not a folder")
    with pytest.raises(CompileError, match=r"\.locks is a file, where the cache keeps its lock folder; remove it"):
        DiskCache(tmp_path).get("k", {"source": "a"}, "out.bin", Builder())


def test_a_meta_json_nested_past_the_recursion_limit_is_rebuilt(tmp_path):
    build = Builder()
    c = DiskCache(tmp_path)
    _, entry = c.get("k", {"source": "a"}, "out.bin", build)
    (entry / "meta.json").write_text("[" * 200_000)
    with pytest.warns(CacheWarning, match=str(entry.name)):
        assert c.get("k", {"source": "a"}, "out.bin", build)[0] == build.payload and build.calls == 2


_WORKER = textwrap.dedent("""
    import os, sys, time
    from gompute.compile.cache import DiskCache
    root, log, go = sys.argv[1:4]
    while not os.path.exists(go):
        time.sleep(0.002)
    def build(folder):
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\\n")
        time.sleep(0.3)
        (folder / "out.bin").write_bytes(b"made once" * 1000)
    data, entry = DiskCache(root).get("k", {"source": "shared"}, "out.bin", build)
    print(entry, len(data))
""")


def test_several_processes_build_one_entry_once(tmp_path):
    script, log, go = tmp_path / "worker.py", tmp_path / "builds.log", tmp_path / "go"
    script.write_text(_WORKER)
    root = tmp_path / "cache"
    procs = [
        subprocess.Popen([sys.executable, str(script), str(root), str(log), str(go)], stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    time.sleep(0.5)  # let every worker start and wait at the gate
    go.write_text("")
    outputs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert len(set(outputs)) == 1 and outputs[0].endswith(str(len(b"made once" * 1000)))
    assert len(log.read_text().splitlines()) == 1
    assert [p.name for p in root.iterdir() if not p.name.startswith(".")] == [Path(outputs[0].split()[0]).name]
    assert not [p for p in root.iterdir() if p.name.startswith((".tmp-", ".trash-"))]
