"""``plan.summary.Figures``: what the planner reads from a ``MeasureSummary``, refused once when bad.

The model types the figures; it does not bound them. Every figure the planner reads is named in
``READ`` (a dotted key of the summary), checked in one pass, and a bad one is one line on stderr
naming the file and the key, exit 2.
"""

from __future__ import annotations

import json

import pytest

from sandbox_fleet.contract import has_path
from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.plan.summary import READ, Figures
from summaries import as_measure

from .conftest import PUBLISHED


def _published() -> dict:
    return json.loads(PUBLISHED.read_text(encoding="utf-8"))


def test_every_key_read_is_a_figure_of_the_measure_model():
    assert len(READ) == len(set(READ))
    assert [k for k in READ if not has_path(MeasureSummary, k)] == []


@pytest.mark.parametrize("block,key,bad", [
    ("concurrency", "peak", -5),
    ("outcomes", "pass_rate", -0.1),
    ("hold_s", "p99", float("inf")),
    ("tokens", "turns_median", float("nan")),
])
def test_a_negative_or_non_finite_figure_is_refused_naming_its_key(block, key, bad):
    doc = _published()
    doc.setdefault(block, {})[key] = bad
    # a count out of range or a number that is not finite is refused on reading any summary (contract.parse,
    # issue 42); a negative float, by plan's own figure check
    with pytest.raises(InputError, match=rf"key '?{block}\.{key}'?: (expected a non-negative number|-5 is not a "
                                         rf"count|(inf|nan) is not a finite number)"):
        Figures(as_measure(doc))


def test_a_bad_turn_keyed_figure_names_its_turn():
    doc = _published()
    doc["tokens"]["median_input_by_turns"] = {"3": 100.0, "4": -1.0}
    with pytest.raises(InputError, match=r"^summary key 'tokens\.median_input_by_turns\.4': expected a non-negative"):
        Figures(as_measure(doc))


def test_counts_read_as_numbers_and_derived_figures_by_hand():
    doc = _published()
    fig = Figures(as_measure(doc))
    c, h = doc["concurrency"], doc["hold_s"]
    # the peak is an int in the model; the planner reads it as a float of the same value
    assert isinstance(doc["concurrency"]["peak"], int) and fig.peak == float(c["peak"]) and isinstance(fig.peak, float)
    assert fig.hold_mean_s == h["mean"]
    # without sandbox_s, the sandbox time is mean hold x rows; without a duty, mean / peak
    del doc["sandbox_s"]
    doc["concurrency"]["duty"] = None
    fig = Figures(as_measure(doc))
    assert fig.sandbox_s == pytest.approx(h["mean"] * doc["rows"])
    assert fig.duty == pytest.approx(fig.concurrency_mean / c["peak"])


def test_plan_cli_names_the_file_and_the_key(run_cli, tmp_path):
    doc = _published()
    doc["concurrency"]["peak"] = -5
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    r = run_cli("plan", bad)
    assert r.code == 2
    assert r.err.strip().splitlines() == [f"error: {bad}: key concurrency.peak: -5 is not a count (a whole number "
                                          "from 0 to 9,223,372,036,854,775,807); expected a measure summary (kind "
                                          f"'measure', schema_version 1..{MeasureSummary.VERSION})"]
