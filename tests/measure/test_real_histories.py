"""Issue 38 items 8-10: real histories read as they ran (the reviews' cases re-made, and the real
fixtures under /work/shared/fixtures/real). Every expectation is worked out by hand or recomputed
here from the files with the standard library, never taken from the code under test."""

from __future__ import annotations

import csv
import itertools
import json
import pathlib
from collections import defaultdict
from datetime import datetime

import pytest
from tests.measure.helpers import telemetry

from sandbox_fleet.measure import measure_paths, measure_telemetry

REAL = pathlib.Path("/work/shared/fixtures/real")


def _real(name: str) -> pathlib.Path:
    path = REAL / name
    if not path.exists():
        pytest.skip(f"the real fixture {path} is not on this machine")
    return path


# --- item 9: a serial run is not synchronous RL ------------------------------------------
def _serial_sittings(sizes=(7, 7, 23), hold_s=20.0, gap_s=2.0, apart_s=4 * 3600.0):
    """One rollout at a time: each ends ``gap_s`` before the next starts; sittings ``apart_s`` apart."""
    starts, finishes = [], []
    for k, n in enumerate(sizes):
        t = k * apart_s
        for _ in range(n):
            starts.append(t)
            finishes.append(t + hold_s)
            t += hold_s + gap_s
    return starts, finishes


def test_serial_run_in_three_sittings_is_not_rl_steps():
    # The review's case: 37 rollouts one at a time in three sittings hours apart. By hand: the
    # gaps jump from 2 s to ~4 h (a break of thousands), the sittings hold 7, 7 and 23 starts, the
    # first 2% of the 4 h period (288 s) holds all 7 starts of a short sitting (burst share 1.0),
    # yet the concurrency never exceeds 1: no step releases a batch that runs together.
    starts, finishes = _serial_sittings()
    assert len(starts) == 37
    s = measure_telemetry(telemetry(starts, finishes, job=["serial"] * 37)).to_json()
    assert s["concurrency"]["peak"] == 1
    steps = s["steps"]
    assert steps["detected"] is False and steps["steps"] is None and steps["burst_share"] is None
    assert "one rollout at a time" in steps["reason"]
    assert s["concurrency"]["peak_is_batch"] is None  # no release is compared with the peak


def test_a_released_batch_that_runs_together_still_is_steps():
    # The same three sittings where each step releases its rollouts at one instant (8 at once,
    # each held 20 s), then waits: by hand 3 steps of batch 8, all 8 running together.
    starts = [k * 4 * 3600.0 for k in range(3) for _ in range(8)]
    finishes = [t + 20.0 + 0.1 * i for i, t in enumerate(starts)]
    steps = measure_telemetry(telemetry(starts, finishes)).to_json()["steps"]
    assert steps["detected"] is True and steps["steps"] == 3 and steps["batch_size"] == 8
    assert steps["opening_concurrency"] == 8


def _sessions_from_csv(path: pathlib.Path) -> dict[str, tuple[datetime, datetime]]:
    spans: dict[str, list[datetime]] = defaultdict(list)
    for row in csv.DictReader(path.open()):
        if row["started_at"] and row["finished_at"]:
            spans[row["job"]] += [datetime.fromisoformat(row["started_at"]), datetime.fromisoformat(row["finished_at"])]
    return {job: (min(v), max(v)) for job, v in spans.items()}


def test_miniswe_sittings_never_overlap_so_they_do_not_interleave():
    path = _real("miniswe_gemini3") / "containers.csv"
    spans = sorted(_sessions_from_csv(path).values())
    # independent truth from the file: each session ends before the next one starts
    assert len(spans) >= 2 and all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    steps = measure_paths([str(path)], progress=False).to_json()["steps"]
    assert steps["runs"] == len(spans) and steps["runs_overlap"] is False and steps["mixed"] is False
    assert "interleave" not in steps["note"] and "never overlap" in steps["note"]


