"""Shared helpers for the plan tests: run the real console entry point in-process."""

from __future__ import annotations

from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "examples" / "rst-published.json"
DATA = Path(__file__).parent / "data"
