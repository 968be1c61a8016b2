import tarfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from telemetry_builders import TOML_1CPU, TOML_LEGACY, add_member

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry import TASK_SCHEMA, read_tasks, tarscan
from sandbox_fleet.telemetry import tasks as tasks_mod


def test_release_tasks_by_hand(release):
    t = read_tasks(str(release), progress=False)
    assert t.schema.names == TASK_SCHEMA.names
    a, b, c = t.to_pylist()
    assert a == {
        "task_id": "task-a", "task_group_id": "tg-a", "cpus": 1.0, "memory_mb": 2048, "storage_mb": 6144,
        "gpus": None, "build_timeout_s": 900.0, "agent_timeout_s": 1800.0, "verifier_timeout_s": 600.0,
        "bundle_bytes": len(TOML_1CPU) + 100 + 23, "image": None,  # no Dockerfile in its folder
    }
    # legacy strings: binary units, 4G = 4096 MB, 10G = 10240 MB
    assert (b["cpus"], b["memory_mb"], b["storage_mb"], b["gpus"]) == (2.0, 4096, 10240, 1)
    assert (b["agent_timeout_s"], b["verifier_timeout_s"], b["build_timeout_s"]) == (3600.0, None, None)
    assert b["bundle_bytes"] == len(TOML_LEGACY)
    # './'-prefixed tar names and a trailing '/' on member_prefix still match
    assert c["task_id"] == "task-c" and c["memory_mb"] == 2048
    assert c["bundle_bytes"] == len(TOML_1CPU) + len(b"FROM ubuntu\n")
    assert c["image"] == "ubuntu"  # its environment/Dockerfile, read in the tar


def test_cache_is_written_outside_the_input_and_hit_on_second_read(release, cache_dir, monkeypatch):
    first = read_tasks(str(release), progress=False)
    entries = list((cache_dir / "tasks").glob("*.arrow"))
    assert len(entries) == 2  # one per shard
    assert not any(p.suffix == ".arrow" for p in release.rglob("*"))

    def boom(*a, **k):
        raise AssertionError("parsed again despite a valid cache")

    monkeypatch.setattr(tasks_mod, "scan_rows", boom)
    assert read_tasks(str(release), progress=False).equals(first)


def test_cache_miss_after_shard_changes(release, monkeypatch):
    read_tasks(str(release), progress=False)
    with tarfile.open(release / "data" / "shard-001.tar", "w") as tf:
        add_member(tf, "tg-c/task.toml", TOML_LEGACY)
    calls = []
    real = tarscan.scan_rows
    monkeypatch.setattr(tasks_mod, "scan_rows", lambda p, s: calls.append(s) or real(p, s))
    t = read_tasks(str(release), progress=False)
    assert calls == ["data/shard-001.tar"]
    assert t.column("memory_mb").to_pylist()[2] == 4096


def test_explicit_cache_dir_argument(release, tmp_path):
    own = tmp_path / "own-cache"
    read_tasks(str(release), progress=False, cache_dir=str(own))
    assert len(list((own / "tasks").glob("*.arrow"))) == 2


def test_cache_dir_inside_input_is_refused(release):
    with pytest.raises(InputError, match="inside the input folder"):
        read_tasks(str(release), progress=False, cache_dir=str(release / "cache"))


def test_task_without_toml_gets_null_request_and_warning(release):
    meta = pq.read_table(release / "metadata" / "tasks.parquet")
    meta = pa.concat_tables([meta, pa.table({"task_id": ["task-z"], "task_group_id": ["tg-z"], "shard": ["data/shard-001.tar"],
                                             "member_prefix": ["tg-z"], "difficulty": ["easy"]})])
    pq.write_table(meta, release / "metadata" / "tasks.parquet")
    t, warnings = tasks_mod.read_tasks_with_warnings(str(release), progress=False)
    z = t.to_pylist()[-1]
    assert z["task_id"] == "task-z" and z["cpus"] is None and z["bundle_bytes"] is None
    assert any("1 task(s) have no task.toml" in w for w in warnings)


def test_plain_tasks_folder(tmp_path):
    root = tmp_path / "tasks"
    (root / "hello" / "tests").mkdir(parents=True)
    (root / "hello" / "task.toml").write_bytes(TOML_1CPU)
    (root / "hello" / "tests" / "test.sh").write_bytes(b"abc")
    (root / "big").mkdir()
    (root / "big" / "task.toml").write_bytes(TOML_LEGACY)
    t = read_tasks(str(root), progress=False)
    rows = {r["task_id"]: r for r in t.to_pylist()}
    assert list(rows) == ["big", "hello"]
    assert rows["hello"]["bundle_bytes"] == len(TOML_1CPU) + 3
    assert rows["big"]["memory_mb"] == 4096 and rows["hello"]["task_group_id"] is None


def test_missing_shard_names_it(release):
    (release / "data" / "shard-001.tar").unlink()
    with pytest.raises(InputError, match=r"shard-001\.tar: no such shard"):
        read_tasks(str(release), progress=False)


def test_not_a_tasks_root(tmp_path):
    with pytest.raises(InputError, match="not a tasks root"):
        read_tasks(str(tmp_path), progress=False)


def test_measure_cli_cache_dir_option_wins_over_the_environment(release, cache_dir, tmp_path):
    from typer.testing import CliRunner

    from sandbox_fleet.cli import app

    chosen = tmp_path / "chosen-cache"
    trajectories = release / "metadata" / "trajectories.parquet"
    args = ["measure", str(trajectories), "--tasks", str(release), "--cache-dir", str(chosen), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert any(chosen.rglob("*")), "the parsed requests are cached where --cache-dir says"
    assert not cache_dir.exists(), "the environment's cache folder is left alone"
