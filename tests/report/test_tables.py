"""Report tables: what a reader sees first."""

from producers import measure_doc
from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.report.tables import context_table
from summaries import report_html


def M(**figures) -> MeasureSummary:
    return MeasureSummary.model_validate(measure_doc(**figures))


def test_long_context_table_shows_reference_turns_and_folds_the_rest():
    medians = {str(n): 800 * n * (n + 1) // 2 for n in range(1, 41)}
    html = context_table(M(tokens={"median_input_by_turns": medians, "turn_tokens": 800.0}))
    short, full = html.split("<details>")
    # The short table: the document's reference counts present (1, 2, 5, 11, 20, 21) and the largest (40).
    assert short.count("<tr>") - 1 == 7
    assert "all 40 turn counts" in full and full.count("<tr>") - 1 == 40


def _cells(html: str) -> list[list[str]]:
    """Body rows of the grid table in ``html``, as lists of cell texts."""
    import re

    body = html[html.index("<tbody>"):]
    return [re.findall(r"<td(?: data-label=\"[^\"]*\")?>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)]


def test_task_health_table_lists_the_worst_tasks_in_order():
    from sandbox_fleet.report.tables import task_health_table

    worst = [
        {"task_id": "img-<bad>", "rows": 12, "exceptions": 12, "exception_rate": 1.0, "exception_rate_rows": 12,
         "top_exception_type": "ImagePullError", "top_exception_count": 9, "exception_sandbox_hours": 0.5},
        {"task_id": "disk", "rows": 40, "exceptions": 30, "exception_rate": 0.75, "exception_rate_rows": 40,
         "top_exception_type": None, "top_exception_count": 0, "exception_sandbox_hours": 12.25},
    ]
    m = M(by_task={"tasks": 1234, "rows_without_task": 5, "tasks_judged": 1000, "broken_rate": 0.5,
                     "min_rows": 3, "tasks_broken": 2, "max_exception_rate": 1.0, "tasks_all_exceptions": 1,
                     "tasks_all_exceptions_share": 0.125, "worst": worst})
    html = task_health_table(m)
    assert "<th>tasks with rollouts</th><td>1,234</td>" in html
    assert "<th>tasks at 50.0%+ exceptions (of those with 3+ rollouts)</th><td>2</td>" in html
    assert "<th>their share of exception sandbox-hours</th><td>12.5%</td>" in html
    assert _cells(html) == [
        ["img-&lt;bad&gt;", "12", "12", "100.0%", "ImagePullError", "9", "0.50"],
        ["disk", "40", "30", "75.0%", '<span class="na">not measured</span>', "0", "12.25"],
    ]


def test_task_health_table_absent_or_empty():
    from sandbox_fleet.report.tables import task_health_table

    assert task_health_table(M()) is None and task_health_table(M(by_task=None)) is None
    html = task_health_table(M(by_task={"tasks": 3, "worst": []}))
    assert "no task looks broken" in html and "<tbody>" not in html
    from producers import measure_doc

    body = report_html(measure_doc())
    exceptions = body[body.index('<section id="exceptions">'):]
    exceptions = exceptions[:exceptions.index("</section>")]
    assert "exceptions per task: not measured" in exceptions
