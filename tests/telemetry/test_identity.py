"""Rows in = rows used + rows rejected, on every reader and fixture (nothing vanishes).

"Rows in" is counted here independently of the readers: trial folders on disk, trials in
results.json, sample entries in the Inspect archive, lines of the CSV, rows of the Parquet file.
"""

import json
import shutil
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from telemetry_builders import FIXTURES, HARBOR, TBENCH

from sandbox_fleet.telemetry import load_telemetry

INSPECT = FIXTURES / "inspect"
LAYOUTS = FIXTURES / "harbor-layouts"


def _identity(tel, rows_in: int) -> None:
    assert tel.rollouts.num_rows + sum(tel.rejected.values()) == rows_in


def _writable(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    for p in dest.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dest


def test_harbor_fixtures_every_trial_folder_counted():
    # per-agent and atif are both made from terminus2-n3: its 6 trial ids appear twice; one-trial
    # keeps oracle-n2's hello-pass trial, which legacy-orchestrator (made from oracle-n2) has too.
    for root, rejected in ((HARBOR, {}), (LAYOUTS, {"duplicate id": 7})):
        trials = [t for t in root.glob("*/*") if t.is_dir()]
        tel = load_telemetry([str(root)], progress=False)
        _identity(tel, len(trials))
        assert tel.rejected == rejected


def test_harbor_broken_trial_folders_are_rejected_by_reason(tmp_path):
    job = _writable(HARBOR / "oracle-n2", tmp_path / "jobs" / "oracle-n2")
    trials = sorted(t for t in job.iterdir() if t.is_dir())
    (trials[0] / "result.json").unlink()                    # config only: still running or lost
    (trials[1] / "config.json").unlink()                    # result only
    (trials[2] / "config.json").write_text("{truncated")   # unreadable
    tel = load_telemetry([str(tmp_path / "jobs")], progress=False)
    assert tel.rejected == {"no result.json": 1, "no config.json": 1, "unreadable": 1}
    assert tel.rollouts.num_rows == 3
    _identity(tel, len(trials))
    for reason in ("no result.json", "no config.json", "unreadable"):
        assert any(f"1 trial folder(s) rejected ({reason})" in w for w in tel.warnings)


def test_terminal_bench_run_without_metadata_is_rejected(tmp_path):
    runs = _writable(TBENCH, tmp_path / "runs")
    run = sorted(p for p in runs.iterdir() if p.is_dir())[1]
    n_lost = len(json.loads((run / "results.json").read_text())["results"])
    (run / "run_metadata.json").unlink()
    rows_in = sum(len(json.loads(f.read_text())["results"]) for f in runs.glob("*/results.json"))
    tel = load_telemetry([str(runs)], progress=False)
    assert tel.rejected.get("no run_metadata.json") == n_lost
    _identity(tel, rows_in)


def test_inspect_every_sample_counted():
    for log in sorted(INSPECT.glob("*.eval")):
        with zipfile.ZipFile(log) as z:
            rows_in = sum(1 for n in z.namelist() if n.startswith("samples/"))
        _identity(load_telemetry([str(log)], progress=False), rows_in)
    data = json.loads((INSPECT / "mock-local.json").read_text())
    _identity(load_telemetry([str(INSPECT / "mock-local.json")], progress=False), len(data["samples"]))


def test_csv_rows_in_equal_used_plus_rejected(tmp_path):
    lines = ["id,started_at,finished_at,input_tokens"]
    lines += [f"r{i},2026-01-01T00:00:{i % 60:02d}Z,2026-01-01T00:01:00Z,{i}" for i in range(30)]
    lines[3] = "r2,x,y,z,extra"                                  # too many fields
    lines[10] = "r9,N/A,2026-01-01T00:01:00Z,5"                  # unparsable time
    lines[20] = "r19,1999-12-31T00:00:00Z,2026-01-01T00:01:00Z,5"  # implausible time
    f = tmp_path / "r.csv"
    f.write_text("\n".join(lines) + "\n")
    tel = load_telemetry([str(f)], progress=False)
    assert tel.rejected == {"malformed CSV row": 1, "unparsable time": 1, "implausible time": 1}
    _identity(tel, 30)
    assert any("line(s) 4" in w for w in tel.warnings)


def test_parquet_rows_in_equal_used_plus_rejected(tmp_path):
    f = tmp_path / "r.parquet"
    pq.write_table(pa.table({
        "id": ["a", "b", None, "a", "c"],
        "started_at": ["2026-01-01T00:00:00Z", "2026-01-01T00:10:00Z", "2026-01-01T00:00:00Z",
                       "2026-01-01T00:00:00Z", "1970-01-01T00:00:05Z"],
        "finished_at": ["2026-01-01T00:01:00Z", "2026-01-01T00:05:00Z", "2026-01-01T00:01:00Z",
                        "2026-01-01T00:01:00Z", "1970-01-01T00:00:09Z"],
    }), f)
    tel = load_telemetry([str(f)], progress=False)
    assert tel.rejected == {"finished before started": 1, "missing id": 1, "duplicate id": 1, "implausible time": 1}
    _identity(tel, 5)


def test_rst_release_rows_in_equal_used_plus_rejected(tmp_path):
    from telemetry_builders import build_release

    root = build_release(tmp_path / "rel")
    f = root / "metadata" / "trajectories.parquet"
    t = pq.read_table(f)
    ids = t.column("trajectory_id").to_pylist()
    ids[3] = ids[0]  # a duplicate id
    pq.write_table(t.set_column(t.column_names.index("trajectory_id"), "trajectory_id", pa.array(ids)), f)
    tel = load_telemetry([str(root)], progress=False)
    assert tel.rejected == {"duplicate id": 1}
    _identity(tel, pq.ParquetFile(f).metadata.num_rows)
