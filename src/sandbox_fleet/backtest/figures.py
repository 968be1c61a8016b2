"""The figures a backtest compares, computed the same way for the history and for a simulated run.

Every figure reads integer-microsecond intervals through measure's one sweep line
(``interval_stats``), so an actual and a predicted value differ only by what happened, not by
how it is counted.
"""

from __future__ import annotations

import numpy as np

from sandbox_fleet.measure.concurrency import interval_stats
from sandbox_fleet.measure.stats import US, quantile_sorted, ratio

#: figure name -> what it is, for the docs and the text output
FIGURES = {
    "mean_concurrency": "mean sandboxes held, first start to last finish",
    "peak": "most sandboxes held at once",
    "makespan_s": "first arrival to last finish, seconds",
    "hold_mean_s": "mean hold, seconds",
    "hold_p99_s": "99th-percentile hold, seconds",
    "queue_wait_s_mean": "mean wait for a sandbox, seconds (telemetry records starts, not queue entries)",
    "step_s_mean": "mean RL step, release to its last finish, seconds (with steps)",
    "tokens_per_sandbox_s": "input + output tokens per sandbox-second (rollouts that record tokens)",
}


def run_figures(arrival_us: np.ndarray, start_us: np.ndarray, finish_us: np.ndarray, tokens: np.ndarray,
                step_of: np.ndarray | None, *, queue_known: bool) -> dict[str, float | None]:
    """Figures of one run, rollouts in release order.

    ``tokens``: per rollout, NaN when not recorded; ``step_of``: each rollout's RL step (None
    without steps); ``queue_known``: whether ``arrival_us`` is a queue entry (simulated) rather
    than the start itself (history).
    """
    conc = interval_stats(start_us, finish_us)
    hold_s = (finish_us - start_us) / US
    sorted_hold = np.sort(hold_s)
    has_tok = ~np.isnan(tokens)
    return {
        "mean_concurrency": float(conc["mean"]),
        "peak": float(conc["peak"]),
        "makespan_s": float(finish_us.max() - arrival_us.min()) / US,
        "hold_mean_s": float(hold_s.mean()),
        "hold_p99_s": quantile_sorted(sorted_hold, 0.99),
        "queue_wait_s_mean": float((start_us - arrival_us).mean()) / US if queue_known else None,
        "step_s_mean": None if step_of is None else _step_mean_s(arrival_us, finish_us, step_of),
        "tokens_per_sandbox_s": ratio(float(tokens[has_tok].sum()), float(hold_s[has_tok].sum())) if has_tok.any() else None,
    }


def _step_mean_s(arrival_us: np.ndarray, finish_us: np.ndarray, step_of: np.ndarray) -> float:
    n_steps = int(step_of.max()) + 1
    release = np.full(n_steps, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.zeros(n_steps, dtype=np.int64)
    np.minimum.at(release, step_of, arrival_us)
    np.maximum.at(last, step_of, finish_us)
    return float((last - release).mean()) / US


def concurrency_at(t_us: np.ndarray, start_us: np.ndarray, finish_us: np.ndarray) -> np.ndarray:
    """Sandboxes held at each time of ``t_us`` (half-open holds: a finish at t is not counted)."""
    return (np.searchsorted(np.sort(start_us), t_us, side="right")
            - np.searchsorted(np.sort(finish_us), t_us, side="right")).astype(float)
