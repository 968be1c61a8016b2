"""Issue 38 item 2: the binomial tail of the exception gates at every rollout count.

``math.comb(n, i) * p**i`` overflowed a float from n = 1,030 (``binomial_tail(5, 1100, 0.001)``:
OverflowError, so ``plan`` and ``check`` died on node-mapped telemetry of real size). The oracles
are independent of the code: the tail summed in exact rational arithmetic (``fractions``, no float
until the end) at n = 1,029 and 1,030, and scipy's binomial survival function far past them, up to
n = 1e8.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from test_checks_nodes import node_table

from sandbox_fleet.report.checks import binomial_tail
from summaries import checks_of, measure_json


def exact_tail(k: int, n: int, p: Fraction) -> float:
    """P(X >= k) in exact rationals: the sum of C(n, i) p^i (1-p)^(n-i) over i >= k, rounded once."""
    q = 1 - p
    return float(sum(math.comb(n, i) * p**i * q ** (n - i) for i in range(k, n + 1)))


@pytest.mark.parametrize("n", [1_029, 1_030, 1_100])
@pytest.mark.parametrize("k,p", [(5, "1/1000"), (1, "1/1000"), (60, "3/40"), (100, "3/40"), (40, "3/40"), (900, "1/2")])
def test_at_the_old_overflow_against_exact_rationals(n, k, p):
    want = exact_tail(k, n, Fraction(p))
    assert binomial_tail(k, n, float(Fraction(p))) == pytest.approx(want, rel=1e-11, abs=1e-300)


def test_the_review_case_no_longer_raises():
    # the review's call: five exceptions among 1,100 rollouts at a fleet rate of 0.1%
    assert binomial_tail(5, 1100, 0.001) == pytest.approx(exact_tail(5, 1100, Fraction(1, 1000)), rel=1e-11)


@pytest.mark.parametrize("k,n,p", [
    (12, 10_000, 0.001), (130, 100_000, 0.001), (50_400, 100_000, 0.5), (49_000, 100_000, 0.5),
    (1_000_500, 10_000_000, 0.1), (110, 100_000_000, 1e-6), (75_010_000, 100_000_000, 0.75),
    (7_505_000, 100_000_000, 0.075), (7_480_000, 100_000_000, 0.075),
])
def test_far_past_it_against_scipy(k, n, p):
    from scipy.stats import binom

    want = float(binom.sf(k - 1, n, p))
    # lgamma of 1e8 carries ~1e-16 x 1.8e9 in absolute log terms: a few 1e-7 relative at the largest n
    rel = 1e-9 if n <= 100_000 else 1e-6
    assert binomial_tail(k, n, p) == pytest.approx(want, rel=rel, abs=1e-300)


def test_edges():
    assert binomial_tail(0, 10**8, 0.3) == 1.0
    assert binomial_tail(10**8 + 1, 10**8, 0.3) == 0.0
    assert binomial_tail(1, 10**8, 0.0) == 0.0 and binomial_tail(10**8, 10**8, 1.0) == 1.0
    # far in the tail the float underflows to zero, never raises
    assert binomial_tail(10**7, 10**8, 1e-6) == 0.0


def test_check_judges_nodes_of_1_100_rollouts():
    """The gate itself on a node-mapped table past the old limit: 1,100 rollouts on each of 6 nodes,
    one at 30% among nodes at 2% (fail above 25%): judged against the exact tail, it is flagged and named."""
    exceptions = [22] * 6
    exceptions[4] = 330
    m = measure_json(node_table(exceptions, rows=1_100))
    r = next(r for r in checks_of(m, None) if r.name == "exception_rate_by_node")
    fleet = Fraction(sum(exceptions), 6 * 1_100)
    assert exact_tail(330, 1_100, fleet) * 6 < 0.01 and exact_tail(22, 1_100, fleet) * 6 > 0.01
    assert r.status == "fail" and "n4" in r.message and "n0" not in r.message


def test_plan_prints_its_order_on_the_same_table():
    """``plan`` runs the same gates for its "top risks" (``plan_risks``, as the CLI does) and died with
    them; now the order prints and names the node."""
    from sandbox_fleet.plan.render import plan_lines
    from sandbox_fleet.report.decision import plan_risks
    from summaries import as_measure, as_plan, plan_json

    exceptions = [22] * 6
    exceptions[4] = 330
    m = measure_json(node_table(exceptions, rows=1_100))
    planned = as_plan(plan_json(m))
    text = "\n".join(plan_lines(planned, risks=plan_risks(as_measure(m), planned)))
    assert text.startswith("PURCHASE ORDER") and "exception_rate_by_node" in text and "n4" in text
