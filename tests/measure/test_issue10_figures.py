"""Figures added for real telemetry: trajectory sizes, the effective cap, per-model hold
histograms, and rejection reasons surfaced as warnings. Hand-computed answers."""

import os

import numpy as np
import pytest
from tests.measure.helpers import telemetry

from sandbox_fleet.measure.concurrency import effective_cap, shipped_cap_binding_share
from summaries import measure_json, paths_json

LAYOUTS = os.path.join(os.path.dirname(__file__), "..", "fixtures", "harbor-layouts")


def test_trajectory_sizes_hand_values():
    tel = telemetry([0, 0, 0, 0], [1, 1, 1, 1], job=["j"] * 4, trajectory_bytes=[100, 300, None, 1000])
    t = measure_json(tel)["trajectories"]
    assert t == {"rows": 3, "bytes_median": 300.0, "bytes_mean": pytest.approx(1400 / 3), "bytes_max": 1000}


def test_trajectory_sizes_null_when_unreported():
    t = measure_json(telemetry([0], [1]))["trajectories"]
    assert t == {"rows": 0, "bytes_median": None, "bytes_mean": None, "bytes_max": None}


def test_trajectory_sizes_from_real_atif_files():
    atif = os.path.join(LAYOUTS, "atif")
    sizes = sorted(os.stat(os.path.join(atif, d, "agent", "trajectory.json")).st_size
                   for d in os.listdir(atif) if os.path.isdir(os.path.join(atif, d)))
    t = paths_json([atif], progress=False)["trajectories"]
    assert t["rows"] == 6 and t["bytes_max"] == sizes[-1]
    assert t["bytes_median"] == (sizes[2] + sizes[3]) / 2 and t["bytes_mean"] == pytest.approx(sum(sizes) / 6)


def test_effective_cap_plateau_below_configured():
    # Twenty rollouts, four at a time back to back on [0, 500) s, under a configured 20: peak 4 for
    # the whole span although 20 were there to run.
    starts = [100 * (i // 4) for i in range(20)]
    s = measure_json(telemetry(starts, [t + 100 for t in starts], job=["j"] * 20, caps={"j": 20}))
    assert s["concurrency"]["peak"] == 4 and s["concurrency"]["effective_cap"] == 4
    # Four rollouts at once under a configured 20 could never reach it: too few to tell (issue 22).
    s = measure_json(telemetry([0] * 4, [100] * 4, job=["j"] * 4, caps={"j": 20}))
    assert s["concurrency"]["effective_cap"] is None and "too few" in s["concurrency"]["effective_cap_note"]
    # At the cap: no effective cap below it.
    s = measure_json(telemetry([0] * 4, [100] * 4, job=["j"] * 4, caps={"j": 4}))
    assert s["concurrency"]["effective_cap"] is None
    # No configured cap recorded: nothing to be below.
    assert measure_json(telemetry([0] * 4, [100] * 4))["concurrency"]["effective_cap"] is None


def test_effective_cap_needs_time_at_the_peak():
    share = shipped_cap_binding_share()
    assert share == 0.005
    conc = {"configured_cap": 20, "peak": 4, "time_at_peak_share": 0.004}
    assert effective_cap(conc, share) is None
    assert effective_cap({**conc, "time_at_peak_share": 0.005}, share) == 4


def test_hold_histogram_per_model():
    # model a: holds 1, 2, 50 s; model b: 0 s (zero, counted apart) and 10 s
    tel = telemetry([0, 0, 0, 0, 0], [1, 2, 50, 0, 10], model=["a", "a", "a", "b", "b"])
    by_model = measure_json(tel)["by_model"]
    ha, hb = by_model["a"]["hold_histogram"], by_model["b"]["hold_histogram"]
    assert int(np.sum(ha["counts"])) == 3 and ha["zero"] == 0
    assert ha["edges_s"][0] == pytest.approx(1.0) and ha["edges_s"][-1] == pytest.approx(100.0)
    assert len(ha["edges_s"]) == 21  # two decades, ten bins each
    assert int(np.sum(hb["counts"])) == 1 and hb["zero"] == 1


def test_every_rejection_reason_is_a_warning():
    tel = telemetry([0, 0], [1, 1], rejected={"implausible time": 211, "no result.json": 1})
    w = measure_json(tel)["warnings"]
    assert "rejected 211 row(s): implausible time" in w
    assert "rejected 1 row(s): no result.json" in w


def test_legacy_job_plateau_below_its_configured_cap_is_named(run_cli):
    # The real oracle-n2 job ran 2 at a time; its legacy config says 20 (orchestrator layout).
    import json

    job = os.path.join(LAYOUTS, "legacy-orchestrator")
    s = paths_json([job], progress=False)
    assert (s["concurrency"]["configured_cap"], s["concurrency"]["peak"], s["concurrency"]["effective_cap"]) == (20, 2, 2)
    r = run_cli("check", job, "--json")
    (below,) = [c for c in json.loads(r.out)["results"] if c["name"] == "cap_below_configured"]
    assert below["status"] == "warn" and "effective cap 2 below the configured 20" in below["message"]
