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


# --- absent / all-null columns share one cached null chunk ----------------------------------

import numpy as np  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from sandbox_fleet.telemetry import record  # noqa: E402


@pytest.mark.parametrize("n", [0, 1, 5, record.NULL_CHUNK_ROWS, 2 * record.NULL_CHUNK_ROWS + 7])
def test_null_column_is_n_nulls_of_the_type(n):
    col = record.null_column(TS, n)
    assert (len(col), col.null_count, col.type) == (n, n, TS)
    assert pc.sum(pc.cast(pc.is_valid(col), pa.int64())).as_py() in (0, None)
    if n <= 5:
        assert col.to_pylist() == [None] * n


def _bare(n):
    s = np.arange(n, dtype=np.int64)
    return pa.table({"id": pa.array(s).cast(pa.string()), "started_at": pa.array(s, TS),
                     "finished_at": pa.array(s + 1, TS)})


def test_absent_columns_cost_no_memory_per_row():
    n = 3 * record.NULL_CHUNK_ROWS
    bare = _bare(n)
    conform_rollouts(bare)  # warm the per-type chunk cache
    before = pa.total_allocated_bytes()
    out = conform_rollouts(bare)
    grew = pa.total_allocated_bytes() - before
    # 16 absent columns, 8 bytes a row each with pa.nulls: ~400 MB. Shared chunks: nothing.
    assert grew < 1 << 20
    assert all(out.column(c).null_count == n for c in ROLLOUT_SCHEMA.names if c not in bare.column_names)


def test_present_all_null_column_is_swapped_for_the_shared_chunk():
    n = 1000
    t = _bare(n).append_column("verifier_started_at", pa.array([None] * n, TS))
    col = conform_rollouts(t).column("verifier_started_at")
    shared = record._NULL_CHUNKS[TS].buffers()[1].address
    assert all(chunk.buffers()[1].address == shared for chunk in col.chunks)
    assert col.null_count == n and col.type == TS
    # A column with any value is kept as it is.
    vals = pa.array([None] * (n - 1) + [5], TS)
    kept = conform_rollouts(_bare(n).append_column("verifier_started_at", vals)).column("verifier_started_at")
    assert kept.to_pylist()[-1] is not None and kept.null_count == n - 1


def test_shared_nulls_behave_like_fresh_nulls(tmp_path):
    n = record.NULL_CHUNK_ROWS + 3
    out = conform_rollouts(_bare(n))
    keep = pa.array(np.arange(n) % 3 == 0)
    filtered = out.filter(keep)
    assert filtered.column("reward").null_count == filtered.num_rows == int(keep.to_numpy(zero_copy_only=False).sum())
    pq.write_table(out, tmp_path / "x.parquet")
    back = pq.read_table(tmp_path / "x.parquet")
    assert back.column("cached_tokens").null_count == n and back.column("cached_tokens").type == pa.int64()
    both = pa.concat_tables([out, out])
    assert both.column("model").null_count == 2 * n


def test_conform_rollouts_can_keep_only_some_columns():
    t = pa.table({"started_at": pa.array([1], TS), "finished_at": pa.array([5], TS), "turns": pa.array([2], pa.int32())})
    out = conform_rollouts(t, columns=["finished_at", "started_at", "turns", "reward"])
    assert out.column_names == ["started_at", "finished_at", "turns", "reward"]  # schema order
    assert out.column("turns").type == pa.int64() and out.column("reward").null_count == 1
    with pytest.raises(InputError, match="finished_at"):
        conform_rollouts(t.drop_columns(["finished_at"]), columns=["started_at", "finished_at"])
