"""Report sections for the plan: caching chart, hold-time CDFs per model, rent vs buy, optional lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox_fleet.jsonio import to_jsonable
from sandbox_fleet.plan import PlanOptions, make_plan
from sandbox_fleet.report import build_report
from sandbox_fleet.report.plan_sections import (
    assumptions_table,
    caching_chart,
    cdf_points,
    extra_plan_table,
    hold_cdf_chart,
    rent_chart,
    rent_table,
)

FIX = Path(__file__).parent / "fixtures"


def load(name: str) -> dict:
    return json.loads((FIX / name).read_text())


def test_cdf_points_through_the_percentiles_by_hand():
    holds = {"min": 4.0, "median": 1000.0, "p90": 5000.0, "p99": 9000.0, "max": 20000.0}
    # min and max of 100 rollouts sit at 1/200 and 199/200
    assert cdf_points(holds, 100) == [(4.0, 0.005), (1000.0, 0.5), (5000.0, 0.9), (9000.0, 0.99), (20000.0, 0.995)]
    # without a row count the extremes are left out rather than placed at 0 and 1
    assert cdf_points(holds, None) == [(1000.0, 0.5), (5000.0, 0.9), (9000.0, 0.99)]
    # a p99 below the p90 (inconsistent input) cannot bend the CDF back
    assert cdf_points({"median": 10.0, "p90": 50.0, "p99": 40.0}, None) == [(10.0, 0.5), (40.0, 0.99)]


def test_hold_cdf_one_line_per_model():
    m = {"hold_s": {"by_model": {"a": {"rows": 50, "min": 1.0, "median": 10.0, "p99": 90.0, "max": 100.0},
                                 "b": {"rows": 10, "median": 20.0}}},
         "by_model": {"c": {"rows": 300, "hold_median_s": 5.0, "hold_p99_s": 60.0}}}
    fig = hold_cdf_chart(m)
    assert [t.name for t in fig.data] == ["a", "c"]  # b has one point: no line
    m["hold_s"].update(rows=360, median=9.0, p99=95.0)
    assert [t.name for t in hold_cdf_chart(m).data] == ["all rollouts", "a", "c"]
    assert hold_cdf_chart({"hold_s": {"rows": 5, "median": 1.0, "p99": 2.0}}) is None
    # a: the max of 50 rows sits at 1 - 1/100 = 0.99, no higher than the p99: the max point is dropped
    assert list(fig.data[0].x) == [1.0, 10.0, 90.0] and list(fig.data[0].y) == [0.01, 0.5, 0.99]
    assert list(fig.data[1].x) == [5.0, 60.0] and list(fig.data[1].y) == [0.5, 0.99]
    assert hold_cdf_chart({}) is None


def test_caching_chart_from_the_plan():
    plan = {"caching": {"saving_by_turns": {"1": 1.0, "5": 3.0, "11": 6.0}, "prefix_break": 0.1,
                        "saving_by_turns_with_breaks": {"1": 1.0, "5": 2.5, "11": 3.75}, "saving_measured_mix": 4.2}}
    fig = caching_chart(plan)
    assert [list(t.y) for t in fig.data] == [[1.0, 3.0, 6.0], [1.0, 2.5, 3.75], [4.2, 4.2]]
    assert caching_chart({}) is None


@pytest.fixture
def real_plan() -> dict:
    return to_jsonable(make_plan(load("fleet.json"), PlanOptions(node_type="aws-m6id.24xlarge", price_tier="spot")))


def test_rent_section_from_a_real_plan(real_plan):
    html = rent_table(real_plan)
    assert "Verdict:" in html and "e2b" in html and "daytona" in html and "modal" in html
    fig = rent_chart(real_plan)
    bars = dict(zip(fig.data[0].x, fig.data[0].y))
    assert bars["buy spot"] == real_plan["cost"]["spot_per_h"]
    assert bars["rent e2b"] == real_plan["cost"]["rent"]["e2b"]["usd_per_h"]
    page = build_report(load("fleet.json"), real_plan)
    assert 'id="rent"' in page and 'id="fig-rent"' in page and 'id="fig-caching"' in page


def test_optional_plan_lines_only_when_present(real_plan):
    assert "peak start rate" in extra_plan_table(real_plan)
    assert "GPU memory" not in extra_plan_table(real_plan)
    newer = dict(real_plan, inference={**real_plan["inference"], "memory": {"weights_gb": 50.3, "kv_gb_live": 121.0}},
                 assumptions=[{"name": "tier", "value": "spot", "unit": "", "source": "default", "detail": "duty < 0.5"}])
    assert "GPU memory: weights (GiB)" in extra_plan_table(newer) and "50.3" in extra_plan_table(newer)
    assert "duty &lt; 0.5" in assumptions_table(newer)
    assert assumptions_table(real_plan) is None
