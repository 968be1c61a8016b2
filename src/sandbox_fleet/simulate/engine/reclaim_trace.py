"""A reclaim trace: which pool lost a node, and when; read by ``simulate --replay --reclaim-trace FILE``
(``plan/fleet_replay.py``) and by a scenario's ``[fleet] reclaim_trace`` (the engine's node pools,
``simulate/engine/node_fleet.py``), one reader for both.

A CSV file with the header ``time,pool`` (or ``time_s,pool``, or ``epoch_s,pool``) and one reclaim a
row. Under ``time`` / ``time_s`` a time is either seconds from the origin (``3600``, ``-5.5``) or an ISO
8601 timestamp, as a cloud's interruption events carry them (``2026-12-07T10:15:00Z``, ``2026-12-07
10:15:00+01:00``); a timestamp without a UTC offset is read as UTC, as ``measure`` reads naive telemetry
times by default, and counted. Under ``epoch_s`` it is seconds since 1970-01-01 UTC (Unix time, as
``date +%s`` prints it). ``pool`` names one of the replay's pools (``reserved``, ``burst``, or ``fleet``)
or, in a scenario, one of the fleet pool's node pools.

The origin (the basis of a timestamp): the replayed telemetry's first measured start. For
``simulate --replay`` that is the history's; in a scenario it is the first start of the telemetry a
``kind = "replay"`` workload of that fleet pool replays (its run time 0, or ``start_s`` before it), and a
pool without one has no wall-clock origin: a timestamp there is a bad row, seconds from the run's start
are not.

A row that cannot be used is never dropped: every row is read, the bad ones counted by reason (the
first of each named by its row), and the file refused in one line (exit 2) when any is bad, since a
trace missing rows would price fewer reclaims than happened.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Optional

from sandbox_fleet.errors import InputError

if TYPE_CHECKING:
    import numpy as np

HEADERS = (("time", "pool"), ("time_s", "pool"), ("epoch_s", "pool"))
EPOCH = ("epoch_s", "pool")  # every time is Unix seconds
US = 1_000_000


@dataclass
class Trace:
    """The trace's reclaims: seconds from the first start and pool index, and how they were given."""

    time_s: np.ndarray
    pool: np.ndarray
    #: rows whose time was an ISO timestamp, and of those, how many had no UTC offset (read as UTC)
    timestamps: int = 0
    naive: int = 0
    rows: int = 0
    pools: list[str] = field(default_factory=list)


def _rows(path: str) -> list[list[str]]:
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            return list(csv.reader(fh))
    except OSError as exc:
        raise InputError(f"{path}: cannot read the reclaim trace ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: the reclaim trace is not UTF-8 text") from None
    except csv.Error as exc:
        raise InputError(f"{path}: the reclaim trace is not CSV ({exc})") from None


def check_header(path: str) -> None:
    """Refuse a trace whose first row is not the header, before any telemetry is read."""
    rows = _rows(path)
    head = tuple(c.strip().lower() for c in rows[0]) if rows else ()
    if head not in HEADERS:
        raise InputError(f"{path}: row 1: a reclaim trace starts with the header 'time,pool' (or 'time_s,pool', "
                         f"or 'epoch_s,pool'), got {','.join(rows[0]) if rows else 'an empty file'!r}")


NO_ORIGIN = ("a timestamp; give seconds from the run's start (a timestamp is measured from the replayed "
             "telemetry's first start, and this pool replays none)")


def _epoch(text: str, origin_us: Optional[int]) -> tuple[Optional[float], bool, bool, str]:
    """An ``epoch_s`` cell: (seconds from the origin, True, False, why not)."""
    try:
        v = float(text.strip())
    except ValueError:
        return None, False, False, f"time {text!r} is not Unix seconds (the header says epoch_s)"
    if not math.isfinite(v):
        return None, False, False, f"time {text!r} is not finite"
    if origin_us is None:
        return None, False, False, f"time {text!r} is Unix seconds, {NO_ORIGIN}"
    return v - origin_us / US, True, False, ""


def _time(text: str, origin_us: Optional[int]) -> tuple[Optional[float], bool, bool, str]:
    """(seconds from the origin, was a timestamp, had no offset, why not) for one cell (``origin_us``
    None: seconds only)."""
    t = text.strip()
    try:
        v = float(t)
    except ValueError:
        pass
    else:
        return (v, False, False, "") if math.isfinite(v) else (None, False, False, f"time {text!r} is not finite")
    try:
        at = datetime.fromisoformat(t.replace("z", "Z"))
    except ValueError:
        return None, False, False, f"time {text!r} is neither seconds from the first start nor an ISO 8601 timestamp"
    if origin_us is None:
        return None, False, False, f"time {text!r} is {NO_ORIGIN}"
    naive = at.tzinfo is None
    if naive:
        at = at.replace(tzinfo=UTC)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    delta = at - epoch
    us = (delta.days * 86_400 + delta.seconds) * US + delta.microseconds
    return (us - origin_us) / US, True, naive, ""


def load_trace(path: str, origin_us: Optional[int], pools: Sequence[str]) -> Trace:
    """The reclaims of ``path`` on the replay's ``pools``, times from the replayed telemetry's first start
    (``origin_us``, microseconds since the epoch; None: no origin, seconds only); one line naming the rows
    when any is bad."""
    import numpy as np

    check_header(path)
    rows = _rows(path)
    read = _epoch if tuple(c.strip().lower() for c in rows[0]) == EPOCH else _time
    times: list[float] = []
    which: list[int] = []
    stamps = naive = used = 0
    bad: dict[str, list] = {}  # reason -> [count, first row, what]

    def reject(reason: str, line: int, what: str) -> None:
        hit = bad.setdefault(reason, [0, line, what])
        hit[0] += 1

    for line, row in enumerate(rows[1:], start=2):
        if not row or all(not c.strip() for c in row):
            continue
        used += 1
        if len(row) != 2:
            reject("columns", line, f"expected 2 columns (time, pool), got {len(row)}")
            continue
        t, stamp, no_offset, why = read(row[0], origin_us)
        name = row[1].strip()
        if t is None:
            reject("time", line, why)
        if name not in pools:
            reject("pool", line, f"pool {name!r} is not one of this replay's pools ({', '.join(pools)})")
        if t is None or name not in pools:
            continue
        times.append(t)
        which.append(list(pools).index(name))
        stamps += stamp
        naive += no_offset
    if bad:
        total = sum(v[0] for v in bad.values())
        parts = "; ".join(f"{reason}: {n:,} (first row {first}: {what})" for reason, (n, first, what) in bad.items())
        raise InputError(f"{path}: {total:,} of {used:,} reclaim rows unusable, none used ({parts})")
    return Trace(time_s=np.array(times, dtype=float), pool=np.array(which, dtype=np.int64), timestamps=stamps,
                 naive=naive, rows=used, pools=list(pools))
