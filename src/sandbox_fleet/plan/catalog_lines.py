"""The line of a key in a ``[[TABLE]]`` catalog file, for errors tomllib cannot place.

tomllib gives a line only for syntax errors; a value Pydantic refuses (a negative price, an
unknown key) is found again by scanning the text: the ``index``-th ``[[TABLE]]`` header, then the
first ``key =`` line before the next table header. A key written inside an inline table or a
dotted key is not found; the entry's header line stands in for it.
"""

from __future__ import annotations

import re
from typing import Optional

_HEADER = re.compile(r"^\s*\[")


def key_line(text: str, table: str, index: int, key: str) -> Optional[int]:
    """1-based line of ``key`` in the ``index``-th (0-based) ``[[table]]`` of ``text``; the table's
    header line when the key is not written there; None when there is no such table."""
    start = re.compile(rf"^\s*\[\[\s*{re.escape(table)}\s*\]\]")
    assign = re.compile(rf"""^\s*(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*=""")
    seen, header = -1, None
    for number, line in enumerate(text.splitlines(), start=1):
        if start.match(line):
            seen += 1
            if seen > index:
                break
            header = number if seen == index else None
        elif _HEADER.match(line) and header is not None:
            break  # another table: the entry ended without the key
        elif header is not None and assign.match(line):
            return number
    return header
