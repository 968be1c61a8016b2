"""Loading summaries: a measure --json file is read as is; bad files are one-line InputErrors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.report.inputs import load_measure, load_plan


def test_summary_json_is_read_as_is(tmp_path, fleet):
    f = tmp_path / "m.json"
    f.write_text(json.dumps(fleet))
    assert load_measure([f]).to_json() == fleet


@pytest.mark.parametrize("text,needle", [("{not json", "not valid JSON"), ("[1, 2]", "found a JSON list")])
def test_bad_json(tmp_path, text, needle):
    f = tmp_path / "m.json"
    f.write_text(text)
    with pytest.raises(InputError) as err:
        load_measure([f])
    assert needle in str(err.value) and str(f) in str(err.value) and "\n" not in str(err.value)


def test_missing_plan_file(tmp_path):
    with pytest.raises(InputError, match="plan summary file not found"):
        load_plan(tmp_path / "p.json")


def test_no_paths():
    with pytest.raises(InputError):
        load_measure([])


HARBOR = Path(__file__).resolve().parents[1] / "fixtures" / "harbor"


def test_telemetry_is_measured_on_the_fly():
    """A path that is not a summary goes through sandbox_fleet.measure (real Harbor job folders)."""
    trials = list(HARBOR.glob("*/*/result.json"))
    summary = load_measure([HARBOR])
    assert summary.rows == len(trials)
    from sandbox_fleet.report import build_report
    from summaries import checks_of

    assert {r.name for r in checks_of(summary)} and "<section id=\"checks\">" in build_report(summary)
