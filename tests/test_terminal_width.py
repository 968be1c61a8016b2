"""Terminal output at 80 and 120 columns: tables fold instead of cutting numbers, headers stay whole
and distinct, check's messages stay readable, commands to copy are printed whole on their own line,
and the bytes are the same under NO_COLOR=1 and when piped (no escape codes either way)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from sandbox_fleet.measure.render import render_summary
from sandbox_fleet.report.commands import render_checks
from sandbox_fleet.textout import pack_pairs, print_table
from summaries import as_measure, checks_of

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "examples" / "rst-published.json"
NUMBER = re.compile(r"(?<![A-Za-z\d.,])\d[\d,]*(?:\.\d+)?%?")  # not inside a header such as "p99"


def _render(fn, summary, width: int) -> str:
    buf = io.StringIO()
    fn(summary, Console(file=buf, width=width, color_system=None))
    return buf.getvalue()


def _cells(text: str) -> list[str]:
    return NUMBER.findall(text)


@pytest.mark.parametrize("width", [80, 120])
def test_measure_tables_fold_and_keep_every_number(width):
    summary = as_measure(json.loads(PUBLISHED.read_text()))
    text = _render(render_summary, summary, width)
    wide = _render(render_summary, summary, 400)  # every table fits: the reference numbers
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    assert sorted(_cells(text)) == sorted(_cells(wide))  # nothing cut, nothing dropped
    # the by-model table's hold columns keep distinct whole headers
    assert "hold p50" in text and "hold p99" in text


def test_a_folded_row_keeps_each_pair_whole():
    from rich.table import Table

    table = Table(title="By model")
    for col in ("name", "rows", "hold p50", "hold p99", "decode/s"):
        table.add_column(col)
    table.add_row("qwen35-27b-iter0000161-hf-and-a-long-suffix", "104,732", "38.25", "9,754", "1.22")
    buf = io.StringIO()
    print_table(Console(file=buf, width=40), table)
    assert buf.getvalue().splitlines() == ["By model", "qwen35-27b-iter0000161-hf-and-a-long-suffix",
                                           "  rows: 104,732; hold p50: 38.25", "  hold p99: 9,754; decode/s: 1.22"]
    assert pack_pairs(["a: 1", "b: 2"], 80) == ["  a: 1; b: 2"]


@pytest.mark.parametrize("width", [80, 100])
def test_check_at_narrow_widths_is_one_heading_per_gate(width):
    results = checks_of(json.loads(PUBLISHED.read_text()))
    buf = io.StringIO()
    render_checks(results, Console(file=buf, width=width, color_system=None))
    lines = buf.getvalue().splitlines()
    assert max(len(x) for x in lines) <= width
    heads = [x for x in lines if x[:4] in ("PASS", "FAIL", "WARN", "SKIP")]
    assert [h.split()[1] for h in heads] == [r.name for r in results]
    assert len(lines) < 4 * len(results)  # not a 131-line table of 20-character message cells
    words = " ".join(x for x in lines if x.startswith("     ")).split()
    assert words == " ".join(r.message for r in results).split()  # every message whole, in order


def _run(args: list[str], width: int, no_color: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update({"PYTHONPATH": str(ROOT / "src"), "COLUMNS": str(width)})
    if no_color:
        env["NO_COLOR"] = "1"
    return subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", *args], env=env, capture_output=True,
                          text=True, timeout=300).stdout


def test_the_command_to_copy_after_synth_is_whole_on_its_own_line(tmp_path):
    out = tmp_path / ("a-rather-long-folder-name-" * 3)
    text = _run(["synth", str(out), "--scale", "0.002"], 40, no_color=False)
    assert f"sandbox-fleet measure {out}/trajectories --tasks {out}/tasks" in text.splitlines()
    assert "\x1b[" not in text  # piped: no escape codes


@pytest.mark.parametrize("width", [80, 120])
def test_check_and_measure_piped_are_the_same_under_no_color(width):
    for args in (["check", str(PUBLISHED)], ["measure", str(ROOT / "tests" / "fixtures" / "harbor")]):
        plain, no_color = _run(args, width, False), _run(args, width, True)
        assert plain and plain == no_color, args
        assert "\x1b[" not in plain and "…" not in plain
        assert max(len(x) for x in plain.splitlines()) <= width, args


def _gates(extra: list | None = None) -> list:
    return checks_of(json.loads(PUBLISHED.read_text())) + (extra or [])


def _no_rich():
    raise AssertionError("the plain path asked for a Rich console")


@pytest.mark.parametrize("columns", ["40", "80", "119"])
def test_check_piped_without_rich_is_what_rich_prints(columns, monkeypatch, capsys):
    # the CLI's check into a pipe: print_checks writes the lines itself; Rich's own console on the
    # same stdout and environment is the reference, byte for byte
    from sandbox_fleet.report.commands import print_checks

    monkeypatch.setenv("COLUMNS", columns)
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    results = _gates()
    print_checks(results, _no_rich)
    plain = capsys.readouterr().out
    render_checks(results, Console())
    assert plain == capsys.readouterr().out and plain.count("\n") > len(results)


@pytest.mark.parametrize("name, message", [("odd[/red]gate", "plain message"), ("gate", "see :smile: here"),
                                           ("gate", "ends in a space ")])
def test_check_lines_rich_could_change_go_through_rich(name, message, monkeypatch, capsys):
    from sandbox_fleet.report.checks.result import CheckResult
    from sandbox_fleet.report.commands import print_checks

    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    results = _gates([CheckResult(name=name, status="warn", value=1.0, threshold=None, message=message)])
    asked = []
    print_checks(results, lambda: asked.append(1) or Console())
    via = capsys.readouterr().out
    render_checks(results, Console())
    assert asked and via == capsys.readouterr().out


@pytest.mark.parametrize("env", [{}, {"COLUMNS": "97"}, {"COLUMNS": "0"}, {"COLUMNS": "wide"}, {"FORCE_COLOR": ""},
                                 {"FORCE_COLOR": "1"}, {"TTY_COMPATIBLE": "1"}, {"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"},
                                 {"NO_COLOR": "1", "COLUMNS": "60"}])
def test_plain_stdout_width_is_rich_consoles_when_rich_prints_no_colour(env, monkeypatch):
    from sandbox_fleet.textout import plain_stdout_width

    for name in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # a pipe: no terminal
    console = Console()
    width = plain_stdout_width()
    if console.is_terminal or console.color_system is not None:
        assert width is None
    else:
        assert width == console.width
    assert (width is None) == ((env.get("FORCE_COLOR") == "1" and env.get("TTY_COMPATIBLE") != "0")
                               or env.get("TTY_COMPATIBLE") == "1")
