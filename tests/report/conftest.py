"""Shared fixtures for the report tests: summaries made by the producers (tests/producers.py).

``published`` is examples/rst-published.json, the document's figures in measure's layout; the
others are ``measure``, ``plan`` and ``simulate`` output, deep-copied so a test may edit its own.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest

PUBLISHED = Path(__file__).resolve().parents[2] / "examples" / "rst-published.json"


@pytest.fixture
def published() -> dict:
    """The source document's published figures in the measure summary's layout."""
    return json.loads(PUBLISHED.read_text(encoding="utf-8"))


@pytest.fixture
def fleet(produced) -> dict:
    """``measure`` of the healthy corpus: every check passes on it but cap_below_configured."""
    return copy.deepcopy(produced.fleet)


@pytest.fixture
def plan(produced) -> dict:
    """``plan`` of the healthy fleet (target: its measured peak)."""
    return copy.deepcopy(produced.plan)


@pytest.fixture
def simulate(produced) -> dict:
    return copy.deepcopy(produced.simulate)


@pytest.fixture
def promtool(tool):
    """``promtool(*args, stdin=, cwd=)``: run Debian's promtool (skip without it, fail under CI=true)."""
    path = tool("promtool")

    def run(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([path, *args], input=stdin, capture_output=True, text=True, cwd=cwd, timeout=120)

    return run