def test_ccb_jobs_that_overlap_do_interleave():
    steps = measure_paths([str(_real("ccb_harbor") / "jobs")], progress=False).to_json()["steps"]
    # three of the four jobs run 12:49-14:37 together (their result.json times)
    assert steps["runs"] == 4 and steps["runs_overlap"] is True and steps["mixed"] is True


# --- item 8: per-job caps are not a fleet cap --------------------------------------------
def _ccb_jobs() -> list[tuple[str, int, datetime, datetime]]:
    """(job, n_concurrent_trials, started_at, finished_at) read straight from the Harbor files."""
    out = []
    for job in sorted((_real("ccb_harbor") / "jobs").iterdir()):
        cap = json.loads((job / "config.json").read_text())["orchestrator"]["n_concurrent_trials"]
        (trial,) = [p for p in job.iterdir() if p.is_dir()]
        r = json.loads((trial / "result.json").read_text())
        out.append((job.name, cap, datetime.fromisoformat(r["started_at"]), datetime.fromisoformat(r["finished_at"])))
    return out


def test_ccb_fleet_cap_is_the_sum_of_the_running_jobs_caps(run_cli, tmp_path):
    jobs = _ccb_jobs()
    # independent truth: every job is capped at 1 and holds one trial; at each trial start, the
    # caps of the jobs running then add up to the fleet's cap: 3 at most (three run 12:49-14:37)
    assert {cap for _, cap, _, _ in jobs} == {1} and len(jobs) == 4
    summed = [sum(c for _, c, a, b in jobs if a <= t < b) for _, _, t, _ in jobs]
    gaps = sorted((a, b) for _, _, a, b in jobs)
    idle_s = sum(max((b2[0] - max(b for _, b in gaps[:i + 1])).total_seconds(), 0)
                 for i, b2 in enumerate(gaps[1:]))
    span_s = (max(b for *_, b in jobs) - min(a for *_, a, _ in jobs)).total_seconds()
    s = measure_paths([str(_real("ccb_harbor") / "jobs")], progress=False).to_json()
    c = s["concurrency"]
    assert c["peak"] == max(summed) == 3
    assert c["configured_cap"] == 3  # was 1 "not reached (peak 3)"
    # one trial per job: nothing ever waited for a slot, so no cap binds, per job or for the fleet
    assert c["cap_detected"] is False
    assert all(j["cap_detected"] is False and j["configured_cap"] == 1 for j in s["by_job"].values())
    assert "nothing waited" in c["cap_basis"]
    # the fleet sat at its summed cap whenever anything ran: the span less the one idle gap (12.4 s)
    assert idle_s == pytest.approx(12.382157)
    assert f"reached for {span_s - idle_s:,.0f} s" in c["configured_cap_basis"]
    # the terminal and the gate say the same: no cap detected, cap_binding does not fail
    path = tmp_path / "m.json"
    path.write_text(json.dumps(s))
    term = run_cli("measure", _real("ccb_harbor") / "jobs")
    line = next(ln for ln in term.out.splitlines() if ln.startswith("cap detected"))
    assert " no " in f" {line} " and "configured cap" in term.out
    gate = run_cli("check", path, "--json")
    got = {r["name"]: r for r in json.loads(gate.out)["results"]}
    assert got["cap_binding"]["status"] == "pass"


def test_overlapping_jobs_one_binding_make_a_binding_fleet_cap():
    # By hand: job a (cap 2) runs 4 rollouts two at a time over [0, 20); job b (cap 1) runs one
    # rollout over [0, 20). The fleet's cap is 2 + 1 = 3, held all along; a's cap binds (4 > 2).
    starts = [0, 0, 10, 10, 0]
    finishes = [10, 10, 20, 20, 20]
    s = measure_telemetry(telemetry(starts, finishes, job=["a"] * 4 + ["b"], caps={"a": 2, "b": 1})).to_json()
    c = s["concurrency"]
    assert (c["peak"], c["configured_cap"], c["cap_detected"]) == (3, 3, True)
    assert s["by_job"]["a"]["cap_detected"] is True and s["by_job"]["b"]["cap_detected"] is False
    assert "reached for 20 s" in c["cap_basis"] and "job(s) a" in c["cap_basis"]


