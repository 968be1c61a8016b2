"""Progress bars honour ``progress=False`` everywhere; ``measure --json`` keeps stdout pure JSON."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
from rich.console import Console

from sandbox_fleet.measure import run as measure_pkg
from sandbox_fleet.telemetry import load_telemetry
from sandbox_fleet.telemetry import progress as bars
from summaries import measure_json, paths_json

from .helpers import rollouts, telemetry


@pytest.fixture
def screen(monkeypatch):
    """A fake terminal on stderr: whatever a bar draws lands in the returned buffer."""
    buf = io.StringIO()
    monkeypatch.setattr(bars, "_console", Console(file=buf, force_terminal=True, width=100))
    return buf


def _table(n=60):
    s = np.arange(n, dtype=float) * 10
    return rollouts(s.tolist(), (s + 5).tolist(), model=["m"] * n)


@pytest.fixture
def inputs(tmp_path):
    """An RST release and a canonical Parquet file, each with 6 row groups (a bar's worth)."""
    table = _table()
    release = tmp_path / "rel" / "metadata"
    release.mkdir(parents=True)
    pq.write_table(table.rename_columns(["trajectory_id", *table.column_names[1:]]),
                   release / "trajectories.parquet", row_group_size=10)
    flat = tmp_path / "flat.parquet"
    pq.write_table(table, flat, row_group_size=10)
    return [str(tmp_path / "rel"), str(flat)]


def test_reading_draws_a_bar_only_when_asked(screen, inputs):
    for path in inputs:
        load_telemetry([path], progress=False)
        assert screen.getvalue() == "", path
        load_telemetry([path], progress=True)
        assert screen.getvalue() != "", path  # the fake terminal does show bars
        screen.seek(0)
        screen.truncate()


def test_measure_paths_progress_false_draws_nothing(screen, inputs, monkeypatch):
    monkeypatch.setattr(measure_pkg, "BAR_ROWS", 1)
    for path in inputs:
        paths_json([path], progress=False)
    assert screen.getvalue() == ""
    paths_json([inputs[1]], progress=True)
    assert screen.getvalue() != ""


def test_measuring_bar_follows_the_flag(screen, monkeypatch):
    monkeypatch.setattr(measure_pkg, "BAR_ROWS", 1)
    t = telemetry([0, 1, 2], [5, 6, 7])
    measure_json(t, progress=False)
    assert screen.getvalue() == ""
    measure_json(t, progress=True)
    assert "measuring" in screen.getvalue()


def test_cli_json_stdout_is_only_the_json_even_on_a_terminal(inputs):
    # FORCE_COLOR makes rich treat stderr as a terminal, so bars are live in this run.
    env = {**os.environ, "FORCE_COLOR": "1"}
    r = subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", "measure", inputs[1], "--json"],
                       capture_output=True, text=True, env=env, check=True)
    out = json.loads(r.stdout)  # the whole of stdout is one JSON object
    assert out["rows"] == 60
    assert r.stdout.strip().startswith("{") and r.stdout.strip().endswith("}")
