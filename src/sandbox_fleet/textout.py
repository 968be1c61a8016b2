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
from collections.abc import Callable, Iterable
from typing import Any

#: What Rich might rewrite in an unstyled line: a ``:...:`` pair with no space inside (an emoji
#: code), a tab or a control code it strips (BEL, BS, VT, FF, CR), or trailing whitespace.
_RICH_WOULD_TOUCH = re.compile(r":\S*:|[\t\x07\x08\x0b\x0c\r]|\s$")


#: Characters that end or break a line in a text file (C0/C1 controls, DEL, Unicode line breaks).
_LINE_BREAKING = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` for one line of a comment or header: control characters as ``\\xNN`` / ``\\uNNNN``
    escapes, so a value (a path with a newline) can never start a line of its own."""
    return _LINE_BREAKING.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                              else f"\\u{ord(m.group()):04x}", text)


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
