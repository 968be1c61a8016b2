"""Paths shared by the plan tests (the CLI runner is the root conftest's ``run_cli``)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "examples" / "rst-published.json"
#: measure's summary of the mixed corpus (tests/producers.py); a test regenerates and compares it
MIXED = Path(__file__).parent / "data" / "mixed.json"
