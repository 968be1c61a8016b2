"""A known cap, stated: the ``cap`` column (``--map cap=workers``) and the ``--cap`` flag.

A harness's worker count (``--workers 40``, ``max_workers``) is the cap its rollouts ran under,
though no metadata file records it. A ``cap`` column states it per row; it must be one value per
job (rows of a job that leave it empty take the job's), and for the rows without a job, one value
for the whole input (the fleet's). ``--cap N`` states the fleet's cap outright and wins over a
column. A stated cap replaces the metadata's for that job, with a warning when they differ; measure
reports it as stated and checks it against the touches rule (``measure/fleetcap.py``).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry.record import Telemetry

COLUMN = "cap column"
FLAG = "--cap"


def column_caps(t: Telemetry) -> Telemetry:
    """``t`` with the caps its ``cap`` column states per job (and the fleet's, for rows without a
    job). InputError when a job states two caps or a cap is below 1."""
    where = ", ".join(t.sources) or "<rollouts>"
    col = t.rollouts.column("cap") if "cap" in t.rollouts.column_names else None
    if col is not None and col.null_count < len(col):
        jobs = t.rollouts.column("job")
        if pa.types.is_dictionary(jobs.type):
            jobs = jobs.cast(pa.string())
        table = pa.table({"job": jobs, "cap": col}).filter(pc.is_valid(col))
        got = table.group_by("job").aggregate([("cap", "min"), ("cap", "max")]).to_pylist()
        for row in sorted(got, key=lambda r: (r["job"] is not None, r["job"] or "")):
            job, lo, hi = row["job"], row["cap_min"], row["cap_max"]
            who = f"job '{job}'" if job is not None else "the rows without a job"
            if lo != hi:
                raise InputError(f"{where}: column cap states {lo} and {hi} for {who}: one cap per job expected")
            _check(lo, f"{where}: column cap for {who}")
            if job is None:
                t.stated_cap = int(lo)
            else:
                if job in t.caps and t.caps[job] != lo:
                    t.warnings.append(f"job '{job}': the cap column states {lo}, its metadata {t.caps[job]}: "
                                      "the stated cap is used")
                t.caps[job] = int(lo)
            t.stated_jobs[job] = COLUMN
    return t


def flag_cap(t: Telemetry, cap: int | None) -> Telemetry:
    """``t`` with ``cap`` (the ``--cap`` flag) as the fleet's stated cap; nothing when None."""
    if cap is not None:
        _check(cap, "`cap`")
        t.stated_cap = int(cap)
        t.stated_jobs[None] = FLAG
    return t


def _check(value: int, what: str) -> None:
    if value < 1:
        raise InputError(f"{what}: a concurrency cap must be at least 1, got {value}")
