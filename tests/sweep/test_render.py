"""The terminal table: headline figures, relative spread, narrow terminals, the knee line."""

from __future__ import annotations

from rich.console import Console

from sandbox_fleet.sweep.render import render_sweep


def result(rows, knee=None):
    out = {"scenario": "s.toml", "variants": len(rows), "seeds": 2, "vary": {"fleet.cap": [r["fleet.cap"] for r in rows]},
           "metrics": ["step_s.mean", "queue_wait_s.mean", "utilisation", "concurrency.mean", "completed", "dropped"],
           "rows": rows}
    if knee:
        out["knee"] = knee
    return out


def row(cap, step, sd, completed=10.0):
    return {"fleet.cap": cap, "step_s.mean": step, "step_s.mean:sd": sd, "queue_wait_s.mean": 1.5,
            "queue_wait_s.mean:sd": None, "utilisation": 0.25, "utilisation:sd": None, "concurrency.mean": 3.0,
            "concurrency.mean:sd": None, "completed": completed, "completed:sd": None, "dropped": 0.0, "dropped:sd": None}


def text(res, width=120) -> str:
    c = Console(width=width, record=True, color_system=None)
    render_sweep(res, c)
    return c.export_text()


def test_spread_as_percent_and_constant_counts_hidden():
    out = text(result([row(4, 2000.0, 100.0), row(8, 1000.0, None)]))
    assert "2,000 ±5%" in out and "1,000" in out
    assert "completed" not in out and "dropped" not in out  # constant across variants
    out = text(result([row(4, 2000.0, 100.0, completed=9.0), row(8, 1000.0, None)]))
    assert "completed" in out


def test_narrow_terminal_drops_columns_not_digits():
    out = text(result([row(4, 123456.0, 100.0), row(8, 1000.0, None)]), width=40)
    assert "123,456" in out and "more columns" in out


def test_knee_lines():
    knee = {"target": "step_s.mean", "over": "fleet.cap", "within": 0.01, "goal": "min", "groups": [
        {"fixed": {}, "knee": 8, "reference": 1000.0, "reference_from": "best", "target_at_knee": 1000.0},
        {"fixed": {"b": 2}, "knee": None, "reference": 1.0, "reference_from": "unbounded", "target_at_knee": None,
         "note": "no swept value of fleet.cap is within 1.00% of the reference"}]}
    out = " ".join(text(result([row(4, 2000.0, None), row(8, 1000.0, None)], knee)).split())
    assert "knee of step_s.mean over fleet.cap: 8 (step_s.mean 1,000, within 1.00% of the best run's 1,000)" in out
    assert "knee of step_s.mean over fleet.cap (b=2): none (no swept value" in out
