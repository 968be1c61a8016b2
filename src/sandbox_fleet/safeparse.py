"""JSON, TOML and ISO-8601 parsing that raises nothing but InputError, however deep or odd the input.

Python's ``json`` and ``tomllib`` recurse once per nesting level; a file of a million ``[``
raised ``RecursionError`` (a traceback) in whichever reader met it first. Every JSON and
TOML input the tool reads goes through these functions: nesting past the interpreter's
recursion limit (~1,000 levels; no real input nests past ~20) is one line naming the file,
as is any other parse failure. The limit is found by the parser itself, at no cost to the
files that stay under it (a scan of the text for depth cost 5x the parse of an Inspect log).
"""

from __future__ import annotations

import json
import os
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sandbox_fleet.errors import InputError

NESTED = "nested too deeply to parse"


def json_loads(data: str | bytes, where: str, expected: str | None = None) -> Any:
    """``data`` parsed as JSON; ``where`` (a file, or file and member) names it in the error,
    ``expected`` (e.g. "a measure summary") is said after it."""
    tail = f"; expected {expected}" if expected else ""
    try:
        return json.loads(data)
    except RecursionError:
        raise InputError(f"{where}: not valid JSON ({NESTED}){tail}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}){tail}") from None
    except (ValueError, TypeError) as exc:  # bytes in no UTF encoding, integers of >4300 digits
        raise InputError(f"{where}: not valid JSON ({first_line(exc)}){tail}") from None


def toml_loads(text: str, where: str) -> dict[str, Any]:
    """``text`` parsed as TOML; ``where`` names the file in the error."""
    import tomllib  # here, not at import: a measure of Parquet or JSON never parses TOML (tests/test_startup.py)

    try:
        return tomllib.loads(text)
    except RecursionError:
        raise InputError(f"{where}: not valid TOML ({NESTED})") from None
    except (tomllib.TOMLDecodeError, ValueError, TypeError) as exc:
        raise InputError(f"{where}: not valid TOML ({first_line(exc)})") from None


def first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line (its class name when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


#: The largest side input (summary, scenario, catalog, thresholds) read: parsed, text costs several
#: times its size in objects, and no real one comes near (a measure summary of 40k models is 80 MB).
MAX_INPUT_BYTES = 512 << 20

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def read_bytes(path: str | Path, what: str, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (a ``what``), at most ``max_bytes``: the one reader of
    every side input. A FIFO (which would block forever), a device (``/dev/zero``: endless), a
    socket or a folder is refused before a byte is read; every failure is one line naming the file."""
    p = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"{p}: {what} not found") from None
    except OSError as exc:
        raise InputError(f"{p}: cannot read {what} ({_reason(exc)})") from None
    try:
        mode = os.fstat(fd)
        if stat.S_ISDIR(mode.st_mode):
            raise InputError(f"{p}: is a folder; expected a {what}")
        if not stat.S_ISREG(mode.st_mode):
            kind = next((name for test, name in _KINDS if test(mode.st_mode)), "not a regular file")
            raise InputError(f"{p}: is {kind}, not a regular file; expected a {what}")
        if mode.st_size > max_bytes:
            raise InputError(f"{p}: {mode.st_size:,} bytes, over the {max_bytes:,} a {what} may have")
        chunks, size = [], 0
        while chunk := os.read(fd, min(1 << 20, max_bytes + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:  # grew while read
                raise InputError(f"{p}: over the {max_bytes:,} bytes a {what} may have")
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"{p}: cannot read {what} ({_reason(exc)})") from None
    finally:
        os.close(fd)


def _reason(exc: OSError) -> str:
    return os.strerror(exc.errno) if exc.errno else str(exc)


def read_text(path: str | Path, what: str) -> str:
    """The UTF-8 text of ``path`` (a ``what``: "scenario file", "node catalog"...) by ``read_bytes``;
    every way it can fail to read is one line naming the file, never a bare "Input/output error"."""
    data = read_bytes(path, what)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: cannot read {what} (not UTF-8: {exc.reason} at byte {exc.start:,})") from None
    # universal newlines, as a text-mode read gives them
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def load_toml(path: str | Path, what: str) -> dict[str, Any]:
    """``read_text`` then ``toml_loads``: a TOML file, or one line naming it."""
    return toml_loads(read_text(path, what), str(path))


def iso_instant(value: object, *, naive_is_utc: bool = True) -> datetime | None:
    """An ISO-8601 date or time (``Z`` allowed) as an aware datetime in UTC, else None.

    A time without an offset is UTC when ``naive_is_utc`` (telemetry and the options that filter it:
    producers write UTC), and None otherwise: where a stamp is one this tool wrote with its offset,
    a naive one is not its own and a guessed zone would move the instant by hours."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        if not naive_is_utc:
            return None
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def option_instant(text: object, option: str, example: str) -> datetime:
    """The ISO-8601 date or time an option gives (naive = UTC), in UTC; one line naming the option otherwise."""
    parsed = iso_instant(str(text).strip())
    if parsed is None:
        raise InputError(f"`{option}`: '{text}' is not an ISO-8601 date or time (e.g. {example})")
    return parsed
