"""Rows, not files: one bad cell never rejects a file. Hand-made inputs, hand-computed answers."""

import gzip
import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry import load_telemetry

S0 = 1764403200  # 2025-11-29T08:00:00Z


def _load(path, **kw):
    return load_telemetry([str(path)], progress=False, **kw)


def _csv(tmp_path, text, name="r.csv"):
    f = tmp_path / name
    f.write_text(text)
    return f


def test_epoch_column_with_a_text_cell_keeps_the_numeric_cells(tmp_path):
    f = _csv(tmp_path, f"id,started_at,finished_at\na,{S0},{S0 + 60}\nb,N/A,{S0 + 60}\nc,{S0 + 1},{S0 + 2}\n")
    tel = _load(f)
    assert tel.rollouts.column("id").to_pylist() == ["a", "c"]
    assert tel.rejected == {"unparsable time": 1}


def test_bad_count_cells_become_null_and_are_counted(tmp_path):
    f = _csv(tmp_path, "id,started_at,finished_at,input_tokens,output_tokens,turns\n"
             f"a,{S0},{S0 + 1},NaN,5,3\n"
             f"b,{S0},{S0 + 1},99999999999999999999,inf,2.5\n"
             f"c,{S0},{S0 + 1},12.0,-4,4\n"
             f"d,{S0},{S0 + 1},7,8,9\n")
    tel = _load(f)
    rows = {r["id"]: r for r in tel.rollouts.to_pylist()}
    assert [rows[k]["input_tokens"] for k in "abcd"] == [None, None, 12, 7]
    assert [rows[k]["output_tokens"] for k in "abcd"] == [5, None, None, 8]
    assert [rows[k]["turns"] for k in "abcd"] == [3, None, 4, 9]
    assert tel.rejected == {}
    assert f"{f}: 2 value(s) in column 'input_tokens' are not int64; read as null" in tel.warnings
    assert f"{f}: 1 negative value(s) in column 'output_tokens' (a count); read as null" in tel.warnings
    assert f"{f}: 1 value(s) in column 'turns' are not int64; read as null" in tel.warnings


def test_numeric_columns_with_nan_and_huge_values(tmp_path):
    f = tmp_path / "r.parquet"
    pq.write_table(pa.table({
        "id": ["a", "b", "c", "d"],
        "started_at": pa.array([S0] * 4, pa.int64()),
        "finished_at": pa.array([S0 + 1] * 4, pa.int64()),
        "input_tokens": pa.array([float("nan"), 1e30, 3.0, 3.5], pa.float64()),
        "output_tokens": pa.array([1, -1, 2, 3], pa.int64()),
    }), f)
    tel = _load(f)
    assert tel.rollouts.column("input_tokens").to_pylist() == [None, None, 3, None]
    assert tel.rollouts.column("output_tokens").to_pylist() == [1, None, 2, 3]


@pytest.mark.parametrize("true,false", [("true", "false"), ("T", "f"), ("Yes", "NO"), ("y", "N"), ("1", "0")])
def test_flags_in_any_form(tmp_path, true, false):
    f = _csv(tmp_path, f"id,started_at,finished_at,has_exception\na,{S0},{S0 + 1},{true}\nb,{S0},{S0 + 1},{false}\n"
             f"c,{S0},{S0 + 1},maybe\n")
    tel = _load(f)
    assert tel.rollouts.column("has_exception").to_pylist() == [True, False, None]


def test_exception_type_without_flag_gives_the_flag(tmp_path):
    f = _csv(tmp_path, f"id,started_at,finished_at,exception_type\na,{S0},{S0 + 1},Timeout\nb,{S0},{S0 + 1},\n")
    assert _load(f).rollouts.column("has_exception").to_pylist() == [True, False]


def test_time_window_rejects_durations_from_epoch_zero(tmp_path):
    # METR-style human baselines: times are durations since 0 -> 1970, not when they ran.
    f = _csv(tmp_path, f"id,started_at,finished_at\na,{S0},{S0 + 60}\nh1,0,3600\nh2,10,7200\n")
    tel = _load(f, time_unit="s")
    assert tel.rollouts.num_rows == 1 and tel.rejected == {"implausible time": 2}
    assert _load(f, time_unit="s", allow_any_time=True).rollouts.num_rows == 3


def test_latest_time_option(tmp_path):
    f = _csv(tmp_path, "id,started_at,finished_at\na,2025-01-01T00:00:00Z,2025-01-01T00:01:00Z\n"
             "b,2099-06-01T00:00:00Z,2099-06-01T00:01:00Z\n")
    assert _load(f).rollouts.num_rows == 2
    tel = _load(f, latest_time="2030-01-01")
    assert tel.rollouts.column("id").to_pylist() == ["a"] and tel.rejected == {"implausible time": 1}
    with pytest.raises(InputError, match="`latest_time`: 'soon' is not an ISO-8601"):
        _load(f, latest_time="soon")


