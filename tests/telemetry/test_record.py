import pyarrow as pa
import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry.record import ROLLOUT_SCHEMA, conform_rollouts, conform_tasks

TS = pa.timestamp("us", tz="UTC")


def test_conform_fills_absent_columns_with_null_not_zero():
    t = pa.table({"id": ["a"], "started_at": pa.array([1], TS), "finished_at": pa.array([5], TS)})
    out = conform_rollouts(t)
    assert out.schema.names == ROLLOUT_SCHEMA.names
    assert out.column("cached_tokens").null_count == 1
    assert out.column("reward").to_pylist() == [None]


def test_conform_casts_narrow_integers():
    t = pa.table(
        {
            "id": ["a"],
            "started_at": pa.array([1], TS),
            "finished_at": pa.array([5], TS),
            "turns": pa.array([3], pa.int32()),
        }
    )
    assert conform_rollouts(t).column("turns").type == pa.int64()


def test_missing_required_column_names_it():
    t = pa.table({"id": ["a"], "started_at": pa.array([1], TS)})
    with pytest.raises(InputError, match="finished_at"):
        conform_rollouts(t, source="x.parquet")


def test_uncastable_column_names_file_and_column():
    t = pa.table({"task_id": ["t"], "cpus": ["lots"]})
    with pytest.raises(InputError, match=r"x\.parquet: column 'cpus'"):
        conform_tasks(t, source="x.parquet")
