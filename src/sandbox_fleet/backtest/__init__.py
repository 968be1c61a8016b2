"""backtest stage: how far the simulator is off on the user's own history.

Drives ``simulate`` from outside the engine, as ``sweep`` and ``optimize`` do: split the
telemetry into A and B (``split``), calibrate on A as ``simulate --from`` does and replay B
(``predict``), compare the figures (``figures``), calibrate on B itself (the oracle), and test
whether the constants moved between A and B (``drift``). ``backtest_paths`` is the entry point;
``model.BacktestSummary`` the output.
"""

from __future__ import annotations

from sandbox_fleet.backtest.run import backtest_paths, backtest_rollouts

__all__ = ["backtest_paths", "backtest_rollouts"]
