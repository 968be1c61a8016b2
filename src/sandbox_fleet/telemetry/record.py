"""The canonical rollout and task records every reader produces and every stage consumes.

A missing value is null, never 0: a source that does not report cached tokens has
null ``cached_tokens``. Times are UTC microseconds so sums are exact integers.
Documented for users in ``docs/telemetry.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from sandbox_fleet.errors import InputError

TS = pa.timestamp("us", tz="UTC")

#: Harbor's four phases; each has ``<phase>_started_at`` and ``<phase>_finished_at``.
PHASES = ("environment_setup", "agent_setup", "agent_execution", "verifier")

ROLLOUT_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("task_id", pa.string()),
        pa.field("model", pa.string()),
        pa.field("job", pa.string()),
        # The host or Kubernetes node the sandbox ran on. No producer we read records it (Harbor,
        # Inspect, Terminal-Bench): tables map it with ``--map node=COLUMN``.
        pa.field("node", pa.string()),
        pa.field("started_at", TS, nullable=False),
        pa.field("finished_at", TS, nullable=False),
        *[
            pa.field(f"{phase}_{edge}", TS)
            for phase in PHASES
            for edge in ("started_at", "finished_at")
        ],
        pa.field("input_tokens", pa.int64()),
        pa.field("output_tokens", pa.int64()),
        pa.field("cached_tokens", pa.int64()),
        pa.field("turns", pa.int64()),
        pa.field("reward", pa.float64()),
        pa.field("has_exception", pa.bool_()),
        pa.field("exception_type", pa.string()),
        # The limit (message, token, time, ...) that ended a rollout the producer then scored
        # like any other: its own outcome, never an exception.
        pa.field("limit_type", pa.string()),
        pa.field("has_trajectory", pa.bool_()),
        pa.field("trajectory_bytes", pa.int64()),
        # A concurrency cap the table states (a harness's worker count): one per job, or one for
        # an input without jobs. No producer we read writes it: ``--map cap=COLUMN`` (``stated.py``).
        pa.field("cap", pa.int64()),
    ]
)

TASK_SCHEMA = pa.schema(
    [
        pa.field("task_id", pa.string(), nullable=False),
        # Some releases key rollouts by a task group; rollouts.task_id joins here when present.
        pa.field("task_group_id", pa.string()),
        pa.field("cpus", pa.float64()),
        pa.field("memory_mb", pa.int64()),
        pa.field("storage_mb", pa.int64()),
        pa.field("gpus", pa.int64()),
        pa.field("build_timeout_s", pa.float64()),
        pa.field("agent_timeout_s", pa.float64()),
        pa.field("verifier_timeout_s", pa.float64()),
        pa.field("bundle_bytes", pa.int64()),
        # The base image the task builds from: [environment] docker_image, else its Dockerfile's FROM
        # (environment/Dockerfile, then Dockerfile); null when the task has neither.
        pa.field("image", pa.string()),
    ]
)

ROLLOUT_COLUMNS = tuple(ROLLOUT_SCHEMA.names)
REQUIRED_ROLLOUT_COLUMNS = ("id", "started_at", "finished_at")

#: Text columns with few distinct values that ``measure`` reads as codes. Asked for
#: (``coded=True``), readers hand them over dictionary-encoded as ``CODED``: Parquet's own
#: dictionary pages are kept, so the strings are never decoded and then encoded again
#: (~2 s and ~500 MB at 10M rows). The canonical record itself stays plain strings.
CODED_COLUMNS = ("task_id", "model", "job", "node", "exception_type")
CODED = pa.dictionary(pa.int32(), pa.string())


def is_text(t: pa.DataType) -> bool:
    """A plain text type (string or large_string)."""
    return pa.types.is_string(t) or pa.types.is_large_string(t)


@dataclass
class Telemetry:
    """What a reader hands to ``measure``: canonical rows plus what it learned on the way.

    ``rejected`` counts unusable rows by reason (nothing is dropped silently);
    ``caps`` holds each job's configured concurrency cap where metadata gives one; ``stated_cap``
    the fleet's when the user states it (``--cap``, or a ``cap`` column without jobs) and
    ``stated_jobs`` the jobs whose cap a ``cap`` column stated (``telemetry/stated.py``).
    """

    rollouts: pa.Table
    tasks: pa.Table | None = None
    caps: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, int] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    stated_cap: int | None = None
    #: job -> where its stated cap came from (e.g. "cap column"); the fleet's under ``None``
    stated_jobs: dict[str | None, str] = field(default_factory=dict)

    def reject(self, reason: str, count: int = 1) -> None:
        if count:
            self.rejected[reason] = self.rejected.get(reason, 0) + count


#: Rows per cached all-null chunk: big enough that a 10M-row column is 10 chunks, small
#: enough (8 MiB for a timestamp) that caching one per type costs nothing.
NULL_CHUNK_ROWS = 1 << 20

_NULL_CHUNKS: dict[pa.DataType, pa.Array] = {}


def null_column(type_: pa.DataType, n: int) -> pa.ChunkedArray:
    """``n`` nulls of ``type_`` built from one cached chunk, shared by every caller.

    ``pa.nulls`` allocates a zeroed value buffer (8 bytes a row for a timestamp): the eight
    phase columns most sources lack would cost ~640 MB at 10M rows. Slices of one cached,
    immutable chunk cost nothing per row and read exactly like a fresh null array. The chunk
    grows (powers of two) to NULL_CHUNK_ROWS as callers ask for more: a small input does not
    pay for zeroing 8 MiB a type.
    """
    chunk = _NULL_CHUNKS.get(type_)
    if chunk is None or len(chunk) < min(n, NULL_CHUNK_ROWS):
        size = min(1 << max(n - 1, 1023).bit_length(), NULL_CHUNK_ROWS)
        chunk = _NULL_CHUNKS[type_] = pa.nulls(size, type_)
    full, rest = divmod(n, NULL_CHUNK_ROWS)
    parts = [chunk] * full + ([chunk.slice(0, rest)] if rest or not full else [])
    return pa.chunked_array(parts, type=type_)


def as_coded(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """A text column as ``CODED`` (nulls stay null); a ``CODED`` column is returned as it came."""
    import pyarrow.compute as pc  # only readers that encode load the compute kernels

    t = col.type
    if t == CODED:
        return col
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type)
    return pc.dictionary_encode(col if col.type == pa.string() else col.cast(pa.string()))


def coded_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with the CODED_COLUMNS it has typed ``CODED``."""
    return pa.schema([f.with_type(CODED) if f.name in CODED_COLUMNS else f for f in schema])


