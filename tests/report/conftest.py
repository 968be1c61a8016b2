"""Shared fixtures for the report tests: hand-made summaries under fixtures/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@pytest.fixture
def published() -> dict:
    """The source document's published figures in the measure --json schema."""
    return load("published.json")


@pytest.fixture
def fleet() -> dict:
    """A hand-made healthy fleet on which every check passes."""
    return load("fleet.json")


@pytest.fixture
def plan() -> dict:
    return load("plan.json")


@pytest.fixture
def simulate() -> dict:
    return load("simulate.json")
