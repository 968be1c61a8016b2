"""The ``--map`` a table needs, proposed from its column names and checked against its values.

A table without the canonical ``id``, ``started_at`` and ``finished_at`` names is refused; the refusal
carries a proposal (``MissingColumns.spec``) that the CLI prints as the command to run, and
``measure --suggest-map FILE`` prints alone. A column is proposed for a canonical name when its
name is one of the spellings ``SPELLINGS`` lists (case, spaces and dashes ignored; the first
spelling present wins) and a sample of its values has that name's type: a time parses as a time by
the reader's own rule (``times.to_utc``), a number as a number, an id is never empty and never
repeats in the sample. A column the user mapped, or already named canonically, is left as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry.record import REQUIRED_ROLLOUT_COLUMNS, ROLLOUT_COLUMNS, Telemetry

#: canonical name -> the column names proposed for it, most telling first.
SPELLINGS: dict[str, tuple[str, ...]] = {
    "id": ("id", "episode_id", "trajectory_id", "rollout_id", "trial_id", "trial_name", "sample_id", "uuid", "episode",
           "trajectory", "rollout"),
    "started_at": ("started_at", "start", "begin", "created", "start_ts", "started", "start_time", "begin_ts", "begin_time",
                   "created_at", "start_at", "ts_start", "t_start", "begun_at"),
    "finished_at": ("finished_at", "end", "finish", "end_ts", "finished", "end_time", "finish_time", "ended_at", "ended",
                    "completed_at", "stop", "stopped_at", "ts_end", "t_end", "done_at"),
    "exception_type": ("exception_type", "error", "exception", "error_type", "err", "failure", "error_kind"),
    "has_exception": ("has_exception", "errored", "is_error", "failed", "has_error"),
    "node": ("node", "host", "hostname", "node_name", "machine", "worker_host"),
    "task_id": ("task_id", "task", "task_name", "problem", "problem_id", "instance_id"),
    "model": ("model", "model_name", "policy"),
    "job": ("job", "job_name", "job_id", "experiment"),
    "reward": ("reward", "score", "return", "pass_score"),
    "turns": ("turns", "n_turns", "num_turns", "turn_count"),
    "input_tokens": ("input_tokens", "prompt_tokens", "tokens_in", "tok_in"),
    "output_tokens": ("output_tokens", "completion_tokens", "tokens_out", "tok_out"),
    "cached_tokens": ("cached_tokens", "cache_read_tokens", "cached_prompt_tokens"),
}
_TIMES = ("started_at", "finished_at")
_NUMBERS = ("reward",)
_COUNTS = ("turns", "input_tokens", "output_tokens", "cached_tokens")
_FLAGS = ("has_exception",)
#: rows read to check a column's type
SAMPLE_ROWS = 1000


@dataclass
class Proposal:
    """``mapping``: canonical -> source, the user's own map included; ``why``: one reason a line per
    proposed name; ``unresolved``: required names no column fits (then there is no command to run)."""

    mapping: dict[str, str] = field(default_factory=dict)
    why: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)

    @property
    def spec(self) -> Optional[str]:
        """The ``--map`` value, canonical order; None when a required name has no column."""
        if self.unresolved or not self.mapping:
            return None
        return ",".join(f"{c}={self.mapping[c]}" for c in ROLLOUT_COLUMNS if c in self.mapping)


class MissingColumns(InputError):
    """A table without a required canonical column; ``spec`` is the proposed ``--map`` (or None)."""

    def __init__(self, head: str, proposal: Proposal):
        self.head, self.proposal, self.spec = head, proposal, proposal.spec
        if self.spec:
            tail = f"; its columns' names and values suggest `column_map` {self.spec}"
        else:
            tail = f"; no column fits {', '.join(proposal.unresolved)}: use `column_map` canonical=source"
        super().__init__(head + tail)


def _norm(name: str) -> str:
    return re.sub(r"[\s\-.]+", "_", name.strip().lower())


def _fits(canonical: str, values: Optional[pa.Array], source: str) -> tuple[bool, str]:
    """Whether ``values`` (a sample; None: no sample could be read) fit ``canonical``, and what showed it."""
    if values is None:
        return True, "by name (no sample read)"
    present = values.drop_null()
    if pa.types.is_string(present.type) or pa.types.is_large_string(present.type):
        present = present.filter(pc.not_equal(pc.utf8_trim_whitespace(present), ""))
    n = len(present)
    if canonical == "id":
        unique = len(pc.unique(present)) == n == len(values)
        return unique, f"{n:,} sampled values, none empty, none repeated" if unique else "values empty or repeated"
    if n == 0:
        return canonical not in _TIMES, "no values in the sample"
    if canonical in _TIMES:
        from sandbox_fleet.telemetry.options import make_options
        from sandbox_fleet.telemetry.times import to_utc

        opts = make_options(progress=False)
        tel = Telemetry(rollouts=pa.table({}))
        _, bad, _ = to_utc(present, canonical, source, opts, tel, {})
        nbad = int(pc.sum(pc.cast(bad, pa.int64())).as_py() or 0)
        return nbad == 0, f"{n:,}/{n:,} sampled values parse as times" if nbad == 0 else f"{nbad:,} of {n:,} are no times"
    if canonical in _NUMBERS + _COUNTS + _FLAGS:
        target = pa.bool_() if canonical in _FLAGS else pa.float64()
        try:
            pc.cast(present if not pa.types.is_string(present.type) else pc.utf8_trim_whitespace(present), target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return False, f"values are not {'true/false' if canonical in _FLAGS else 'numbers'}"
        return True, f"{n:,} sampled values are {'true/false' if canonical in _FLAGS else 'numbers'}"
    return True, "text"


def propose(names: list[str], sample: Optional[pa.Table], column_map: dict[str, str], source: str = "") -> Proposal:
    """The ``--map`` for a table with columns ``names`` (``sample``: its first rows, or None)."""
    out = Proposal(mapping=dict(column_map))
    taken = set(column_map.values()) | {n for n in names if n in ROLLOUT_COLUMNS}
    by_norm: dict[str, str] = {}
    for n in names:
        by_norm.setdefault(_norm(n), n)
    for canonical, spellings in SPELLINGS.items():
        if canonical in column_map or canonical in names:
            continue
        for spelling in spellings:
            col = by_norm.get(spelling)
            if col is None or col in taken:
                continue
            ok, shown = _fits(canonical, sample.column(col) if sample is not None and col in sample.column_names else None, source)
            if ok:
                out.mapping[canonical] = col
                out.why.append(f"{canonical} <- {col}: {shown}")
                taken.add(col)
                break
            out.why.append(f"{canonical} <- {col}? no: {shown}")
    out.unresolved = [c for c in REQUIRED_ROLLOUT_COLUMNS if c not in out.mapping and c not in names]
    return out


def missing_columns(path: str, names: list[str], column_map: dict[str, str], missing: list[str]) -> MissingColumns:
    """The refusal of a table that lacks ``missing`` required columns, with the proposed map."""
    from sandbox_fleet.telemetry.table import sample_table

    proposal = propose(names, sample_table(path, SAMPLE_ROWS), column_map, path)
    head = (f"{path}: missing column(s) {', '.join(missing)} (a rollout needs id, started_at, finished_at; "
            f"columns are: {', '.join(names)})")
    return MissingColumns(head, proposal)


def suggest_map(path: str, column_map: Optional[dict[str, str]] = None) -> Proposal:
    """``measure --suggest-map FILE``: the proposal for the table ``path`` (a file or glob); an
    InputError naming the required names no column fits."""
    from sandbox_fleet.telemetry.table import sample_table, table_kind

    if table_kind(path) is None:
        raise InputError(f"{path}: --suggest-map reads a Parquet, CSV or JSONL table (expected .parquet, .csv or .jsonl)")
    sample = sample_table(path, SAMPLE_ROWS)
    if sample is None:
        raise InputError(f"{path}: cannot read a sample of the table to propose a map")
    proposal = propose(list(sample.column_names), sample, column_map or {}, path)
    if proposal.unresolved:
        raise InputError(f"{path}: no column fits {', '.join(proposal.unresolved)} (columns are: {', '.join(sample.column_names)}); "
                         "use `column_map` canonical=source")
    return proposal
