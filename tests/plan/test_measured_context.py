"""Issue 38 item 7 (second and third parts): the mean context is read off the measured turn
distribution when one is measured, not off the quadratic fit; the node mix says which mix it is.

Hand cases: a turn histogram and per-turn-count median inputs set in the published summary; the mean
context of a turn is the tokens all rollouts sent over the turns they took, sum h_n input(n) / sum h_n n,
worked out below by hand. The quadratic fit (c = 824 tok/turn) would say c E[n(n+1)/2] / E[n].
"""

from __future__ import annotations

import copy
import json

import pytest

from sandbox_fleet.plan import PlanOptions
from sandbox_fleet.plan.render import plan_lines
from summaries import as_plan, plan_json

from .conftest import PUBLISHED

SUMMARY = json.loads(PUBLISHED.read_text())


def with_turns(histogram: dict[str, int], medians: dict[str, float]) -> dict:
    s = copy.deepcopy(SUMMARY)
    s["tokens"]["turns_histogram"] = histogram
    s["tokens"]["median_input_by_turns"] = medians
    return s


def test_the_measured_turns_give_the_mean_context():
    # 100 rollouts of 2 turns sent 3,000 tokens each, 50 of 5 sent 12,000, 10 of 20 sent 150,000:
    # 2,400,000 tokens over 650 turns = 3,692.3 a turn; the quadratic fit: 824 x 3,150 / 650 = 3,993.2
    p = plan_json(with_turns({"2": 100, "5": 50, "20": 10}, {"2": 3000, "5": 12000, "20": 150000}), PlanOptions())
    inf = p["inference"]
    assert inf["context_tokens_mean"] == pytest.approx(2_400_000 / 650, rel=1e-12)
    assert inf["context_basis"].startswith("measured: each turn count's median input over the turn histogram, all turns")
    assert "would say 3,993" in inf["context_basis"]  # 824 x 3,150 / 650 = 3,993.2, stated beside it
    a = next(x for x in p["assumptions"] if x["name"] == "context_tokens_mean")
    assert a["source"] != "default" and "measured" in a["detail"]
    assert any("mean context per turn 3,692 tokens" in ln for ln in plan_lines(as_plan(p)))


def test_turn_counts_without_an_input_are_left_out_and_said():
    # no input measured at 20 turns: 900,000 tokens over the 450 turns of the 2- and 5-turn rollouts = 2,000,
    # covering 450 / 650 = 69.2% of turns
    p = plan_json(with_turns({"2": 100, "5": 50, "20": 10}, {"2": 3000, "5": 12000}), PlanOptions())
    assert p["inference"]["context_tokens_mean"] == pytest.approx(2_000.0, rel=1e-12)
    assert "69.2% of turns" in p["inference"]["context_basis"]


def test_without_a_histogram_the_fit_over_the_stated_distribution_stays():
    p = plan_json(SUMMARY, PlanOptions())  # the published summary has no histogram: the lognormal turns
    assert p["inference"]["context_basis"].startswith("lognormal turns")


def test_the_node_mix_says_it_is_the_mean_mix_not_the_peaks():
    from .test_signable import _two_kinds

    p = plan_json(_two_kinds(), PlanOptions(concurrency=1_000))
    assert p["nodes"]["mix_basis"].endswith("not the mix at the concurrency peaks "
                                            "(a peak richer in large kinds needs more nodes than this mix packs)")
    assert "the mean mix over the whole measured span" in "\n".join(plan_lines(as_plan(p)))
