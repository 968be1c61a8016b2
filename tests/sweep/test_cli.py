"""`sandbox-fleet sweep` end to end: --json hygiene, -o files, the knee, bad input exit 2."""

from __future__ import annotations

import csv
import io
import json
import math


def test_json_on_stdout_alone_with_knee(run_cli, sync_det, tmp_path):
    r = run_cli("sweep", sync_det(8, 10.0, 5.0), "--vary", "fleet.cap=2,4,8,16", "--vary", "workload.steps=2,3",
                "--target", "step_s.mean", "--within", "0.01", "--workers", "1", "--json")
    assert r.code == 0, r.err
    res = json.loads(r.out)  # nothing but one JSON object on stdout
    assert [(x["fleet.cap"], x["workload.steps"]) for x in res["rows"]] == [
        (2, 2), (2, 3), (4, 2), (4, 3), (8, 2), (8, 3), (16, 2), (16, 3)]
    for x in res["rows"]:
        assert x["step_s.mean"] == math.ceil(8 / x["fleet.cap"]) * 10.0 + 5.0
        assert x["completed"] == 8 * x["workload.steps"]
    assert [(g["fixed"], g["knee"]) for g in res["knee"]["groups"]] == [
        ({"workload.steps": 2}, 8), ({"workload.steps": 3}, 8)]


def test_output_csv_and_readable_summary(run_cli, sync_det, tmp_path):
    out = tmp_path / "r.csv"
    r = run_cli("sweep", sync_det(), "--vary", "fleet.cap=4,8", "--target", "step_s.mean", "--workers", "1", "-o", out)
    assert r.code == 0, r.err
    assert "knee of step_s.mean over fleet.cap: 8" in " ".join(r.out.split())
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [(x["fleet.cap"], float(x["step_s.mean"])) for x in rows] == [("4", 25.0), ("8", 15.0)]


def test_unknown_key_exits_2_with_one_line(run_cli, sync_det):
    r = run_cli("sweep", sync_det(), "--vary", "fleet.capp=4", "--json")
    assert r.code == 2 and r.out == ""
    err = " ".join(r.err.split())
    assert "--vary fleet.capp: unknown key" in err and "fleet.{name, cap," in err


def test_bad_value_exits_2(run_cli, sync_det):
    r = run_cli("sweep", sync_det(), "--vary", "fleet.cap=-1")
    assert r.code == 2 and "greater than or equal to 1" in " ".join(r.err.split())
