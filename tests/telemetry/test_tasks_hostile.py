"""Hostile tasks roots: deep nesting, huge and out-of-range values, symlinked shards."""

import shutil

import pytest
from telemetry_builders import build_release

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry import read_tasks
from sandbox_fleet.telemetry.tasks import read_tasks_with_warnings
from sandbox_fleet.telemetry.tasktoml import MAX_TOML_BYTES, parse_task_toml


def test_deep_nesting_is_an_input_error_not_a_recursion_error():
    data = b"[environment]\nx = " + b"[" * 100_000 + b"]" * 100_000 + b"\n"
    with pytest.raises(InputError, match="t.toml: not valid TOML \\(nested too deeply"):
        parse_task_toml(data, "t.toml")


def test_oversized_task_toml_is_refused():
    data = b"[environment]\ncpus = 1\n# " + b"x" * MAX_TOML_BYTES + b"\n"
    with pytest.raises(InputError, match="larger than a task.toml can be"):
        parse_task_toml(data, "t.toml")


@pytest.mark.parametrize("line,field", [
    ("cpus = 0", "cpus"), ("cpus = -2", "cpus"), ("cpus = 1e300", "cpus"),
    ("memory_mb = 100000000000000000000000000000", "memory_mb"), ("memory_mb = -1", "memory_mb"),
    ("storage = \"99999999T\"", "storage_mb"), ("gpus = -1", "gpus"),
])
def test_out_of_range_values_read_as_null(line, field):
    got = parse_task_toml(f"[environment]\n{line}\n".encode(), "t.toml")
    assert got[field] is None and got["out_of_range"] == 1


def test_zero_gpus_is_a_value():
    assert parse_task_toml(b"[environment]\ngpus = 0\ncpus = 2\n", "t.toml")["gpus"] == 0


def test_huge_values_in_a_plain_tasks_folder_do_not_crash(tmp_path):
    (tmp_path / "t1").mkdir()
    (tmp_path / "t1" / "task.toml").write_text("[environment]\ncpus = 2\nmemory_mb = 99999999999999999999999\n")
    tasks = read_tasks(str(tmp_path), progress=False)
    assert tasks.column("cpus").to_pylist() == [2.0] and tasks.column("memory_mb").to_pylist() == [None]
    _, warnings = read_tasks_with_warnings(str(tmp_path), progress=False)
    assert warnings == [f"{tmp_path}: 1 task.toml value(s) out of range (zero, negative, huge or not finite) were read as null"]


def test_out_of_range_counted_in_a_release(tmp_path):
    import tarfile

    from telemetry_builders import add_member

    root = build_release(tmp_path / "rel")
    with tarfile.open(root / "data" / "shard-001.tar", "w") as tf:  # tg-c: two values out of range
        add_member(tf, "tg-c/task.toml", b"[environment]\ncpus = 0\nmemory_mb = -5\n")
    tasks, warnings = read_tasks_with_warnings(str(root), progress=False)
    assert tasks.column("cpus").to_pylist()[2] is None
    assert f"{root}: 2 task.toml value(s) out of range (zero, negative, huge or not finite) were read as null" in warnings


def test_shard_symlink_outside_the_root_is_refused(tmp_path):
    root = build_release(tmp_path / "rel")
    outside = tmp_path / "elsewhere.tar"
    shutil.move(root / "data" / "shard-001.tar", outside)
    (root / "data" / "shard-001.tar").symlink_to(outside)
    with pytest.raises(InputError, match="shard 'data/shard-001.tar' resolves outside the tasks root"):
        read_tasks(str(root), progress=False)
