"""End-to-end helpers: the real CLI, as a user runs it.

Two ways in: ``sh`` starts ``python -m sandbox_fleet.cli`` in a fresh process (the exact user
path: real stdout/stderr pipes, a fresh hash seed); ``cli`` calls ``cli.main()`` in-process with
the same argv semantics (InputError -> one line + exit 2), which is fast enough for the many
bad-input cases. An uncaught exception in-process is turned into a "Traceback" on stderr, so the
"no traceback" assertions catch it exactly as a user would see it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "examples" / "rst-published.json"
HARBOR = ROOT / "tests" / "fixtures" / "harbor"


@dataclass
class Run:
    code: int
    out: str
    err: str

    def err_lines(self) -> list[str]:
        """stderr lines that carry text (blank lines ignored)."""
        return [ln for ln in self.err.splitlines() if ln.strip()]


def user_env(cache_dir: Path) -> dict[str, str]:
    """The caller's environment with the tasks cache pointed at a test folder (never ~/.cache)."""
    env = dict(os.environ)
    env["SANDBOX_FLEET_CACHE_DIR"] = str(cache_dir)
    env.pop("PYTHONHASHSEED", None)  # each process gets its own hash seed, as a user's would
    return env


def start(args: list, cwd: Path, cache_dir: Path) -> subprocess.Popen:
    """Start the CLI in a new process (so several stages can run side by side)."""
    return subprocess.Popen(
        [sys.executable, "-m", "sandbox_fleet.cli", *map(str, args)],
        cwd=cwd, env=user_env(cache_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def finish(proc: subprocess.Popen, timeout: float = 120) -> Run:
    out, err = proc.communicate(timeout=timeout)
    return Run(proc.returncode, out, err)


def sh(args: list, cwd: Path, cache_dir: Path) -> Run:
    """Run the CLI in a new process and wait for it."""
    return finish(start(args, cwd, cache_dir))


@pytest.fixture
def cli(monkeypatch, capfd, tmp_path):
    """In-process ``sandbox-fleet ARGS`` with main()'s semantics; cwd is a fresh tmp folder."""
    from sandbox_fleet import cli as cli_mod

    monkeypatch.setenv("SANDBOX_FLEET_CACHE_DIR", str(tmp_path / "_cache"))
    monkeypatch.chdir(tmp_path)

    def run(*args) -> Run:
        monkeypatch.setattr(sys, "argv", ["sandbox-fleet", *map(str, args)])
        code, tb = 0, ""
        try:
            cli_mod.main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # what a user would see: a traceback and status 1
            code, tb = 1, traceback.format_exc()
        captured = capfd.readouterr()
        return Run(code, captured.out, captured.err + tb)

    return run


@dataclass
class Pipeline:
    """Every stage of the user's pipeline, run once per session in real processes."""

    work: Path
    synth: Run
    measure: Run
    plan: Run
    calibrate: Run
    scenario_text: str
    simulate: Run
    remeasure: Run
    report: Run
    check: Run
    check_json: Run
    twin_work: Path
    twin_synth: Run
    twin_measure: Run
    corpus_before: dict
    corpus_after: dict


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and mtime: shows whether anything wrote there."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def _set_cap(toml: Path, cap: int) -> str:
    """Change ``[fleet] cap`` in a calibrated scenario the way a user would: edit one line."""
    lines, section, done = toml.read_text().splitlines(keepends=True), None, False
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith("["):
            section = s
        elif section == "[fleet]" and s.split("=")[0].strip() == "cap":
            lines[i], done = f"cap = {cap}\n", True
    assert done, f"no [fleet] cap line in {toml}"
    toml.write_text("".join(lines))
    return toml.read_text()


@pytest.fixture(scope="session")
def pipeline(tmp_path_factory) -> Pipeline:
    """synth -> measure -> plan -> simulate --from -> edit cap -> simulate -> measure -> report -> check.

    A twin synth (same seed, another folder, another process) runs alongside for the
    determinism test; both use the relative path ``OUT`` so the summaries' ``source`` agree.
    """
    work, twin = tmp_path_factory.mktemp("pipeline"), tmp_path_factory.mktemp("twin")
    cache = tmp_path_factory.mktemp("cache")
    synth_args = ["synth", "OUT", "--scale", "0.02", "--seed", "3"]
    measure_args = ["measure", "OUT/trajectories", "--tasks", "OUT/tasks", "--json", "-o", "m.json"]
    a, b = start(synth_args, work, cache), start(synth_args, twin, cache)
    synth, twin_synth = finish(a), finish(b)
    assert synth.code == 0 and twin_synth.code == 0, synth.err + twin_synth.err
    corpus_before = snapshot(work / "OUT")
    a, b = start(measure_args, work, cache), start(measure_args, twin, cache)
    measure, twin_measure = finish(a), finish(b)
    assert measure.code == 0, measure.err
    a = start(["plan", "m.json", "--json", "-o", "p.json"], work, cache)
    b = start(["simulate", "s.toml", "--from", "OUT/trajectories"], work, cache)
    plan, calibrate = finish(a), finish(b)
    assert calibrate.code == 0, calibrate.err
    scenario_text = _set_cap(work / "s.toml", 30)
    simulate = sh(["simulate", "s.toml", "--json", "--telemetry", "sim.parquet"], work, cache)
    assert simulate.code == 0, simulate.err
    (work / "sim.json").write_text(simulate.out)
    a = start(["measure", "sim.parquet", "--json"], work, cache)
    b = start(["report", "m.json", "--plan", "p.json", "--simulate", "sim.json", "-o", "r.html"], work, cache)
    remeasure, report = finish(a), finish(b)
    a = start(["check", "m.json"], work, cache)
    b = start(["check", "m.json", "--json"], work, cache)
    check, check_json = finish(a), finish(b)
    return Pipeline(work, synth, measure, plan, calibrate, scenario_text, simulate, remeasure, report,
                    check, check_json, twin, twin_synth, twin_measure, corpus_before, snapshot(work / "OUT"))
