"""Harbor: the configured cap from each layout Harbor has used; ATIF turns; trajectory sizes.

Fixtures: tests/fixtures/harbor (real Harbor 0.26 jobs) and tests/fixtures/harbor-layouts
(made from them by Harbor's own models, tests/fixtures/make_harbor_layouts.py).
"""

import os

from telemetry_builders import FIXTURES, HARBOR

from sandbox_fleet.telemetry import load_telemetry
from sandbox_fleet.telemetry.harbor import atif_figures, job_cap

LAYOUTS = FIXTURES / "harbor-layouts"


def _load(path):
    return load_telemetry([str(path)], progress=False)


def test_top_level_cap_current_harbor():
    assert _load(HARBOR / "terminus2-n3").caps == {"terminus2-n3": 3}
    assert _load(HARBOR / "oracle-n2").caps == {"oracle-n2": 2}


def test_legacy_orchestrator_cap():
    assert _load(LAYOUTS / "legacy-orchestrator").caps == {"legacy-orchestrator": 20}


def test_per_agent_n_concurrent_bounds_the_job():
    # n_concurrent_trials 3, the only agent n_concurrent 2: at most 2 trials at once.
    assert _load(LAYOUTS / "per-agent").caps == {"per-agent": 2}


def test_job_cap_rules_hand_cases():
    assert job_cap({"n_concurrent_trials": 8}) == 8
    assert job_cap({"orchestrator": {"n_concurrent_trials": 5}}) == 5
    assert job_cap({"n_concurrent_trials": 8, "orchestrator": {"n_concurrent_trials": 5}}) == 8
    # every agent bounded: their sum; one unbounded agent: the job cap alone
    assert job_cap({"n_concurrent_trials": 8, "agents": [{"n_concurrent": 2}, {"n_concurrent": 3}]}) == 5
    assert job_cap({"n_concurrent_trials": 8, "agents": [{"n_concurrent": 2}, {"n_concurrent": None}]}) == 8
    assert job_cap({"agents": [{"n_concurrent": 4}]}) == 4
    assert job_cap({"n_concurrent_trials": 0}) is None
    assert job_cap({"n_concurrent_trials": True}) is None


def test_atif_turns_and_tokens_when_the_result_has_none():
    tel = _load(LAYOUTS / "atif")
    rows = sorted(tel.rollouts.to_pylist(), key=lambda r: r["task_id"])
    trials = sorted(p for p in (LAYOUTS / "atif").iterdir() if p.is_dir())
    assert [r["task_id"] for r in rows] == [t.name.split("__")[0] for t in trials]
    for i, (row, trial) in enumerate(zip(rows, trials)):
        k = 2 + i  # agent steps written for trial i; step k has prompt 1000(k+1), completion 50+k, cached 800k
        assert row["turns"] == k
        assert row["input_tokens"] == 1000 * k * (k + 1) // 2
        assert row["output_tokens"] == 50 * k + k * (k - 1) // 2
        assert row["cached_tokens"] == 800 * k * (k - 1) // 2
        assert row["trajectory_bytes"] == os.stat(trial / "agent" / "trajectory.json").st_size
        assert row["has_trajectory"] is True


def test_result_counts_win_over_the_trajectory():
    traj = {"steps": [{"source": "agent", "metrics": {"prompt_tokens": 7}}, {"source": "user"}]}
    assert atif_figures(traj) == {"turns": 1, "input_tokens": 7, "output_tokens": None, "cached_tokens": None}
    tel = _load(HARBOR / "terminus2-n3")  # n_episodes present, no agent/ folder
    assert all(r["trajectory_bytes"] is None and r["turns"] is not None for r in tel.rollouts.to_pylist())
