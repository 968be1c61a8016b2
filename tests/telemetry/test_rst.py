import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from telemetry_builders import utc

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry import ROLLOUT_SCHEMA, load_telemetry


def test_release_root_maps_columns(release):
    tel = load_telemetry([str(release)], progress=False)
    assert tel.rollouts.schema.names == ROLLOUT_SCHEMA.names
    rows = {r["id"]: r for r in tel.rollouts.to_pylist()}
    assert list(rows) == ["r1", "r2", "r3", "r4"]
    r1 = rows["r1"]
    assert r1["task_id"] == "tg-a" and r1["model"] == "Qwen3.5-27B" and r1["job"] is None
    assert r1["started_at"] == utc(2025, 3, 1, 0, 0, 0)
    assert r1["finished_at"] == utc(2025, 3, 1, 0, 22, 12)  # a 1,332 s hold
    assert (r1["input_tokens"], r1["output_tokens"], r1["cached_tokens"], r1["turns"]) == (52474, 4085, 0, 11)
    assert r1["reward"] == 1.0 and r1["has_trajectory"] is True and r1["has_exception"] is False
    assert rows["r2"]["input_tokens"] is None and rows["r2"]["turns"] is None and rows["r2"]["reward"] is None
    assert rows["r4"]["finished_at"] == utc(2025, 3, 1, 1, 30, 0, 500000)
    assert rows["r3"]["started_at"] == rows["r3"]["finished_at"]  # zero-length hold kept
    assert tel.rejected == {}
    assert any("naive" in w and "UTC" in w for w in tel.warnings)


def test_parquet_file_itself_gets_release_mapping(release):
    tel = load_telemetry([str(release / "metadata" / "trajectories.parquet")], progress=False)
    assert tel.rollouts.column("task_id").to_pylist() == ["tg-a", "tg-b", "tg-c", "tg-a"]


def test_tz_aware_and_string_times_and_job_column(tmp_path):
    (tmp_path / "metadata").mkdir()
    pq.write_table(
        pa.table(
            {
                "trajectory_id": ["a", "b"],
                "started_at": pa.array([0, 3_600_000], pa.timestamp("ms", tz="Europe/Paris")),
                "finished_at": ["1970-01-01T00:00:10Z", "1970-01-01T02:00:00+01:00"],
                "job": ["j1", "j2"],
            }
        ),
        tmp_path / "metadata" / "trajectories.parquet",
    )
    tel = load_telemetry([str(tmp_path)], progress=False, allow_any_time=True)
    rows = tel.rollouts.to_pylist()
    assert rows[0]["started_at"] == utc(1970, 1, 1, 0, 0, 0)
    assert rows[1]["started_at"] == utc(1970, 1, 1, 1, 0, 0)
    assert rows[1]["finished_at"] == utc(1970, 1, 1, 1, 0, 0)  # zero hold, allowed
    assert [r["job"] for r in rows] == ["j1", "j2"]
    assert tel.warnings == []


def test_release_with_tasks(release):
    tel = load_telemetry([str(release)], tasks=str(release), progress=False)
    assert tel.tasks.column("task_group_id").to_pylist() == ["tg-a", "tg-b", "tg-c"]


def test_missing_trajectory_id_column(tmp_path):
    (tmp_path / "metadata").mkdir()
    pq.write_table(pa.table({"started_at": ["2025-01-01T00:00:00Z"], "finished_at": ["2025-01-01T00:00:01Z"], "id": ["x"]}),
                   tmp_path / "metadata" / "trajectories.parquet")
    with pytest.raises(InputError, match=r"trajectories\.parquet: missing column\(s\) trajectory_id"):
        load_telemetry([str(tmp_path)], fmt="rst", progress=False)


def test_naive_arrow_times_with_assume_tz(release):
    tel = load_telemetry([str(release)], assume_tz="Asia/Tokyo", progress=False)
    # 2025-03-01 00:00 in Tokyo (UTC+9, no DST) is 2025-02-28 15:00 UTC
    assert tel.rollouts.column("started_at").to_pylist()[0] == utc(2025, 2, 28, 15, 0, 0)
    assert any("Asia/Tokyo" in w for w in tel.warnings)


def test_release_without_task_groups_uses_task_id(tmp_path):
    (tmp_path / "metadata").mkdir()
    pq.write_table(pa.table({"trajectory_id": ["a"], "task_id": ["t-1"], "started_at": ["2025-01-01T00:00:00Z"],
                             "finished_at": ["2025-01-01T00:00:01Z"]}), tmp_path / "metadata" / "trajectories.parquet")
    assert load_telemetry([str(tmp_path)], progress=False).rollouts.column("task_id").to_pylist() == ["t-1"]


def _foreign_release(tmp_path):
    """An RST file as a foreign PyArrow job writes it: plain strings, path columns, a canonical
    name ('node') that is not a release column, several row groups, nullable tokens."""
    n, T0 = 5_000, 1_750_000_000_000_000
    ids = [f"{i * 2654435761 % 2**32:08x}{i:024x}" for i in range(n)]
    table = pa.table({
        "trajectory_id": ids,
        "task_group_id": [f"swe-gym/repo__{i % 97:04d}" for i in range(n)],
        "model_name": [["m-a", "m-b", ""][i % 3] for i in range(n)],
        "job": [f"job-{i % 2}" for i in range(n)],
        "started_at": pa.array([T0 + 1_000_000 * (i % 701) for i in range(n)], pa.timestamp("us", tz="UTC")),
        "finished_at": pa.array([T0 + 1_000_000 * (i % 701 + 1 + i % 13) for i in range(n)], pa.timestamp("us", tz="UTC")),
        "input_tokens": pa.array([None if i % 7 == 0 else 100 * i for i in range(n)], pa.int64()),
        "exception_type": [None if i % 5 else "AgentTimeoutError" for i in range(n)],
        "has_exception": [i % 5 == 0 for i in range(n)],
        "node": [f"node-{i % 3}" for i in range(n)],
        "shard": [f"data/trajectories-{i // 1000:05d}.tar" for i in range(n)],
        "member": [f"trajectories-{i // 1000:05d}/{ids[i]}.json" for i in range(n)],
    })
    (tmp_path / "metadata").mkdir()
    pq.write_table(table, tmp_path / "metadata" / "trajectories.parquet", row_group_size=1_200)
    return tmp_path, table


@pytest.mark.parametrize("coded", [False, True])
def test_foreign_release_reads_only_release_columns(tmp_path, coded):
    root, table = _foreign_release(tmp_path)
    tel = load_telemetry([str(root)], progress=False, coded=coded)
    got = tel.rollouts
    assert got.column("id").to_pylist() == table.column("trajectory_id").to_pylist()
    for canonical, src in (("task_id", "task_group_id"), ("job", "job"), ("exception_type", "exception_type")):
        assert got.column(canonical).cast(pa.string()).to_pylist() == table.column(src).to_pylist()
    # blanks are null, as every reader has them
    assert got.column("model").cast(pa.string()).to_pylist() == [["m-a", "m-b", None][i % 3] for i in range(5_000)]
    assert got.column("input_tokens").to_pylist() == table.column("input_tokens").to_pylist()
    # 'node' is a canonical name but not a release column: the RST reader never maps it
    assert got.column("node").null_count == got.num_rows
