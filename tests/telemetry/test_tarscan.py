import tarfile

import pytest
from telemetry_builders import TOML_1CPU, TOML_LEGACY, add_member

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry import fasttar
from sandbox_fleet.telemetry.tarscan import _members_tarfile, scan_shard


def _tar(path, members, mode="w", fmt=tarfile.PAX_FORMAT):
    with tarfile.open(path, mode, format=fmt) as tf:
        for name, data, kw in members:
            add_member(tf, name, data, **kw)
    return path


@pytest.mark.parametrize("bad", ["/etc/task.toml", "../outside/task.toml", "tg/../../x", "tg/../../../etc/passwd"])
def test_member_escaping_its_folder_is_refused(tmp_path, bad):
    tar = _tar(tmp_path / "s.tar", [("tg/task.toml", TOML_1CPU, {}), (bad, b"x", {})])
    with pytest.raises(InputError, match=r"s\.tar: member '.*' escapes its folder"):
        scan_shard(tar, "data/s.tar")


def test_link_escaping_its_folder_is_refused(tmp_path):
    tar = _tar(tmp_path / "s.tar", [("tg/task.toml", b"", {"type": tarfile.SYMTYPE, "linkname": "../../etc/passwd"})])
    with pytest.raises(InputError, match="link 'tg/task.toml' -> '../../etc/passwd' escapes"):
        scan_shard(tar, "s.tar")


def test_gnu_and_pax_archives_read_the_same(tmp_path):
    long_prefix = "tasks/" + "a-very-long-task-group-name-" * 5
    members = [(f"{long_prefix}/task.toml", TOML_LEGACY, {}), (f"{long_prefix}/readme.md", b"hello", {}),
               ("short/task.toml", TOML_1CPU, {}), ("short/sub/file.bin", b"\0" * 700, {})]
    pax = scan_shard(_tar(tmp_path / "pax.tar", members), "pax.tar")
    gnu = scan_shard(_tar(tmp_path / "gnu.tar", members, fmt=tarfile.GNU_FORMAT), "gnu.tar")
    gz = scan_shard(_tar(tmp_path / "x.tar.gz", members, mode="w:gz"), "x.tar.gz")
    assert pax.equals(gnu) and pax.equals(gz)
    rows = {r["member_prefix"]: r for r in pax.to_pylist()}
    assert rows[long_prefix]["bundle_bytes"] == len(TOML_LEGACY) + 5
    assert rows["short"]["bundle_bytes"] == len(TOML_1CPU) + 700


def test_fast_reader_agrees_with_tarfile(tmp_path):
    members = [(f"t{i}/task.toml", TOML_1CPU if i % 2 else TOML_LEGACY, {}) for i in range(5)]
    members += [(f"t{i}/blob", b"z" * (i * 300), {}) for i in range(5)]
    members += [("t1/Dockerfile", b"FROM ubuntu:24.04\n", {}), ("t2/environment/Dockerfile", b"FROM python:3.12\n", {})]
    tar = _tar(tmp_path / "s.tar", members, fmt=tarfile.USTAR_FORMAT)
    buf = fasttar.open_map(tar)
    names = [m.name for m in fasttar.iter_members(buf)]  # no Unsupported: plain ustar
    assert names == [m[0] for m in members]
    req, files, images = {}, [], {}
    _members_tarfile(tar, "s.tar", req, files, images)
    fast = scan_shard(tar, "s.tar").to_pylist()
    assert {r["member_prefix"] for r in fast} == set(req)
    docker = {1: len(b"FROM ubuntu:24.04\n"), 2: len(b"FROM python:3.12\n")}
    assert {r["member_prefix"]: r["bundle_bytes"] for r in fast} == {
        f"t{i}": (len(TOML_1CPU if i % 2 else TOML_LEGACY) + i * 300 + docker.get(i, 0)) for i in range(5)}
    assert images == {"t1/Dockerfile": "ubuntu:24.04", "t2/environment/Dockerfile": "python:3.12"}
    assert {r["member_prefix"]: r["image"] for r in fast} == {"t0": None, "t1": "ubuntu:24.04", "t2": "python:3.12",
                                                            "t3": None, "t4": None}


def test_corrupt_tar_is_input_error(tmp_path):
    tar = _tar(tmp_path / "s.tar", [("t/task.toml", TOML_1CPU, {})])
    data = bytearray(tar.read_bytes())
    data[148:156] = b"0000000\0"  # break the header checksum
    tar.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"s\.tar: not a readable tar archive"):
        scan_shard(tar, "s.tar")


def test_truncated_tar_is_input_error(tmp_path):
    tar = _tar(tmp_path / "s.tar", [("t/task.toml", TOML_1CPU * 10, {})], fmt=tarfile.USTAR_FORMAT)
    tar.write_bytes(tar.read_bytes()[:700])
    with pytest.raises(InputError, match="not a readable tar archive"):
        scan_shard(tar, "s.tar")


def test_invalid_task_toml_costs_only_its_task(tmp_path):
    """Issue 24: one bad task.toml nulls that task's request and says why, naming the member;
    the other tasks of the shard are read as usual."""
    tar = _tar(tmp_path / "s.tar", [("t/task.toml", b"[environment\ncpus = 1\n", {}),
                                     ("u/task.toml", b"[environment]\ncpus = 2\n", {})])
    rows = {r["member_prefix"]: r for r in scan_shard(tar, "s.tar").to_pylist()}
    assert rows["t"]["cpus"] is None and rows["u"]["cpus"] == 2.0
    assert rows["t"]["problem"].startswith("s.tar:t/task.toml: not valid TOML")
    assert rows["u"]["problem"] is None