def test_times_past_year_9999_never_crash(tmp_path):
    f = _csv(tmp_path, f"id,started_at,finished_at\na,{S0},{S0 + 60}\nb,{S0},{10**15}\nc,{S0},99999-01-01T00:00:00Z\n")
    for allow in (False, True):
        tel = _load(f, time_unit="s", allow_any_time=allow)
        assert tel.rollouts.column("id").to_pylist() == ["a"]
        assert sum(tel.rejected.values()) == 2


def test_one_millisecond_value_in_a_seconds_column_is_rejected_by_reason(tmp_path):
    f = _csv(tmp_path, f"id,started_at,finished_at\na,{S0},{S0 + 60}\nb,{S0 + 1},{S0 + 61}\nc,{S0},{(S0 + 5) * 1000}\n")
    tel = _load(f)
    assert tel.rollouts.column("id").to_pylist() == ["a", "b"]
    assert tel.rejected == {"mixed epoch units": 1}


def test_mixed_naive_and_offset_take_assume_tz_and_say_how_many(tmp_path):
    f = _csv(tmp_path, "id,started_at,finished_at\n"
             "a,2026-01-01 00:00:00,2026-01-01T06:00:00+00:00\n"
             "b,2026-01-01T00:00:00+00:00,2026-01-01T00:30:00+00:00\n")
    tel = _load(f, assume_tz="America/New_York")
    starts = dict(zip(tel.rollouts.column("id").to_pylist(), tel.rollouts.column("started_at").to_pylist()))
    assert starts["a"].isoformat() == "2026-01-01T05:00:00+00:00"  # midnight in New York, not UTC
    assert f"{f}: 1 naive timestamp(s) in column 'started_at' mixed with offset ones were taken as America/New_York" \
        in tel.warnings


def test_malformed_csv_rows_rejected_with_line_numbers(tmp_path):
    lines = ["id,started_at,finished_at"] + [f"r{i},{S0 + i},{S0 + i + 1}" for i in range(30_000)]
    lines[25_001] = 'r25000,"broken,1'
    lines[2] = "r1,1,2,3,4"
    f = _csv(tmp_path, "\n".join(lines) + "\n")
    tel = _load(f)
    # line 3 has too many fields; line 25,002 opens a quote never closed, which swallows the
    # 4,999 lines after it: all are counted, none vanish (30,000 in = 24,999 used + 5,001 rejected).
    assert tel.rejected == {"malformed CSV row": 5_001}
    assert tel.rollouts.num_rows == 24_999
    assert any("line(s) 3, 25002" in w for w in tel.warnings)
    assert any("4999 more line(s) after the broken quote at line 25002" in w for w in tel.warnings)


@pytest.mark.parametrize("encoding", ["utf-16", "latin-1"])
def test_csv_in_other_encodings(tmp_path, encoding):
    f = tmp_path / "r.csv"
    f.write_text(f"id,started_at,finished_at,model\na,{S0},{S0 + 1},modèle\n", encoding=encoding)
    assert _load(f).rollouts.column("model").to_pylist() == ["modèle"]


def test_json_lines_not_utf8_names_the_encoding(tmp_path):
    f = tmp_path / "r.jsonl"
    f.write_bytes(json.dumps({"id": "a", "started_at": S0, "finished_at": S0 + 1, "model": "X"}).encode()
                  .replace(b"X", b"mod\xe8le") + b"\n")
    with pytest.raises(InputError, match="looks like latin-1"):
        _load(f)


def test_json_lines_error_names_the_right_line(tmp_path):
    good = json.dumps({"id": "a", "started_at": S0, "finished_at": S0 + 1})
    f = tmp_path / "r.jsonl"
    f.write_text("\n".join([good] * 5 + ['{"id": oops'] + [good]) + "\n")
    with pytest.raises(InputError, match="r.jsonl line 6: not valid JSON"):
        _load(f)


@pytest.mark.parametrize("name", ["r.parquet", "r.csv", "r.jsonl"])
def test_gz_works_for_every_table_format(tmp_path, name):
    plain = tmp_path / name
    if name.endswith(".parquet"):
        pq.write_table(pa.table({"id": ["a"], "started_at": [S0], "finished_at": [S0 + 1]}), plain)
    elif name.endswith(".csv"):
        plain.write_text(f"id,started_at,finished_at\na,{S0},{S0 + 1}\n")
    else:
        plain.write_text(json.dumps({"id": "a", "started_at": S0, "finished_at": S0 + 1}) + "\n")
    gz = tmp_path / (name + ".gz")
    with open(plain, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    assert _load(gz).rollouts.column("id").to_pylist() == ["a"]
