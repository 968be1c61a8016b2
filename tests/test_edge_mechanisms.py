"""The issue 42 mechanisms at unit level: the one side-input reader, injective escaping, gates that
fail closed, read-back ranges. The CLI cases are in tests/e2e/test_hostile_edges.py."""

from __future__ import annotations

import math
import os
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox_fleet.errors import InputError
from sandbox_fleet.report.checks.result import band_above, band_below
from sandbox_fleet.report.thresholds import Above, Below
from sandbox_fleet.safeparse import read_bytes, read_text
from sandbox_fleet.textout import one_line


def _decode(text: str) -> str:
    """The inverse of one_line, written from its documented rules (the oracle)."""
    return re.sub(r"\\(\\|x[0-9a-f]{2}|u[0-9a-f]{4})",
                  lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1)[1:], 16)), text)


@given(st.text())
def test_one_line_is_injective_and_has_no_line_breaks(text):
    shown = one_line(text)
    assert _decode(shown) == text
    assert not re.search("[\x00-\x1f\x7f-\x9f\u2028\u2029]", shown)


def test_the_two_names_of_issue_42_read_apart():
    assert one_line("a\nb") == "a\\x0ab" and one_line("a\\x0ab") == "a\\\\x0ab"


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_gate_fails_closed_on_a_figure_that_is_no_number(value):
    assert band_above(value, Above(warn_above=0.1, fail_above=0.2, for_s=60))[0] == "fail"
    assert band_below(value, Below(warn_below=0.5, fail_below=0.2, for_s=60))[0] == "fail"


def test_a_gate_still_judges_finite_figures():
    band = Above(warn_above=0.1, fail_above=0.2, for_s=60)
    assert [band_above(v, band)[0] for v in (0.05, 0.15, 0.25)] == ["pass", "warn", "fail"]


def test_the_reader_refuses_what_is_no_regular_file(tmp_path):
    os.mkfifo(tmp_path / "f.toml")
    with pytest.raises(InputError, match="is a FIFO, not a regular file"):
        read_text(tmp_path / "f.toml", "scenario file")
    with pytest.raises(InputError, match="is a character device"):
        read_text("/dev/zero", "plan summary file")
    with pytest.raises(InputError, match="is a folder"):
        read_text(tmp_path, "node catalog")
    with pytest.raises(InputError, match="not found"):
        read_text(tmp_path / "none.toml", "node catalog")


def test_the_reader_caps_the_size(tmp_path):
    (tmp_path / "a.json").write_bytes(b"x" * 101)
    with pytest.raises(InputError, match="101 bytes, over the 100"):
        read_bytes(tmp_path / "a.json", "summary", max_bytes=100)
    assert read_bytes(tmp_path / "a.json", "summary", max_bytes=101) == b"x" * 101


def test_the_reader_keeps_text_mode_newlines(tmp_path):
    (tmp_path / "a.toml").write_bytes(b"a = 1\r\nb = 2\r")
    assert read_text(tmp_path / "a.toml", "scenario file") == "a = 1\nb = 2\n"


def test_read_back_counts_and_numbers_are_ranged():
    from sandbox_fleet import contract
    from sandbox_fleet.backtest.model import BacktestSummary

    fig = {"actual": 100.0, "predicted": 90.0, "interval": [80.0, 110.0], "error": -0.1, "within_interval": True}
    doc = {"schema_version": 1, "kind": "backtest", "sources": ["x"], "rows": 100,
           "split": {"by": "fraction", "a_rows": 50, "b_rows": 50, "min_rows": 5, "b_cap": 4, "a_cap": 4},
           "seed": 0, "seeds": 10, "interval_level": 0.95, "figures": {"makespan_s": fig}, "oracle": {},
           "drift": {"detected": False, "alpha": 0.05, "correction": "holm-bonferroni", "tests": []},
           "verdict": "v", "basis": "b"}
    assert contract.parse(BacktestSummary, doc).figures["makespan_s"].error == -0.1  # a signed float stays
    for path, bad, named in ((("rows",), -1, "key rows"), (("split", "b_cap"), 2**63, "key split.b_cap"),
                             (("figures", "makespan_s", "error"), math.nan, "key figures.makespan_s.error")):
        forged = {**doc, "split": dict(doc["split"]), "figures": {"makespan_s": dict(fig)}}
        node = forged
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = bad
        with pytest.raises(InputError, match=re.escape(named)):
            contract.parse(BacktestSummary, forged, "bt.json")
