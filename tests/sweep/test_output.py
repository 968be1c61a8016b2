"""CSV / Parquet / JSON writers: exact bytes for a small table, typed Parquet, bad suffixes."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.sweep.output import to_csv, write

RESULT = {
    "scenario": "s.toml",
    "rows": [
        {"variant": 0, "fleet.cap": 4, "admission": "fifo", "step_s.mean": 0.1 + 0.2, "step_s.mean:sd": None},
        {"variant": 1, "fleet.cap": "unbounded", "admission": "a,b", "step_s.mean": 2.0, "step_s.mean:sd": 0.5},
    ],
}


def test_csv_bytes():
    assert to_csv(RESULT) == (
        "variant,fleet.cap,admission,step_s.mean,step_s.mean:sd\n"
        "0,4,fifo,0.30000000000000004,\n"  # full precision; null is empty
        '1,unbounded,"a,b",2.0,0.5\n'
    )


def test_parquet_types_and_unbounded_as_null(tmp_path):
    t = pq.read_table(write(RESULT, tmp_path / "r.parquet"))
    assert t.column_names == ["variant", "fleet.cap", "admission", "step_s.mean", "step_s.mean:sd"]
    assert t.column("fleet.cap").to_pylist() == [4, None]
    assert str(t.schema.field("fleet.cap").type) == "int64"
    assert t.column("step_s.mean:sd").to_pylist() == [None, 0.5]


def test_parquet_mixed_kinds_become_text(tmp_path):
    res = {"rows": [{"k": 1}, {"k": "x"}]}
    assert pq.read_table(write(res, tmp_path / "m.parquet")).column("k").to_pylist() == ["1", "x"]


def test_same_result_same_bytes(tmp_path):
    for suffix in (".csv", ".json", ".parquet"):
        a = write(RESULT, tmp_path / f"a{suffix}").read_bytes()
        b = write(RESULT, tmp_path / f"b{suffix}").read_bytes()
        assert a == b


def test_json_file(tmp_path):
    back = json.loads(write(RESULT, tmp_path / "sub" / "r.json").read_text())
    assert back["rows"][1]["fleet.cap"] == "unbounded" and back["rows"][0]["step_s.mean:sd"] is None


def test_unknown_suffix(tmp_path):
    with pytest.raises(InputError, match=r"\.csv, \.parquet, \.json"):
        write(RESULT, tmp_path / "r.xlsx")
