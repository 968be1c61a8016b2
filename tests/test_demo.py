"""The main job: every stage on the bundled synthetic corpus, written under one folder."""

import json
from pathlib import Path

from sandbox_fleet.demo import run_demo


def test_demo_runs_every_stage_and_writes_only_under_its_folder(tmp_path):
    out = tmp_path / "out"
    written = run_demo(out, scale=0.01, seed=2, progress=False)
    written.pop("_summaries")
    assert "simulated" in written  # the simulated telemetry is listed with the rest
    for path in written.values():
        assert str(path).startswith(str(out)) and Path(path).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]

    measured = json.loads((out / "measure.json").read_text())
    assert measured["rows"] == round(327_189 * 0.01)
    assert measured["tasks"]["count"] > 0
    plan = json.loads((out / "plan.json").read_text())
    assert plan["target"]["concurrency"] == measured["concurrency"]["peak"]
    # a corpus measured with its task bundles: the plan's bundle store is their measured total
    t = measured["tasks"]
    assert t["bundle_rows"] == t["count"] and t["bundle_bytes_total"] > 0
    assert plan["storage"]["bundle_store_gb"] == t["bundle_bytes_total"] / 1e9
    assert plan["storage"]["bundle_store_basis"] == "measured total"
    doc = json.loads((out / "checks.json").read_text())
    assert (doc["schema_version"], doc["kind"]) == (1, "checks")
    checks = {c["name"]: c["status"] for c in doc["results"]}
    assert checks["prefix_cache_off"] == "fail"  # the synthetic campaign, like the real one, never cached
    html = (out / "report.html").read_text()
    assert html.count("<html") == 1 and "Concurrency over time" in html
