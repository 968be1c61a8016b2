"""Fixtures shared by every test folder."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import pytest
from hypothesis import settings

# CI explores a fixed sequence of examples, so a green main stays green on a rerun; a developer's
# run keeps Hypothesis' random exploration (a counterexample it finds becomes a named test).
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")


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


# --- summaries made by the producers (see tests/producers.py) ---------------------------
def _write(folder, name: str, summary: dict):
    from sandbox_fleet import jsonio

    path = folder / name
    jsonio.write(summary, path)
    return path


@pytest.fixture(scope="session")
def produced(tmp_path_factory):
    """``measure`` of the healthy and mixed corpora, ``plan`` of the healthy one, ``simulate`` of
    examples/scenarios/mmc.toml: dicts, and the same written as files (``*_path``)."""
    from pathlib import Path
    from types import SimpleNamespace

    from producers import healthy_telemetry, mixed_telemetry
    from sandbox_fleet.simulate.scenario.run import run_scenario
    from summaries import measure_json, plan_json

    folder = tmp_path_factory.mktemp("produced")
    fleet = measure_json(healthy_telemetry())
    mixed = measure_json(mixed_telemetry())
    plan = plan_json(fleet)
    simulate = run_scenario(Path(__file__).resolve().parents[1] / "examples" / "scenarios" / "mmc.toml")
    return SimpleNamespace(
        fleet=fleet, mixed=mixed, plan=plan, simulate=simulate,
        fleet_path=_write(folder, "fleet.json", fleet), mixed_path=_write(folder, "mixed.json", mixed),
        plan_path=_write(folder, "plan.json", plan), simulate_path=_write(folder, "simulate.json", simulate),
    )


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


@pytest.fixture(scope="session")
def demo_out(tmp_path_factory):
    """``sandbox-fleet demo``'s outputs, made once per session (the bundled corpus at its default
    scale and seed, ~15 s): the folder ``out/`` the README's commands read, inside a scratch
    folder of its own (``demo_out.parent`` is the working directory the docs assume)."""
    from sandbox_fleet.demo import run_demo

    out = tmp_path_factory.mktemp("demo") / "out"
    run_demo(out, progress=False)
    return out
