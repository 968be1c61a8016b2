"""The local atomic-write helper: whole file or nothing, and a bad path is one InputError line."""

from __future__ import annotations

import os

import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.outfile import write_text_atomic


def test_writes_and_replaces_leaving_no_temporary(tmp_path):
    out = tmp_path / "sub" / "f.txt"
    write_text_atomic(out, "one\n")
    write_text_atomic(out, "two\n")
    assert out.read_text() == "two\n"
    assert os.listdir(out.parent) == ["f.txt"]


def test_a_failed_write_keeps_the_previous_file(tmp_path, monkeypatch):
    out = tmp_path / "f.txt"
    write_text_atomic(out, "good\n")

    def boom(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(InputError, match="No space left on device"):
        write_text_atomic(out, "half")
    assert out.read_text() == "good\n"
    assert os.listdir(tmp_path) == ["f.txt"]


def test_a_folder_or_unwritable_parent_is_one_line(tmp_path):
    with pytest.raises(InputError, match="cannot write output"):
        write_text_atomic(tmp_path, "x")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="cannot write output"):
        write_text_atomic(blocker / "f.txt", "x")