def test_sequential_jobs_keep_their_shared_cap_and_an_uncapped_one_leaves_none():
    # a then b, never together, both capped at 2 with 3 rollouts each: the fleet's cap is 2 (as before)
    starts, finishes = [0, 0, 5, 20, 20, 25], [5, 5, 10, 25, 25, 30]
    t = telemetry(starts, finishes, job=["a"] * 3 + ["b"] * 3, caps={"a": 2, "b": 2})
    c = measure_telemetry(t).to_json()["concurrency"]
    assert (c["configured_cap"], c["cap_detected"], c["configured_cap_basis"]) == (2, True, None)
    # overlapping, b without a cap: while b runs the fleet has none
    t = telemetry([0, 0, 5, 1], [5, 5, 10, 9], job=["a"] * 3 + ["b"], caps={"a": 2})
    c = measure_telemetry(t).to_json()["concurrency"]
    assert c["configured_cap"] is None and "no cap" in c["configured_cap_basis"]


def test_summed_cap_against_brute_force():
    import numpy as np

    from sandbox_fleet.measure.fleetcap import FleetCap

    rng = np.random.default_rng(7)
    for _ in range(50):
        k = int(rng.integers(2, 7))
        first = rng.integers(0, 100, k)
        last = first + rng.integers(1, 60, k)
        cap = rng.integers(1, 9, k)
        fc = FleetCap(first.astype(np.int64), last.astype(np.int64), cap.astype(np.int64), True)
        probes = np.arange(-1, 170, dtype=np.int64)
        brute = [sum(int(c) for f, l_, c in zip(first, last, cap) if f <= p < l_) for p in probes]
        assert fc.summed_at(probes).tolist() == brute


# --- item 10: rewards that are not 0/1 ---------------------------------------------------
def test_ccb_fractional_rewards_are_said_with_their_distribution_and_a_threshold():
    # The four verifier rewards from the result.json files: 0.41, 0.12, 0.84 and 0.0.
    rewards = sorted(json.loads(p.read_text())["verifier_result"]["rewards"]["reward"]
                     for p in (_real("ccb_harbor") / "jobs").glob("*/*/result.json"))
    assert rewards == [0.0, 0.12, 0.41, 0.84]
    # Otsu by hand: between-class variance w0 w1 (mu0 - mu1)^2 for the three splits:
    #   {0} | {.12,.41,.84}: 3/16 (0.4567)^2 = 0.0391; {0,.12} | {.41,.84}: 1/4 (0.565)^2 = 0.0798;
    #   {0,.12,.41} | {.84}: 3/16 (0.6633)^2 = 0.0825 (largest) -> threshold (0.41 + 0.84) / 2 = 0.625
    s = measure_paths([str(_real("ccb_harbor") / "jobs")], progress=False).to_json()
    o = s["outcomes"]
    assert o["pass_rate"] == 0.0  # under the default --pass-threshold 1.0 (as before)
    assert o["reward_fractional_rows"] == 3 and o["reward_distinct"] == 4
    assert o["suggested_pass_threshold"] == pytest.approx(0.625) and o["suggested_pass_rate"] == 0.25
    q = o["reward_quantiles"]
    assert (q["min"], q["median"], q["max"]) == (0.0, pytest.approx(0.265), 0.84)
    warning = next(w for w in s["warnings"] if w.startswith("rewards are fractional"))
    assert "3 of 4" in warning and "--pass-threshold 0.625" in warning and "pass rate is 0.0%" in warning


def test_binary_rewards_say_nothing():
    t = telemetry([0, 1, 2], [5, 6, 7], reward=[0.0, 1.0, 1.0])
    s = measure_telemetry(t).to_json()
    assert s["outcomes"]["reward_fractional_rows"] == 0 and s["outcomes"]["suggested_pass_threshold"] is None
    assert not any(w.startswith("rewards are fractional") for w in s["warnings"])


