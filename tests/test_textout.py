"""textout prints plain lines byte for byte as Rich's console.print(markup=False, highlight=False,
soft_wrap=True) does, whichever path it takes; the oracle is Rich itself."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from sandbox_fleet.textout import plain_safe, print_lines

# pieces that exercise every rewrite Rich makes: emoji codes, tabs, stripped control codes,
# trailing whitespace, markup-like brackets (not interpreted), wide characters
PIECES = ["a", "plan", " ", "  ", ":", ":smile:", ":thumbs_up:", "10:00:00", "\t", "\r", "\x07", "\x0b",
          "[bold]", "[/]", "\\", "é", "中", "😄", "$1,234.50", "x" * 30]
LINES = st.lists(st.lists(st.sampled_from(PIECES), max_size=8).map("".join), max_size=5)


def _rich(lines: list[str], width: int) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width)
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    return buf.getvalue()


@settings(max_examples=300, deadline=None)
@given(lines=LINES, width=st.sampled_from([8, 40, 80]))
def test_print_lines_matches_rich_byte_for_byte(lines, width):
    out = io.StringIO()
    with redirect_stdout(out):  # the console made on demand writes to sys.stdout too
        print_lines(lines, lambda: Console(width=width))
    assert out.getvalue() == _rich(lines, width)


def test_only_lines_rich_would_print_unchanged_skip_rich(capsys):
    for line in ("PURCHASE ORDER: 3,000 sandboxes", "  BUY 32 x seed-96c at peak", "", "a: b: c"):
        assert plain_safe(line), line
    for line in ("emoji :smile: here", "tab\there", "ends in space ", "bell\x07", "cr\r"):
        assert not plain_safe(line), line
    print_lines(["plain"], lambda: (_ for _ in ()).throw(AssertionError("Rich was asked for")))
    assert capsys.readouterr().out == "plain\n"


def test_number_formats_a_figure_or_marks_it_missing():
    from sandbox_fleet.textout import number

    assert number(None) == "-" and number(None, none="n/a") == "n/a" and number(None, none="") == ""
    assert number(1234.56) == "1,234.6" and number(1234, ",") == "1,234" and number(0.1234, ".1%") == "12.3%"
    # a count carried as a float prints whole; a fraction or a figure below 1 keeps its digits
    assert number(3000.0, ".4g", whole=",.0f") == "3,000" and number(2.5, ".4g", whole=",.0f") == "2.5"
    assert number(0.0, ".4g", whole=",.0f") == "0" and number(12345.6, ".4g", whole=",.0f") == "1.235e+04"
    # a small non-zero figure in significant digits; zero stays in the main format
    assert number(0.0004, ",.1f", small=".3g", below=0.05) == "0.0004"
    assert number(0.0, ",.1f", small=".3g", below=0.05) == "0.0"
    assert number(-0.012, ",.2f", small=".2g", below=0.1) == "-0.012" and number(0.5, ",.2f", small=".2g", below=0.1) == "0.50"
    assert number(42.123, ",.0f", small=".3g", below=100) == "42.1" and number(1234.5, ",.0f", small=".3g", below=100) == "1,234"
    assert number(float("nan"), ",.0f", small=".3g", below=100) == "nan"
