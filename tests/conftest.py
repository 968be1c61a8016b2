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


def require_tool(name: str) -> str:
    """Path of an external oracle (promtool, chromium): skip without it, fail when CI=true.

    CI (``.ci/run``) installs them with apt; on a developer machine a missing tool skips
    with the reason instead of failing the suite.
    """
    import os
    import shutil

    path = shutil.which(name)
    if path is None:
        why = f"{name} is not installed (apt-get install {'prometheus' if name == 'promtool' else name})"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {why}: .ci/run must install it")
        pytest.skip(why)
    return path


@pytest.fixture
def tool():
    """``tool("promtool")``: the oracle's path, or skip (fail under CI=true); see :func:`require_tool`."""
    return require_tool
