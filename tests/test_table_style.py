"""One table style in every command's text output (termtable), read back from the real outputs:
the only box character is the rule under a table's headers (no frame, no column bars, no heavy
header), every rule sits under a header line, and the headers are bold where Rich styles text."""

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

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "examples" / "rst-published.json"
HARBOR = ROOT / "tests" / "fixtures" / "harbor"
#: Unicode's box-drawing block: a table's frame, bars and rules are drawn from it
BOX = re.compile(r"[\u2500-\u257f]")
RULE = "\u2500"  # ─, SIMPLE_HEAD's one line


def _run(*args: object, width: int = 160) -> str:
    env = {k: v for k, v in os.environ.items() if k != "FORCE_COLOR"}
    env.update({"PYTHONPATH": str(ROOT / "src"), "COLUMNS": str(width), "NO_COLOR": "1"})
    done = subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr  # check exits 1 on a failed gate
    return done.stdout


def _tables(text: str) -> list[tuple[str, str]]:
    """(header line, rule line) of every table in ``text``; fails on any other box character."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        drawn = set(BOX.findall(line))
        if not drawn:
            continue
        assert drawn == {RULE} and line.strip() == RULE * len(line.strip()), f"not the one style: {line!r}"
        assert i > 0 and lines[i - 1].strip() and not BOX.search(lines[i - 1]), f"a rule with no header: {line!r}"
        found.append((lines[i - 1], line))
    return found


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("style")
    release = tmp / "rel"
    return {
        "measure": _run("measure", HARBOR),
        "check": _run("check", PUBLISHED),
        "simulate": _run("simulate", ROOT / "examples" / "scenarios" / "replay.toml"),
        "simulate --replay": _run("simulate", "--replay", HARBOR),
        "sweep": _run("sweep", ROOT / "examples" / "scenarios" / "replay.toml", "--vary", "fleet.cap=2,4",
                      "--workers", "1"),
        "synth": _run("synth", release, "--scale", "0.002"),
        "plan": _run("plan", PUBLISHED),
        "plan --detail": _run("plan", PUBLISHED, "--detail"),
    }


def test_every_command_draws_its_tables_one_way(outputs):
    counts = {name: len(_tables(text)) for name, text in outputs.items()}
    # the commands with tables show them (so the assertion above read real tables), the plan none
    for name in ("measure", "check", "simulate --replay", "sweep", "synth"):
        assert counts[name] >= 1, (name, outputs[name][:400])
    assert counts["plan"] == counts["plan --detail"] == 0
    # measure's header rows: the first column names the row, figures are right-aligned under theirs
    heads = [h.split() for h, _ in _tables(outputs["measure"])]
    assert ["phase", "rows", "median", "s", "p99", "s", "share", "of", "hold"] in heads
    # a block of figures (no headers) is drawn the same way: no frame around simulate's figures
    assert not BOX.search(outputs["simulate"]) and "rollouts / completed / dropped" in outputs["simulate"]


def test_the_check_table_prints_its_figures_as_the_report_does(outputs):
    """0.2937 is 29.4% in the terminal as in the HTML: the value column reads the report's kinds."""
    from sandbox_fleet.report.checks import run_checks
    from sandbox_fleet.report.tables import checks_table
    from summaries import as_measure

    results = run_checks(as_measure(json.loads(PUBLISHED.read_text())), None)
    html = checks_table(results)
    rate = next(r for r in results if r.name == "exception_rate")
    shown = f"{rate.value:.1%}"  # a share as a percentage, one decimal (numfmt.percent's rule above 0.1%)
    row = next(line for line in outputs["check"].splitlines() if line.split()[1:2] == ["exception_rate"])
    assert row.split()[2] == shown and f">{shown}<" in html
    assert str(round(rate.value, 4)) not in row  # not the raw fraction


def _colour(render, *args) -> str:
    buf = io.StringIO()
    render(*args, Console(file=buf, width=160, force_terminal=True, color_system="standard"))
    return buf.getvalue()


def test_headers_are_bold_in_every_renderer():
    """On a colour terminal each table's header line starts bold (termtable.HEADER_STYLE)."""
    from sandbox_fleet.measure.render import render_summary as render_measure
    from sandbox_fleet.report.checks import run_checks
    from sandbox_fleet.report.commands import render_checks
    from summaries import as_measure

    measure = as_measure(json.loads(PUBLISHED.read_text()))
    texts = [_colour(render_measure, measure), _colour(render_checks, run_checks(measure, None))]
    for text in texts:
        lines = text.splitlines()
        rules = [i for i, line in enumerate(lines) if RULE in line]
        assert rules
        for i in rules:
            assert "\x1b[1m" in lines[i - 1], lines[i - 1]
