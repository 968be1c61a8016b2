"""BENCHMARKS.md's current table only repeats figures its History holds, and lists every script.

A provenance guard, not a timing: each row of "Current figures" names the History section it came
from (by the start of its heading, in quotes, in the *from* cell); every number in the row's *latest*
and *machine* cells must appear in that section's text, and the scripts its *command* cell runs must
exist. The "Benchmark scripts" table lists exactly the files in ``benchmarks/``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
# A figure as written in the logs: 1,781,045 or 2.26 (then x, s, MiB...); not the digits of a commit hash.
NUMBER = re.compile(r"(?<![\w.,])\d+(?:,\d{3})*(?:\.\d+)?(?![0-9A-Za-wyz_])")


def _part(title: str) -> str:
    """The text from the heading ``title`` to the next heading of the same or a higher level."""
    lines = TEXT.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip("#").strip() == title and line.startswith("#"))
    level = len(lines[start]) - len(lines[start].lstrip("#"))
    end = next((j for j in range(start + 1, len(lines))
                if lines[j].startswith("#") and len(lines[j]) - len(lines[j].lstrip("#")) <= level), len(lines))
    return "\n".join(lines[start:end])


def _rows(part: str) -> list[list[str]]:
    """The body rows of the first table in ``part``, as stripped cells."""
    rows = [line for line in part.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip().strip("|").split("|")] for row in rows[2:]]


HISTORY = TEXT[TEXT.index("\n# History\n"):]
HEADINGS = [line.lstrip("#").strip() for line in HISTORY.splitlines()[2:] if line.startswith("#")]
HEADER = [cell.strip() for cell in _part("Current figures").split("\n|", 1)[1].split("\n", 1)[0].strip("|").split("|")]
FIGURES = _rows(_part("Current figures"))


def _section(cell: str) -> str:
    cited = re.findall(r'"([^"]+)"', cell)
    assert cited, f"the from cell {cell!r} quotes no History heading"
    matches = [h for h in HEADINGS if h.startswith(cited[0])]
    assert len(matches) == 1, f"{cited[0]!r} starts {len(matches)} History headings, not one"
    return _part(matches[0])


def test_the_table_has_the_columns_the_page_describes() -> None:
    assert HEADER == ["target (issue)", "peer", "latest", "status", "machine, load", "date", "from", "command"]
    assert len(FIGURES) >= 20
    assert all(len(row) == len(HEADER) for row in FIGURES)


@pytest.mark.parametrize("row", FIGURES, ids=[row[0][:60] for row in FIGURES])
def test_every_number_of_a_row_is_in_the_section_it_cites(row: list[str]) -> None:
    cells = dict(zip(HEADER, row))
    section = _section(cells["from"])
    for column in ("latest", "machine, load"):
        numbers = NUMBER.findall(cells[column])
        missing = [n for n in numbers if n not in section]
        assert not missing, f"{column} cell {cells[column]!r}: {missing} not in its section"
    assert re.fullmatch(r"20\d\d-\d\d-\d\d", cells["date"]), cells["date"]


@pytest.mark.parametrize("row", FIGURES, ids=[row[0][:60] for row in FIGURES])
def test_every_command_runs_scripts_that_exist(row: list[str]) -> None:
    command = dict(zip(HEADER, row))["command"]
    for script in re.findall(r"benchmarks/([\w]+\.py)", command):
        assert (ROOT / "benchmarks" / script).is_file(), script


def test_the_scripts_table_lists_exactly_the_scripts() -> None:
    listed = {name for row in _rows(_part("Benchmark scripts")) for name in re.findall(r"^`([\w.]+)`$", row[0])}
    present = {p.name for p in (ROOT / "benchmarks").glob("*.py")}
    assert listed == present, f"listed, not present: {listed - present}; present, not listed: {present - listed}"


def test_the_number_pattern_reads_figures_not_hashes() -> None:
    assert NUMBER.findall("1,781,045 rollouts/s vs 49,282/s: 36.1x at `769d93d`, 0.105 s") == [
        "1,781,045", "49,282", "36.1", "0.105"]
