"""Exception health per task: the tasks whose rollouts mostly raise, and what they cost.

A broken task (a bad image, a file its verifier needs that is not there) raises on nearly
every rollout whatever the model does, and the fleet-wide exception rate hides it among
thousands of healthy tasks. So the rate is also taken per task_id: how many tasks look
broken, the worst of them (by exception count and by rate), and how many raised on every
rollout.

One dictionary encoding of task_id gives every row a task code; bincounts of the codes count
rollouts per task; the per-task table (one row a task) is judged in NumPy; holds and exception
types are then summed for the few tasks listed only. Counts and integer-microsecond sums are
exact and every list has a total order, so the output does not depend on row order.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.measure.columns import NONE_LABEL, dictionary_codes, timestamps_us
from sandbox_fleet.measure.outcomes import HOUR_US
from sandbox_fleet.measure.stats import group_sums, ratio

#: Tasks listed in ``worst`` (and in ``highest_rate``) at most.
TOP = 20
#: A task's rate is judged only over at least this many rollouts with a known exception flag.
MIN_ROWS = 3
#: At or above this exception rate a task looks broken: most of its rollouts raise, against a
#: fleet-wide rate the document puts at 29.4%.
BROKEN_RATE = 0.5

#: The rollout columns this measurement reads (the time columns only when no ``times`` are given).
COLUMNS = ("task_id", "started_at", "finished_at", "has_exception", "exception_type")


def _mask(col: pa.ChunkedArray) -> np.ndarray:
    """Boolean column -> NumPy bool (null = False)."""
    return np.asarray(pc.fill_null(col, False).to_numpy(zero_copy_only=False), dtype=bool)


def _task_codes(task: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """(code per row, the distinct task ids): ``ids[code]``, a null task_id -> ``len(ids)``.

    One hash pass over the strings; the chunks of a dictionary-encoded chunked array share
    one dictionary, so their indices are codes of the same table.
    """
    if pa.types.is_dictionary(task.type):  # read coded: only the entries in use, no hashing
        return dictionary_codes(task, null_last=True)
    enc = pc.dictionary_encode(task)
    if enc.num_chunks == 0:
        return np.zeros(0, dtype=np.int64), pa.array([], type=pa.string())
    ids = enc.chunk(0).dictionary
    codes = pc.fill_null(pa.chunked_array([c.indices for c in enc.chunks]), len(ids))
    return np.asarray(codes.to_numpy(), dtype=np.int64), ids


def exception_counts(key: pa.ChunkedArray, flag: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array, np.ndarray,
                                                                           np.ndarray, np.ndarray]:
    """(code per row, distinct keys, rollouts, rollouts with a known flag, exceptions) per key.

    The counts run over ``ids`` in order, then one more group for the rows whose key is null
    when there are any (so ``len(counts) - len(ids)`` is 0 or 1). The per-task and per-node
    health share it: one definition of "exceptions of a group" (a null flag is neither).
    """
    codes, ids = _task_codes(key)
    n_groups = len(ids) + 1  # the last counts the rows without a key
    known, true = _mask(pc.is_valid(flag)), _mask(flag)
    n = np.bincount(codes, minlength=n_groups)
    flagged = n - np.bincount(codes[~known], minlength=n_groups)
    exc = np.bincount(codes[true], minlength=n_groups)
    if n[-1] == 0:  # no row without a key: no such group
        n, flagged, exc = n[:-1], flagged[:-1], exc[:-1]
    return codes, ids, n, flagged, exc


def _holds(table: pa.Table, rows: np.ndarray, times: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Hold in integer microseconds of the rows ``rows`` holds (from ``times`` when given)."""
    if times is not None:
        return times[1][rows] - times[0][rows]
    picked = table.select(["started_at", "finished_at"]).filter(pa.array(rows))
    return timestamps_us(picked.column("finished_at")) - timestamps_us(picked.column("started_at"))


