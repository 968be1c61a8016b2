"""Step detection on the synthetic campaign: four synchronous RL runs sharing one capped pool.

The truth comes from the campaign's own plan (``synth/campaign.py``): each run
releases ``batch`` rollouts a step, ``steps`` times, and a step lasts the expected longest
hold of its batch plus the trainer's ``train_s``. The bigger runs' batches exceed the pool,
so part of each of their batches waits for slots.
"""

from __future__ import annotations

import pytest

from sandbox_fleet.synth import campaign as cp
from sandbox_fleet.synth import synth
from summaries import paths_json


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth") / "out"
    summary = synth(out, scale=0.05, seed=1, progress=False)
    return summary, paths_json([str(out / "trajectories")], progress=False)


def test_each_runs_batch_size_steps_and_period(built):
    summary, m = built
    assert len(summary.runs) == 4
    for run in summary.runs:
        st = m["by_model"][run.model]["steps"]
        assert st["detected"] is True, (run.model, st["reason"])
        assert st["batch_size"] == run.batch
        assert st["steps"] == run.steps
        planned = cp.expected_max_hold(cp.profile(run.model), run.batch) + run.train_s
        assert st["step_period_s"] == pytest.approx(planned, rel=0.05)


def test_batches_above_the_cap_open_with_a_partial_burst(built):
    summary, m = built
    for run in summary.runs:
        st = m["by_model"][run.model]["steps"]
        if run.batch > summary.cap:
            # The cap's worth start at the release; the rest trickle in as slots free.
            assert st["burst_size"] < run.batch and st["burst_share"] < 1.0
            assert st["release_spread_s"] > 0


def test_top_level_says_the_workload_is_a_mix_of_runs(built):
    summary, m = built
    top = m["steps"]
    assert top["mixed"] is True and top["runs_by"] == "model" and top["runs"] == 4
    assert top["runs_with_steps"] == sorted(r.model for r in summary.runs)
