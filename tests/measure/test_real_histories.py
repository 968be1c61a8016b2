"""Issue 38 items 8-10: real histories read as they ran (the reviews' cases re-made, and the real
fixtures under /work/shared/fixtures/real). Every expectation is worked out by hand or recomputed
here from the files with the standard library, never taken from the code under test."""

from __future__ import annotations

import csv
import pathlib
from collections import defaultdict
from datetime import datetime

import pytest

from sandbox_fleet.measure import measure_paths, measure_telemetry
from tests.measure.helpers import telemetry

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
    assert len(spans) >= 2 and all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    steps = measure_paths([str(path)], progress=False).to_json()["steps"]
    assert steps["runs"] == len(spans) and steps["runs_overlap"] is False and steps["mixed"] is False
    assert "interleave" not in steps["note"] and "never overlap" in steps["note"]


def test_ccb_jobs_that_overlap_do_interleave():
    steps = measure_paths([str(_real("ccb_harbor") / "jobs")], progress=False).to_json()["steps"]
    # three of the four jobs run 12:49-14:37 together (their result.json times)
    assert steps["runs"] == 4 and steps["runs_overlap"] is True and steps["mixed"] is True
