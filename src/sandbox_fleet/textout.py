"""Plain lines on stdout, byte for byte as Rich prints them, without importing Rich when it can.

A command whose readable output is plain text (``plan``) prints each line the way
``console.print(line, markup=False, highlight=False, soft_wrap=True)`` does. Rich then changes a
line only through emoji codes (``:name:``), tab expansion, stripped control codes and trailing
whitespace cut at the console width; a line that could meet any of these goes through Rich, so
the bytes never depend on which path printed them (tests/test_textout.py compares both).

Also the helpers every renderer shares: one figure as text (``number``, the one null-aware number
format), lines folded to a width with a hanging indent (commands to copy never folded), tables
folded to ``column: value`` rows when wider than the console, and the one progress bar a long
command shows (Rich is imported only inside them).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

#: What Rich might rewrite in an unstyled line: a ``:...:`` pair with no space inside (an emoji
#: code), a tab or a control code it strips (BEL, BS, VT, FF, CR), or trailing whitespace.
_RICH_WOULD_TOUCH = re.compile(r":\S*:|[\t\x07\x08\x0b\x0c\r]|\s$")


#: What ``one_line`` rewrites: what ends or breaks a line in a text file (C0/C1 controls, DEL,
#: Unicode line breaks) and the escape character itself.
_ESCAPED = re.compile("[\\\\\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _escape(m: re.Match) -> str:
    ch = m.group()
    if ch == "\\":
        return "\\\\"
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def one_line(text: str) -> str:
    """``text`` for one line of a comment, a header or a terminal: control characters as ``\\xNN`` /
    ``\\uNNNN`` escapes, so a value (a path with a newline) can never start a line of its own, and
    the escape character first doubled, so two distinct names never read alike (``a<LF>b`` is
    ``a\\x0ab``, the six characters ``a\\x0ab`` are ``a\\\\x0ab``). The one escaping of every line
    the user reads (terminal, HTML, metrics labels, comments)."""
    return _ESCAPED.sub(_escape, text) if _ESCAPED.search(text) else text


def printable(value: Any, markup: bool = False) -> Any:
    """``value`` (text, or dicts, lists and Pydantic models of it) with every control character shown as its
    ``one_line`` escape: names from telemetry reach a terminal as text (an ESC starts an escape
    sequence, a CR rewrites the line), never as commands to it. ``markup``: also escape what
    Rich would read as markup (a model named ``[/red]`` is text, not a closing tag)."""
    if isinstance(value, str):
        text = one_line(value)
        if markup and "[" in text:
            from rich.markup import escape

            text = escape(text)
        return text
    if isinstance(value, dict):
        return {printable(k, markup): printable(v, markup) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable(v, markup) for v in value]
    fields = getattr(type(value), "model_fields", None)  # a stage's model: the same model, its text escaped
    if fields is not None:
        return value.model_copy(update={name: printable(getattr(value, name), markup) for name in fields})
    return value


def number(value: float | None, spec: str = ",.1f", *, none: str = "-", whole: str | None = None,
           small: str | None = None, below: float = 0.0) -> str:
    """One figure as text, the way every renderer prints figures: ``none`` when it is missing
    (None), else ``format(value, spec)``; but an integer-valued figure of magnitude >= 1 in
    ``whole`` (a count carried as a float), and a non-zero one of magnitude below ``below`` in
    ``small`` (one ``spec`` would round to zero or to too few digits)."""
    if value is None:
        return none
    if whole is not None and float(value).is_integer() and abs(value) >= 1:
        return format(value, whole)
    if small is not None and value != 0 and abs(value) < below:
        return format(value, small)
    return format(value, spec)


def html_escape(value: Any, quote: bool = True) -> str:
    """``html.escape`` of ``value`` with its control characters shown as escapes first (a page
    must not carry bytes a terminal or a parser acts on when the HTML is viewed as text)."""
    import html

    return html.escape(printable(str(value)), quote=quote)


def plain_safe(line: str) -> bool:
    """Whether Rich would print ``line`` (unstyled, no markup, soft-wrapped) unchanged."""
    return _RICH_WOULD_TOUCH.search(line) is None


def print_lines(lines: Iterable[str], console: Callable[[], Any],
                emphasis: Callable[[list[str]], list[bool]] | None = None) -> None:
    """Print ``lines`` on stdout; through ``console()`` (a Rich console) only when one needs it.
    ``emphasis(lines)``: which lines to print in bold where Rich would style text (a colour
    terminal); elsewhere (a pipe, a file, ``NO_COLOR``) the bytes are the same as without it."""
    lines = list(lines)
    if emphasis is not None and plain_stdout_width() is None and console().is_terminal:
        out = console()
        for line, bold in zip(lines, emphasis(lines)):
            out.print(line, markup=False, highlight=False, soft_wrap=True,
                      style="bold" if bold and not out.no_color else None)
        return
    if all(plain_safe(line) for line in lines):
        text = "".join(f"{line}\n" for line in lines)
        try:
            encodable = text.encode(sys.stdout.encoding or "utf-8") is not None
        except (UnicodeEncodeError, LookupError):
            encodable = False  # Rich raises the encoding error with its own hint: let it
        if encodable:
            sys.stdout.write(text)
            sys.stdout.flush()
            return
    out = console()
    for line in lines:
        out.print(line, markup=False, highlight=False, soft_wrap=True)


def plain_stdout_width() -> int | None:
    """The width ``rich.console.Console()`` on stdout would lay text out in, when it would print no
    colour and no style at all (stdout not a terminal, nor forced to be one); None when it would, or
    when only Rich can tell (Windows, Jupyter, IDLE). Mirrors Rich 13-15's ``is_terminal`` and
    ``size``: ``TTY_COMPATIBLE``, ``FORCE_COLOR``, ``isatty``; ``COLUMNS``, else the first of stdin,
    stdout and stderr that is a terminal, else 80 (tests/test_textout.py holds it to Rich's own)."""
    import builtins
    import os

    if sys.platform == "win32" or hasattr(builtins, "get_ipython") or \
            getattr(sys.stdin, "__module__", "").startswith("idlelib"):
        return None
    env = os.environ
    compatible, force = env.get("TTY_COMPATIBLE", ""), env.get("FORCE_COLOR")
    if compatible == "1" or (compatible != "0" and force is not None and force != ""):
        return None
    if compatible != "0" and force is None:
        try:
            if sys.stdout is not None and sys.stdout.isatty():
                return None
        except ValueError:  # a closed stream: Rich treats it as no terminal too
            pass
    columns = env.get("COLUMNS")
    if columns is not None and columns.isdigit():
        return int(columns)
    width = None
    for fd in (_fileno(sys.__stdin__, 0), _fileno(sys.__stdout__, 1), _fileno(sys.__stderr__, 2)):
        try:
            width = os.get_terminal_size(fd)[0]
            break
        except (AttributeError, ValueError, OSError):  # not a terminal
            continue
    return width or 80


def _fileno(stream: Any, default: int) -> int:
    try:
        return stream.fileno()
    except Exception:  # None, or a stream without a descriptor: Rich falls back to the standard one
        return default


#: A line the user is asked to copy and paste (a command): printed whole, never wrapped.
_COMMAND = re.compile(r"^\s*(\$ )?sandbox-fleet \S")
#: How far a wrapped line's continuation is indented past the line's own indent.
HANGING_INDENT = 4


def terminal_width(default: int = 80) -> int:
    """Columns to lay text out in: the terminal's, ``$COLUMNS``, else ``default`` (a pipe or a file)."""
    import shutil

    return shutil.get_terminal_size((default, 24)).columns


def is_command(line: str) -> bool:
    """Whether ``line`` is a command to copy (it starts with ``sandbox-fleet`` or ``$ sandbox-fleet``)."""
    return _COMMAND.match(line) is not None


def wrap_line(line: str, width: int) -> list[str]:
    """``line`` folded at spaces to ``width`` columns, continuations indented by ``HANGING_INDENT``
    past its own indent. A word is never split (a number or path longer than the room stays whole
    on its own line) and a command to copy is never wrapped."""
    if len(line) <= width or is_command(line):
        return [line]
    import textwrap

    indent = line[: len(line) - len(line.lstrip(" "))]
    return textwrap.wrap(line.strip(" "), width=width, initial_indent=indent,
                         subsequent_indent=indent + " " * HANGING_INDENT, break_long_words=False,
                         break_on_hyphens=False) or [line]


def wrap_lines(lines: Iterable[str], width: int | None) -> list[str]:
    """Every line through :func:`wrap_line` (``width`` None: unchanged)."""
    if width is None:
        return list(lines)
    return [part for line in lines for part in wrap_line(line, width)]



def _plain(cell: Any) -> str:
    from rich.text import Text

    return Text.from_markup(cell).plain if isinstance(cell, str) else getattr(cell, "plain", str(cell))


def print_table(console: Any, table: Any) -> None:
    """Print a Rich table, or, when it is wider than the console, each row as its first cell
    followed by indented ``column: value`` lines (folded with a hanging indent): a number is
    never cut to fit and every column keeps its whole header."""
    from rich.measure import Measurement

    # measured without the console's limit (Rich clamps a measurement to the room it is given)
    if Measurement.get(console, console.options.update(max_width=1 << 20), table).maximum <= console.width:
        console.print(table)
        return
    lines = [_plain(table.title)] if table.title else []
    cols = table.columns
    for row in zip(*(list(c.cells) for c in cols)):
        lines.append(_plain(row[0]))
        lines += pack_pairs([f"{_plain(c.header)}: {_plain(cell)}" for c, cell in zip(cols[1:], row[1:])],
                            console.width, indent="  ")
    if table.caption:
        lines.append(_plain(table.caption))
    for line in wrap_lines(lines, console.width):
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def pack_pairs(pairs: list[str], width: int, indent: str = "  ", sep: str = "; ") -> list[str]:
    """``key: value`` pairs on as few lines of ``width`` as fit, a pair never split across lines."""
    lines: list[str] = []
    for pair in pairs:
        if lines and len(lines[-1]) + len(sep) + len(pair) <= width:
            lines[-1] += sep + pair
        else:
            lines.append(indent + pair)
    return lines


class Ticker:
    """Advances one progress bar (a no-op without one); ``expect(n)`` makes room for ``n`` more."""

    def __init__(self, bar=None, task=None):
        self.bar, self.task = bar, task

    def __call__(self) -> None:
        if self.bar is not None:
            self.bar.advance(self.task)
            self.bar.refresh()

    def expect(self, n: int) -> None:
        """Grow the total when more work than estimated is coming (an estimate never reads past 100%)."""
        if self.bar is not None:
            t = self.bar.tasks[0]
            if t.total is not None and t.completed + n > t.total:
                self.bar.update(self.task, total=t.completed + n)


@contextmanager
def progress_bar(enabled: bool, total: int, label: str) -> Iterator[Ticker]:
    """One transient bar on stderr with elapsed time and ETA, its total known up front. It redraws
    when it advances, with no refresh thread, so worker pools still start by fork under it."""
    if not enabled:
        yield Ticker()
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("eta"), TimeRemainingColumn(), console=Console(stderr=True), transient=True,
                   auto_refresh=False)
    with bar:
        task = bar.add_task(label, total=total)
        bar.refresh()
        yield Ticker(bar, task)
