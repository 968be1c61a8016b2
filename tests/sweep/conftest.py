"""Shared helpers for the sweep tests: tiny scenarios and the real console entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

# Deterministic holds with a synchronous RL batch: a step takes exactly ceil(B / cap) x H + T.
SYNC_DET = """\
[fleet]
cap = 100
[workload]
kind = "sync-rl"
batch = {batch}
steps = 3
train_s = {train}
[hold]
dist = "deterministic"
value_s = {hold}
[run]
seed = 7
"""

# Random holds and arrivals: something for seeds and backends to disagree about if they could.
MMC = """\
[fleet]
cap = 4
[workload]
kind = "poisson"
rate_per_s = 3.0
count = 2000
[hold]
dist = "exponential"
mean_s = 1.0
[run]
seed = 11
"""


@pytest.fixture
def sync_det(tmp_path):
    def make(batch: int = 8, hold: float = 10.0, train: float = 5.0) -> Path:
        p = tmp_path / "sync_det.toml"
        p.write_text(SYNC_DET.format(batch=batch, hold=hold, train=train))
        return p

    return make


@pytest.fixture
def mmc(tmp_path) -> Path:
    p = tmp_path / "mmc.toml"
    p.write_text(MMC)
    return p
