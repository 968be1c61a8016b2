"""The report's Simulation section shows the simulate summary's ``dynamic_sampling`` and ``limits`` blocks.

Each case runs the real ``sandbox-fleet simulate SCENARIO --json`` on an example scenario, renders it with
``sandbox-fleet report --simulate``, and reads the figures back from the page by their ``data-figure``
marks: every raw value is the summary's own field (read from the JSON on stdout, not from the models),
every text is that value formatted by a rule written out here, and the figures hang together as the
worked example in docs/simulate.md says they must. A block the summary does not carry shows nothing.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from test_agreement import _agree, figures_of
from typer.testing import CliRunner

from sandbox_fleet.cli import app
from scenario_texts import TWO_RL

SCENARIOS = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
runner = CliRunner()

#: the figures each block shows: field (dotted below the block) -> how its text reads (the oracle)
_PCT, _INT, _F1, _F2, _F3, _S, _TEXT = (lambda x: f"{x:.1%}", lambda x: f"{x:,.0f}", lambda x: f"{x:,.1f}",
                                         lambda x: f"{x:,.2f}", lambda x: f"{x:,.3f}", lambda x: f"{x:,.1f} s", str)
DYNAMIC = {
    "workload": _TEXT, "groups": _INT, "group_size": _INT, "release": _TEXT, "round_groups": _INT, "tasks": _INT,
    "valid_rate": _PCT, "steps": _INT, "groups_released": _INT, "groups_informative": _INT, "groups_trimmed": _INT,
    "informative_share": _PCT, "oversampling_factor": _F2, "oversampling_factor_se": _F3,
    "groups_released_per_step_mean": _F1, "groups_released_per_step_max": _INT, "rounds_per_step_mean": _F2,
    "rounds_per_step_max": _INT, "rollouts_per_step_mean": _F1, "rollouts_per_step_max": _INT,
    "first_round_rollouts": _INT, "peak": _INT,
}
LIMITS = {"warm_claims": _INT, "cold_starts": _INT, "ready_wait_s.mean": _S, "ready_wait_s.p50": _S,
          "ready_wait_s.p99": _S, "lifetime_s": _S, "killed_attempts": _INT}


def _field(block: dict, dotted: str):
    for key in dotted.split("."):
        block = block.get(key) if block is not None else None
    return block


def _simulate_and_report(tmp_path: Path, scenario: str | Path, measure: Path) -> tuple[dict, str]:
    res = runner.invoke(app, ["simulate", str(SCENARIOS / scenario), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    sim = tmp_path / "sim.json"
    sim.write_text(res.stdout, encoding="utf-8")
    out = tmp_path / "report.html"
    res = runner.invoke(app, ["report", str(measure), "--simulate", str(sim), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return summary, out.read_text(encoding="utf-8")


def _shown(html: str, block: str) -> dict[str, tuple[str, str]]:
    """field -> (raw value, text) of the block's marked figures; each sits in the Simulation section."""
    found, _ = figures_of(html)
    mine = [f for f in found if f["name"].startswith(block + ".")]
    assert all(f["section"] == "simulate" for f in mine), mine
    return {name[len(block) + 1:]: shown for name, shown in _agree(mine).items()}


def _assert_block_shown(doc: dict, block: str, oracle: dict, html: str) -> dict[str, tuple[str, str]]:
    """``doc`` (the summary's block, read from its JSON) is what the page marks ``block.FIELD``."""
    shown = _shown(html, block)
    present = {f for f in oracle if _field(doc, f) is not None}
    assert set(shown) == present, (set(shown) ^ present)  # every figure the summary carries, no other
    for f in present:
        value, text = shown[f]
        want = _field(doc, f)
        if isinstance(want, str):
            assert value == want, f
        else:
            assert float(value) == want, f  # full precision: the summary's own number
        assert text == oracle[f](want), (f, text)
    return shown


@pytest.fixture(scope="module")
def dynamic(produced, tmp_path_factory) -> tuple[dict, str]:
    return _simulate_and_report(tmp_path_factory.mktemp("ds"), "dynamic_sampling.toml", produced.fleet_path)


@pytest.fixture(scope="module")
def limits(produced, tmp_path_factory) -> tuple[dict, str]:
    return _simulate_and_report(tmp_path_factory.mktemp("lim"), "provider_limits.toml", produced.fleet_path)


