"""Plain lines on stdout, byte for byte as Rich prints them, without importing Rich when it can.

A command whose readable output is plain text (``plan``) prints each line the way
``console.print(line, markup=False, highlight=False, soft_wrap=True)`` does. Rich then changes a
line only through emoji codes (``:name:``), tab expansion, stripped control codes and trailing
whitespace cut at the console width; a line that could meet any of these goes through Rich, so
the bytes never depend on which path printed them (tests/test_textout.py compares both).
"""

from __future__ import annotations

import re
import sys
from typing import Any, Callable, Iterable

#: What Rich might rewrite in an unstyled line: a ``:...:`` pair with no space inside (an emoji
#: code), a tab or a control code it strips (BEL, BS, VT, FF, CR), or trailing whitespace.
_RICH_WOULD_TOUCH = re.compile(r":\S*:|[\t\x07\x08\x0b\x0c\r]|\s$")


#: Characters a terminal acts on instead of showing: C0 controls (ESC starts escape sequences,
#: BEL rings, CR rewrites the line), DEL and the C1 controls (CSI, OSC...).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(value: Any) -> Any:
    """``value`` with every control character in its text shown as an escape (``\\x1b``, ``\\n``):
    names from telemetry reach the terminal as text, never as commands to it."""
    if isinstance(value, str):
        return _CONTROL.sub(_shown, value) if _CONTROL.search(value) else value
    if isinstance(value, dict):
        return {printable(k): printable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable(v) for v in value]
    return value


def _shown(m: re.Match) -> str:
    return repr(m.group(0))[1:-1]


def html_escape(value: Any, quote: bool = True) -> str:
    """``html.escape`` of ``value`` with its control characters shown as escapes first (a page
    must not carry bytes a terminal or a parser acts on when the HTML is viewed as text)."""
    import html

    return html.escape(printable(str(value)), quote=quote)


def plain_safe(line: str) -> bool:
    """Whether Rich would print ``line`` (unstyled, no markup, soft-wrapped) unchanged."""
    return _RICH_WOULD_TOUCH.search(line) is None


def print_lines(lines: Iterable[str], console: Callable[[], Any]) -> None:
    """Print ``lines`` on stdout; through ``console()`` (a Rich console) only when one needs it."""
    lines = list(lines)
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
