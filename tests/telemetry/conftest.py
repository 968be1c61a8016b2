"""Fixtures for telemetry tests."""

from pathlib import Path

import pytest
from telemetry_builders import build_release


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return build_release(tmp_path / "release")


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch) -> Path:
    """Keep every test's task cache in its own tmp folder (never ~/.cache)."""
    d = tmp_path / "cache"
    monkeypatch.setenv("SANDBOX_FLEET_CACHE_DIR", str(d))
    return d
