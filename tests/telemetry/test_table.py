import json
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from telemetry_builders import utc

from sandbox_fleet.telemetry import ROLLOUT_SCHEMA, load_telemetry


def _epoch(s: float) -> datetime:
    return datetime.fromtimestamp(s, UTC)


CSV = """run,begin,end,tok_in,tok_out,llm,score
007,1764403200,1764403260,100,5,m1,1.0
008,1764403210,1764403290,,,m2,
009,1764403230.25,1764403300.5,300,7,,0
"""


def test_csv_with_map_and_epoch_seconds_detected(tmp_path):
    f = tmp_path / "runs.csv"
    f.write_text(CSV)
    tel = load_telemetry(
        [str(f)],
        column_map="id=run,started_at=begin,finished_at=end,input_tokens=tok_in,output_tokens=tok_out,model=llm,reward=score",
        progress=False,
    )
    rows = tel.rollouts.to_pylist()
    assert [r["id"] for r in rows] == ["007", "008", "009"]  # ids stay text, leading zeros kept
    assert rows[0]["started_at"] == _epoch(1764403200) and rows[0]["finished_at"] == _epoch(1764403260)
    assert rows[2]["started_at"] == _epoch(1764403230.25)
    assert rows[1]["input_tokens"] is None and rows[1]["reward"] is None  # empty field -> null
    assert rows[2]["model"] is None and rows[2]["reward"] == 0.0
    assert rows[0]["cached_tokens"] is None  # not in the source: null, never 0
    assert any("epoch seconds" in w and "detected" in w for w in tel.warnings)