def _kinds(types: pa.ChunkedArray, codes: np.ndarray, holds: np.ndarray) -> list[tuple[int, str, int, int]]:
    """(task code, exception type, rows, hold us) per task and type (a null type is NONE_LABEL),
    each task's most frequent type first (ties: name ascending)."""
    if codes.size == 0:
        return []
    if pa.types.is_dictionary(types.type):  # the exception rows of the listed tasks only: few
        types = types.cast(types.type.value_type)
    kind_codes, kinds = _task_codes(pc.fill_null(types, NONE_LABEL))
    names = kinds.to_pylist()
    key = codes.astype(np.int64) * len(names) + kind_codes
    keys, inverse = np.unique(key, return_inverse=True)
    counts = np.bincount(inverse, minlength=keys.size)
    spent = group_sums(inverse, keys.size, holds)
    out = [(int(k) // len(names), names[int(k) % len(names)], int(c), us) for k, c, us in zip(keys, counts, spent)]
    return sorted(out, key=lambda r: (r[0], -r[2], r[1]))


def _ranked(task: pa.ChunkedArray, rows: np.ndarray, **desc: np.ndarray) -> np.ndarray:
    """``rows`` (indices into the per-task table) by the ``desc`` keys descending in order,
    then task_id ascending (a total order: task ids are unique)."""
    keys = pa.table({**{k: v[rows] for k, v in desc.items()}, "task_id": task.take(pa.array(rows))})
    order = pc.sort_indices(keys, sort_keys=[*((k, "descending") for k in desc), ("task_id", "ascending")])
    return rows[order.to_numpy()]


def measure_task_health(table: pa.Table, *, top: int = TOP, min_rows: int = MIN_ROWS,
                        broken_rate: float = BROKEN_RATE,
                        times: tuple[np.ndarray, np.ndarray] | None = None) -> dict | None:
    """Per-task exception figures over a canonical rollout table; None when no row has a task_id.

    A task is judged when it has a task_id and >= ``min_rows`` rollouts whose exception flag
    is known; it looks broken when judged with an exception rate >= ``broken_rate``.
    ``worst`` lists at most ``top`` broken tasks by exception count descending, then task_id;
    ``highest_rate`` at most ``top`` by rate descending, then exception count, then task_id.
    ``times``: (start, finish) in int64 microseconds per row, when the caller has them as
    arrays (then ``table`` needs no time columns).
    """
    if min_rows < 1 or top < 0 or not 0 <= broken_rate <= 1:
        raise ValueError("need min_rows >= 1, top >= 0 and 0 <= broken_rate <= 1")
    codes, ids, n, flagged, exc = exception_counts(table.column("task_id"), table.column("has_exception"))
    if len(ids) == 0:
        return None
    exc_rows = _mask(table.column("has_exception"))
    named = np.arange(n.size) < len(ids)
    task = pa.concat_arrays([ids, pa.nulls(n.size - len(ids), pa.string())])
    judged = named & (flagged >= min_rows)
    # Same IEEE division as exc / flagged in Python, so a reader comparing rates agrees.
    rate = np.divide(exc, flagged, out=np.zeros(n.size), where=judged)
    broken = judged & (rate >= broken_rate)
    always = judged & (exc == n)  # rate 1, so also broken
    listed = _ranked(task, np.flatnonzero(broken), exc=exc)[:top]
    by_rate = _ranked(task, np.flatnonzero(broken), rate=rate, exc=exc)[:top]
    picked = np.union1d(np.union1d(listed, by_rate), np.flatnonzero(always))
    exception_us = group_sums(np.zeros(int(exc_rows.sum()), dtype=np.int64), 1, _holds(table, exc_rows, times))[0]
    # Exception rows of the picked tasks only, by type.
    rows = exc_rows & np.isin(codes, picked)
    types = table.column("exception_type").filter(pa.array(rows))
    kinds = _kinds(types, codes[rows], _holds(table, rows, times))
    ids_of = dict(zip(picked.tolist(), task.take(pa.array(picked, type=pa.int64())).to_pylist()))
    ids = ids_of
    spent: dict[str, int] = {}
    dominant: dict[str, tuple[str, int]] = {}
    for code, kind, k, us in kinds:
        spent[ids[code]] = spent.get(ids[code], 0) + us
        dominant.setdefault(ids[code], (kind, k))  # first row of a task is its most frequent type
    always_us = sum(spent.get(ids[i], 0) for i in np.flatnonzero(always))

    def entry(i: int) -> dict:
        kind, k = dominant.get(ids[i], (None, 0))
        return {
            "task_id": ids[i],
            "rows": int(n[i]),
            "exceptions": int(exc[i]),
            "exception_rate": float(rate[i]),
            "exception_rate_rows": int(flagged[i]),
            "top_exception_type": kind,
            "top_exception_count": k,
            "exception_sandbox_hours": spent.get(ids[i], 0) / HOUR_US,
        }
    return {
        "rows": table.num_rows,
        "tasks": int(named.sum()),
        "rows_without_task": int(n[~named].sum()),
        "exceptions_without_task": int(exc[~named].sum()),
        "exceptions": int(exc.sum()),
        "min_rows": min_rows,
        "broken_rate": broken_rate,
        "top": top,
        "tasks_judged": int(judged.sum()),
        "max_exception_rate": float(rate[judged].max()) if judged.any() else None,
        "tasks_broken": int(broken.sum()),
        "worst": [entry(i) for i in listed],
        "highest_rate": [entry(i) for i in by_rate],
        "tasks_all_exceptions": int(always.sum()),
        "tasks_all_exceptions_sandbox_hours": always_us / HOUR_US,
        "tasks_all_exceptions_share": ratio(always_us, int(exception_us)),
    }
