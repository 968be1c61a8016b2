"""Each bad-input case is an InputError with one line naming the file/key and what was expected."""

import tarfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from telemetry_builders import TOML_1CPU, add_member

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry import load_telemetry, read_tasks


def _raises(match, *args, **kwargs):
    kwargs.setdefault("progress", False)
    with pytest.raises(InputError, match=match) as info:
        load_telemetry(*args, **kwargs)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_missing_file(tmp_path):
    _raises(r"nope\.csv: no such file", [str(tmp_path / "nope.csv")])
    _raises(r"gone: no such file or directory", [str(tmp_path / "gone")])


def test_missing_column(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("id,started_at\na,2025-01-01T00:00:00Z\n")
    _raises(r"r\.csv: missing column\(s\) finished_at", [str(f)])


def test_mapped_source_column_missing_names_file_and_column(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("id,started_at,finished_at\na,2025-01-01T00:00:00Z,2025-01-01T00:00:01Z\n")
    msg = _raises(r"r\.csv: column 'tokens_in' \(mapped to input_tokens\) not found", [str(f)], column_map="input_tokens=tokens_in")
    assert "id, started_at, finished_at" in msg


def test_wrong_type(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("id,started_at,finished_at,input_tokens\na,2025-01-01T00:00:00Z,2025-01-01T00:00:01Z,lots\n")
    _raises(r"r\.csv: column 'input_tokens' has type string, expected int64", [str(f)])


def test_wrong_type_time_column(tmp_path):
    f = tmp_path / "r.parquet"
    pq.write_table(pa.table({"id": ["a"], "started_at": [True], "finished_at": [False]}), f)
    _raises(r"r\.parquet: column 'started_at' has type bool, expected ISO-8601 strings, epoch numbers or timestamps", [str(f)])


def test_empty_files(tmp_path):
    for name in ("e.csv", "e.jsonl", "e.parquet"):
        (tmp_path / name).write_bytes(b"")
        _raises(rf"e\.{name.split('.')[1]}: empty file", [str(tmp_path / name)])


def test_header_only_csv_and_zero_row_parquet_are_empty(tmp_path):
    (tmp_path / "h.csv").write_text("id,started_at,finished_at\n")
    _raises(r"h\.csv: no rollouts in this input \(empty\)", [str(tmp_path / "h.csv")])
    pq.write_table(pa.table({"trajectory_id": pa.array([], pa.string()), "started_at": pa.array([], pa.string()),
                             "finished_at": pa.array([], pa.string())}), tmp_path / "z.parquet")
    _raises(r"z\.parquet: no rollouts", [str(tmp_path / "z.parquet")])


def test_empty_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    _raises(r"empty: cannot tell the telemetry format", [str(tmp_path / "empty")])


def test_corrupt_parquet(tmp_path):
    f = tmp_path / "bad.parquet"
    f.write_bytes(b"PAR1 this is not parquet at all, just bytes" * 4)
    _raises(r"bad\.parquet: not a readable Parquet file", [str(f)])
    (tmp_path / "metadata").mkdir()
    (tmp_path / "metadata" / "trajectories.parquet").write_bytes(b"\x00" * 64)
    _raises(r"trajectories\.parquet: not a readable Parquet file", [str(tmp_path)], fmt="rst")


def test_corrupt_parquet_forced_as_table(tmp_path):
    f = tmp_path / "bad.parquet"
    f.write_bytes(b"garbage" * 20)
    _raises(r"bad\.parquet: cannot read as parquet", [str(f)], fmt="table")


def test_tar_member_escaping_its_folder(release):
    with tarfile.open(release / "data" / "shard-001.tar", "w") as tf:
        add_member(tf, "tg-c/task.toml", TOML_1CPU)
        add_member(tf, "../../evil.sh", b"rm -rf /")
    with pytest.raises(InputError, match=r"data/shard-001\.tar: member '\.\./\.\./evil\.sh' escapes its folder"):
        read_tasks(str(release), progress=False)
    assert not (release.parent.parent / "evil.sh").exists()


def test_unknown_map_name(tmp_path):
    msg = _raises(r"`column_map`: unknown canonical name 'tokens'", [str(tmp_path)], column_map="tokens=x")
    assert "valid: id, task_id" in msg
    _raises(r"`column_map`: 'justone' is not canonical=source", [str(tmp_path)], column_map="justone")


def test_unknown_format_time_unit_and_zone(tmp_path):
    _raises(r"`fmt`: unknown format 'csvish' \(valid: rst, harbor, terminal-bench, inspect, table\)", [str(tmp_path)], fmt="csvish")
    _raises(r"`time_unit`: unknown unit 'min'", [str(tmp_path)], time_unit="min")
    _raises(r"`assume_tz`: unknown time zone 'Mars/Olympus'", [str(tmp_path)], assume_tz="Mars/Olympus")


def test_every_row_rejected(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("id,started_at,finished_at\na,soon,later\n")
    _raises(r"all 1 rows were rejected \(unparsable time: 1\)", [str(f)])


def test_unknown_file_type(tmp_path):
    f = tmp_path / "r.xlsx"
    f.write_text("x")
    _raises(r"r\.xlsx: unknown file type", [str(f)])


def test_tasks_parquet_missing_column(release):
    pq.write_table(pa.table({"task_id": ["a"], "shard": ["data/shard-000.tar"]}), release / "metadata" / "tasks.parquet")
    with pytest.raises(InputError, match=r"tasks\.parquet: missing column\(s\) member_prefix"):
        read_tasks(str(release), progress=False)


def test_missing_tasks_root(release, tmp_path):
    with pytest.raises(InputError, match=r"nowhere: no such tasks folder"):
        load_telemetry([str(release)], tasks=str(tmp_path / "nowhere"), progress=False)


def test_epoch_past_year_9999_is_rejected_not_a_crash(tmp_path):
    # ns values read as seconds: year ~5.6e10, far past 9999 -> rejected by reason.
    f = tmp_path / "r.csv"
    f.write_text("id,started_at,finished_at\na,1764403200000000000,1764403260000000000\n")
    _raises(r"all 1 rows were rejected \(implausible time: 1\)", [str(f)], time_unit="s")
    _raises(r"all 1 rows were rejected \(implausible time: 1\)", [str(f)], time_unit="s", allow_any_time=True)