@pytest.mark.parametrize("unit,scale", [("ms", 1e3), ("us", 1e6), ("ns", 1e9)])
def test_epoch_unit_detected_from_magnitude(tmp_path, unit, scale):
    f = tmp_path / "r.csv"
    f.write_text(f"id,started_at,finished_at\na,{int(1764403200 * scale)},{int(1764403260 * scale)}\n")
    tel = load_telemetry([str(f)], progress=False)
    assert tel.rollouts.column("finished_at").to_pylist() == [_epoch(1764403260)]
    names = {"ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}
    assert any(names[unit] in w for w in tel.warnings)


def test_explicit_time_unit_overrides_and_does_not_warn(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("id,started_at,finished_at\na,1000,61000\n")  # would be detected as seconds
    tel = load_telemetry([str(f)], time_unit="ms", progress=False, allow_any_time=True)
    assert tel.rollouts.column("finished_at").to_pylist() == [_epoch(61)]
    assert tel.warnings == []


def test_jsonl_canonical_names_iso_and_blank_strings(tmp_path):
    f = tmp_path / "r.jsonl"
    rows = [
        {"id": "a", "started_at": "2025-01-01T00:00:00Z", "finished_at": "2025-01-01T00:10:00+01:00", "model": "", "turns": 3},
        {"id": "b", "started_at": "2025-01-01T00:00:00Z", "finished_at": "2025-01-01T01:00:00Z", "model": "m", "turns": None,
         "exception_type": "", "has_exception": False},
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    tel = load_telemetry([str(f)], progress=False)
    out = tel.rollouts.to_pylist()
    # +01:00 puts 00:10 local before the start: rejected, not dropped silently
    assert [r["id"] for r in out] == ["b"]
    assert tel.rejected == {"finished before started": 1}
    assert out[0]["exception_type"] is None and out[0]["has_exception"] is False and out[0]["model"] == "m"


def test_jsonl_mixed_type_field_and_empty_string_null(tmp_path):
    f = tmp_path / "r.jsonl"
    f.write_text(
        '{"id": "a", "started_at": "2025-01-01T00:00:00Z", "finished_at": "2025-01-01T00:00:05Z", "reward": 1}\n'
        '{"id": "b", "started_at": "2025-01-01T00:00:00Z", "finished_at": "2025-01-01T00:00:05Z", "reward": ""}\n'
    )
    tel = load_telemetry([str(f)], progress=False)
    assert tel.rollouts.column("reward").to_pylist() == [1.0, None]


def test_parquet_in_canonical_names_needs_no_map(tmp_path):
    f = tmp_path / "sim.parquet"
    table = pa.table({
        "id": ["x", "y"],
        "started_at": pa.array([utc(2025, 1, 1), utc(2025, 1, 1, 0, 1)], pa.timestamp("us", tz="UTC")),
        "finished_at": pa.array([utc(2025, 1, 1, 0, 0, 30), utc(2025, 1, 1, 0, 2)], pa.timestamp("us", tz="UTC")),
        "job": ["sim", "sim"],
        "input_tokens": pa.array([10, 20], pa.int32()),
    })
    pq.write_table(table, f)
    tel = load_telemetry([str(f)], progress=False)
    assert tel.rollouts.schema.names == ROLLOUT_SCHEMA.names
    assert tel.rollouts.column("input_tokens").to_pylist() == [10, 20]
    assert tel.warnings == []


def test_glob_reads_all_matching_files(tmp_path):
    for i in range(3):
        (tmp_path / f"part-{i}.csv").write_text(f"id,started_at,finished_at\nr{i},2025-01-01T00:00:0{i}Z,2025-01-01T00:01:00Z\n")
    tel = load_telemetry([str(tmp_path / "part-*.csv")], progress=False)
    assert sorted(tel.rollouts.column("id").to_pylist()) == ["r0", "r1", "r2"]


def test_map_as_dict(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("k,s,e\na,2025-01-01 00:00:00,2025-01-01 00:00:01\n")
    tel = load_telemetry([str(f)], column_map={"id": "k", "started_at": "s", "finished_at": "e"}, progress=False)
    assert tel.rollouts.column("finished_at").to_pylist() == [utc(2025, 1, 1, 0, 0, 1)]


def test_json_array_file_and_quoted_epoch_digits(tmp_path):
    f = tmp_path / "r.json"
    f.write_text(json.dumps([{"id": "a", "started_at": "1764403200", "finished_at": "1764403260"}]))
    tel = load_telemetry(str(f), progress=False)  # a bare str PATH is accepted too
    assert tel.rollouts.column("finished_at").to_pylist() == [_epoch(1764403260)]
    assert any("epoch seconds" in w for w in tel.warnings)


def test_a_bad_cell_is_nulled_and_counted_not_fatal(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(
        "id,started_at,finished_at,input_tokens,reward,has_exception\n"
        "a,2026-01-01T00:00:00Z,2026-01-01T00:10:00Z,100,1,false\n"
        "b,2026-01-01T00:01:00Z,2026-01-01T00:11:00Z,lots,0.5,TRUE\n"
        "c,2026-01-01T00:02:00Z,2026-01-01T00:12:00Z,300,abc,maybe\n"
        "d,2026-01-01T00:03:00Z,2026-01-01T00:13:00Z,7,1,\n"
    )
    t = load_telemetry([str(path)], progress=False)
    r = t.rollouts
    assert r.num_rows == 4 and t.rejected == {}
    assert r.column("input_tokens").to_pylist() == [100, None, 300, 7]
    assert r.column("reward").to_pylist() == [1.0, 0.5, None, 1.0]
    assert r.column("has_exception").to_pylist() == [False, True, None, None]
    assert f"{path}: 1 value(s) in column 'input_tokens' are not int64; read as null" in t.warnings
    assert f"{path}: 1 value(s) in column 'reward' are not double; read as null" in t.warnings


def test_a_column_with_no_parsable_cell_is_still_the_wrong_type(tmp_path):
    from sandbox_fleet.errors import InputError

    path = tmp_path / "t.csv"
    path.write_text(
        "id,started_at,finished_at,input_tokens\n"
        "a,2026-01-01T00:00:00Z,2026-01-01T00:10:00Z,lots\n"
        "b,2026-01-01T00:01:00Z,2026-01-01T00:11:00Z,many\n"
    )
    with pytest.raises(InputError, match="input_tokens"):
        load_telemetry([str(path)], progress=False)


def test_row_groups_decoded_ahead_or_streamed_come_out_whole_and_in_file_order(tmp_path, monkeypatch):
    # The next row group is decoded on a thread while this one is used; a huge one (over two
    # batches) is streamed instead, with nothing decoded ahead. Group sizes here mix both (the
    # batch shrunk to 50 rows), and a column is all null in some groups (never decoded there).
    import numpy as np

    from sandbox_fleet.telemetry import table as table_mod

    monkeypatch.setattr(table_mod, "BATCH_ROWS", 50)
    sizes = [40, 230, 10, 100, 101, 7, 260]  # over 2 x 50 rows is huge: 230, 101 and 260 are, 100 is not
    n = sum(sizes)
    start = np.datetime64("2026-01-01T00:00:00", "us") + np.arange(n).astype("timedelta64[s]")
    rng = np.random.default_rng(3)
    tokens = [None if (i < 40 or 280 <= i < 380) else int(v) for i, v in enumerate(rng.integers(0, 10**6, n))]
    raw = pa.table({"id": [f"r{i}" for i in range(n)], "started_at": pa.array(start, pa.timestamp("us", "UTC")),
                    "finished_at": pa.array(start + np.timedelta64(9, "s"), pa.timestamp("us", "UTC")),
                    "input_tokens": pa.array(tokens, pa.int64())})
    path = tmp_path / "groups.parquet"
    with pq.ParquetWriter(path, raw.schema) as writer:
        at = 0
        for size in sizes:
            writer.write_table(raw.slice(at, size), row_group_size=size)
            at += size
    assert [pq.ParquetFile(path).metadata.row_group(i).num_rows for i in range(len(sizes))] == sizes
    parts = list(table_mod._read_parquet_file(path, {}, progress=False))
    assert [p.num_rows for p in parts] == [40, 50, 50, 50, 50, 30, 10, 100, 50, 50, 1, 7, 50, 50, 50, 50, 50, 10]
    got = pa.concat_tables(parts)
    assert got.column("id").to_pylist() == raw.column("id").to_pylist()
    assert got.column("input_tokens").to_pylist() == tokens
    assert load_telemetry([str(path)], progress=False).rollouts.column("id").to_pylist() == raw.column("id").to_pylist()


def test_a_consumer_that_stops_early_leaves_no_read_behind(tmp_path):
    # Closing the reader mid-file (the caller raised) waits for the group decoding ahead: the
    # thread is gone when close() returns, and the file can be replaced at once.
    import threading

    import numpy as np

    from sandbox_fleet.telemetry import table as table_mod

    n = 3000
    start = np.datetime64("2026-01-01T00:00:00", "us") + np.arange(n).astype("timedelta64[s]")
    raw = pa.table({"id": [f"r{i}" for i in range(n)], "started_at": pa.array(start, pa.timestamp("us", "UTC")),
                    "finished_at": pa.array(start, pa.timestamp("us", "UTC"))})
    path = tmp_path / "many.parquet"
    pq.write_table(raw, path, row_group_size=500)
    before = threading.active_count()
    reader = table_mod._read_parquet_file(path, {}, progress=False)
    assert next(reader).num_rows == 500
    reader.close()
    assert threading.active_count() == before
