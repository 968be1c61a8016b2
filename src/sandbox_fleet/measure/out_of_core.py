"""measure out of core: an input larger than the memory budget, measured through DuckDB on disk.

The in-memory path holds every column of every row (~190 bytes a row at its peak, docs/measure.md).
Past the budget (``limits.memory_limit_bytes``: 75% of the least of available memory, the cgroup's
room and the address-space room; or ``--memory-budget-gb``) the same ``measure`` command reads the
input one batch at a time with the same readers and cleaning (``telemetry.load.cleaned_batches``),
appends each batch to a DuckDB database in a temp folder (inside the output's folder, else the
system temp dir; never next to an input; removed after), and DuckDB sorts and aggregates there,
spilling past its own memory limit. What comes back feeds the SAME figure functions as the
in-memory path, so no figure is written twice:

- the concurrency figures: DuckDB sorts the +1/-1 events by time and streams them; a running sum
  with a carry across batches, read after each instant's last event, builds the ``Sweep`` (times, level: 12 bytes an instant,
  not ~190 a row) that ``concurrency.sweep_figures`` reads, checked against the exact HUGEINT sum of
  holds as the in-memory sweep is;
- the hold order statistics: DuckDB sorts the holds (integer microseconds) and streams them in
  order; the ranks ``stats.order_ranks`` names are picked as they pass, and ``stats.summary``
  computes min, quantiles, mean (from the exact HUGEINT sum) and max from them, overall and per model;
- ``by_model``: each model's counts and sums of ``slice_sums.SLICE_SUMS``, one grouped query from the
  same entries as in memory (``count(*) FILTER``, ``sum()::HUGEINT``), read by ``groups.slice_figures``
  with that model's hold ranks (its histogram and steps: null).

Integer figures and order statistics are byte-identical to the in-memory path; every other block is
left null and ``coverage.not_measured`` says why (a block is never approximated).
"""

from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.columns import NONE_LABEL, TOP_SLICES, free_label
from sandbox_fleet.measure.concurrency import Sweep, _checked, effective_cap_figures, sweep_figures
from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.measure.slice_sums import SLICE_SUMS, sql_columns, sql_select
from sandbox_fleet.measure.stats import US, order_ranks, summary
from sandbox_fleet.telemetry.options import ReadOptions

#: Bytes a row the in-memory path peaks at (docs/measure.md, "Scale and memory": 140-190).
IN_MEMORY_BYTES_PER_ROW = 190
#: DuckDB may use this share of the budget for its buffers (it spills past it); the rest holds the
#: sweep (12 bytes an instant) and the Python side. Opening DuckDB maps ~650 MB of address space of
#: its own and it keeps what its allocator took until the process ends, so the share is small.
DUCKDB_SHARE = 0.2
#: Rows a streamed result batch carries.
STREAM_ROWS = 1 << 20
#: Why ``cap_detected`` is null out of core when no cap is configured.
NO_TOUCHES_RULE = "without a configured cap the touches rule also needs the steps (a released batch is no cap)"
#: The blocks this path fills; every other one is null with its reason in ``coverage.not_measured``.
NOT_MEASURED = {
    "phases": "phase columns are not read out of core",
    "steps": "step detection needs every start in memory",
    "tokens": "token fits are not computed out of core",
    "trajectories": "not read out of core",
    "outcomes": "the bootstrap intervals need every reward in memory",
    "exceptions": "not computed out of core",
    "by_model.hold_histogram": "not computed out of core",
    "by_model.steps": "step detection needs every start in memory",
    "by_job": "per-job sweeps are not computed out of core",
    "by_task": "not computed out of core",
    "by_node": "not computed out of core",
    "tasks": "--tasks is not read out of core",
    "limits": "creation and starting limits need every start in memory",
    "rl_groups": "not computed out of core",
    "hold_s.by_outcome": "outcomes are not computed out of core",
    "hold_s.histogram": "not computed out of core",
    "hold_s.with_tokens": "the token split is not computed out of core",
    "concurrency.peak_is_batch": "telling one released batch from a cap needs the steps",
    "coverage.missing": "the missing-field counts are not computed out of core",
}


