"""measure's warnings reach stderr one per line, from the model the stage hands over."""

from __future__ import annotations

import json
from pathlib import Path

from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.measure.notices import warn_on_stderr

PUBLISHED = Path(__file__).resolve().parents[2] / "examples" / "rst-published.json"


def test_each_warning_is_one_stderr_line_and_stdout_stays_clean(capsys):
    warnings = ["3 rows without a finish time: not measured", "tasks.json: cap is unknown"]
    s = MeasureSummary.model_validate({**json.loads(PUBLISHED.read_text()), "warnings": warnings})
    warn_on_stderr(s)
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "warning: 3 rows without a finish time: not measured\nwarning: tasks.json: cap is unknown\n"


def test_a_summary_without_warnings_writes_nothing(capsys):
    warn_on_stderr(MeasureSummary.model_validate(json.loads(PUBLISHED.read_text())))
    assert capsys.readouterr() == ("", "")
