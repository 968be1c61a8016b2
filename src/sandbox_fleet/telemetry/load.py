"""The telemetry entry points: ``load_telemetry`` (any PATHs) and ``filter_rollouts``."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.errors import InputError
from sandbox_fleet.safeparse import option_instant
from sandbox_fleet.telemetry.options import ReadOptions, make_options, warn_once
from sandbox_fleet.telemetry.record import ROLLOUT_SCHEMA, TS, Telemetry, coded_schema
from sandbox_fleet.telemetry.sniff import sniff
from sandbox_fleet.telemetry.stated import column_caps
from sandbox_fleet.telemetry.table import read_table
from sandbox_fleet.telemetry.validate import clean_batch, drop_duplicates


def _raw_batches(path: str, fmt: str, opts: ReadOptions, tel: Telemetry):
    # Each reader is imported when its format is read (the tasks reader pulls in a process pool).
    if fmt == "rst":
        from sandbox_fleet.telemetry.rst import read_rst

        yield from read_rst(Path(path), opts.progress, opts.coded)
    elif fmt == "table":
        yield from read_table(path, opts.column_map, opts.progress, tel, coded=opts.coded)
    elif fmt == "inspect":
        from sandbox_fleet.telemetry.inspect_log import read_inspect

        if not Path(path).exists():
            raise InputError(f"{path}: no such file or directory")
        yield read_inspect(Path(path), opts, tel)
    else:
        from sandbox_fleet.telemetry.harbor import read_harbor
        from sandbox_fleet.telemetry.terminal_bench import read_terminal_bench

        target = Path(path)
        if not target.exists():
            raise InputError(f"{path}: no such file or directory")
        if target.is_file():
            # result.json / results.json given directly: read their folder.
            target = target.parent
        reader = read_harbor if fmt == "harbor" else read_terminal_bench
        yield reader(target, opts, tel)


def _read_one(path: str, opts: ReadOptions, tel: Telemetry) -> tuple[list[pa.Table], int]:
    fmt = opts.fmt or sniff(path)
    if opts.column_map and fmt != "table":
        warn_once(tel, f"--map applies to Parquet/CSV/JSONL tables only; ignored for {fmt} input {path}")
    state: dict = {}
    tables, seen = [], 0
    rejected_before = sum(tel.rejected.values())
    for raw in _raw_batches(path, fmt, opts, tel):
        seen += raw.num_rows
        tables.append(clean_batch(raw, path, opts, tel, state))
    if seen == 0 and sum(tel.rejected.values()) == rejected_before:
        raise InputError(f"{path}: no rollouts in this input (empty)")
    return tables, seen


def cleaned_batches(path: str, opts: ReadOptions, tel: Telemetry):
    """The batches of one PATH as ``clean_batch`` leaves them, one at a time and in input order:
    what ``load_telemetry`` concatenates, for a caller that cannot hold them all (measure out of core)."""
    fmt = opts.fmt or sniff(path)
    state: dict = {}
    for raw in _raw_batches(path, fmt, opts, tel):
        yield clean_batch(raw, path, opts, tel, state)


def load_telemetry(
    paths: list[str] | str | Path,
    *,
    tasks: str | None = None,
    read: ReadOptions | None = None,
    progress: bool = True,
    cache_dir: str | None = None,
    coded: bool = False,
    **flags: Any,
) -> Telemetry:
    """Read every PATH (format sniffed unless the reader options force one) into one canonical Telemetry.

    Rows are validated and unusable ones counted by reason in ``rejected``; duplicate
    ids across all PATHs keep the first in input order. ``tasks`` adds the task table.
    ``coded``: the CODED_COLUMNS (task_id, model, job, exception_type) come as ``record.CODED``
    dictionaries, one dictionary per column shared by every chunk, instead of strings.
    ``read``: the reader options already validated (``options.make_options``, as the stages pass
    them); without it ``flags`` (``fmt``, ``column_map``, ``time_unit``, ``assume_tz``, ``reward_key``,
    ``latest_time``, ``allow_any_time``, ``score``) are validated here by ``make_options``.
    ``progress`` and ``coded`` are the caller's either way.
    """
    if read is not None and flags:
        raise TypeError(f"load_telemetry: give the reader options as read= or as keywords, not both ({', '.join(flags)})")
    opts = replace(read if read is not None else make_options(**flags), progress=progress, coded=coded)
    if isinstance(paths, (str, Path)):
        paths = [str(paths)]  # one PATH given bare; iterating a str would read characters
    if not paths:
        raise InputError("no telemetry PATH given")
    tel = Telemetry(rollouts=ROLLOUT_SCHEMA.empty_table())
    tables: list[pa.Table] = []
    total = 0
    for path in paths:
        got, seen = _read_one(str(path), opts, tel)
        tables.extend(got)
        total += seen
        tel.sources.append(str(path))
    relaxed = pa.schema([f.with_nullable(True) for f in ROLLOUT_SCHEMA])
    if coded:
        relaxed = coded_schema(relaxed)
    rollouts = pa.concat_tables([t.cast(relaxed) for t in tables]) if tables else relaxed.empty_table()
    if coded:  # each row group brought its own dictionary: one per column from here on
        rollouts = rollouts.unify_dictionaries()
    rollouts = drop_duplicates(rollouts, tel)
    if rollouts.num_rows == 0:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(tel.rejected.items()))
        raise InputError(f"{', '.join(str(p) for p in paths)}: all {total} rows were rejected ({reasons}); "
                         "nothing to measure")
    tel.rollouts = rollouts
    column_caps(tel)
    if tasks is not None:
        from sandbox_fleet.telemetry.tasks import read_tasks_with_warnings

        tel.tasks, task_warnings = read_tasks_with_warnings(tasks, progress=progress, cache_dir=cache_dir)
        for w in task_warnings:
            warn_once(tel, w)
    return tel


def parse_instant(text: str, option: str) -> datetime:
    """An ISO-8601 date or time; naive means UTC."""
    return option_instant(text, option, "2026-11-29T08:00:00Z")


def rollout_mask(rollouts: pa.Table, *, models: list[str] | None = None, since: str | None = None,
                 until: str | None = None):
    """The rows ``filter_rollouts`` keeps (a boolean array, nulls false), or None when no filter is given."""
    conds = []
    if models:
        conds.append(pc.is_in(rollouts.column("model"), value_set=pa.array(models, pa.string())))
    if since is not None:
        conds.append(pc.greater_equal(rollouts.column("started_at"), pa.scalar(parse_instant(since, "since"), TS)))
    if until is not None:
        conds.append(pc.less(rollouts.column("started_at"), pa.scalar(parse_instant(until, "until"), TS)))
    if not conds:
        return None
    mask = conds[0]
    for c in conds[1:]:
        mask = pc.and_(mask, c)
    return pc.fill_null(mask, False)


def filter_rollouts(
    t: Telemetry,
    *,
    models: list[str] | None = None,
    since: str | None = None,
    until: str | None = None,
) -> Telemetry:
    """Keep rollouts of ``models`` started in [since, until); caps of jobs no longer present go."""
    rollouts = t.rollouts
    mask = rollout_mask(rollouts, models=models, since=since, until=until)
    if mask is None:
        return t
    kept = rollouts.filter(mask)
    if kept.num_rows == 0:
        raise InputError(f"no rollouts match `models`/`since`/`until` (of {rollouts.num_rows} rows read)")
    jobs = set(kept.column("job").drop_null().unique().to_pylist())
    caps = {job: cap for job, cap in t.caps.items() if job in jobs}
    return replace(t, rollouts=kept, caps=caps, sources=list(t.sources), warnings=list(t.warnings), rejected=dict(t.rejected))
