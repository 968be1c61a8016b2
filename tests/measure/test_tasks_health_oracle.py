"""by_task (NumPy codes and bincounts) against DuckDB as the oracle on random tables.

DuckDB groups the rows per task and per (task, type) in SQL; the ranking and the figures
are then built from those rows in plain Python, independently of the code under test.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from sandbox_fleet.measure.columns import NONE_LABEL
from sandbox_fleet.measure.tasks_health import measure_task_health

from .helpers import rollouts

HOUR_US = 3_600_000_000


def _table(seed: int, n: int = 400):
    rng = np.random.default_rng(seed)
    names = [f"t{i:02d}" for i in range(int(rng.integers(1, 30)))]
    task = [None if rng.random() < 0.05 else names[int(rng.integers(len(names)))] for _ in range(n)]
    # Some tasks raise far more often than others, so some look broken.
    p = {t: rng.random() for t in names}
    flag = [None if rng.random() < 0.05 else bool(rng.random() < p.get(t, 0.3)) for t in task]
    kind = [rng.choice(["Timeout", "OOM", "Exit", NONE_LABEL]) if rng.random() < 0.9 else None for _ in task]
    starts = np.sort(rng.uniform(0, 1e5, n)).tolist()
    holds = rng.integers(0, 10_000, n).tolist()
    return rollouts(starts, [s + h for s, h in zip(starts, holds)], task_id=task,
                    has_exception=flag, exception_type=kind)


def _oracle(t: pa.Table, top: int, min_rows: int, broken_rate: float) -> dict:
    con = duckdb.connect()
    con.register("r", t)
    hold = "(epoch_us(finished_at) - epoch_us(started_at))"
    per = con.execute("SELECT task_id, count(*), count(has_exception), count(*) FILTER (WHERE has_exception) "
                      "FROM r GROUP BY task_id").fetchall()
    kinds = con.execute(f"SELECT task_id, coalesce(exception_type, ?) AS kind, count(*) AS k, sum({hold}) "
                        "FROM r WHERE has_exception AND task_id IS NOT NULL GROUP BY ALL "
                        "ORDER BY task_id, k DESC, kind", [NONE_LABEL]).fetchall()
    ((exc_us,),) = con.execute(f"SELECT coalesce(sum({hold}), 0) FROM r WHERE has_exception").fetchall()
    spent, dominant = {}, {}
    for task, kind, k, us in kinds:
        spent[task] = spent.get(task, 0) + us
        dominant.setdefault(task, (kind, k))
    named = [row for row in per if row[0] is not None]
    judged = [row for row in named if row[2] >= min_rows]
    rate = {row[0]: row[3] / row[2] for row in judged}
    broken = [row for row in judged if rate[row[0]] >= broken_rate]
    always = [row for row in judged if row[3] == row[1]]
    always_us = sum(spent.get(row[0], 0) for row in always)

    def entry(row):
        kind, k = dominant.get(row[0], (None, 0))
        return {"task_id": row[0], "rows": row[1], "exceptions": row[3], "exception_rate": rate[row[0]],
                "exception_rate_rows": row[2], "top_exception_type": kind, "top_exception_count": k,
                "exception_sandbox_hours": spent.get(row[0], 0) / HOUR_US}
    return {
        "rows": t.num_rows, "tasks": len(named),
        "rows_without_task": sum(row[1] for row in per if row[0] is None),
        "exceptions_without_task": sum(row[3] for row in per if row[0] is None),
        "exceptions": sum(row[3] for row in per), "min_rows": min_rows, "broken_rate": broken_rate,
        "top": top, "tasks_judged": len(judged), "max_exception_rate": max(rate.values(), default=None),
        "tasks_broken": len(broken),
        "worst": [entry(r) for r in sorted(broken, key=lambda r: (-r[3], r[0]))[:top]],
        "highest_rate": [entry(r) for r in sorted(broken, key=lambda r: (-rate[r[0]], -r[3], r[0]))[:top]],
        "tasks_all_exceptions": len(always), "tasks_all_exceptions_sandbox_hours": always_us / HOUR_US,
        "tasks_all_exceptions_share": always_us / exc_us if exc_us else None,
    }


@pytest.mark.parametrize("seed", range(12))
def test_matches_duckdb(seed):
    t = _table(seed)
    top, min_rows, rate = (5, 3, 0.5) if seed % 2 else (20, 1, 0.0)
    got = measure_task_health(t, top=top, min_rows=min_rows, broken_rate=rate)
    assert got == _oracle(t, top, min_rows, rate)


def test_matches_duckdb_over_several_chunks():
    t = _table(99, n=900)
    chunked = pa.concat_tables([t.slice(0, 300), t.slice(300, 1), t.slice(301)])
    assert chunked.column("task_id").num_chunks >= 2
    assert measure_task_health(chunked) == _oracle(t, 20, 3, 0.5)
