"""Chart builders: a figure from present inputs, None (shown as "not measured") from absent ones."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from producers import healthy_exception_type, healthy_intervals
from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.report import charts

START, FINISH = healthy_intervals()
HOLDS = [b - a for a, b in zip(START, FINISH)]


def M(doc: dict) -> MeasureSummary:
    """A measure summary dict (the producer's output, or a sparse one) as the model the charts read."""
    return MeasureSummary.model_validate({"schema_version": MeasureSummary.VERSION, "kind": "measure", **doc})


@pytest.mark.parametrize("key", list(charts.BUILDERS))
def test_missing_inputs_give_none(key):
    assert charts.BUILDERS[key](M({})) is None


def test_models_chart_missing():
    assert charts.models(M({}), 0.25) is None


def test_concurrency_has_step_series_and_reference_lines(fleet):
    # the healthy corpus: 100 slots opening 7 s apart, never at its cap (two jobs of 150 side by side: 300 at most)
    mean = math.fsum(HOLDS) / (max(FINISH) - min(START))
    fig = charts.concurrency(M(fleet))
    names = [t.name for t in fig.data]
    assert names == ["concurrency", "peak 100", "configured cap 300", f"mean {mean:.1f}"]
    assert fig.data[0].line.shape == "hv"
    assert list(fig.data[0].x)[:3] == [0.0, 7 / 3600, 14 / 3600]  # hours
    assert list(fig.data[3].y) == pytest.approx([mean, mean])


def test_concurrency_rejects_mismatched_series(fleet):
    fleet["concurrency"]["series"]["level"] = [1, 2]
    assert charts.concurrency(M(fleet)) is None


def test_hold_histogram_is_log_with_median_and_p99(fleet):
    fig = charts.hold(M(fleet))
    median, p99 = statistics.median(HOLDS), float(np.percentile(HOLDS, 99))
    assert fig.layout.xaxis.type == "log"
    assert [t.name for t in fig.data] == ["rollouts", f"median {median:,.0f} s", f"p99 {p99:,.0f} s"]
    assert list(fig.data[1].x) == pytest.approx([median, median])
    # one more y than counts: the last step is closed at the last edge
    counts = fleet["hold_s"]["histogram"]["counts"]
    assert list(fig.data[0].y) == counts + counts[-1:] and sum(counts) == len(HOLDS)


def test_hold_histogram_with_zero_edge_falls_back_to_linear(fleet):
    fleet["hold_s"]["histogram"]["edges_s"][0] = 0
    assert charts.hold(M(fleet)).layout.xaxis.type == "linear"


def test_context_fit_curve_is_c_n_n_plus_1_over_2(fleet):
    fig = charts.context(M(fleet))
    measured, fit = fig.data
    assert list(measured.x) == [1, 2, 5, 10, 20]
    curve = dict(zip(fit.x, fit.y))
    assert curve[10] == 44_000.0   # 800 * 10 * 11 / 2
    assert curve[20] == 168_000.0  # 800 * 20 * 21 / 2
    assert "R² 1.0000" in fit.name  # the corpus's input tokens are exactly 800 n (n + 1) / 2


def test_turns_histogram_sorted_numerically(fleet):
    fig = charts.turns(M(fleet))
    assert list(fig.data[0].x) == [1, 2, 5, 10, 20]


def test_exceptions_count_and_hours(fleet):
    fig = charts.exceptions(M(fleet))
    assert len(fig.data) == 2
    hours = {}
    for i, h in enumerate(HOLDS):
        if healthy_exception_type(i):
            hours[healthy_exception_type(i)] = hours.get(healthy_exception_type(i), 0.0) + h / 3600
    assert list(fig.data[0].y) == ["DaytonaError", "AgentTimeoutError"]  # 15 and 45: most frequent at the top
    assert list(fig.data[0].x) == [15, 45]
    assert list(fig.data[1].x) == pytest.approx([hours["DaytonaError"], hours["AgentTimeoutError"]])


def test_exception_types_accepts_the_measure_layout():
    m = {"exceptions": {"by_type": {"A": 3, "B": 7}, "sandbox_hours_by_type": {"A": 1.0, "B": 2.0}}}
    assert charts.exception_types(M(m)) == [("B", 7.0, 2.0), ("A", 3.0, 1.0)]
    m = {"exceptions": {"by_type": {"A": 3}}}
    assert len(charts.exceptions(M(m)).data) == 1  # no hours: count panel only


def test_models_and_coverage(published):
    fig = charts.models(M(published), 0.25)
    assert list(fig.data[0].x) == ["Qwen3.6-27B-base", "gpt-oss-120b"]
    cov = charts.coverage(M(published))
    assert list(cov.data[0].x) == ["reward", "tokens", "turns", "trajectory"]
    assert cov.data[0].y[0] == pytest.approx(81_635 / 327_189)
    assert cov.data[0].text[0] == "25.0% (81,635)"


def test_bucketed_series_is_labelled(fleet):
    fleet["concurrency"]["series"]["bucket_s"] = 600.0
    assert charts.concurrency(M(fleet)).data[0].name == "concurrency (max per 600 s)"
