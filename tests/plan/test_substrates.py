"""Execution substrates (plan/substrates.py): the paper's scale table from the formula, the bundled
catalog, the mixed corpus by hand, the text, and bad catalogs."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan import PlanOptions
from sandbox_fleet.plan.render import plan_lines
from sandbox_fleet.plan.rent import load_providers
from sandbox_fleet.plan.substrates import load_substrates, overhead_s, worker_hours
from summaries import as_plan, plan_json

from .conftest import MIXED


def test_the_scale_table_of_arxiv_2607_01415():
    # 1 s per rollout, 1M rollouts: 1e6 / 3600 = 277.8 h; 10 ms and 100 ms per action over 1M 150-action rollouts
    assert round(worker_hours(1_000_000, overhead_s(1.0, 0.0, None))) == 278
    assert round(worker_hours(1_000_000, overhead_s(0.0, 0.010, 150))) == 417
    assert round(worker_hours(1_000_000, overhead_s(0.0, 0.100, 150))) == 4_167
    assert worker_hours(1_000_000, overhead_s(0.0, 0.100, 150)) == pytest.approx(15_000_000 / 3600)


def test_bundled_catalog_covers_every_substrate_class_with_sources():
    subs = {s.name: s for s in load_substrates()}
    assert {s.kind for s in subs.values()} == {"container", "kubernetes", "hosted", "vm"}
    assert all(s.source and s.as_of for s in subs.values())
    hosted = {s.provider for s in subs.values() if s.kind == "hosted"}
    # each provider priced by default has its substrate (another plan of one, or a self-hosted entry, need not)
    assert hosted == {p.name for p in load_providers() if p.rented and p.default}
    text = resources.files("sandbox_fleet").joinpath("data/substrates.toml").read_text(encoding="utf-8")
    assert "ILLUSTRATIVE" in text  # flagged like the prices are
    # the paper's "up to 110x" spread in cold start, between the bundled local container and VM
    assert subs["cloud-vm"].cold_start_s / subs["local-container"].cold_start_s == pytest.approx(110)


def test_mixed_corpus_by_hand():
    """1,000 rollouts over 23,470 s (holds 400 x 3,000 s + 600 x 1,500 s: mean 2,100 s); turns
    1 x 100, 5 x 300, 11 x 400, 21 x 150, 50 x 50: mean 11,650 / 1,000 = 11.65."""
    plan = plan_json(json.loads(MIXED.read_text(encoding="utf-8")), PlanOptions())
    sb = plan["substrates"]
    rate = 1_000 / 23_470 * 3600  # Little: target x duty / mean hold is the measured rollout rate at the peak
    assert sb["rollouts_per_h"] == pytest.approx(rate) and sb["turns_mean"] == pytest.approx(11.65)
    k8s = sb["by_substrate"]["kubernetes-pod"]
    assert k8s["overhead_s_per_rollout"] == pytest.approx(5.0 + 0.05 * 11.65)  # 5.5825 s
    assert k8s["added_worker_hours_per_million"] == pytest.approx(5.5825e6 / 3600)  # 1,550.7 h
    assert k8s["worker_hours_per_million"] == pytest.approx((2100 + 5.5825) * 1e6 / 3600)
    assert k8s["added_worker_hours_per_h"] == pytest.approx(rate * 5.5825 / 3600)
    vm = sb["by_substrate"]["cloud-vm"]
    assert vm["overhead_s_per_rollout"] == pytest.approx(55.0 + 0.02 * 11.65)
    # renting on e2b adds its substrate to every hold: 0.15 + 0.05 x 11.65 = 0.7325 s on 2,100 s
    e2b = plan["cost"]["rent"]["e2b"]
    assert e2b["overhead_s_per_rollout"] == pytest.approx(0.7325)
    assert e2b["hold_factor"] == pytest.approx(1 + 0.7325 / 2100)
    lines = plan_lines(as_plan(plan))
    row = next(x for x in lines if x.strip().startswith("kubernetes-pod"))
    assert row.split() == ["kubernetes-pod", "5", "0.05", "5.58", "1,551", "584,884", "0.238"]


def test_no_turns_measured_counts_the_cold_start_only():
    m = json.loads(MIXED.read_text(encoding="utf-8"))
    for key in ("turns_histogram", "turns_median", "turns_p90"):
        m["tokens"][key] = None
    sb = plan_json(m, PlanOptions())["substrates"]
    assert sb["turns_mean"] is None and "cold start only" in sb["basis"]
    assert sb["by_substrate"]["cloud-vm"]["overhead_s_per_rollout"] == 55.0


def test_bad_catalog_is_one_line(tmp_path, run_cli):
    bad = tmp_path / "s.toml"
    bad.write_text('[[substrate]]\nname = "x"\nkind = "mainframe"\ncold_start_s = 1\nper_action_s = 0\n'
                   'source = "s"\nas_of = "2026"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"substrate 'x', key 'kind'"):
        load_substrates(bad)
    r = run_cli("plan", MIXED, "--substrates", bad)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and "s.toml" in r.err and "kind" in r.err
    r = run_cli("plan", MIXED, "--substrates", tmp_path / "missing.toml")
    assert r.code == 2 and "substrate catalog not found" in r.err


def test_the_substrate_catalog_is_an_assumption_of_the_order(tmp_path):
    m = json.loads(MIXED.read_text(encoding="utf-8"))
    found = {a["name"]: a for a in plan_json(m, PlanOptions())["assumptions"]}["substrate_overheads"]
    assert (found["value"], found["source"]) == ("bundled substrates.toml", "catalog") and "illustrative" in found["detail"]
    own = tmp_path / "mine.toml"
    own.write_text('[[substrate]]\nname = "pod"\nkind = "kubernetes"\ncold_start_s = 2\nper_action_s = 0.1\n'
                   'source = "our benchmark"\nas_of = "2026-11"\n', encoding="utf-8")
    plan = plan_json(m, PlanOptions(substrates_file=str(own)))
    found = {a["name"]: a for a in plan["assumptions"]}["substrate_overheads"]
    assert (found["value"], found["source"]) == (str(own), "flag")
    assert list(plan["substrates"]["by_substrate"]) == ["pod"]
    assert plan["substrates"]["by_substrate"]["pod"]["overhead_s_per_rollout"] == pytest.approx(2 + 0.1 * 11.65)
    # no substrate names a provider: rented holds carry nothing
    assert all(r["overhead_s_per_rollout"] is None and r["hold_factor"] is None for r in plan["cost"]["rent"].values())
