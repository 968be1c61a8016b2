"""``plan --emit-harbor``: a Harbor job-config fragment that stays inside the limits.

Truth: the agent timeout hand-computed from the lifetime, headroom and the other phases; the keys
and nesting of the real Harbor job configs in /work/shared/fixtures/ (written by Harbor 0.26 and by
CodeContextBench's Harbor jobs, legacy ``orchestrator`` layout); and, where a Harbor install is at
hand (``SANDBOX_FLEET_HARBOR_PYTHON``, else /tmp/harbor312/bin/python: Harbor from PyPI under
Python 3.12, outside this repo), Harbor's own ``JobConfig`` model parsing the merged configs.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from tests.measure.helpers import telemetry

from sandbox_fleet.measure import measure_telemetry
from sandbox_fleet.plan import PlanOptions, make_plan
from sandbox_fleet.plan.harbor import harbor_fragment, merge_into
from sandbox_fleet.plan.lifetime import Budgets, lint

SHARED = Path("/work/shared/fixtures")
REAL_CONFIGS = sorted([*SHARED.glob("harbor/*/config.json"), *SHARED.glob("real/ccb_harbor/jobs/*/config.json")])
HARBOR_PY = os.environ.get("SANDBOX_FLEET_HARBOR_PYTHON", "/tmp/harbor312/bin/python")
BUDGETS = "lifetime_s = 1800\nheadroom = 0.1\n[phases]\nstart = 30\nbuild = 120\nagent = 1800\nverifier = 300\n"


@pytest.fixture(scope="module")
def measured():
    rng = np.random.default_rng(3)
    start = np.sort(rng.uniform(0, 36_000, 3000))
    return measure_telemetry(telemetry(start, start + rng.lognormal(np.log(600.0), 0.7, 3000)))


def _plan(measured, tmp_path: Path, **opts):
    f = tmp_path / "budgets.toml"
    f.write_text(BUDGETS, encoding="utf-8")
    return make_plan(measured, PlanOptions(budgets_file=str(f), **opts))


def test_the_agent_timeout_is_lowered_into_the_lifetime(measured, tmp_path):
    plan = _plan(measured, tmp_path)
    fragment, basis = harbor_fragment(plan)
    room = 1800 / 1.1 - (30 + 120 + 300)  # 1,186.4 s: what is left of the lifetime for the agent
    assert fragment["agents"] == [{"override_timeout_sec": float(math.floor(room)), "override_setup_timeout_sec": 120.0}]
    assert fragment["verifier"] == {"override_timeout_sec": 300.0}
    assert fragment["n_concurrent_trials"] == plan.target.concurrency
    assert any("lowered from 1,800 s" in b for b in basis)
    # the lowered budgets pass the same lint
    fixed = Budgets(lifetime_s=1800, phases={"start": 30, "build": 120, "verifier": 300,
                                             "agent": fragment["agents"][0]["override_timeout_sec"]})
    assert lint(fixed, measured).findings == []


def test_n_concurrent_trials_split_over_the_accounts(measured, tmp_path):
    plan = _plan(measured, tmp_path, concurrency=250, rent_providers=["e2b"])
    fragment, _ = harbor_fragment(plan)
    assert plan.limits.fits[0].accounts == 3  # 250 over E2B Pro's 100 concurrent
    assert fragment["n_concurrent_trials"] == 84  # ceil(250 / 3)


@pytest.mark.skipif(not REAL_CONFIGS, reason="the shared real fixtures are not on this machine")
def test_the_fragment_lands_on_the_real_config_keys(measured, tmp_path):
    fragment, _ = harbor_fragment(_plan(measured, tmp_path))
    for path in REAL_CONFIGS:
        config = json.loads(path.read_text(encoding="utf-8"))
        merged = merge_into(config, fragment)
        holder = merged["orchestrator"] if "n_concurrent_trials" in (config.get("orchestrator") or {}) else merged
        assert holder["n_concurrent_trials"] == fragment["n_concurrent_trials"]
        for agent in merged["agents"]:
            assert set(fragment["agents"][0]) <= set(agent)  # keys Harbor already writes for every agent
            assert agent["override_timeout_sec"] == fragment["agents"][0]["override_timeout_sec"]
        assert set(fragment["verifier"]) <= set(config["verifier"])
        assert json.loads(path.read_text(encoding="utf-8")) == config  # the input is never written


@pytest.mark.skipif(not (REAL_CONFIGS and Path(HARBOR_PY).is_file()), reason="no Harbor install to validate against")
def test_harbors_own_job_config_accepts_the_merged_configs(measured, tmp_path):
    fragment, _ = harbor_fragment(_plan(measured, tmp_path))
    merged = [merge_into(json.loads(p.read_text(encoding="utf-8")), fragment) for p in REAL_CONFIGS]
    (tmp_path / "merged.json").write_text(json.dumps(merged), encoding="utf-8")
    script = (
        "import json, sys\n"
        "from harbor.models.job.config import JobConfig\n"
        "out = []\n"
        "for d in json.load(open(sys.argv[1])):\n"
        "    c = JobConfig.model_validate(d)\n"
        "    out.append([c.n_concurrent_trials, [a.override_timeout_sec for a in c.agents],\n"
        "                [a.override_setup_timeout_sec for a in c.agents], c.verifier.override_timeout_sec])\n"
        "print(json.dumps(out))\n"
    )
    r = subprocess.run([HARBOR_PY, "-c", script, str(tmp_path / "merged.json")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    agent = fragment["agents"][0]
    for trials, timeouts, setups, verifier in json.loads(r.stdout):
        assert trials == fragment["n_concurrent_trials"]
        assert set(timeouts) == {agent["override_timeout_sec"]} and set(setups) == {agent["override_setup_timeout_sec"]}
        assert verifier == fragment["verifier"]["override_timeout_sec"]


def test_the_cli_writes_the_fragment(measured, tmp_path, run_cli):
    summary = tmp_path / "m.json"
    summary.write_text(json.dumps(measured.to_json()), encoding="utf-8")
    (tmp_path / "budgets.toml").write_text(BUDGETS, encoding="utf-8")
    out = tmp_path / "harbor.json"
    r = run_cli("plan", summary, "--budgets", tmp_path / "budgets.toml", "--emit-harbor", out, "--json")
    assert r.code == 0, r.err
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["job_config"]["agents"][0]["override_timeout_sec"] == 1186.0 and doc["basis"]
    bad = run_cli("plan", summary, "--budgets", summary, "--json")
    assert bad.code == 2 and "budgets" in bad.err and "\n" not in bad.err.strip()
