"""Exception health per task: the tasks whose rollouts mostly raise, and what they cost.

A broken task (a bad image, a file its verifier needs that is not there) raises on nearly
every rollout whatever the model does, and the fleet-wide exception rate hides it among
thousands of healthy tasks. So the rate is also taken per task_id: how many tasks look
broken, the worst of them (by exception count and by rate), and how many raised on every
rollout.

DuckDB over five columns (task_id, has_exception, exception_type and the two times) counts
rollouts per task; the per-task table (one row a task) is judged in NumPy; holds and exception
types are then summed for the few tasks listed only. Counts and integer-microsecond sums are
exact and every list has a total order, so the output does not depend on thread scheduling.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.measure.columns import NONE_LABEL
from sandbox_fleet.measure.outcomes import HOUR_US
from sandbox_fleet.measure.sql import HOLD_US, registered
from sandbox_fleet.measure.stats import ratio

#: Tasks listed in ``worst`` (and in ``highest_rate``) at most.
TOP = 20
#: A task's rate is judged only over at least this many rollouts with a known exception flag.
MIN_ROWS = 3
#: At or above this exception rate a task looks broken: most of its rollouts raise, against a
#: fleet-wide rate the document puts at 29.4%.
BROKEN_RATE = 0.5

# Counts only: a grouped sum of holds costs more than this whole pass, and holds are needed
# for a few tasks only (the listed ones and those that always raised), summed below.
_PER_TASK = """
SELECT task_id,
       count(*) AS n,
       count(has_exception) AS flagged,
       count(*) FILTER (WHERE has_exception) AS exc
FROM r GROUP BY task_id
"""

_EXCEPTION_US = f"SELECT coalesce(sum({HOLD_US}), 0) FROM r WHERE has_exception"

# Exception rows of the picked tasks by type, each task's most frequent type first
# (ties: name ascending).
_KINDS = f"""
SELECT task_id, coalesce(exception_type, ?) AS kind, count(*) AS k, sum({HOLD_US}) AS us
FROM r WHERE has_exception AND task_id IN (SELECT task_id FROM picked)
GROUP BY ALL ORDER BY task_id, k DESC, kind
"""

#: The rollout columns this measurement reads.
COLUMNS = ("task_id", "started_at", "finished_at", "has_exception", "exception_type")


def _ints(t: pa.Table, name: str) -> np.ndarray:
    return np.asarray(t.column(name).to_numpy(), dtype=np.int64)


def _ranked(task: pa.ChunkedArray, rows: np.ndarray, **desc: np.ndarray) -> np.ndarray:
    """``rows`` (indices into the per-task table) by the ``desc`` keys descending in order,
    then task_id ascending (a total order: task ids are unique)."""
    keys = pa.table({**{k: v[rows] for k, v in desc.items()}, "task_id": task.take(pa.array(rows))})
    order = pc.sort_indices(keys, sort_keys=[*((k, "descending") for k in desc), ("task_id", "ascending")])
    return rows[order.to_numpy()]


def measure_task_health(table: pa.Table, *, top: int = TOP, min_rows: int = MIN_ROWS,
                        broken_rate: float = BROKEN_RATE) -> dict | None:
    """Per-task exception figures over a canonical rollout table; None when no row has a task_id.

    A task is judged when it has a task_id and >= ``min_rows`` rollouts whose exception flag
    is known; it looks broken when judged with an exception rate >= ``broken_rate``.
    ``worst`` lists at most ``top`` broken tasks by exception count descending, then task_id;
    ``highest_rate`` at most ``top`` by rate descending, then exception count, then task_id.
    """
    if min_rows < 1 or top < 0 or not 0 <= broken_rate <= 1:
        raise ValueError("need min_rows >= 1, top >= 0 and 0 <= broken_rate <= 1")
    with registered(r=table.select(list(COLUMNS))) as con:
        per = con.sql(_PER_TASK).to_arrow_table()
        task = per.column("task_id")
        named = np.asarray(pc.is_valid(task).to_numpy(zero_copy_only=False), dtype=bool)
        if not named.any():
            return None
        n, flagged, exc = _ints(per, "n"), _ints(per, "flagged"), _ints(per, "exc")
        judged = named & (flagged >= min_rows)
        # Same IEEE division as exc / flagged in Python, so a reader comparing rates agrees.
        rate = np.divide(exc, flagged, out=np.zeros(len(per)), where=judged)
        broken = judged & (rate >= broken_rate)
        always = judged & (exc == n)  # rate 1, so also broken
        listed = _ranked(task, np.flatnonzero(broken), exc=exc)[:top]
        by_rate = _ranked(task, np.flatnonzero(broken), rate=rate, exc=exc)[:top]
        picked = np.union1d(np.union1d(listed, by_rate), np.flatnonzero(always))
        ((exception_us,),) = con.execute(_EXCEPTION_US).fetchall()
        picked_ids = task.take(pa.array(picked, type=pa.int64()))
        with registered(picked=pa.table({"task_id": picked_ids})):
            kinds = con.execute(_KINDS, [NONE_LABEL]).fetchall()
    ids = dict(zip(picked.tolist(), picked_ids.to_pylist()))
    spent: dict[str, int] = {}
    dominant: dict[str, tuple[str, int]] = {}
    for task_id, kind, k, us in kinds:
        spent[task_id] = spent.get(task_id, 0) + int(us)
        dominant.setdefault(task_id, (kind, int(k)))  # first row of a task is its most frequent type
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
