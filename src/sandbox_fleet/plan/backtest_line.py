"""``plan --backtest FILE``: carry a backtest's verdict into the purchase order.

The buyer reads, next to the fleet they are buying, how far the simulator was off on their own
history and whether their constants moved (``sandbox-fleet backtest``'s summary).
"""

from __future__ import annotations

from pathlib import Path

from sandbox_fleet import contract
from sandbox_fleet.backtest.model import BacktestSummary, headline
from sandbox_fleet.plan.model import BacktestLine


def backtest_block(path: str | Path) -> BacktestLine:
    """The plan's ``backtest`` block from a backtest summary file (InputError when it is not one):
    read before any planning work, then handed to ``make_plan``."""
    bt = contract.load(BacktestSummary, path)
    mk = bt.figures.get("makespan_s")
    error = mk.error if mk is not None else None
    moved = [t.quantity + (f" of {t.model}" if t.model else "") for t in bt.drift.tests if t.drifted]
    head = headline({name: (f.error, f.within_interval) for name, f in bt.figures.items()}, bt.interval_level)
    drift_txt = f"yes ({', '.join(moved)})" if moved else "no"
    return BacktestLine(
        path=str(path),
        makespan_error=error,
        within_interval=mk.within_interval if mk is not None else None,
        drifted=bt.drift.detected,
        drifted_quantities=moved,
        line=f"{head}; constants drifted: {drift_txt}",
    )
