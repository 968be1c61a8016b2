"""Shared helpers for the plan tests: run the real console entry point in-process."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "examples" / "rst-published.json"
DATA = Path(__file__).parent / "data"


@dataclass
class Run:
    code: int
    out: str
    err: str


@pytest.fixture
def run_cli(monkeypatch, capsys):
    """Call ``sandbox_fleet.cli:main`` with argv, so its InputError -> exit 2 handling is exercised."""
    from sandbox_fleet import cli

    def run(*args: str) -> Run:
        monkeypatch.setattr(sys, "argv", ["sandbox-fleet", *map(str, args)])
        code = 0
        try:
            cli.main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run