def estimated_bytes(paths) -> float:
    """What the in-memory path would need for ``paths``: Parquet row counts from the file footers
    times ``IN_MEMORY_BYTES_PER_ROW``, a text table's size on disk (CSV/JSONL rows of ~150-250 bytes
    become ~190 bytes of columns: about one byte in memory a byte on disk); folders (Harbor jobs,
    Terminal-Bench runs: one JSON file a rollout) count 0, their rows are few."""
    import pyarrow.parquet as pq

    total = 0.0
    from sandbox_fleet.telemetry.table import glob_files

    for f in (f for p in paths for f in glob_files(str(p))):
        path = Path(f)
        if not path.is_file():
            continue
        if path.suffix.lower() == ".parquet":
            try:
                total += pq.ParquetFile(path).metadata.num_rows * IN_MEMORY_BYTES_PER_ROW
            except (pa.ArrowInvalid, OSError):
                continue  # the reader names the bad file
        else:
            total += path.stat().st_size
    return total


def needs_out_of_core(paths, memory_budget_gb: float | None) -> bool:
    """Whether ``paths`` would not fit the memory budget in memory (``limits.memory_limit_bytes``)."""
    from sandbox_fleet.limits import memory_limit_bytes

    return estimated_bytes(paths) > memory_limit_bytes(memory_budget_gb)


