"""Synthetic histories for the backtest, made by the simulator's own telemetry output."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from sandbox_fleet.simulate import Fleet, LogNormal, Mixture, Poisson, run_workloads

N = 800


def stationary_history(seed: int = 5, n: int = N) -> pa.Table:
    """One stationary scenario: two models, 10% exceptions, tokens and turns drawn the same all along."""
    rng = np.random.default_rng(seed)
    holds = Mixture((LogNormal(40, 0.7), LogNormal(20, 0.7), LogNormal(60, 0.6), LogNormal(15, 0.6)),
                    (0.45, 0.05, 0.45, 0.05), ("m1", "m1", "m2", "m2"), (False, True, False, True))
    turns = rng.integers(2, 12, n)
    attrs = {"turns": turns, "input_tokens": turns * rng.integers(300, 700, n), "output_tokens": turns * rng.integers(50, 150, n)}
    res = run_workloads(Fleet(cap=30), [Poisson(rate_per_s=0.6, n=n, holds=holds, attrs=attrs)], seed=seed)
    return res.to_telemetry()


def second_half(table: pa.Table) -> np.ndarray:
    """Mask of the rollouts a 0.5 split gives to B (start order, ties by row)."""
    start = table.column("started_at").cast(pa.int64()).to_numpy()
    order = np.argsort(start, kind="stable")
    mask = np.zeros(table.num_rows, dtype=bool)
    mask[order[round(0.5 * table.num_rows):]] = True
    return mask


def stretch_holds(table: pa.Table, mask: np.ndarray, factor: float) -> pa.Table:
    start = table.column("started_at").cast(pa.int64()).to_numpy()
    finish = table.column("finished_at").cast(pa.int64()).to_numpy()
    new = np.where(mask, start + np.round((finish - start) * factor).astype(np.int64), finish)
    i = table.schema.get_field_index("finished_at")
    return table.set_column(i, table.schema.field(i), pa.array(new).cast(pa.timestamp("us", tz="UTC")))


def double_exceptions(table: pa.Table, mask: np.ndarray, seed: int = 9) -> pa.Table:
    """In B, turn clean rollouts into exceptions until B's exception rate is twice A's."""
    exc = pc.fill_null(table.column("has_exception"), False).to_numpy(zero_copy_only=False).astype(bool)
    rate_a = exc[~mask].mean()
    clean_b = np.flatnonzero(mask & ~exc)
    need = round(2 * rate_a * mask.sum()) - int(exc[mask].sum())
    flip = np.random.default_rng(seed).choice(clean_b, need, replace=False)
    exc = exc.copy()
    exc[flip] = True
    i = table.schema.get_field_index("has_exception")
    return table.set_column(i, table.schema.field(i), pa.array(exc))


@pytest.fixture(scope="module")
def history() -> pa.Table:
    return stationary_history()
