"""The terminal's one table style: every command's text output draws its tables here.

A title on the left; column headers in bold over one rule of ``─``; no frame, no column bars and
no edge padding (Rich's ``box.SIMPLE_HEAD`` without its edge: the sweep table's style, the
closest to the plan's plain lines); the first column names the row, on the left, figures on the
right. A block of figures (``pairs``) is the same table without headers: the name in bold, its
figure on the right. Cells come formatted (``numfmt`` for shares and money, ``textout.number``
underneath); ``show`` prints a table, folding a row into ``column: value`` lines when the table is
wider than the console (``textout.print_table``), so a figure is never cut to fit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich import box
from rich.table import Table

#: The one box: a rule under the headers, nothing else (tests/test_table_style.py reads it back).
BOX = box.SIMPLE_HEAD
HEADER_STYLE = "bold"


def grid(title: str | None, columns: Sequence[str], *, left: Iterable[str] | None = None, fold: Iterable[str] = (),
         caption: str | None = None) -> Table:
    """A table of rows under ``columns``: the columns in ``left`` (default: the first, which names the
    row) on the left, the others (figures) on the right; a cell of a ``fold`` column wraps (long
    text), the others never do. ``columns`` may be empty: the caller adds its own (``add_column``)."""
    lefts, folds = set(columns[:1] if left is None else left), set(fold)
    table = Table(title=title, caption=caption, box=BOX, show_edge=False, pad_edge=False, title_justify="left",
                  caption_justify="left", header_style=HEADER_STYLE)
    for name in columns:
        table.add_column(name, justify="left" if name in lefts else "right", no_wrap=name not in folds,
                         overflow="fold")
    return table


def pairs(title: str | None, rows: Iterable[tuple[str, Any]]) -> Table:
    """A block of named figures: one row per (name, figure), the name in bold and whole, the figure on
    the right (wrapped when the console is too narrow for it)."""
    table = Table(title=title, box=BOX, show_edge=False, pad_edge=False, title_justify="left", show_header=False)
    table.add_column(style=HEADER_STYLE, no_wrap=True)  # a name stays whole; a long figure (a basis) wraps
    table.add_column(justify="right", overflow="fold")
    for name, value in rows:
        table.add_row(name, value)
    return table


def show(console: Any, table: Table) -> None:
    """Print ``table`` on ``console``: a grid folded into ``column: value`` lines when it is wider than
    the console (never cut); a block of figures as Rich wraps it (its names are its headers)."""
    from sandbox_fleet.textout import print_table

    if not table.show_header:
        console.print(table)
        return
    print_table(console, table)