def _conform(table: pa.Table, schema: pa.Schema, what: str, source: str) -> pa.Table:
    columns = []
    n = table.num_rows
    for fld in schema:
        if fld.name in table.column_names:
            col = table.column(fld.name)
            if col.type != fld.type:
                try:
                    col = as_coded(col) if fld.type == CODED else col.cast(fld.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise InputError(
                        f"{source}: column '{fld.name}' has type {col.type}, expected {fld.type} ({what})"
                    ) from exc
            if n and col.null_count == n:
                # A source that writes an empty column (DuckDB, Parquet) still pays 8 bytes a
                # row for it; the shared null chunks hold the same content for free.
                col = null_column(fld.type, n)
            columns.append(col)
        else:
            columns.append(null_column(fld.type, n))
    return pa.Table.from_arrays(columns, schema=schema.with_metadata(None).remove_metadata())


def conform_rollouts(table: pa.Table, source: str = "<table>", *, columns: Sequence[str] | None = None,
                     coded: bool = False) -> pa.Table:
    """Cast ``table`` to ROLLOUT_SCHEMA: known columns cast, absent optional ones null.

    ``columns`` keeps only those canonical columns, in schema order (a consumer that never
    reads ids may drop them to save memory); only the kept required ones must be present.
    ``coded``: the CODED_COLUMNS come out dictionary-encoded (``CODED``) instead of as strings.
    """
    keep = ROLLOUT_COLUMNS if columns is None else tuple(c for c in ROLLOUT_COLUMNS if c in set(columns))
    missing = [c for c in REQUIRED_ROLLOUT_COLUMNS if c in keep and c not in table.column_names]
    if missing:
        raise InputError(f"{source}: missing column(s) {', '.join(missing)} (a rollout needs id, started_at, finished_at)")
    relaxed = pa.schema([f.with_nullable(True) for f in ROLLOUT_SCHEMA if f.name in keep])
    return _conform(table, coded_schema(relaxed) if coded else relaxed, "rollout record", source)


def conform_tasks(table: pa.Table, source: str = "<table>") -> pa.Table:
    """Cast ``table`` to TASK_SCHEMA: known columns cast, absent optional ones null."""
    if "task_id" not in table.column_names:
        raise InputError(f"{source}: missing column task_id (task record)")
    relaxed = pa.schema([f.with_nullable(True) for f in TASK_SCHEMA])
    return _conform(table, relaxed, "task record", source)