def test_dynamic_sampling_figures_are_the_summarys(dynamic):
    summary, html = dynamic
    assert summary["dynamic_sampling"] is not None and summary["limits"] is None
    shown = _assert_block_shown(summary["dynamic_sampling"], "dynamic_sampling", DYNAMIC, html)
    num = {f: float(v) for f, (v, _) in shown.items() if f not in ("workload", "release")}
    # rounds of the shortfall: no fixed round size, and the example's B x G = 16 x 4, 200 steps
    assert "round_groups" not in shown and shown["release"][0] == "rounds of the shortfall"
    assert (num["groups"], num["group_size"], num["steps"]) == (16, 4, 200)
    # the shown figures hang together: factor = released / (B x steps), share = informative / released
    assert num["oversampling_factor"] == pytest.approx(num["groups_released"] / (16 * 200))
    assert num["informative_share"] == pytest.approx(num["groups_informative"] / num["groups_released"])
    assert num["groups_informative"] - num["groups_trimmed"] == 16 * 200
    # docs/simulate.md's hand computation: q = mean of 1 - p^4 - (1-p)^4 over p in (0.5, 0.1, 0.9, 0),
    # a negative binomial's mean 1/q; the shown factor within 4 of its shown standard errors
    q = sum(1 - p**4 - (1 - p) ** 4 for p in (0.5, 0.1, 0.9, 0.0)) / 4
    assert abs(num["oversampling_factor"] - 1 / q) < 4 * num["oversampling_factor_se"]
    assert num["first_round_rollouts"] == num["peak"] == 64  # the first round, B x G, on a cap of 64
    assert summary["dynamic_sampling"]["basis"] in html.replace("&#x27;", "'")
    assert "<h3>Provider limits</h3>" not in html and not _shown(html, "limits")


def test_limits_figures_are_the_summarys(limits):
    summary, html = limits
    assert summary["limits"] is not None and summary["dynamic_sampling"] is None
    shown = _assert_block_shown(summary["limits"], "limits", LIMITS, html)
    # every first attempt is either claimed warm or created cold: 20 steps x 256 rollouts
    assert float(shown["warm_claims"][0]) + float(shown["cold_starts"][0]) == 20 * 256
    assert float(shown["lifetime_s"][0]) == 1800  # [fleet.limits] lifetime_s
    wait = [float(shown[f"ready_wait_s.{q}"][0]) for q in ("p50", "p99")]
    assert 0 <= wait[0] <= wait[1] and not math.isnan(float(shown["ready_wait_s.mean"][0]))
    assert "<h3>Dynamic sampling</h3>" not in html and not _shown(html, "dynamic_sampling")


def test_two_rl_workloads_show_one_table_each(produced, tmp_path):
    """Two workloads with dynamic sampling: the top-level block is null, each workload's is shown under
    its name; "hard" releases fixed rounds of 12 groups, so it trims the informative groups past B."""
    scenario = tmp_path / "two_rl.toml"
    scenario.write_text(TWO_RL, encoding="utf-8")
    summary, html = _simulate_and_report(tmp_path, scenario, produced.fleet_path)
    assert summary["dynamic_sampling"] is None and "<h3>Dynamic sampling</h3>" not in html
    for name in ("easy", "hard"):
        doc = summary["workloads"][name]["dynamic_sampling"]
        shown = _assert_block_shown(doc, f"workloads.{name}.dynamic_sampling", DYNAMIC, html)
        assert f"<h3>Dynamic sampling: {name}</h3>" in html and shown["workload"][0] == name
        num = {f: float(v) for f, (v, _) in shown.items() if f not in ("workload", "release")}
        assert num["groups_informative"] - num["groups_trimmed"] == 8 * 20  # B x steps trained on
        assert num["oversampling_factor"] == pytest.approx(num["groups_released"] / (8 * 20))
    hard = _shown(html, "workloads.hard.dynamic_sampling")
    assert (hard["round_groups"], hard["valid_rate"][1]) == (("12.0", "12"), "80.0%")
    assert float(hard["groups_trimmed"][0]) > 0 and "round_groups" not in _shown(html, "workloads.easy.dynamic_sampling")


def test_neither_block_shows_without_them(produced, tmp_path):
    """mmc.toml has no RL workload and no [fleet.limits]: the Simulation section is the table alone."""
    summary, html = _simulate_and_report(tmp_path, "mmc.toml", produced.fleet_path)
    assert summary["dynamic_sampling"] is None and summary["limits"] is None
    assert '<section id="simulate">' in html
    for block in ("dynamic_sampling", "limits"):
        assert not _shown(html, block)
    assert "<h3>Dynamic sampling</h3>" not in html and "<h3>Provider limits</h3>" not in html