def test_natural_break_against_brute_force_within_class_variance():
    import numpy as np

    from sandbox_fleet.measure.rewards import natural_break

    rng = np.random.default_rng(3)
    for _ in range(200):
        raw = np.round(rng.beta(0.7, 0.9, int(rng.integers(2, 40))), 2)
        values, counts = np.unique(raw, return_counts=True)
        if values.size < 2:
            continue
        # brute force: the split that minimises the summed squared deviation within both classes
        best = None
        for k in range(1, values.size):
            lo, hi = raw[raw <= values[k - 1]], raw[raw >= values[k]]
            within = float(((lo - lo.mean()) ** 2).sum() + ((hi - hi.mean()) ** 2).sum())
            if best is None or within < best[0] - 1e-12:
                best = (within, (values[k - 1] + values[k]) / 2)
        assert natural_break(values, counts) == pytest.approx(best[1])


# --- item 11: a known cap can be stated ---------------------------------------------------
def _csv_sweep(path: pathlib.Path) -> tuple[int, int]:
    """(peak, separate stretches at the peak) of the rows with both times, by a plain sweep."""
    events: dict[datetime, int] = defaultdict(int)
    for row in csv.DictReader(path.open()):
        if row["started_at"] and row["finished_at"]:
            events[datetime.fromisoformat(row["started_at"])] += 1
            events[datetime.fromisoformat(row["finished_at"])] -= 1
    level, levels = 0, []
    for t in sorted(events):
        level += events[t]
        levels.append(level)
    peak = max(levels)
    stretches = sum(1 for i, v in enumerate(levels[:-1]) if v == peak and (i == 0 or levels[i - 1] != peak))
    return peak, stretches


def test_miniswe_stated_cap_is_reported_as_stated_and_checked_by_touches(run_cli):
    path = _real("miniswe_gemini3") / "containers.csv"
    peak, stretches = _csv_sweep(path)
    assert peak == 40 and stretches >= 10  # mini-swe-agent ran its batches with 40 workers
    r = run_cli("measure", path, "--cap", "40", "--json")
    assert r.code == 0, r.err
    c = json.loads(r.out)["concurrency"]
    assert (c["configured_cap"], c["cap_detected"], c["touches"]) == (40, True, stretches)
    assert c["configured_cap_basis"] == (f"stated (--cap): 40; the touches rule agrees: the peak 40 was reached "
                                         f"{stretches} separate times")
    # a stated cap the data exceed is said so, never taken as reached
    c = json.loads(run_cli("measure", path, "--cap", "30", "--json").out)["concurrency"]
    assert c["configured_cap"] == 30 and c["cap_detected"] is False and "did not hold" in c["configured_cap_basis"]
    # without --cap: no configured cap, the touches rule alone (as before)
    c = json.loads(run_cli("measure", path, "--json").out)["concurrency"]
    assert c["configured_cap"] is None and c["configured_cap_basis"] is None


def _workers_csv(tmp_path: pathlib.Path, rows) -> pathlib.Path:
    path = tmp_path / "runs.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run_id", "begin", "end", "job", "workers"])
        for i, (a, b, job, workers) in enumerate(rows):
            w.writerow([f"r{i}", f"2026-01-01T00:00:{a:02d}Z", f"2026-01-01T00:00:{b:02d}Z", job, workers])
    return path


MAP = "id=run_id,started_at=begin,finished_at=end,cap=workers"


