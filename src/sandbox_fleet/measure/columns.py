"""Pull canonical rollout columns out of Arrow once, as NumPy arrays with validity masks.

Every measurement works on these arrays; a null stays visible as ``valid == False``
rather than becoming a zero, so each figure can count the rows it really used.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.measure.stats import group_partitioned, group_sums, sum_where

#: Label used for a null model / job / exception type in per-group output (``Codes.labelled``
#: wraps it in more parentheses while a real name takes it, so the two never merge).
NONE_LABEL = "(none)"
#: Per-model (per-job) slices kept at most: those with the most rollouts, then one ``OTHERS_LABEL``
#: row with the rest (each slice costs its figures, histogram, sweep and steps in memory and JSON:
#: 200k distinct model names ran out of 4 GiB; 20k jobs made 45 MB of JSON). Stated in the
#: summary's ``slice_cut`` and a warning.
TOP_SLICES = 50
#: The row holding every model past ``TOP_SLICES`` (made unique against real names likewise).
OTHERS_LABEL = "(others)"


def free_label(label: str, taken) -> str:
    """``label``, wrapped in parentheses until no name in ``taken`` is it (a real model named
    "(none)" keeps its own row, apart from the rows that name none)."""
    while label in taken:
        label = f"({label})"
    return label


class Column:
    """A nullable column: ``valid`` marks rows that carry a value; ``values`` has nulls filled
    (0 / False) and is only copied out of Arrow when first asked for."""

    def __init__(self, col: pa.ChunkedArray, dtype) -> None:
        self._col = col
        self._dtype = np.dtype(dtype)

    @cached_property
    def valid(self) -> np.ndarray:
        return np.asarray(pc.is_valid(self._col).to_numpy(zero_copy_only=False), dtype=bool)

    @cached_property
    def values(self) -> np.ndarray:
        fill = False if self._dtype == np.bool_ else 0
        return np.asarray(pc.fill_null(self._col, fill).to_numpy(zero_copy_only=False), dtype=self._dtype)

    @property
    def rows(self) -> int:
        return len(self._col) - self._col.null_count

    def _views(self):
        """(first row, values) per chunk, nulls filled: a chunk-sized copy at most (none for a
        chunk of numbers without nulls), never the whole column."""
        first, fill = 0, False if self._dtype == np.bool_ else 0
        for chunk in self._col.chunks:
            yield first, np.asarray(pc.fill_null(chunk, fill).to_numpy(zero_copy_only=False), dtype=self._dtype)
            first += len(chunk)

    def sum_where(self, where: np.ndarray) -> int:
        """Exact int64 sum over the rows ``where`` holds (all of them valid), no column copy."""
        return sum(sum_where(v, where[i:i + v.size]) for i, v in self._views())

    def group_sums_where(self, codes: np.ndarray, n_groups: int, where: np.ndarray) -> list[int]:
        """``stats.group_sums`` over the rows ``where`` holds (all valid), a chunk at a time."""
        total = [0] * n_groups
        for i, v in self._views():
            part = group_sums(codes[i:i + v.size], n_groups, v, where[i:i + v.size])
            total = [a + b for a, b in zip(total, part)]
        return total

    def mask(self, test) -> np.ndarray:
        """Rows whose value passes ``test(values, out=)`` (a ufunc-style call writing booleans),
        False where null; the values are read in place, chunk by chunk (a null slot's junk is
        tested too and then cleared by ``valid``)."""
        out = np.empty(len(self._col), dtype=bool)
        for first, view in self._views():
            test(view, out=out[first:first + view.size])
        out &= self.valid
        return out

    def take_where(self, where: np.ndarray) -> np.ndarray:
        """The values of the rows ``where`` holds (all valid), in row order: only those are copied."""
        parts = [v[where[i:i + v.size]] for i, v in self._views()]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=self._dtype)


@dataclass
class Codes:
    """A string column as small integer codes; ``names[code]``, null -> ``-1``."""

    codes: np.ndarray
    names: list[str]
    #: distinct names merged into the last one (``OTHERS_LABEL``'s) by ``top``; 0: none merged
    merged: int = 0
    #: rows in that merged group
    merged_rows: int = 0

    def labelled(self) -> tuple[np.ndarray, list[str]]:
        """Codes with null mapped to an extra last group named NONE_LABEL (if any nulls; a label
        no real name has)."""
        if (self.codes < 0).any():
            none = free_label(NONE_LABEL, set(self.names))
            return np.where(self.codes < 0, len(self.names), self.codes), [*self.names, none]
        return self.codes, list(self.names)


def top(c: Codes, k: int | None = None) -> Codes:
    """``c`` with at most ``k`` names kept (most rows first, ties by name; kept in name order)
    and the rest merged into one last group, ``OTHERS_LABEL``; ``c`` itself when it has ``k`` or fewer
    (default ``TOP_SLICES``)."""
    k = TOP_SLICES if k is None else k
    if len(c.names) <= k:
        return c
    valid = c.codes >= 0
    rows = np.bincount(c.codes[valid], minlength=len(c.names))
    ranked = np.lexsort((np.arange(len(c.names)), -rows))  # names are sorted: index order is name order
    keep = np.sort(ranked[:k])
    remap = np.full(len(c.names), k, dtype=np.int32)
    remap[keep] = np.arange(k, dtype=np.int32)
    kept = [c.names[i] for i in keep]
    others = free_label(OTHERS_LABEL, set(c.names))
    merged_rows = int(rows.sum() - rows[keep].sum())
    return Codes(np.where(valid, remap[np.maximum(c.codes, 0)], -1).astype(np.int32), [*kept, others],
                 merged=len(c.names) - k, merged_rows=merged_rows)


def timestamps_us(col: pa.ChunkedArray) -> np.ndarray:
    """Timestamp column -> int64 microseconds since the epoch (nulls must be gone)."""
    return np.asarray(pc.cast(col, _US).cast(pa.int64()).to_numpy(), dtype=np.int64)


_US = pa.timestamp("us", tz="UTC")


def column(col: pa.ChunkedArray, dtype) -> Column:
    return Column(col, dtype)


def decoded(table: pa.Table, name: str) -> pa.Table:
    """``table`` with column ``name`` as plain strings if it came dictionary-encoded."""
    col = table.column(name)
    if not pa.types.is_dictionary(col.type):
        return table
    return table.set_column(table.column_names.index(name), name, col.cast(col.type.value_type))


def dictionary_codes(col: pa.ChunkedArray, null_last: bool = False) -> tuple[np.ndarray, pa.Array]:
    """(int32 code per row, the values present) of a dictionary column: ``values[code]``, a
    null row -> -1 (``null_last``: ``len(values)``).

    Only the entries some row uses are kept (a Parquet dictionary may name values whose
    rows were rejected or filtered out), in dictionary order; chunks with different
    dictionaries are unified first. Four bytes a row, the indices read zero-copy.
    """
    idx, dictionary, used = _dictionary_indices(col)
    remap = np.full(len(dictionary) + 1, used.size if null_last else -1, dtype=np.int32)
    remap[used] = np.arange(used.size, dtype=np.int32)
    return remap[idx], dictionary.take(pa.array(used))


def _dictionary_indices(col: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array, np.ndarray]:
    """(each row's index into the one dictionary, null -> its length; the dictionary; the
    indices some row uses, ascending) of a dictionary column."""
    if col.num_chunks == 0:
        return np.zeros(0, dtype=np.int32), pa.array([], type=col.type.value_type), np.zeros(0, dtype=np.int64)
    first = col.chunk(0).dictionary
    if not all(c.dictionary.equals(first) for c in col.chunks[1:]):
        col = pa.table({"c": col}).unify_dictionaries().column("c")
    dictionary = col.chunk(0).dictionary
    size = len(dictionary)
    idx = np.empty(len(col), dtype=np.int32)
    at = 0
    for c in col.chunks:
        indices = c.indices if c.indices.type == pa.int32() else c.indices.cast(pa.int32())
        if c.null_count:
            indices = pc.fill_null(indices, size)
        idx[at:at + len(c)] = np.frombuffer(indices.buffers()[1], dtype=np.int32, count=indices.offset + len(c))[indices.offset:]
        at += len(c)
    return idx, dictionary, np.flatnonzero(np.bincount(idx, minlength=size + 1)[:size])


def codes(col: pa.ChunkedArray) -> Codes:
    """Dictionary-encode a string column with names sorted, so output order is stable."""
    if pa.types.is_dictionary(col.type):
        idx, dictionary, used = _dictionary_indices(col)
        names = dictionary.take(pa.array(used)).to_pylist()
        order = sorted(range(len(names)), key=names.__getitem__)
        # One lookup from dictionary index straight to sorted rank (null and unused -> -1): one gather.
        rank = np.full(len(dictionary) + 1, -1, dtype=np.int32)
        rank[used[order]] = np.arange(len(names), dtype=np.int32)
        return Codes(rank[idx], [names[i] for i in order])
    uniq = pc.unique(col).drop_null()
    names = sorted(uniq.to_pylist())
    if not names:
        return Codes(np.full(len(col), -1, dtype=np.int32), [])
    idx = pc.index_in(col, value_set=pa.array(names, type=pa.string()))
    return Codes(np.asarray(pc.fill_null(idx, -1).to_numpy(zero_copy_only=False), dtype=np.int32), names)


class Frame:
    """The rollout table as arrays, each built on first use and then kept.

    Times are int64 microseconds and holds exact. Building lazily lets the sweep (which
    needs only the two time columns) run before the other columns take memory.
    """

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self._sorted: dict = {}
        self._dropped_nulls: dict[str, int] = {}

    @property
    def n(self) -> int:
        return self.table.num_rows

    @cached_property
    def start_us(self) -> np.ndarray:
        return timestamps_us(self.table.column("started_at"))

    @cached_property
    def finish_us(self) -> np.ndarray:
        return timestamps_us(self.table.column("finished_at"))

    @cached_property
    def hold_us(self) -> np.ndarray:
        return self.finish_us - self.start_us

    @cached_property
    def input_tokens(self) -> Column:
        return column(self.table.column("input_tokens"), np.int64)

    @cached_property
    def output_tokens(self) -> Column:
        return column(self.table.column("output_tokens"), np.int64)

    @cached_property
    def cached_tokens(self) -> Column:
        return column(self.table.column("cached_tokens"), np.int64)

    @cached_property
    def turns(self) -> Column:
        return column(self.table.column("turns"), np.int64)

    @cached_property
    def reward(self) -> Column:
        return column(self.table.column("reward"), np.float64)

    @cached_property
    def has_exception(self) -> Column:
        return column(self.table.column("has_exception"), np.bool_)

    @cached_property
    def has_trajectory(self) -> Column:
        return column(self.table.column("has_trajectory"), np.bool_)

    @cached_property
    def model(self) -> Codes:
        """The model codes every per-model figure reads: the ``TOP_SLICES`` models with most rows,
        the rest as one group (``top``), so no figure is made per model past them."""
        return top(codes(self.table.column("model")))

    @cached_property
    def job(self) -> Codes:
        """The job codes the per-job figures read, bounded like ``model``'s."""
        return top(self.job_all)

    @cached_property
    def job_all(self) -> Codes:
        """Every job its own code: the fleet's cap is the sum over the running jobs' own caps."""
        return codes(self.table.column("job"))

    @cached_property
    def has_tokens(self) -> np.ndarray:
        """Rows reporting both input and output token counts (the token-figure population).

        A row reporting 0 input and 0 output tokens is left out: a rollout that ran a model
        cannot have used none, so it is an agent that does not count (Harbor's installed agents
        when their log carries no usage, Terminal-Bench's), not a measurement. ``zero_tokens``
        counts them."""
        return self.input_tokens.valid & self.output_tokens.valid & ~self.zero_tokens

    @cached_property
    def zero_tokens(self) -> np.ndarray:
        """Rows whose input and output token counts are both reported as 0."""
        zero = self.input_tokens.mask(lambda v, out: np.equal(v, 0, out=out))
        zero &= self.output_tokens.mask(lambda v, out: np.equal(v, 0, out=out))
        return zero

    @cached_property
    def exception(self) -> np.ndarray:
        """Rows flagged as exceptions."""
        return self.has_exception.valid & self.has_exception.values

    @cached_property
    def hit_limit(self) -> np.ndarray:
        """Rows a limit ended (``limit_type`` present) that are not exceptions: an error wins."""
        col = self.table.column("limit_type")
        if col.null_count == len(col):  # most sources never record one: no pass over the rows
            return np.zeros(self.n, dtype=bool)
        return np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=bool) & ~self.exception

    @cached_property
    def rewarded(self) -> np.ndarray:
        """Rows with a usable reward (present and not NaN), from the reward buffers in place
        (Arrow's kernels and their bit-to-byte copy cost ~7x as much)."""
        return self.reward.mask(lambda v, out: np.logical_not(np.isnan(v, out=out), out=out))

    def passed(self, threshold: float) -> np.ndarray:
        """Rows whose reward is >= ``threshold`` (a NaN or missing reward never passes: NaN
        compares false)."""
        key = ("passed", threshold)
        if key not in self._sorted:
            self._sorted[key] = self.reward.mask(lambda v, out: np.greater_equal(v, threshold, out=out))
        return self._sorted[key]

    def null_count(self, name: str) -> int:
        """Nulls in column ``name``, also after ``drop_columns`` let it go."""
        if name in self._dropped_nulls:
            return self._dropped_nulls[name]
        return self.table.column(name).null_count

    def drop_columns(self, *names: str) -> None:
        """Let table columns go once their arrays are built (their null counts stay readable):
        the model strings alone are ~240 MB at 10M rows, and only their codes are read."""
        present = [n for n in names if n in self.table.column_names]
        for name in present:
            self._dropped_nulls[name] = self.table.column(name).null_count
        self.table = self.table.drop_columns(present)

    def release(self, *names: str) -> None:
        """Drop cached arrays no later measurement needs (they are rebuilt if asked for again)."""
        for name in names:
            self.__dict__.pop(name, None)

    def grouped_holds(self, codes: np.ndarray, n_groups: int, key: str) -> tuple[np.ndarray, np.ndarray]:
        """Holds grouped by ``codes``, each group partitioned at the ranks a summary reads
        (``stats.group_partitioned``), cached under ``key``: one grouping per key."""
        if key not in self._sorted:
            self._sorted[key] = group_partitioned(codes, self.hold_us, n_groups)
        return self._sorted[key]


def frame_from_table(table: pa.Table) -> Frame:
    """A Frame over a canonical rollout table (started/finished already non-null)."""
    return Frame(table)
