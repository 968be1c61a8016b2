"""exception_rate_by_node on tables measured by measure, against an independent binomial test.

The oracle is scipy's exact one-sided binomial test (``scipy.stats.binomtest``) when scipy is
installed, else the tail summed with ``math.comb`` here; the Bonferroni factor is the number of
nodes with at least ``min_rows`` rollouts. Defaults: warn above 10%, fail above 25%, min_rows 30,
max_chance 0.01.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from sandbox_fleet.report.thresholds import Thresholds, load_thresholds
from sandbox_fleet.telemetry import Telemetry, conform_rollouts
from summaries import checks_of, measure_json

T0_US = 1_750_000_000_000_000
ROWS_PER_NODE = 200


def p_at_least(k: int, n: int, p: float) -> float:
    """P(X >= k), X ~ Binomial(n, p): scipy's exact test, else the sum written out here."""
    try:
        from scipy.stats import binomtest
    except ImportError:  # pragma: no cover - scipy is in the dev environment
        return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))
    return binomtest(k, n, p, alternative="greater").pvalue


def node_table(exceptions: list[int], rows: int = ROWS_PER_NODE) -> Telemetry:
    """Node ``n{j}`` runs ``rows`` rollouts of 60 s, the first ``exceptions[j]`` of them raise;
    the nodes' rows are interleaved so no node sits in one stretch of time."""
    node, exc = [], []
    for k in range(rows):
        for j, e in enumerate(exceptions):
            node.append(f"n{j}")
            exc.append(k < e)
    n = len(node)
    start = pa.array([T0_US + i * 1_000_000 for i in range(n)], pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    finish = pa.array([T0_US + (i + 60) * 1_000_000 for i in range(n)], pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    table = pa.table({"id": [f"r{i}" for i in range(n)], "started_at": start, "finished_at": finish,
                      "node": node, "has_exception": exc})
    return Telemetry(conform_rollouts(table), sources=["<nodes>"])


def by_node_check(m: dict, t: Thresholds | None = None):
    return next(r for r in checks_of(m, None, t) if r.name == "exception_rate_by_node")


def flagged_by_oracle(exceptions: list[int], rows: int, max_chance: float = 0.01) -> set[str]:
    fleet = sum(exceptions) / (rows * len(exceptions))
    return {f"n{j}" for j, e in enumerate(exceptions) if p_at_least(e, rows, fleet) * len(exceptions) < max_chance}


def test_one_node_at_30_percent_among_nodes_at_5_fails_and_is_named():
    exceptions = [10] * 10
    exceptions[7] = 60  # 30% of 200 among nodes at 5%: the fleet is at 150 / 2,000 = 7.5%
    m = measure_json(node_table(exceptions))
    assert m["outcomes"]["exception_rate"] == 150 / 2000
    assert flagged_by_oracle(exceptions, ROWS_PER_NODE) == {"n7"}
    r = by_node_check(m)
    assert (r.status, r.value, r.threshold) == ("fail", 0.3, 0.25)
    assert r.message.startswith("1 of 10 nodes raise beyond chance: n7 30.0% (60/200) (")
    assert "fleet's 7.5% times 10 nodes judged (30+ rollouts) below 0.01" in r.message
    assert "n3" not in r.message


def test_a_node_between_warn_and_fail_beyond_chance_warns():
    exceptions = [10] * 10
    exceptions[2] = 36  # 18%: above 10%, not above 25%
    m = measure_json(node_table(exceptions))
    assert flagged_by_oracle(exceptions, ROWS_PER_NODE) == {"n2"}
    r = by_node_check(m)
    assert (r.status, r.value, r.threshold) == ("warn", 0.18, 0.10)


def test_a_stationary_fleet_is_not_flagged_even_with_a_node_above_the_warn_rate():
    # Binomial scatter around 8%; n9 at 22/200 = 11% is above warn_above (10%) but P(X >= 22 |
    # 200, 8%) is 0.080, times 10 nodes 0.80: chance explains it.
    exceptions = [14, 16, 15, 17, 13, 18, 16, 15, 14, 22]
    m = measure_json(node_table(exceptions))
    assert m["outcomes"]["exception_rate"] == 0.08
    assert flagged_by_oracle(exceptions, ROWS_PER_NODE) == set()
    assert p_at_least(22, 200, 0.08) == pytest.approx(0.0804, abs=5e-4)
    r = by_node_check(m)
    assert r.status == "pass" and r.value == 0.11
    assert "no node above 10.0% with exceptions beyond chance (highest: n9 11.0% (22/200);" in r.message


def test_without_the_chance_filter_the_same_node_would_warn(tmp_path):
    """The filter is what keeps the stationary fleet passing: allow a family-wise chance of 1
    and n9 (P x 10 = 0.80 < 1) counts; the oracle agrees at the same max_chance."""
    exceptions = [14, 16, 15, 17, 13, 18, 16, 15, 14, 22]
    f = tmp_path / "t.toml"
    f.write_text("[exception_rate_by_node]\nmax_chance = 1.0\n")
    m = measure_json(node_table(exceptions))
    assert "n9" in flagged_by_oracle(exceptions, ROWS_PER_NODE, max_chance=1.0)
    r = by_node_check(m, load_thresholds(f))
    assert r.status == "warn" and "n9 11.0% (22/200)" in r.message


def test_nodes_under_min_rows_are_not_judged_nor_counted_in_the_bonferroni_factor():
    # 29 rollouts per node, all of n0's raising: under min_rows 30, nothing is judged.
    m = measure_json(node_table([29, 0, 0], rows=29))
    r = by_node_check(m)
    assert r.status == "skip" and r.message == "not measured: no node with at least 30 rollouts"


def test_no_node_column_skips_naming_the_map():
    t = node_table([1, 2])
    t.rollouts = t.rollouts.drop_columns(["node"])
    m = measure_json(t)
    r = by_node_check(m)
    assert r.status == "skip" and "--map node=COLUMN" in r.message


def test_the_chance_test_is_the_per_task_one():
    """The node gate and the task gate share one binomial tail (report/checks/exceptions.py)."""
    from sandbox_fleet.report.checks import binomial_tail

    for k, n, p in ((60, 200, 0.075), (22, 200, 0.08), (3, 3, 0.294), (0, 10, 0.5)):
        assert binomial_tail(k, n, p) == pytest.approx(p_at_least(k, n, p), rel=1e-9, abs=1e-300)
