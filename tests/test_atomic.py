"""sandbox_fleet.atomic: whole files or nothing, temporaries cleaned, OSError as one named line."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from sandbox_fleet import atomic
from sandbox_fleet.atomic import OutputError
from sandbox_fleet.errors import InputError


def hidden(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_write_text_replaces_whole_and_leaves_nothing_behind(tmp_path):
    dest = tmp_path / "a" / "b.json"
    atomic.write_text(dest, "one\n")
    atomic.write_text(dest, "two\n")
    assert dest.read_text() == "two\n"
    assert hidden(dest.parent) == []


def test_new_file_mode_follows_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        atomic.write_bytes(tmp_path / "f", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == 0o640


def test_an_error_inside_the_write_keeps_the_previous_file(tmp_path):
    dest = tmp_path / "f.json"
    dest.write_text("previous")
    with pytest.raises(RuntimeError):
        with atomic.atomic_path(dest) as tmp:
            tmp.write_text("partial")
            raise RuntimeError("writer failed")
    assert dest.read_text() == "previous"
    assert hidden(tmp_path) == []


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EDQUOT, errno.EIO])
def test_a_failing_rename_is_one_line_naming_the_destination(tmp_path, monkeypatch, err):
    dest = tmp_path / "f.json"
    dest.write_text("previous")

    def boom(src, dst):
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(atomic.os, "replace", boom)
    with pytest.raises(OutputError) as info:
        atomic.write_text(dest, "new")
    assert str(info.value) == f"{dest}: cannot write ({os.strerror(err)})"
    assert isinstance(info.value, InputError) and info.value.exit_code == 2
    assert dest.read_text() == "previous"
    assert hidden(tmp_path) == []


def test_a_folder_or_device_is_never_replaced(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(OutputError, match="is a folder"):
        atomic.write_text(tmp_path / "d", "x")
    with pytest.raises(OutputError, match="not a regular file"):
        atomic.write_text("/dev/null", "x")


def test_cleanup_removes_only_this_process_temporaries(tmp_path):
    mine, theirs = tmp_path / ".mine.tmp", tmp_path / ".theirs.tmp"
    mine.write_text("x")
    theirs.write_text("x")
    atomic._register(mine)
    with atomic._lock:
        atomic._live[str(theirs)] = os.getpid() + 1  # a parent's temporary, seen from a forked worker
    try:
        atomic.cleanup()
        assert not mine.exists() and theirs.exists()
    finally:
        atomic._forget(theirs)


def test_atomic_dir_builds_beside_and_renames(tmp_path):
    dest = tmp_path / "rel"
    with atomic.atomic_dir(dest) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".rel.")
        (tmp / "x").write_text("1")
        assert not dest.exists()
    assert (dest / "x").read_text() == "1"
    assert hidden(tmp_path) == []


def test_atomic_dir_replaces_only_with_force_and_only_what_is_ours(tmp_path):
    dest = tmp_path / "rel"
    dest.mkdir()
    (dest / "old").write_text("old")
    with pytest.raises(OutputError, match="pass `force` to replace it"):
        with atomic.atomic_dir(dest):
            pass
    with pytest.raises(OutputError, match="not ours"):
        with atomic.atomic_dir(dest, force=True, replaceable=lambda p: (p / "manifest").exists()):
            pass
    with atomic.atomic_dir(dest, force=True) as tmp:
        (tmp / "new").write_text("new")
    assert sorted(p.name for p in dest.iterdir()) == ["new"]
    assert hidden(tmp_path) == []


def test_atomic_dir_failure_keeps_the_previous_folder(tmp_path):
    dest = tmp_path / "rel"
    dest.mkdir()
    (dest / "old").write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with atomic.atomic_dir(dest, force=True) as tmp:
            (tmp / "half").write_text("h")
            raise KeyboardInterrupt
    assert sorted(p.name for p in dest.iterdir()) == ["old"]
    assert hidden(tmp_path) == []
