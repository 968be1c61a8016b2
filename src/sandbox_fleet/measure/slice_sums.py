"""The per-model and per-job counts and sums (``by_model``, ``by_job``), declared once.

Each entry of ``SLICE_SUMS`` is one exact integer per group: the rows a rule of ``ROWS`` selects,
counted, or one integer column of ``VALUES`` summed over them. From the entry, ``groups`` computes
it in memory (a bincount a column) and ``out_of_core`` in DuckDB (one ``GROUP BY`` query; counts and
HUGEINT sums are exact whatever the thread schedule), and ``groups.slice_figures`` turns the integers
into a slice's figures the same way for both. An entry with a ``key`` is also reported as is under
that key of every slice: ``model.Slice`` takes its field from here (after the declared ones), and the
terminal's per-model table prints it when the entry names a ``title``. **Adding a per-model (and
per-job) count or sum is one entry here** (then ``sandbox-fleet schema measure`` regenerates the
committed schema); a new row rule or column is one line of ``ROWS`` / ``VALUES``.

This module imports nothing: ``model`` reads it, and importing the model stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The row rules: (the ``columns.Frame`` mask, called with the frame and the pass threshold; the same
#: rule as a SQL predicate over out of core's table, ``$threshold`` the pass threshold; the canonical
#: columns the SQL reads). "all": every row (no mask).
ROWS = {
    "all": (None, "TRUE", ()),
    "flagged": (lambda fr, t: fr.has_exception.valid, "has_exception IS NOT NULL", ("has_exception",)),
    "exception": (lambda fr, t: fr.exception, "coalesce(has_exception, false)", ("has_exception",)),
    # a NaN reward is no reward (DuckDB orders NaN above every number: the test is stated)
    "rewarded": (lambda fr, t: fr.rewarded, "reward IS NOT NULL AND NOT isnan(reward)", ("reward",)),
    "passed": (lambda fr, t: fr.passed(t), "NOT isnan(reward) AND reward >= $threshold", ("reward",)),
    # ``Frame.has_tokens``: both counts reported, not both 0
    "has_tokens": (lambda fr, t: fr.has_tokens, "input_tokens IS NOT NULL AND output_tokens IS NOT NULL "
                   "AND NOT (input_tokens = 0 AND output_tokens = 0)", ("input_tokens", "output_tokens")),
}
#: The summed columns: (the ``columns.Frame`` attribute: an int64 array or a nullable ``Column``; the
#: same value in SQL; the canonical columns it reads). A null adds nothing (in memory it reads as 0,
#: SQL's ``sum`` skips it).
VALUES = {
    "hold_us": ("hold_us", "(f - s)", ()),
    "input_tokens": ("input_tokens", "input_tokens", ("input_tokens",)),
    "output_tokens": ("output_tokens", "output_tokens", ("output_tokens",)),
    "cached_tokens": ("cached_tokens", "cached_tokens", ("cached_tokens",)),
    "turns": ("turns", "turns", ("turns",)),
}


@dataclass(frozen=True)
class SliceSum:
    """One exact integer per group: the rows ``where`` selects (a ``ROWS`` rule), counted, or
    ``value`` (a ``VALUES`` column) summed over them. ``key``: the slice field reporting it as is
    (None: read by ``groups.slice_figures`` only); ``title``: its column in the terminal's table."""

    where: str = "all"
    value: str | None = None
    key: str | None = None
    title: str | None = None


#: The per-group integers, by name (``groups.slice_figures`` reads them by name).
SLICE_SUMS: dict[str, SliceSum] = {
    "rows": SliceSum(),
    "sandbox_us": SliceSum(value="hold_us"),
    "flagged": SliceSum("flagged"),
    "exc": SliceSum("exception"),
    "rewarded": SliceSum("rewarded"),
    "passed": SliceSum("passed"),
    "tok_rows": SliceSum("has_tokens"),
    "tok_us": SliceSum("has_tokens", "hold_us"),
    "tok_in": SliceSum("has_tokens", "input_tokens"),
    "tok_out": SliceSum("has_tokens", "output_tokens"),
}


def reported() -> dict[str, SliceSum]:
    """The entries a slice reports as is, by their key, in table order."""
    return {s.key: s for s in SLICE_SUMS.values() if s.key is not None}


def sql_columns() -> list[str]:
    """The canonical columns the SQL forms read (out of core ingests them), in a fixed order."""
    return sorted({c for s in SLICE_SUMS.values() for c in ROWS[s.where][2] + (VALUES[s.value][2] if s.value else ())})


def sql_select(threshold: float) -> str:
    """The select list of every entry, in table order: ``count(*) FILTER (WHERE rule)`` or
    ``sum(value) FILTER (WHERE rule)::HUGEINT`` (0 over no row, as in memory)."""
    out = []
    for s in SLICE_SUMS.values():
        rule = ROWS[s.where][1].replace("$threshold", f"'{float(threshold)!r}'::DOUBLE")
        value = f"sum({VALUES[s.value][1]}) FILTER (WHERE {rule})" if s.value else None
        out.append(f"coalesce({value}, 0)::HUGEINT" if value else f"count(*) FILTER (WHERE {rule})")
    return ", ".join(out)
