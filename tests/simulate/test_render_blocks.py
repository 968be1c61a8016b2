"""``simulate``'s text shows the ``dynamic_sampling`` and ``limits`` blocks: each row's figures are the
summary's fields (read from ``simulate --json``), written out here by hand in the row's format."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from sandbox_fleet.cli import app
from sandbox_fleet.simulate.render import render_summary
from scenario_texts import TWO_RL
from summaries import as_simulate

SCENARIOS = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
runner = CliRunner()


def _run(scenario: Path) -> tuple[dict, dict[str, str]]:
    """The --json summary, and the text's rows (label -> value) rendered from it on a wide terminal."""
    res = runner.invoke(app, ["simulate", str(scenario), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    buf = io.StringIO()
    render_summary(as_simulate(doc), Console(file=buf, width=240, color_system=None))
    rows = {}
    for line in buf.getvalue().splitlines():
        m = re.match(r"^(\S.*?)\s{2,}(\S.*?)\s*$", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return doc, rows


def test_dynamic_sampling_rows():
    doc, rows = _run(SCENARIOS / "dynamic_sampling.toml")
    d = doc["dynamic_sampling"]
    assert rows["dynamic sampling: B x G / release"] == "16 x 4 / rounds of the shortfall"
    se = d["oversampling_factor_se"]
    assert rows["informative share / over-sampling"] == (
        f"{d['informative_share'] * 100:.1f}% / {d['oversampling_factor']:.2f}x (+/- {se:.2f})")
    assert rows["groups released / informative / trimmed"] == (
        f"{d['groups_released']:,} / {d['groups_informative']:,} / {d['groups_trimmed']:,}")
    assert d["groups_informative"] - d["groups_trimmed"] == 16 * 200  # B x steps, as trained
    assert rows["rounds per step mean / max"] == f"{d['rounds_per_step_mean']:.2f} / {d['rounds_per_step_max']}"


def test_limits_rows():
    doc, rows = _run(SCENARIOS / "provider_limits.toml")
    lim = doc["limits"]
    assert rows["killed at the lifetime (1,800.0 s)"] == f"{lim['killed_attempts']:,}"
    assert rows["warm claims / cold starts"] == f"{lim['warm_claims']:,} / {lim['cold_starts']:,}"
    assert lim["warm_claims"] + lim["cold_starts"] == 20 * 256  # every first attempt: 20 steps of 256
    w = lim["ready_wait_s"]
    assert rows["ready wait mean / p50 / p99 (s)"] == f"{w['mean']:,.1f} / {w['p50']:,.1f} / {w['p99']:,.1f}"


def test_several_dynamic_sampling_workloads_each_named(tmp_path):
    """The top-level block is null with two such workloads: each one's rows, prefixed by its name, and a
    fixed round size says its R."""
    scenario = tmp_path / "two_rl.toml"
    scenario.write_text(TWO_RL, encoding="utf-8")
    doc, rows = _run(scenario)
    assert doc["dynamic_sampling"] is None
    assert rows["easy: dynamic sampling: B x G / release"] == "8 x 4 / rounds of the shortfall"
    assert rows["hard: dynamic sampling: B x G / release"] == "8 x 4 / fixed rounds of 12 groups"
    hard = doc["workloads"]["hard"]["dynamic_sampling"]
    assert rows["hard: groups released / informative / trimmed"] == (
        f"{hard['groups_released']:,} / {hard['groups_informative']:,} / {hard['groups_trimmed']:,}")