@contextmanager
def _workspace(parent: str | None):
    """A fresh temp folder under ``parent`` (the output's folder; None: the system temp dir), removed after."""
    if parent is not None:
        Path(parent).mkdir(parents=True, exist_ok=True)  # the output's folder: its writer would make it anyway
    folder = tempfile.mkdtemp(prefix="sandbox-fleet-measure-", dir=parent)
    try:
        yield Path(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _connect(folder: Path, memory_budget_gb: float | None):
    """A DuckDB database in ``folder``, spilling there past ``DUCKDB_SHARE`` of the budget. The budget
    is read after connecting: opening DuckDB maps ~650 MB of address space, which an address-space
    limit counts."""
    import duckdb

    from sandbox_fleet.limits import memory_limit_bytes

    con = duckdb.connect(str(folder / "rows.duckdb"))
    budget = memory_limit_bytes(memory_budget_gb)
    if budget != float("inf"):
        con.execute(f"SET memory_limit = '{max(int(DUCKDB_SHARE * budget / 2**20), 64)}MB'")
    spill = str(folder / "spill").replace("'", "''")  # a quote in the output's path stays a quote
    con.execute(f"SET temp_directory = '{spill}'")
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET enable_progress_bar = false")  # the bar is ours (stderr, only on a terminal)
    return con


def _rows_of(batch: pa.Table, seq0: int, kept) -> pa.Table:
    """The columns out of core keeps of a cleaned batch: ``kept``, the row passes ``--model/--since/--until``
    (applied after de-duplication, as in memory); then the columns ``slice_sums``' SQL reads."""
    def text(name: str) -> pa.ChunkedArray:
        col = batch.column(name)
        return col.cast(pa.string()) if pa.types.is_dictionary(col.type) else col

    return pa.table({
        "seq": pa.array(np.arange(seq0, seq0 + batch.num_rows, dtype=np.int64)),
        "id": text("id"),
        "s": pc.cast(batch.column("started_at"), pa.int64()),
        "f": pc.cast(batch.column("finished_at"), pa.int64()),
        "model": text("model"),
        "job": text("job"),
        "kept": kept if kept is not None else pa.array(np.ones(batch.num_rows, dtype=bool)),
        **{name: batch.column(name) for name in sql_columns()},
    })


def _ingest(con, paths: list[str], opts: ReadOptions, tel, filters: dict, advance) -> list[str]:
    """Append every cleaned, filtered batch of ``paths`` to table ``r``; the sources read."""
    from sandbox_fleet.telemetry.load import cleaned_batches, rollout_mask
    from sandbox_fleet.telemetry.record import ROLLOUT_SCHEMA

    con.register("empty", _rows_of(ROLLOUT_SCHEMA.empty_table(), 0, None))
    con.execute("CREATE TABLE r AS SELECT * FROM empty")
    con.unregister("empty")
    seq = 0
    sources = []
    for path in paths:
        for batch in cleaned_batches(path, opts, tel):
            advance(n=batch.num_rows)
            if "cap" in batch.column_names and batch.column("cap").null_count < batch.num_rows:
                raise InputError(f"{path}: a `cap` column is not read out of core; give the fleet's cap as --cap")
            rows = _rows_of(batch, seq, rollout_mask(batch, **filters))
            seq += batch.num_rows
            con.register("batch", rows)
            con.execute("INSERT INTO r SELECT * FROM batch")
            con.unregister("batch")
        sources.append(path)
    return sources


def _drop_duplicates(con, tel) -> None:
    """Keep the first row of each id in input order, as ``validate.drop_duplicates`` does."""
    from sandbox_fleet.telemetry.validate import DUPLICATE

    # A grouped aggregate spills past DuckDB's memory limit; count(DISTINCT) does not.
    (later,) = con.execute("SELECT coalesce(sum(c - 1), 0)::BIGINT FROM "
                           "(SELECT count(*) AS c FROM r GROUP BY id HAVING count(*) > 1)").fetchall()[0]
    if later:
        con.execute("DELETE FROM r WHERE seq NOT IN (SELECT min(seq) FROM r GROUP BY id)")
        tel.reject(DUPLICATE, later)


def _sweep(con, rows: int) -> Sweep:
    """The ``Sweep`` of every interval: DuckDB sorts the +1/-1 events by time (spilling) and streams
    them; the level is their running sum (carried across batches), read after the last event of each
    instant (a finish and a start at one instant do not overlap), a tie across batches held back."""
    size = 2 * rows
    times = np.empty(size, dtype=np.int64)
    level = np.empty(size, dtype=np.int32 if size < 2**32 else np.int64)  # as the in-memory sweep
    m, carry, held = 0, 0, None  # held: the last instant of the batch before, (time, level)
    sql = "SELECT t, d FROM (SELECT s AS t, 1::TINYINT AS d FROM r UNION ALL SELECT f, -1::TINYINT FROM r) ORDER BY t"
    for batch in con.sql(sql).to_arrow_reader(STREAM_ROWS):
        t = batch.column(0).to_numpy()
        run = np.cumsum(batch.column(1).to_numpy(), dtype=np.int64)
        run += carry
        carry = int(run[-1])
        last = np.ones(t.size, dtype=bool)
        np.not_equal(t[:-1], t[1:], out=last[:-1])
        t, run = t[last], run[last]
        if held is not None and held[0] != t[0]:  # else the held instant continues here: its level is later
            times[m], level[m] = held
            m += 1
        times[m:m + t.size - 1], level[m:m + t.size - 1] = t[:-1], run[:-1]
        m += t.size - 1
        held = (int(t[-1]), int(run[-1]))
    if held is not None:
        times[m], level[m] = held
        m += 1
    (holds_us,) = con.execute("SELECT sum(f - s)::HUGEINT FROM r").fetchall()[0]
    keep = 2 * m > size  # views when most events are distinct instants, as ``concurrency._compact``
    swept = Sweep(times[:m] if keep else times[:m].copy(), level[:m] if keep else level[:m].copy())
    return _checked(swept, int(holds_us))


class _Ranked:
    """The order statistics of ``n`` sorted integers that ``stats.summary`` reads (``order_ranks``),
    with their exact sum, standing in for the whole sorted array."""

    dtype = np.dtype(np.int64)

    def __init__(self, n: int, at_rank: dict[int, int], total: int) -> None:
        self.size, self._at, self._total = n, at_rank, total

    def sum(self, dtype=None) -> int:
        return self._total

    def __getitem__(self, k: int) -> int:
        return self._at[k + self.size if k < 0 else k]


def _order_stats(con, where: str = "", params: list | None = None) -> _Ranked:
    """The holds of the rows ``where`` selects as ``_Ranked``: DuckDB sorts them (spilling) and
    streams them in order; the wanted ranks are picked as they pass."""
    n, total = con.execute(f"SELECT count(*), sum(f - s)::HUGEINT FROM r {where}", params or []).fetchall()[0]
    wanted = np.array(order_ranks(n) if n else [], dtype=np.int64)
    at: dict[int, int] = {}
    seen = 0
    for batch in con.sql(f"SELECT f - s AS h FROM r {where} ORDER BY h", params=params or None).to_arrow_reader(STREAM_ROWS):
        holds = batch.column(0).to_numpy()
        for k in wanted[(wanted >= seen) & (wanted < seen + holds.size)]:
            at[int(k)] = int(holds[k - seen])
        seen += holds.size
    return _Ranked(n, at, int(total or 0))


def _holds(con, threshold: float) -> tuple[dict, dict | None, str | None]:
    """``hold_s``'s order statistics overall and per model (models sorted, rows without one last, as
    ``columns.Codes.labelled`` names them), and ``by_model``: each model's ``slice_sums`` in one
    grouped query, read by ``groups.slice_figures`` with the same model's hold ranks. Per model: null
    past ``TOP_SLICES`` models, with the reason."""
    from sandbox_fleet.measure.groups import slice_figures

    out = summary(_order_stats(con), 1 / US)  # type: ignore[arg-type]
    names = [m for (m,) in con.execute("SELECT DISTINCT model FROM r WHERE model IS NOT NULL ORDER BY model").fetchall()]
    if len(names) > TOP_SLICES:
        out["by_model"] = None
        return out, None, f"{len(names):,} models: the top-{TOP_SLICES} cut is not computed out of core"
    ranked = {name: _order_stats(con, "WHERE model = ?", [name]) for name in names}
    sums = {m: g for m, *g in con.execute(f"SELECT model, {sql_select(threshold)} FROM r GROUP BY model").fetchall()}
    if None in sums:
        none = free_label(NONE_LABEL, set(names))
        ranked[none], sums[none] = _order_stats(con, "WHERE model IS NULL"), sums.pop(None)
    out["by_model"] = {name: summary(r, 1 / US) for name, r in ranked.items()}  # type: ignore[arg-type]
    by_model = {name: slice_figures(dict(zip(SLICE_SUMS, map(int, sums[name]))), r) for name, r in ranked.items()}
    return out, by_model, None


def _configured_cap(con, tel) -> tuple[int | None, str | None]:
    """``fleetcap.configured_cap``, each job's span from SQL as one interval a job (its first start
    to its last finish: the span it would find); capped jobs that overlap: none, with the reason."""
    from sandbox_fleet.measure.fleetcap import configured_cap

    spans = con.execute("SELECT job, min(s), max(f) FROM r GROUP BY job ORDER BY job NULLS LAST").fetchall() if tel.caps else []
    names = [j for j, _, _ in spans if j is not None]
    codes = np.array([i if j is not None else -1 for i, (j, _, _) in enumerate(spans)], dtype=np.int64)
    first, last = (np.array([span[k] for span in spans], dtype=np.int64) for k in (1, 2))
    cap, fc = configured_cap(tel.stated_cap, tel.caps, first, last, codes, names)
    if fc is not None:
        return None, "capped jobs overlap: their summed cap needs each job's sweep (by_job), not computed out of core"
    return cap, None


_PASSES = ("duplicates", "concurrency", "holds")


def measure_out_of_core(paths, *, read: ReadOptions | None = None, models=None, since=None, until=None,
                        pass_threshold: float = 1.0, progress: bool = True, cap: int | None = None,
                        memory_budget_gb: float | None = None, temp_parent: str | None = None) -> MeasureSummary:
    """``measure_paths``' summary for an input of any size (see the module docstring for what it fills).

    ``temp_parent``: the folder DuckDB's database and spill files go in (a fresh folder inside it,
    removed after); None: the system temp dir. ``memory_budget_gb``: the budget DuckDB gets a share of.
    """
    from dataclasses import replace

    from sandbox_fleet.limits import memory_limit_bytes
    from sandbox_fleet.measure.run import rejected_warnings, summary_of
    from sandbox_fleet.telemetry.options import make_options
    from sandbox_fleet.telemetry.record import ROLLOUT_SCHEMA, Telemetry
    from sandbox_fleet.telemetry.stated import flag_cap

    files = [str(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    if not files:
        raise InputError("no telemetry PATH given")
    opts = replace(read if read is not None else make_options(), progress=False, coded=False)
    tel = flag_cap(Telemetry(rollouts=ROLLOUT_SCHEMA.empty_table()), cap)
    budget = memory_limit_bytes(memory_budget_gb)
    estimate = int(estimated_bytes(files) / IN_MEMORY_BYTES_PER_ROW)
    filters = {"models": models, "since": since, "until": until}
    import duckdb

    from sandbox_fleet.telemetry.progress import steps

    with _workspace(temp_parent) as folder, steps(progress, "measuring out of core", estimate + len(_PASSES)) as advance:
        con = _connect(folder, memory_budget_gb)
        try:
            tel.sources = _ingest(con, files, opts, tel, filters, advance)
            advance(label="duplicates")
            _drop_duplicates(con, tel)
            if any(filters.values()):
                (read_rows,) = con.execute("SELECT count(*) FROM r").fetchall()[0]
                con.execute("DELETE FROM r WHERE NOT kept")
                if not con.execute("SELECT count(*) FROM r").fetchall()[0][0]:
                    raise InputError(f"no rollouts match `models`/`since`/`until` (of {read_rows} rows read)")
            rows, first, last = con.execute("SELECT count(*), min(s), max(f) FROM r").fetchall()[0]
            if rows == 0:
                raise InputError(f"{', '.join(files)}: no rollouts left to measure (empty, all rejected, or filtered out)")
            advance(label="concurrency")
            configured, cap_reason = _configured_cap(con, tel)
            conc = sweep_figures(_sweep(con, rows), rows, configured, with_series=True)
            conc.update(effective_cap_figures(conc))
            if configured is None:  # the touches rule also asks that the peak is not one released batch (steps)
                conc["cap_detected"] = conc["cap_rule"] = None
            advance(label="holds")
            holds, by_model, models_reason = _holds(con, pass_threshold)
        except duckdb.OutOfMemoryException as exc:  # the CLI's one line for a run that does not fit
            raise MemoryError(str(exc)) from exc
        except duckdb.Error as exc:  # e.g. the temp folder's disk full: one line naming it, not a traceback
            raise InputError(f"measuring out of core in {folder}: {str(exc).splitlines()[0]}") from exc
        finally:
            con.close()
    not_measured = dict(NOT_MEASURED)
    if configured is None:
        not_measured["concurrency.cap_detected"] = NO_TOUCHES_RULE
    for key, reason in (("concurrency.configured_cap", cap_reason), ("hold_s.by_model", models_reason),
                        ("by_model", models_reason)):
        if reason:
            not_measured[key] = reason
    warnings = list(tel.warnings) + rejected_warnings(tel.rejected)
    warnings.append(f"measured out of core (in memory: an estimated {estimate * IN_MEMORY_BYTES_PER_ROW / 2**30:,.2f} GiB; "
                    f"budget {budget / 2**30:,.1f} GiB): {len(not_measured)} figure block(s) not measured, "
                    "see coverage.not_measured")
    return summary_of(tel.sources, rows, (first, last), conc, pass_threshold, 0, {
        "hold_s": holds,
        "by_model": by_model,
        "coverage": {
            "rows": rows,
            "rejected": dict(sorted(tel.rejected.items())),
            "rejected_total": int(sum(tel.rejected.values())),
            "out_of_core": "DuckDB on disk in a temp folder (removed after): events sorted by time and streamed "
                           "into the sweep; holds sorted and streamed for their order statistics; sums as exact "
                           "integers (HUGEINT)",
            "not_measured": not_measured,
        },
        "warnings": warnings,
    })

