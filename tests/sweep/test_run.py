"""run_sweep end to end on the real simulator: an analytic knee, agreement with plain runs, seeds."""

from __future__ import annotations

import math

import pytest

from sandbox_fleet import jsonio
from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.scenario.run import run_scenario
from sandbox_fleet.sweep import run_sweep

B, H, T = 8, 10.0, 5.0


def test_sync_rl_deterministic_step_is_ceil_batch_over_cap(sync_det):
    res = run_sweep(sync_det(B, H, T), ["fleet.cap=1:12:1,unbounded"], target="step_s.mean", within=0.01, workers=1)
    caps = [r["fleet.cap"] for r in res["rows"]]
    assert caps == [*range(1, 13), "unbounded"]
    for r in res["rows"]:
        c = B if r["fleet.cap"] == "unbounded" else r["fleet.cap"]
        assert r["step_s.mean"] == pytest.approx(math.ceil(B / c) * H + T, rel=1e-12)
        assert r["concurrency.peak"] == min(c, B)
        assert r["completed"] == 3 * B and r["dropped"] == 0
        assert r["step_s.mean:sd"] is None  # one seed: no spread
    # cap 3 runs the batch in waves of 3, 3, 2: waits 0, 10, 20 s -> mean (3*10 + 2*20) / 8
    assert res["rows"][2]["queue_wait_s.mean"] == pytest.approx(70 / 8)
    k = res["knee"]
    assert (k["target"], k["over"], k["goal"], k["within"]) == ("step_s.mean", "fleet.cap", "min", 0.01)
    g = k["groups"][0]
    assert (g["knee"], g["reference_from"], g["reference"]) == (B, "unbounded", pytest.approx(H + T))


def test_knee_is_the_batch_for_each_batch_without_an_uncapped_run(sync_det):
    res = run_sweep(sync_det(B, H, 0.0), ["workload.batch=4,6", "fleet.cap=2:8:1"], target="step_s.mean", workers=1)
    assert [(g["fixed"], g["knee"]) for g in res["knee"]["groups"]] == [
        ({"workload.batch": 4}, 4), ({"workload.batch": 6}, 6)]
    assert all(g["reference_from"] == "best" for g in res["knee"]["groups"])


def _with(text: str, **repl) -> str:
    for k, v in repl.items():
        text = text.replace(k, v)
    return text


def test_a_sweep_row_equals_a_plain_run_of_the_edited_file(mmc, tmp_path):
    res = run_sweep(mmc, ["fleet.cap=5"], seeds=2, workers=1)
    r = res["rows"][0]
    plain = []
    for seed in (11, 12):  # the rule: replicate r runs with run.seed + r
        p = tmp_path / f"edited{seed}.toml"
        p.write_text(_with(mmc.read_text(), **{"cap = 4": "cap = 5", "seed = 11": f"seed = {seed}"}))
        plain.append(run_scenario(p))
    for key, pick in [("queue_wait_s.mean", lambda s: s["queue_wait_s"]["mean"]),
                      ("utilisation", lambda s: s["utilisation"]),
                      ("sandbox_hours", lambda s: s["sandbox_hours"])]:
        a, b = pick(plain[0]), pick(plain[1])
        assert a != b  # the two seeds really differ
        assert r[key] == pytest.approx((a + b) / 2, rel=1e-12)
        assert r[key + ":sd"] == pytest.approx(abs(a - b) / math.sqrt(2), rel=1e-9)


def test_serial_and_process_pool_give_identical_bytes(mmc):
    args = (mmc, ["fleet.cap=3,4,6", "hold.mean_s=0.5,0.9"])
    serial = run_sweep(*args, seeds=2, workers=1)
    pooled = run_sweep(*args, seeds=2, workers=2)
    assert jsonio.dumps(serial) == jsonio.dumps(pooled)
    assert [r["variant"] for r in pooled["rows"]] == list(range(6))


def test_result_header(mmc):
    res = run_sweep(mmc, ["fleet.cap=4,5"], seeds=3, workers=1, metrics=["hold_s.p99"])
    assert res["scenario"] == "mmc.toml" and res["variants"] == 2 and res["seeds"] == 3
    assert res["vary"] == {"fleet.cap": [4, 5]}
    assert res["metrics"][-1] == "hold_s.p99" and res["knee"] is None
    assert res["rows"][0]["hold_s.p99"] > 0


def test_unknown_metric_lists_the_numeric_keys(mmc):
    with pytest.raises(InputError, match=r"metric 'step_s\.meen' is not a number.*queue_wait_s\.mean"):
        run_sweep(mmc, ["fleet.cap=4"], metrics=["step_s.meen"], workers=1)


def test_target_needs_a_numeric_swept_key(mmc):
    with pytest.raises(InputError, match="no swept key is numeric"):
        run_sweep(mmc, ["fleet.admission=fifo,shortest-timeout-first"], target="queue_wait_s.mean", workers=1)


@pytest.mark.parametrize("kw, fragment", [({"seeds": 0}, "`seeds`"), ({"workers": 0}, "`workers`"),
                                          ({"backend": "slurm"}, "`backend`")])
def test_bad_options(mmc, kw, fragment):
    with pytest.raises(InputError, match=fragment):
        run_sweep(mmc, ["fleet.cap=4"], **kw)


def test_no_vary(mmc):
    with pytest.raises(InputError, match="at least one `vary`"):
        run_sweep(mmc, [])


def test_unknown_metric_is_refused_before_any_run(mmc, monkeypatch):
    """The metric name is checked against the simulator's model, not discovered after the runs."""
    from sandbox_fleet.sweep import run as run_mod

    def no_runs(*a, **k):
        raise AssertionError("simulated before refusing the metric")

    monkeypatch.setattr(run_mod, "run_tasks", no_runs)
    with pytest.raises(InputError, match=r"metric 'step_s\.meen' is not a number .*docs/schemas/simulate"):
        run_sweep(mmc, ["fleet.cap=4"], metrics=["step_s.meen"], workers=1)
    with pytest.raises(InputError, match=r"metric 'turns\.median'"):
        run_sweep(mmc, ["fleet.cap=4"], target="turns.median", workers=1)


def test_an_unstable_variant_is_infeasible(tmp_path):
    """Poisson 5/s, 1 s exponential holds: cap 4 carries rho = 1.25 (no steady state), caps 6 and 8
    rho = 0.83 and 0.63. Every variant completes every rollout, so by `completed` alone the knee would
    be cap 4; an unstable variant never qualifies, so it is 6."""
    p = tmp_path / "mmc.toml"
    p.write_text('[fleet]\ncap = 4\n[workload]\nkind = "poisson"\nrate_per_s = 5.0\ncount = 6000\n'
                 '[hold]\ndist = "exponential"\nmean_s = 1.0\n[run]\nseed = 1\n')
    res = run_sweep(p, ["fleet.cap=4,6,8"], seeds=2, target="completed", within=0.0, workers=1)
    assert [(r["fleet.cap"], r["unstable"], r["completed"]) for r in res["rows"]] == [
        (4, 2, 6000), (6, 0, 6000), (8, 0, 6000)]
    assert res["knee"]["groups"][0]["knee"] == 6
    assert "infeasible" in res["unstable_rule"]
