"""The terminal summary prints the headline figures, rounded, without failing on nulls."""

from __future__ import annotations

from rich.console import Console

from sandbox_fleet.measure.render import render_summary
from summaries import as_measure, measure_json

from .helpers import telemetry


def _render(summary) -> str:
    console = Console(record=True, width=160)
    render_summary(as_measure(summary), console)
    return console.export_text()


def test_render_shows_headlines(ten_rows):
    text = _render(measure_json(ten_rows))
    assert "Concurrency" in text and "Hold time" in text
    assert "40.0%" in text  # exception rate 2/5, a percentage as numfmt (and the report) prints it
    assert "57.1%" in text  # pass rate 4/7
    assert "Timeout" in text
    assert "duplicate id" in text


def test_render_copes_with_sparse_input():
    text = _render(measure_json(telemetry([0], [1])))
    assert "not reported" in text


def test_render_shows_the_worst_tasks():
    # t1: 3 of 3 raised (Timeout); t2: 1 of 3
    t = telemetry([0] * 6, [1] * 6, task_id=["t1"] * 3 + ["t2"] * 3,
                  has_exception=[True, True, True, True, False, False], exception_type=["Timeout"] * 4 + [None] * 2)
    text = _render(measure_json(t))
    assert "Exceptions per task (2 tasks)" in text
    assert "Tasks with the most exceptions" in text
    assert "Timeout (3)" in text and "100.0%" in text
    assert "t2" not in text.split("Tasks with the most exceptions")[1].split("By model")[0]


def test_render_lists_nodes_highest_rate_first():
    # a: 1 of 4 raised; b: 3 of 4; one rollout on no node
    t = telemetry([0] * 9, [1] * 9, node=["a"] * 4 + ["b"] * 4 + [None],
                  has_exception=[True, False, False, False, True, True, True, False, False])
    text = _render(measure_json(t))
    assert "Exceptions per node (2 nodes)" in text and "1 rollout(s) on no node" in text
    lines = [ln for ln in text.splitlines() if ln.startswith(("a ", "b "))]
    assert [ln.split()[0] for ln in lines] == ["b", "a"]
    assert "75.0%" in lines[0] and "25.0%" in lines[1]


def test_render_prints_no_node_table_without_nodes(ten_rows):
    assert "Exceptions per node" not in _render(measure_json(ten_rows))
