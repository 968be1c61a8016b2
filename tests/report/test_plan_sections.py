"""Report sections for the plan: caching chart, hold-time CDFs per model, rent vs buy, optional lines,
the mixed purchase and the substrates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from producers import measure_doc
from sandbox_fleet.jsonio import to_jsonable
from sandbox_fleet.measure.model import HoldStats, MeasureSummary
from sandbox_fleet.plan import PlanOptions
from sandbox_fleet.plan.model import PlanSummary
from sandbox_fleet.report.plan_sections import (
    caching_chart,
    cdf_points,
    extra_plan_table,
    hold_cdf_chart,
    mixed_chart,
    mixed_table,
    rent_chart,
    rent_table,
    substrates_table,
)
from summaries import plan_json, report_html

MIXED = Path(__file__).resolve().parents[1] / "plan" / "data" / "mixed.json"

def test_cdf_points_through_the_percentiles_by_hand():
    holds = HoldStats(min=4.0, median=1000.0, p90=5000.0, p99=9000.0, max=20000.0)
    # min and max of 100 rollouts sit at 1/200 and 199/200
    assert cdf_points(holds, 100) == [(4.0, 0.005), (1000.0, 0.5), (5000.0, 0.9), (9000.0, 0.99), (20000.0, 0.995)]
    # without a row count the extremes are left out rather than placed at 0 and 1
    assert cdf_points(holds, None) == [(1000.0, 0.5), (5000.0, 0.9), (9000.0, 0.99)]
    # a p99 below the p90 (inconsistent input) cannot bend the CDF back
    assert cdf_points(HoldStats(median=10.0, p90=50.0, p99=40.0), None) == [(10.0, 0.5), (40.0, 0.99)]


def _measure(**figures) -> MeasureSummary:
    """A sparse measure summary, validated by measure's model (an undeclared key fails here)."""
    return MeasureSummary.model_validate(measure_doc(**figures))


def test_hold_cdf_one_line_per_model():
    m = _measure(hold_s={"by_model": {"a": {"rows": 50, "min": 1.0, "median": 10.0, "p99": 90.0, "max": 100.0},
                                      "b": {"rows": 10, "median": 20.0}}},
                 by_model={"c": {"rows": 300, "hold_median_s": 5.0, "hold_p99_s": 60.0}})
    fig = hold_cdf_chart(m)
    assert [t.name for t in fig.data] == ["a", "c"]  # b has one point: no line
    m.hold_s = m.hold_s.model_copy(update={"rows": 360, "median": 9.0, "p99": 95.0})
    assert [t.name for t in hold_cdf_chart(m).data] == ["all rollouts", "a", "c"]
    assert hold_cdf_chart(_measure(hold_s={"rows": 5, "median": 1.0, "p99": 2.0})) is None
    # a: the max of 50 rows sits at 1 - 1/100 = 0.99, no higher than the p99: the max point is dropped
    assert list(fig.data[0].x) == [1.0, 10.0, 90.0] and list(fig.data[0].y) == [0.01, 0.5, 0.99]
    assert list(fig.data[1].x) == [5.0, 60.0] and list(fig.data[1].y) == [0.5, 0.99]
    assert hold_cdf_chart(_measure()) is None


def test_caching_chart_from_the_plan(produced):
    plan = plan_json(produced.mixed, PlanOptions(prefix_break=0.1))
    fig = caching_chart(PlanSummary.model_validate(to_jsonable(plan)))
    turns = sorted(int(k) for k in plan["caching"]["saving_by_turns"])
    assert list(fig.data[0].x) == turns and list(fig.data[0].y) == [(n + 1) / 2 for n in turns]  # (n+1)/2 by hand
    assert list(fig.data[1].x) == turns  # the same turns with 10% of them breaking the prefix
    assert all(b < (n + 1) / 2 for n, b in zip(turns, fig.data[1].y) if n > 1)
    mix = plan["caching"]["saving_measured_mix"]
    assert list(fig.data[2].y) == [mix, mix] and 1 < mix < (max(turns) + 1) / 2
    assert caching_chart(None) is None


@pytest.fixture
def real_plan(fleet) -> dict:
    return to_jsonable(plan_json(fleet, PlanOptions(node_type="aws-m6id.24xlarge", price_tier="spot")))


def test_rent_section_from_a_real_plan(real_plan, fleet):
    html = rent_table(PlanSummary.model_validate(real_plan))
    assert "Verdict:" in html and "e2b" in html and "daytona" in html and "modal" in html
    fig = rent_chart(PlanSummary.model_validate(real_plan))
    bars = dict(zip(fig.data[0].x, fig.data[0].y))
    assert bars["buy spot"] == real_plan["cost"]["spot_per_h"]
    assert bars["rent e2b"] == real_plan["cost"]["rent"]["e2b"]["usd_per_h"]
    page = report_html(fleet, real_plan)
    assert 'id="rent"' in page and 'id="fig-rent"' in page and 'id="fig-caching"' in page


def test_optional_plan_lines_only_when_present(real_plan):
    table = extra_plan_table(PlanSummary.model_validate(real_plan))
    assert "peak start rate" in table and real_plan["starts"]["basis"].split(":")[0] in table
    cost = {**real_plan["cost"], "per_passing_trajectory_all_in": None}
    # a plan of schema 2 has no start rate and no all-in cost
    assert extra_plan_table(PlanSummary.model_validate({**real_plan, "starts": None, "cost": cost})) is None


def test_mixed_purchase_section_from_the_mixed_corpus():
    """The mixed corpus on on-demand (tests/plan/test_mixed.py works it by hand): 1 node reserved, 6 bursting."""
    from sandbox_fleet.plan.model import Mixed

    measured = json.loads(MIXED.read_text(encoding="utf-8"))
    plan = to_jsonable(plan_json(measured, PlanOptions(price_tier="on_demand")))
    p = PlanSummary.model_validate(plan)
    fig = mixed_chart(p)
    bars = fig.data[0]
    assert list(bars.x) == list(range(1, 8)) and list(bars.y) == plan["cost"]["mixed"]["node_share"]
    assert list(bars.marker.color) == ["#1f77b4"] + ["#ff7f0e"] * 6  # reserved, then burst
    ratio = plan["cost"]["mixed"]["break_even_share"]
    assert list(fig.data[1].y) == [ratio, ratio]
    html = mixed_table(p)
    assert "on-demand" in html and f"{plan['cost']['mixed']['usd_per_h']:,.2f}" in html
    page = report_html(measured, plan)
    assert 'id="mixed"' in page and 'id="fig-mixed"' in page and 'id="substrates"' in page
    assert mixed_chart(PlanSummary.model_validate({**plan, "cost": {**plan["cost"], "mixed": None}})) is None
    assert Mixed().node_share is None


def test_substrates_table_lists_every_substrate_with_its_source(real_plan):
    html = substrates_table(PlanSummary.model_validate(real_plan))
    for name, s in real_plan["substrates"]["by_substrate"].items():
        assert name in html and s["source"].split(" ")[0] in html
    assert "illustrative" in html and substrates_table(None) is None