def test_a_cap_column_states_each_jobs_cap(run_cli, tmp_path):
    # By hand: job a states 2 workers and runs 4 rollouts two at a time (its cap binds); job b states
    # 5 (one row leaves it empty: the job's value) and runs 2 at once (not reached).
    path = _workers_csv(tmp_path, [(0, 10, "a", 2), (0, 10, "a", 2), (10, 20, "a", 2), (10, 20, "a", ""),
                                   (0, 20, "b", 5), (1, 20, "b", "")])
    r = run_cli("measure", path, "--map", MAP, "--json")
    assert r.code == 0, r.err
    jobs = json.loads(r.out)["by_job"]
    a, b = jobs["a"]["concurrency"], jobs["b"]["concurrency"]
    assert (a["configured_cap"], a["cap_detected"], b["configured_cap"], b["cap_detected"]) == (2, True, 5, False)
    assert a["configured_cap_basis"].startswith("stated (cap column): 2; reached, but only 1 separate time(s)")
    assert b["configured_cap_basis"].startswith("stated (cap column): 5; not reached (peak 2)")


def test_a_cap_column_with_two_caps_for_one_job_is_refused_in_one_line(run_cli, tmp_path):
    path = _workers_csv(tmp_path, [(0, 10, "a", 2), (0, 10, "a", 3)])
    r = run_cli("measure", path, "--map", MAP)
    assert r.code == 2 and "column cap states 2 and 3 for job 'a'" in r.err and "Traceback" not in r.err
    r = run_cli("measure", _workers_csv(tmp_path, [(0, 10, "a", 2)]), "--map", MAP, "--cap", "0")
    assert r.code == 2 and "at least 1" in r.err


def test_a_summed_cap_that_varies_is_judged_where_the_fleet_sat():
    # By hand: jobs a and b (cap 10 each) overlap for 1 s of 100; a runs 10 at once for 100 s (its
    # cap, with 20 rollouts: binding), b one rollout. The summed cap is 20 only during the overlap
    # [49.5, 50.5), where the fleet peaks at 11: 1 s of 100 (over the 0.5% of cap_binding.warn_above)
    # at a peak under the running jobs' 20, so the effective cap is 11 (the rule for a fixed cap). The
    # fleet sits at its summed cap (10, a alone) over [0, 49.5) and [50.5, 100): 99 s, bound by a's.
    starts = [0.0] * 10 + [50.0] * 10 + [49.5]
    finishes = [50.0] * 10 + [100.0] * 10 + [50.5]
    s = measure_telemetry(telemetry(starts, finishes, job=["a"] * 20 + ["b"], caps={"a": 10, "b": 10})).to_json()
    c = s["concurrency"]
    assert (c["peak"], c["configured_cap"], c["effective_cap"]) == (11, 20, 11)
    assert s["by_job"]["a"]["cap_detected"] is True and c["cap_detected"] is True
    assert "reached for 99 s" in c["configured_cap_basis"] and "job(s) a" in c["configured_cap_basis"]
    assert c["time_at_cap_s"] == 99.0
    # the gate reads the time at the summed cap (99 of 100 s), never the 1 s at the peak of 11
    from sandbox_fleet.measure.model import MeasureSummary
    from sandbox_fleet.report.checks.capacity import cap_binding
    from sandbox_fleet.report.thresholds import load_thresholds

    gate = cap_binding(MeasureSummary.model_validate({**s, "by_job": None}), None, load_thresholds(None))
    assert gate.value == pytest.approx(0.99) and gate.status == "fail" and "fleet: cap of 20" in gate.message
    gate = cap_binding(MeasureSummary.model_validate(s), None, load_thresholds(None))
    assert gate.value == 1.0 and gate.message.startswith("job a: cap of 10")  # a sat at its own cap all along


def test_plan_says_why_a_fractional_reward_run_has_no_cost_per_pass(run_cli, tmp_path):
    # before: "not costed (no pass rate or duty measured)" beside a measured pass rate of 0
    path = tmp_path / "m.json"
    assert run_cli("measure", _real("ccb_harbor") / "jobs", "-o", path).code == 0
    r = run_cli("plan", path)
    assert r.code == 0, r.err
    text = " ".join(r.out.split())
    assert "not costed (no rollout passed the pass threshold; with fractional rewards, measure suggests one" in text
    assert "no pass rate or duty measured" not in text
