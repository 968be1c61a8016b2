"""The proposed ``--map`` (issue 41): by name, vetoed by the values' type, printed as a command to run."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry.suggest_map import MissingColumns, propose, suggest_map
from sandbox_fleet.telemetry.table import read_table

HEADER = "episode_id,start_ts,end_ts,reward,error,host,task\n"
ROWS = ("ep-1,2026-01-05T08:00:00Z,2026-01-05T08:10:00Z,1,,n1,t1\n"
        "ep-2,2026-01-05T08:01:00Z,2026-01-05T08:05:00Z,,Timeout,n2,t2\n")
EXPECTED = "id=episode_id,task_id=task,node=host,started_at=start_ts,finished_at=end_ts,exception_type=error"


def test_the_issue_csv_gets_the_obvious_map(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text(HEADER + ROWS)
    assert suggest_map(str(f)).spec == EXPECTED
    with pytest.raises(MissingColumns) as exc:
        list(read_table(str(f), {}))
    assert exc.value.spec == EXPECTED and "\n" not in str(exc.value)


def test_a_time_name_whose_values_are_no_times_is_not_proposed():
    sample = pa.table({"id": ["a", "b"], "start": ["soon", "later"], "begin": ["2026-01-05T08:00:00Z", "2026-01-05T09:00:00Z"],
                       "end": [1767600000, 1767603600]})
    p = propose(sample.column_names, sample, {})
    assert p.mapping == {"started_at": "begin", "finished_at": "end"}
    assert any(w.startswith("started_at <- start? no:") for w in p.why)


def test_an_id_that_repeats_is_not_an_id_and_leaves_no_command():
    sample = pa.table({"episode_id": ["a", "a"], "start": ["2026-01-05T08:00:00Z"] * 2, "end": ["2026-01-05T09:00:00Z"] * 2})
    p = propose(sample.column_names, sample, {})
    assert p.unresolved == ["id"] and p.spec is None


def test_the_users_own_map_is_kept_and_completed(tmp_path):
    f = tmp_path / "r.parquet"
    pq.write_table(pa.table({"run": ["a", "b"], "created": ["2026-01-05T08:00:00Z", "2026-01-05T08:01:00Z"],
                             "finish": ["2026-01-05T09:00:00Z", "2026-01-05T09:01:00Z"], "score": [0.5, 1.0]}), f)
    with pytest.raises(MissingColumns) as exc:
        list(read_table(str(f), {"id": "run"}))
    assert exc.value.spec == "id=run,started_at=created,finished_at=finish,reward=score"


def test_suggest_map_refuses_a_table_it_cannot_complete(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match=r"r\.csv: no column fits id, started_at, finished_at"):
        suggest_map(str(f))


def test_cli_prints_the_command_to_run_and_suggest_map_alone(tmp_path, run_cli):
    f = tmp_path / "r.csv"
    f.write_text(HEADER + ROWS)
    r = run_cli("measure", f, "--map", "id=episode_id", "--json")
    assert r.code == 2 and r.err.count("\n") == 1
    assert r.err.rstrip().endswith(f"run: sandbox-fleet measure {f} --json --map {EXPECTED}")
    r = run_cli("measure", "--suggest-map", f)
    assert r.code == 0 and r.out == EXPECTED + "\n"
    assert "started_at <- start_ts: 2/2 sampled values parse as times" in r.err
