"""Fixtures shared by every test folder."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pytest


@dataclass
class CliRun:
    code: int
    out: str
    err: str


@pytest.fixture
def run_cli(monkeypatch, capsys):
    """Call ``sandbox_fleet.cli:main`` with argv, so its InputError -> exit 2 handling is exercised."""
    from sandbox_fleet import cli

    def run(*args) -> CliRun:
        monkeypatch.setattr(sys, "argv", ["sandbox-fleet", *map(str, args)])
        code = 0
        try:
            cli.main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return CliRun(code, captured.out, captured.err)

    return run
