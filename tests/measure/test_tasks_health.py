"""Per-task exception health (by_task) on a hand-made 27-row table, every figure by hand."""

from __future__ import annotations

import numpy as np
import pytest

from sandbox_fleet import jsonio
from sandbox_fleet.measure.tasks_health import measure_task_health
from summaries import measure_json

from .helpers import rollouts, telemetry

HOUR = 3600.0

# (task_id, has_exception, exception_type, hold seconds), one row a rollout.
# Every exception row holds 100 s except task a's (10 + 20 + 30 + 40); clean rows hold 50 s.
ROWS = [
    # a: 4 of 4 raised; types O, O, T, T tie at 2 -> "O" (name ascending)
    ("a", True, "T", 10), ("a", True, "O", 20), ("a", True, "T", 30), ("a", True, "O", 40),
    # b: 4 of 5 raised (0.8); T three times, one null type
    ("b", True, "T", 100), ("b", True, None, 100), ("b", False, None, 50), ("b", True, "T", 100),
    ("b", True, "T", 100),
    # c: 2 of 2 raised, but fewer than 3 rollouts: not judged
    ("c", True, "X", 100), ("c", True, "X", 100),
    # d: 1 of 3 (0.333): judged, not broken
    ("d", False, None, 50), ("d", True, "T", 100), ("d", False, None, 50),
    # e: 2 of 4 = 0.5 exactly: broken (rate >= 0.5); both types null -> "(none)"
    ("e", True, None, 100), ("e", False, None, 50), ("e", True, None, 100), ("e", False, None, 50),
    # f: 3 of 3 raised, all Z
    ("f", True, "Z", 100), ("f", True, "Z", 100), ("f", True, "Z", 100),
    # no task id: 2 of 3 raised
    (None, True, "T", 100), (None, False, None, 50), (None, True, "T", 100),
    # g: 3 rollouts, one with an unknown flag: only 2 flagged, both raised
    ("g", True, "Y", 100), ("g", None, None, 50), ("g", True, "Y", 100),
]
# Exception hours: a 100 s, b 400, c 200, d 100, e 200, f 300, none 200, g 200 = 1,700 s.
EXCEPTION_S = 1700


def table(rows=ROWS):
    starts = [float(i) for i in range(len(rows))]
    return rollouts(starts, [s + r[3] for s, r in zip(starts, rows)],
                    task_id=[r[0] for r in rows], has_exception=[r[1] for r in rows],
                    exception_type=[r[2] for r in rows])


def test_counts_and_the_worst_tasks_by_hand():
    out = measure_task_health(table())
    assert out["rows"] == 27
    assert out["tasks"] == 7  # a b c d e f g; the null task id is not a task
    assert (out["rows_without_task"], out["exceptions_without_task"]) == (3, 2)
    assert out["exceptions"] == 20
    assert (out["min_rows"], out["broken_rate"], out["top"]) == (3, 0.5, 20)
    assert out["tasks_judged"] == 5  # a b d e f (c has 2 rollouts, g 2 flagged)
    assert out["max_exception_rate"] == 1.0
    assert out["tasks_broken"] == 4  # a 1.0, b 0.8, e 0.5, f 1.0
    # a and b tie on 4 exceptions: task_id breaks the tie
    assert [w["task_id"] for w in out["worst"]] == ["a", "b", "f", "e"]
    a, b, f, e = out["worst"]
    assert a == {"task_id": "a", "rows": 4, "exceptions": 4, "exception_rate": 1.0, "exception_rate_rows": 4,
                 "top_exception_type": "O", "top_exception_count": 2, "exception_sandbox_hours": 100 / HOUR}
    assert (b["rows"], b["exceptions"], b["exception_rate"]) == (5, 4, 0.8)
    assert (b["top_exception_type"], b["top_exception_count"]) == ("T", 3)
    assert b["exception_sandbox_hours"] == pytest.approx(400 / HOUR)
    assert (e["exception_rate"], e["top_exception_type"], e["top_exception_count"]) == (0.5, "(none)", 2)
    assert (f["top_exception_type"], f["exception_sandbox_hours"]) == ("Z", pytest.approx(300 / HOUR))
    # by rate: a and f tie at 1.0, a has more exceptions
    assert [w["task_id"] for w in out["highest_rate"]] == ["a", "f", "b", "e"]
    assert out["highest_rate"][1] == f


def test_tasks_where_every_rollout_raised():
    out = measure_task_health(table())
    assert out["tasks_all_exceptions"] == 2  # a and f; c is too small, g has an unknown flag
    assert out["tasks_all_exceptions_sandbox_hours"] == pytest.approx(400 / HOUR)
    assert out["tasks_all_exceptions_share"] == pytest.approx(400 / EXCEPTION_S)


def test_min_rows_and_top():
    out = measure_task_health(table(), min_rows=2, top=5)
    # c (2 of 2) and g (2 of 2 flagged) are judged now; g's unknown third rollout keeps it
    # out of "every rollout raised".
    assert out["tasks_judged"] == 7 and out["tasks_broken"] == 6
    assert [w["task_id"] for w in out["worst"]] == ["a", "b", "f", "c", "e"]  # top 5 of a b f c e g
    # c and g tie on rate (1.0) and exceptions (2): task_id decides
    assert [w["task_id"] for w in out["highest_rate"]] == ["a", "f", "c", "g", "b"]
    assert out["tasks_all_exceptions"] == 3  # a c f
    assert out["tasks_all_exceptions_share"] == pytest.approx(600 / EXCEPTION_S)
    assert out["tasks_all_exceptions_sandbox_hours"] == pytest.approx(600 / HOUR)
    assert [w["task_id"] for w in measure_task_health(table(), top=1)["worst"]] == ["a"]
    assert measure_task_health(table(), min_rows=6)["max_exception_rate"] is None


def test_broken_rate_zero_lists_tasks_without_exceptions_too():
    rows = [("q", False, None, 5)] * 3 + [("p", True, "T", 5)] * 3
    worst = measure_task_health(table(rows), broken_rate=0.0)["worst"]
    assert [(w["task_id"], w["top_exception_type"], w["top_exception_count"]) for w in worst] == [
        ("p", "T", 3), ("q", None, 0)]


def test_no_task_id_anywhere_is_not_measured():
    assert measure_task_health(table([(None, True, "T", 5)] * 4)) is None
    assert measure_json(telemetry([0, 1], [2, 3]))["by_task"] is None  # column absent


def test_bad_settings_are_rejected():
    for kwargs in ({"min_rows": 0}, {"top": -1}, {"broken_rate": 1.5}):
        with pytest.raises(ValueError):
            measure_task_health(table(), **kwargs)


def test_in_the_summary_and_independent_of_row_order():
    rows = list(ROWS)
    perm = np.random.default_rng(3).permutation(len(rows))
    shuffled = [rows[i] for i in perm]

    def summary(rs):
        starts = [float(i) for i in range(len(rs))]
        t = telemetry(starts, [s + r[3] for s, r in zip(starts, rs)], task_id=[r[0] for r in rs],
                      has_exception=[r[1] for r in rs], exception_type=[r[2] for r in rs])
        return measure_json(t)["by_task"]

    a, b = summary(rows), summary(shuffled)
    assert [w["task_id"] for w in a["worst"]] == ["a", "b", "f", "e"]
    assert jsonio.dumps(a) == jsonio.dumps(b)
